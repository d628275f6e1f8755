"""``ltr --version``: the version of ``ltr`` and of the libraries that decide its results.

One line, for bug reports and run comparisons: ``ltr 0.1.0 (ltr-harness; Python 3.11.7;
lightgbm 4.6.0, mlflow 3.6.0, ...)``. Versions are read from the installed distributions'
metadata, so nothing heavy is imported.
"""

from __future__ import annotations

import platform
from importlib import metadata

import ltr

#: The distribution ``ltr`` is installed as (``pip install ltr-harness``).
DISTRIBUTION = "ltr-harness"

#: Libraries whose versions change what a run computes or logs, in the order they are printed.
LIBRARIES = ("lightgbm", "mlflow", "hydra-core", "optuna", "numba", "numpy", "pandas")


def _installed(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def version_line() -> str:
    """``ltr X (ltr-harness; Python X; lightgbm X, mlflow X, ...)``."""
    libraries = ", ".join(f"{name} {_installed(name)}" for name in LIBRARIES)
    return f"ltr {ltr.__version__} ({DISTRIBUTION}; Python {platform.python_version()}; {libraries})"

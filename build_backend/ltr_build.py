"""The build backend of ``ltr-harness``: setuptools', asking for numba only where it is used.

A wheel's ``build_py`` compiles the numba kernels into the wheel (``setup.py``), so a wheel build
needs numba (and numpy) in its build environment; an editable install (``make install``) and an
sdist do not, and do not download them. ``LTR_PRECOMPILE=0`` builds a wheel without the kernels'
machine code, and without numba.
"""

from __future__ import annotations

import os
from typing import Any

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403  (every hook setuptools offers, as it offers it)

#: What a wheel build adds to setuptools' own requirements to compile the kernels.
KERNEL_BUILD_REQUIRES = ["numba>=0.60"]


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    """setuptools' requirements, plus numba unless ``LTR_PRECOMPILE=0``."""
    extra = [] if os.environ.get("LTR_PRECOMPILE", "1") == "0" else KERNEL_BUILD_REQUIRES
    return [*_setuptools.get_requires_for_build_wheel(config_settings), *extra]

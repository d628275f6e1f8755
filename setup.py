"""The wheel build's one step beyond pyproject.toml: the numba kernels' machine code.

``build_py`` of a wheel (not of an editable install) runs ``python -m ltr.compiled.kernel_signatures
--ship`` on the sources it copied, which compiles every kernel for a generic CPU and writes
numba's cache entries into the wheel's ``ltr/_precompiled/`` (:mod:`ltr.compiled.precompiled`): a first ``ltr`` command after
``pip install`` then loads them instead of compiling. ``LTR_PRECOMPILE=0`` builds a wheel without
them (the kernels then compile on the first command, as from a clone).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPyWithKernels(build_py):
    """``build_py``, then the kernels' machine code into the build tree (wheels only)."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False) or os.environ.get("LTR_PRECOMPILE", "1") == "0":
            return
        root = Path(self.build_lib).resolve()
        with tempfile.TemporaryDirectory(prefix="ltr-precompile-") as cache:
            env = {k: v for k, v in os.environ.items() if k not in {"NUMBA_DISABLE_JIT", "NUMBA_CPU_FEATURES"}}
            env.update(PYTHONPATH=str(root), NUMBA_CPU_NAME="generic", NUMBA_CACHE_DIR=cache)
            subprocess.run(
                [sys.executable, "-m", "ltr.compiled.kernel_signatures", "--ship", str(root / "ltr" / "_precompiled")],
                env=env, cwd=cache, check=True,
            )  # fmt: skip


setup(cmdclass={"build_py": BuildPyWithKernels})

"""``python -m ltr.warmup`` (run by ``make install``) compiles every numba kernel into numba's
cache, for the argument types the commands pass: after it, a training run and an evaluation
compile nothing (no new cache entry appears).

The test uses numba's cache as the commands do (``NUMBA_CACHE_DIR`` if set, else the
``__pycache__`` folders of the checkout): it runs the warm-up (what ``make install`` ran; a few
seconds when the cache is warm, a full compile when it is not), then checks that every kernel has
an index entry and that a training run and an evaluation add or change none.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from numba.core.caching import NullCache
from numba.core.registry import CPUDispatcher

import ltr as ltr_package
from ltr.warmup import KERNEL_MODULES


def kernel_entries() -> set[str]:
    """``<module file>.<function>-<first line>``, numba's cache index name, of every compiled
    (not ``inline="always"``) kernel defined in :data:`KERNEL_MODULES`."""
    names = set()
    for module_name in KERNEL_MODULES:
        module = importlib.import_module(module_name)
        for value in vars(module).values():
            if not isinstance(value, CPUDispatcher) or value.py_func.__module__ != module_name:
                continue
            assert not isinstance(value._cache, NullCache), f"{module_name}.{value.__name__} is not cache=True"
            if value.targetoptions.get("inline") == "always":  # compiled into its callers only
                continue
            code = value.py_func.__code__
            names.add(f"{module_name.rsplit('.', 1)[1]}.{value.py_func.__qualname__}-{code.co_firstlineno}")
    return names


def cache_state(root: Path) -> dict[str, int]:
    """Every numba index and data file under ``root`` with its modification time (ns)."""
    return {str(p): p.stat().st_mtime_ns for p in root.rglob("*") if p.suffix in {".nbi", ".nbc"}}


@pytest.mark.slow
def test_warmup_compiles_every_kernel_and_training_compiles_nothing_after(tmp_path: Path) -> None:
    cache = Path(os.environ.get("NUMBA_CACHE_DIR") or Path(ltr_package.__file__).parent)

    def ltr(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([sys.executable, *args], cwd=tmp_path, capture_output=True, text=True, timeout=1800)
        assert done.returncode == 0, done.stderr[-3000:]
        return done

    assert "compiled or loaded from cache" in ltr("-m", "ltr.warmup").stdout
    after_warmup = cache_state(cache)
    indexed = {Path(name).name.rsplit(".", 2)[0] for name in after_warmup if name.endswith(".nbi")}
    expected = kernel_entries()
    assert len(expected) >= 30  # the modules' kernels were found at all
    assert expected - indexed == set(), "kernels the warm-up did not compile"

    ltr("-m", "ltr.warmup")  # idempotent: a warm cache gains nothing and rewrites nothing
    assert cache_state(cache) == after_warmup

    # the commands a user runs first compile nothing new: every signature they need is cached
    ltr("-m", "ltr", "train", "debug=default", "tracking=none", "hydra.run.dir=out")
    qrels, run = tmp_path / "q.txt", tmp_path / "r.txt"
    qrels.write_text("1 0 a 1\n1 0 b 0\n")
    run.write_text("1 Q0 a 1 1.0 x\n1 Q0 b 2 0.5 x\n")
    ltr("-m", "ltr", "evaluate", "--qrels", str(qrels), "--run", str(run))
    assert cache_state(cache) == after_warmup, "compiled after the warm-up"

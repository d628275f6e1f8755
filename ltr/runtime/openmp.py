"""OpenMP's spinning: LightGBM's threads wait briefly, then sleep, unless the user chose otherwise.

LightGBM, and numba's parallel kernels (threading layer ``omp``), run on libgomp, GNU's OpenMP
runtime on Linux. Between two parallel regions libgomp's threads busy-wait for the next one,
300,000 spins by default (``GOMP_SPINCOUNT``), before they sleep. With spare cores that saves a
wake-up; when more threads want the cores than there are (ltr's own background MLflow load, two
test workers training on 2 threads each, another process, a busy CI machine), a spinning thread
burns the time slice of the thread it waits for, at every one of the hundreds of barriers of a
boosting round: the default experiment's boosting, 2.4 s idle on 2 cores, took up to 36 s with
one core busy elsewhere. A spin count of 1,000 costs nothing idle and ends that tail
(``benchmarks/bench_openmp.py``; the figures in ``benchmarks/README.md``).

:func:`limit_spinning` sets ``GOMP_SPINCOUNT`` to :data:`SPIN_COUNT` when neither it nor
``OMP_WAIT_POLICY`` is set. libgomp reads them once, when it is loaded (by ``import lightgbm``
or numba's first parallel kernel), so ``import ltr`` calls it before anything of ltr loads
either; a process that loaded LightGBM before ltr keeps its own setting, and processes ltr
starts (sweep workers, Dask workers) inherit it. Spinning changes when a thread wakes, never a
result: every metric is bit for bit the same. Set either variable to choose otherwise
(``GOMP_SPINCOUNT=300000`` for libgomp's default). LLVM's runtime (LightGBM on macOS) reads
``KMP_BLOCKTIME`` instead, left as it is.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

#: libgomp's spins before a waiting thread sleeps, where the user set none.
SPIN_COUNT = "1000"

#: The variables by which a user chooses libgomp's waiting; ltr changes nothing if one is set.
USER_CHOICES = ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")


def limit_spinning(environ: MutableMapping[str, str] = os.environ) -> bool:
    """Set ``GOMP_SPINCOUNT`` to :data:`SPIN_COUNT` in ``environ`` unless the user chose
    (either of :data:`USER_CHOICES` set); True if it set it."""
    if any(name in environ for name in USER_CHOICES):
        return False
    environ["GOMP_SPINCOUNT"] = SPIN_COUNT
    return True

"""numpy's transparent huge pages: off in ltr's processes, unless the user chose.

On Linux numpy asks the kernel for transparent huge pages (``madvise(MADV_HUGEPAGE)``) for every
array of 4 MiB or more. With the kernel's THP ``defrag`` setting at ``madvise`` (the usual
default, ``/sys/kernel/mm/transparent_hugepage/defrag``), a first write into such an array may
have the kernel compact memory on the spot to find free 2 MiB pages: where memory is fragmented
(a long-running machine, a VM whose host reclaims memory, a page cache full of data files) that
stall is system time of the process, from nothing to seconds per GB, and a first ``ltr train``
on new files writes its arrays while its cache entries fill the page cache. With 4 KiB pages a
first write costs the same every time (``benchmarks/bench_hugepages.py``; the figures in
``benchmarks/README.md``).

:func:`prefer_small_pages` sets ``NUMPY_MADVISE_HUGEPAGE=0`` (numpy's documented switch) when the
user has not set it. numpy reads it once, when it is imported, so ``import ltr`` calls it before
anything of ltr imports numpy; a process that imported numpy before ltr keeps numpy's setting,
and processes ltr starts (sweep workers, Dask workers, the figures' process) inherit it. Page
size changes how fast memory arrives, never a value: every metric is bit for bit the same. Set
``NUMPY_MADVISE_HUGEPAGE=1`` to keep huge pages.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

#: The variable numpy reads on import ("0": no ``madvise(MADV_HUGEPAGE)``; "1": huge pages).
VARIABLE = "NUMPY_MADVISE_HUGEPAGE"


def prefer_small_pages(environ: MutableMapping[str, str] = os.environ) -> bool:
    """Set :data:`VARIABLE` to ``"0"`` in ``environ`` unless it is set (to anything); True if it set it."""
    if VARIABLE in environ:
        return False
    environ[VARIABLE] = "0"
    return True

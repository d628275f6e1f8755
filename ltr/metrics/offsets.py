"""Query offsets, the layout every flat array of ltr shares (LightGBM's query boundaries).

A split of ``n_queries`` lists is flat per-row arrays plus ``offsets`` (int64, shape
``(n_queries + 1,)``, non-decreasing, ``offsets[0] == 0``): the rows of query ``i`` are
``offsets[i]:offsets[i + 1]``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray


def row_queries(offsets: ArrayLike) -> NDArray[np.int64]:
    """The query of every row: ``i`` repeated ``offsets[i + 1] - offsets[i]`` times, shape
    ``(offsets[-1],)``, int64 (0 rows for no queries)."""
    bounds: NDArray[np.int64] = np.asarray(offsets, dtype=np.int64)
    sizes = bounds[1:] - bounds[:-1]
    return np.repeat(np.arange(sizes.shape[0], dtype=np.int64), sizes)

"""K against the data: one-line notes when a cut-off says more than the lists can.

For any data kind (graded, TREC, clicks), from the list lengths of the evaluated queries only:

- ``K`` above the longest list: NDCG@K is NDCG@(list length) on every query (both DCG and IDCG
  are cut at the list, see the metric contract), so K adds nothing over the longest list;
- most lists (more than half of the non-empty ones) shorter than ``K``: on them NDCG@K is really
  NDCG@(list length);
- ``K`` above the re-ranking depth (``rerank.depth``): positions below the depth keep the
  model's order, so NDCG@K mixes the re-ranked head with an unchanged tail.

These are notes (warnings), never errors: the value is still what the contract defines.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike


def k_notes(list_len: ArrayLike, ks: Sequence[int], *, rerank_depth: int | None = None, split: str | None = None) -> list[str]:
    """One line per cut-off of ``ks`` the data cannot fill (largest K first checked for each
    kind, so one K per kind is named); empty when every K fits.

    Examples
    --------
    >>> k_notes([3, 5, 12], [5, 100])
    ['K=100 exceeds the longest list (12 documents): on every query nDCG@100 is nDCG@(list length)']
    >>> k_notes([3, 4, 12], [10])
    ['K=10: 2 of 3 lists (67%) are shorter than 10: on them nDCG@10 is nDCG@(list length)']
    >>> k_notes([30, 40], [20], rerank_depth=10)
    ['K=20 exceeds the re-ranking depth (rerank.depth=10): positions 11..20 keep the model order']
    """
    lengths = np.asarray(list_len, dtype=np.int64)
    lengths = lengths[lengths > 0]
    where = f"{split}: " if split else ""
    notes: list[str] = []
    if lengths.size == 0 or not ks:
        return notes
    longest = int(lengths.max())
    over = [int(k) for k in ks if int(k) > longest]
    if over:
        k = max(over)
        notes.append(
            f"{where}K={k} exceeds the longest list ({longest} documents): on every query "
            f"nDCG@{k} is nDCG@(list length)"
        )
    fits = [int(k) for k in ks if int(k) <= longest]
    for k in sorted(fits, reverse=True):
        short = int(np.count_nonzero(lengths < k))
        if short * 2 > lengths.size:
            notes.append(
                f"{where}K={k}: {short} of {lengths.size} lists ({short / lengths.size:.0%}) are "
                f"shorter than {k}: on them nDCG@{k} is nDCG@(list length)"
            )
            break
    if rerank_depth is not None:
        deep = [int(k) for k in ks if int(k) > int(rerank_depth)]
        if deep:
            k = max(deep)
            notes.append(
                f"{where}K={k} exceeds the re-ranking depth (rerank.depth={rerank_depth}): "
                f"positions {int(rerank_depth) + 1}..{k} keep the model order"
            )
    return notes

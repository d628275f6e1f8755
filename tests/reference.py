"""A deliberately plain per-query NDCG (Python loops) used as an independent oracle in tests.

Conventions: exp gain 2^rel - 1, discount 1/log2(pos + 1) from position 1, IDCG from all labels
of the query cut at k, ties averaged over the tied block (as sklearn), IDCG = 0 scores 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def ndcg_at_k(labels: Sequence[int], scores: Sequence[float], k: int) -> float:
    gains = [2.0**rel - 1.0 for rel in labels]
    n = len(gains)
    order = sorted(range(n), key=lambda i: -scores[i])
    discounts = [1.0 / math.log2(pos + 2) if pos < k else 0.0 for pos in range(n)]
    dcg = 0.0
    pos = 0
    while pos < n:  # walk tied blocks of equal score
        end = pos
        while end + 1 < n and scores[order[end + 1]] == scores[order[pos]]:
            end += 1
        block = order[pos : end + 1]
        mean_gain = sum(gains[i] for i in block) / len(block)
        dcg += mean_gain * sum(discounts[pos : end + 1])
        pos = end + 1
    ideal = sorted(gains, reverse=True)
    idcg = sum(g * d for g, d in zip(ideal, discounts, strict=True))
    return 0.0 if idcg == 0 else dcg / idcg

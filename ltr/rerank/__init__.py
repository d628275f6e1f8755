"""Re-ranking of scored lists for diversity: the greedy re-ranker and its similarities.

Works on the flat arrays and query offsets of :mod:`ltr.metrics` (the rows of query ``i`` are
``offsets[i]:offsets[i + 1]``) and returns an *order*: an int64 permutation of the rows whose
slice ``offsets[i]:offsets[i + 1]`` lists query ``i``'s rows from the top rank down.
`diversify` states the conventions (score normalisation, max-similarity, tie-breaks, depth);
:mod:`ltr.rerank.similarity` the two similarities. Importing this package does not load numba:
the kernel loads when `diversify` first runs.
"""

from __future__ import annotations

from ltr.metrics.diversity import unit_rows
from ltr.rerank.diversify import diversify, order_as_scores, score_order
from ltr.rerank.similarity import SIMILARITIES, category_similarity, cosine_similarity

__all__ = [
    "SIMILARITIES",
    "category_similarity",
    "cosine_similarity",
    "diversify",
    "order_as_scores",
    "score_order",
    "unit_rows",
]

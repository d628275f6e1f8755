"""Oracle: the ``sklearn`` preset equals ``sklearn.metrics.ndcg_score`` per query."""

from __future__ import annotations

import numpy as np
import pytest

from ltr.metrics import PRESETS, per_query_table

metrics = pytest.importorskip("sklearn.metrics")


@pytest.mark.parametrize("seed", range(3))
def test_sklearn_preset_matches_ndcg_score(seed: int) -> None:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 30, 80)  # sklearn raises on single-doc lists
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(offsets[-1])
    labels = rng.integers(0, 5, n)
    labels[offsets[0] : offsets[1]] = 0  # a query with nothing relevant: sklearn says 0
    scores = np.round(rng.normal(size=n), 1)  # coarse: many ties inside and across the cut
    scores[offsets[1] : offsets[2]] = 0.5  # one query entirely tied
    ks = (1, 3, 5, 10, 50)
    table = per_query_table(
        labels, scores, offsets, np.arange(80), ks=ks, conventions=PRESETS["sklearn"]
    )
    for q in range(80):
        y = labels[offsets[q] : offsets[q + 1]][None, :]
        s = scores[offsets[q] : offsets[q + 1]][None, :]
        for k in ks:
            expected = metrics.ndcg_score(y, s, k=k)
            assert table.loc[q, f"ndcg_at_{k}"] == pytest.approx(expected, abs=1e-12), (q, k)
        # sklearn's dcg_score is the same DCG (linear gain, averaged ties)
        assert table.loc[q, "dcg_at_10"] == pytest.approx(metrics.dcg_score(y, s, k=10), rel=1e-12)

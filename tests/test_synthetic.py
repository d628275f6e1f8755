"""The built-in synthetic data: deterministic, and shaped as the issue asks."""

from __future__ import annotations

import numpy as np

from ltr.config.groups.data import SyntheticDataConfig
from ltr.data.synthetic import generate_synthetic


def test_same_seed_same_bytes_other_seed_differs() -> None:
    cfg = SyntheticDataConfig(n_queries=500)
    a, b = generate_synthetic(cfg, seed=7), generate_synthetic(cfg, seed=7)
    c = generate_synthetic(cfg, seed=8)
    assert a.features.tobytes() == b.features.tobytes()
    assert np.array_equal(a.labels, b.labels)
    assert np.array_equal(a.offsets, b.offsets)
    assert a.features.shape != c.features.shape or a.features.tobytes() != c.features.tobytes()


def test_default_data_covers_strata_labels_ties_and_edge_cases() -> None:
    data = generate_synthetic(SyntheticDataConfig(), seed=42)
    lengths = data.group_sizes
    assert 2000 <= data.n_queries <= 5000
    assert (lengths == 1).sum() > 0, "single-document lists"
    assert ((lengths >= 2) & (lengths <= 10)).sum() > 100
    assert ((lengths >= 11) & (lengths <= 50)).sum() > 100
    assert (lengths >= 51).sum() > 100
    counts = np.bincount(data.labels, minlength=5)
    assert set(np.unique(data.labels)) == {0, 1, 2, 3, 4}
    assert counts[0] > 0.6 * data.n_rows, "most documents are not relevant"
    max_label = np.maximum.reduceat(data.labels, data.offsets[:-1])
    assert 0 < (max_label == 0).sum() < 0.3 * data.n_queries, "some all-zero queries"
    tied = data.features[:, data.feature_names.index("signal_7")]
    assert len(np.unique(tied)) < data.n_rows / 10, "a rounded feature makes exact ties"


def test_informative_features_order_within_query_noise_does_not() -> None:
    data = generate_synthetic(SyntheticDataConfig(), seed=1)
    q = np.repeat(np.arange(data.n_queries), data.group_sizes)
    sizes = data.group_sizes[q]

    def within_query_corr(column: np.ndarray) -> float:
        # correlation of the query-centred feature with the query-centred label
        x = column - (np.bincount(q, column) / data.group_sizes)[q]
        y = data.labels - (np.bincount(q, data.labels) / data.group_sizes)[q]
        keep = sizes > 1
        return float(np.corrcoef(x[keep], y[keep])[0, 1])

    signal = within_query_corr(data.features[:, 0].astype(np.float64))
    noise = within_query_corr(data.features[:, data.feature_names.index("noise_0")].astype(np.float64))
    assert signal > 0.3
    assert abs(noise) < 0.05

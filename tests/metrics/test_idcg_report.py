"""IDCG report: histogram data, shares, JSON form and the figure."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ltr.metrics import idcg_report, per_query_table
from ltr.metrics.plots import plot_idcg_histogram


def _table() -> pd.DataFrame:
    # q0 [0,0] IDCG 0; q1 [1] IDCG@5 = 1; q2 [2,1,0,0,0,0] exp IDCG@5 = 3 + 1/log2 3
    labels = np.array([0, 0, 1, 2, 1, 0, 0, 0, 0])
    offsets = np.array([0, 2, 3, 9])
    return per_query_table(labels, np.arange(9.0), offsets, np.array([10, 11, 12]), ks=[5])


def test_shares_and_counts() -> None:
    r = idcg_report(_table(), 5, bins=4)
    assert r.n_queries == 3
    assert r.share_zero == pytest.approx(1 / 3)
    assert r.share_le_one == pytest.approx(2 / 3)
    assert r.share_shorter_than_k == pytest.approx(2 / 3)  # lengths 2 and 1 are < 5
    assert r.bin_edges[-1] == pytest.approx(3 + 1 / np.log2(3))
    assert r.counts.tolist() == [1, 1, 0, 1]  # edges 0, 0.91, 1.81, 2.72, 3.63


def test_to_dict_is_json_ready() -> None:
    d = idcg_report(_table(), 5, bins=3).to_dict()
    assert json.loads(json.dumps(d)) == d
    assert sum(d["counts"]) == 3


def test_all_zero_and_missing_k() -> None:
    t = per_query_table(
        np.array([0, 0]), np.array([1.0, 2.0]), np.array([0, 2]), np.array([1]), ks=[5]
    )
    r = idcg_report(t, 5, bins=2)
    assert r.bin_edges.tolist() == [0.0, 0.5, 1.0]
    assert r.counts.tolist() == [1, 0]
    with pytest.raises(ValueError, match="no idcg_at_10"):
        idcg_report(t, 10)


def test_plot_saves_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    fig = plot_idcg_histogram(idcg_report(_table(), 5), title="valid")
    out = tmp_path / "hist_at_5.png"
    fig.savefig(out)
    assert out.stat().st_size > 1000

"""The real-data experiment overlay: MQ2008 fold 1 from ../shared/data (skipped when absent)."""

from __future__ import annotations

import json

import pytest

from ltr.experiment import run as pipeline
from tests.conftest import SHARED_DATA, compose_train

MQ2008 = SHARED_DATA / "mq2008"


@pytest.mark.skipif(not MQ2008.exists(), reason="../shared/data/mq2008 is absent")
def test_mq2008_fold1_experiment() -> None:
    cfg = compose_train(
        ["experiment=mq2008", f"data.root={MQ2008}", "tracking=none", "fit.show_progress=false", "eval=lightgbm"]
    )
    outcome = pipeline.run(cfg)
    stats = {entry["name"]: entry for entry in json.loads((SHARED_DATA / "stats.json").read_text())}
    s4, s5 = stats["mq2008/S4.txt.gz"], stats["mq2008/S5.txt.gz"]  # fold 1: valid = S4, test = S5
    m = outcome.metrics
    assert m["valid/n_queries"] == s4["queries"]
    assert m["test/n_queries"] == s5["queries"]
    for label, key in (("1-10", "len_1-10"), ("11-50", "len_11-50"), ("51+", "len_51_plus")):
        assert m[f"test/n_queries/{key}"] == s5["list_len_buckets"][label]
    # share of test queries with nothing relevant = S5's all-label-0 queries
    assert m["test/idcg_at_10/share_zero"] == pytest.approx(s5["queries_all_label0"] / s5["queries"])
    # with LightGBM's conventions our number is LightGBM's own, on real data too
    assert m["test/ndcg_at_10"] == pytest.approx(m["test/lightgbm/ndcg_at_10"], abs=1e-9)
    assert 0.4 < m["test/ndcg_at_10"] < 1.0

"""``ltr train data=parquet_partitions trainer=dask``: workers read, train, predict and tabulate.

The end-to-end run (its logged table is the whole split's) is in ``test_determinism.py``, which
reads the same two real runs for both facts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lightgbm as lgb
import numpy as np
import pandas as pd
import pytest

from ltr.config.groups.data import SyntheticDataConfig
from ltr.dask.parquet import read_query_partitions, write_query_partitions
from ltr.dask.partitioned import partitioned_tables
from ltr.data.ranking_data import RankingData
from ltr.data.splits import split_queries
from ltr.data.synthetic import generate_synthetic
from ltr.errors import LtrUserError
from ltr.experiment import run as pipeline
from ltr.metrics import MetricConventions, Strata, per_query_table
from ltr.metrics.reports.gap import lightgbm_gap
from ltr.metrics.table import largest_gain
from tests.conftest import compose_train
from tests.dask.conftest import random_ranking_data


def _write_splits(root: Path, *, n_partitions: int) -> None:
    data = generate_synthetic(SyntheticDataConfig(n_queries=60), seed=3)
    splits = split_queries(data, valid_fraction=0.2, test_fraction=0.2, seed=3)
    for name, split in splits.items():
        write_query_partitions(split, root / name, n_partitions=n_partitions)


def _compose(root: Path, uri: str, *extra: str) -> Any:
    return compose_train([
        "data=parquet_partitions",
        f"data.root={root}",
        "trainer=dask",
        "fit.num_boost_round=20",
        "fit.early_stopping_rounds=null",
        "fit.show_progress=false",
        "model.num_leaves=7",
        f"tracking.uri={uri}",
        *extra,
    ])


def test_parquet_partitions_needs_trainer_dask_before_any_run(tmp_path: Path) -> None:
    root = tmp_path / "data"
    _write_splits(root, n_partitions=2)
    db = tmp_path / "mlflow.db"
    cfg = _compose(root, f"sqlite:///{db}", "trainer=local")
    with pytest.raises(LtrUserError, match=r"data=parquet_partitions is read by Dask workers: (use|add) trainer=dask"):
        pipeline.run(cfg)
    assert not db.exists()  # raised before a tracker (or run) was created


@pytest.mark.parametrize("label_gain", [None, (0.0, 1.0, 7.0, 3.0, 15.0)])
def test_partition_tables_equal_whole_split_table(client: Any, tmp_path: Path, label_gain: Any) -> None:
    data = random_ranking_data(11, n_queries=80)
    labels = data.labels.copy()
    labels[labels == 4] = 3  # the largest label only in the last queries: ERR needs the split's
    labels[data.offsets[70] :] = np.maximum(labels[data.offsets[70] :], 4 * (data.labels[data.offsets[70] :] == 4))
    data = RankingData.from_group_sizes(
        data.features, labels, data.qids, data.group_sizes, feature_names=data.feature_names
    )
    write_query_partitions(data, tmp_path, n_partitions=4)
    split = read_query_partitions(client, tmp_path)
    booster = lgb.train(
        {"objective": "lambdarank", "num_leaves": 5, "verbose": -1, "min_data_in_leaf": 5},
        lgb.Dataset(data.features, data.labels, group=data.group_sizes), num_boost_round=5,
    )
    conventions = MetricConventions(label_gain=label_gain)
    strata = Strata()
    table, gap = partitioned_tables(
        client, booster, split, num_iteration=4, ks=[3, 10], conventions=conventions, strata=strata, gap_k=10
    )
    scores = np.asarray(booster.predict(data.features, num_iteration=4), dtype=np.float64)
    expected = per_query_table(
        data.labels, scores, data.offsets, data.qids, ks=[3, 10], conventions=conventions, strata=strata
    )
    pd.testing.assert_frame_equal(table, expected)
    assert gap == lightgbm_gap(data.labels, scores, data.offsets, data.qids, 10, conventions)
    # Without the split-wide largest gain, the first partition's ERR would differ.
    first = slice(0, int(data.offsets[20]))
    assert largest_gain(data.labels[first], conventions) < largest_gain(data.labels, conventions)
    alone = per_query_table(
        data.labels[first], scores[first], data.offsets[:21], data.qids[:20], ks=[10], conventions=conventions
    )
    assert not np.array_equal(alone["err_at_10"].to_numpy(), expected["err_at_10"].to_numpy()[:20])

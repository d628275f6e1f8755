"""Doc ids through whole-query Parquet partitions: written, read by the workers, named in the tables."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import lightgbm as lgb
import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from ltr.dask.parquet import read_query_partitions, write_query_partitions
from ltr.dask.partitioned import partitioned_tables
from ltr.metrics import MetricConventions, Strata, per_query_table
from ltr.metrics.top import top_rows
from tests.dask.conftest import random_ranking_data


def test_partition_tables_name_the_top_document(client: Any, tmp_path: Path) -> None:
    base = random_ranking_data(5, n_queries=50)
    data = dataclasses.replace(base, doc_ids=np.array([f"doc-{i}" for i in range(base.n_rows)], dtype=object))
    write_query_partitions(data, tmp_path / "ids", n_partitions=3)
    write_query_partitions(base, tmp_path / "plain", n_partitions=3)
    first = sorted((tmp_path / "ids").glob("*.parquet"))[0]
    assert pq.read_schema(first).names[:3] == ["qid", "label", "doc_id"]
    assert "doc_id" not in pq.read_schema(sorted((tmp_path / "plain").glob("*.parquet"))[0]).names
    with_ids = read_query_partitions(client, tmp_path / "ids")
    plain = read_query_partitions(client, tmp_path / "plain")
    assert with_ids.feature_names == plain.feature_names == base.feature_names  # not a feature
    assert plain.doc_ids is None
    assert with_ids.doc_ids is not None
    assert with_ids.doc_ids.compute().tolist() == data.doc_ids.tolist()  # type: ignore[union-attr]
    booster = lgb.train(
        {"objective": "lambdarank", "num_leaves": 5, "verbose": -1, "min_data_in_leaf": 5},
        lgb.Dataset(data.features, data.labels, group=data.group_sizes), num_boost_round=3,
    )
    conventions, strata = MetricConventions(ties="pessimistic"), Strata()
    tables = {
        name: partitioned_tables(client, booster, split, num_iteration=3, ks=[5, 10], conventions=conventions, strata=strata, gap_k=10)[0]
        for name, split in (("ids", with_ids), ("plain", plain))
    }
    scores = np.asarray(booster.predict(data.features, num_iteration=3), dtype=np.float64)
    expected = per_query_table(data.labels, scores, data.offsets, data.qids, ks=[5, 10], conventions=conventions, strata=strata)
    pd.testing.assert_frame_equal(tables["plain"], expected)
    pd.testing.assert_frame_equal(tables["ids"].drop(columns="top_doc_id"), expected)
    top = top_rows(scores, data.offsets, labels=data.labels, ties="pessimistic")
    assert tables["ids"]["top_doc_id"].tolist() == [f"doc-{r}" for r in top]

"""Per-query tables name each query's top-ranked document when the data has doc ids; nothing else changes."""

from __future__ import annotations

from pathlib import Path

import lightgbm as lgb
import numpy as np
import pandas as pd
from mlflow.tracking import MlflowClient

from ltr.data.formats.readers import read_ranking_file
from ltr.experiment import run as pipeline
from tests.conftest import compose_train


def _write_split(path: Path, rng: np.random.Generator, *, first_qid: int, with_ids: bool) -> None:
    lines = []
    for q in range(40):
        for d in range(int(rng.integers(2, 12))):
            label = int(rng.integers(0, 3))
            feats = " ".join(f"{j + 1}:{label * 0.3 + rng.normal():.4f}" for j in range(5))
            comment = f" #docid = D{first_qid + q}-{d} inc = 1" if with_ids else ""
            lines.append(f"{label} qid:{first_qid + q} {feats}{comment}")
    path.write_text("\n".join(lines) + "\n")


def _files(root: Path, *, with_ids: bool) -> list[str]:
    root.mkdir()
    out = []
    for i, split in enumerate(("train", "valid", "test")):
        _write_split(root / f"{split}.txt", np.random.default_rng(i), first_qid=1000 * i, with_ids=with_ids)
        out.append(f"data.{split}={root / f'{split}.txt'}")
    return out


def _compose(files: list[str], tmp_path: Path, *extra: str) -> object:
    return compose_train([
        "data=svmlight", *files, f"data.cache_dir={tmp_path / 'cache'}", "model.num_leaves=7",
        "fit.num_boost_round=15", "fit.early_stopping_rounds=5", "fit.show_progress=false",
        "eval.splits=[valid,test]", *extra,
    ])


def test_top_doc_id_names_the_top_ranked_document_and_nothing_else_changes(tmp_path: Path) -> None:
    """The same files with and without ``#docid`` comments: the same metrics and tables, plus a
    ``top_doc_id`` column (also in the logged per-query Parquet). One round of two-leaf trees
    gives two distinct scores, so every query's top is a tied block, ordered as the run's
    ``eval.ties=pessimistic`` orders it for its metrics: the worst label first."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    small = ("eval.ties=pessimistic", "fit.num_boost_round=1", "fit.early_stopping_rounds=null", "model.num_leaves=2")
    with_ids = pipeline.run(_compose(_files(tmp_path / "ids", with_ids=True), tmp_path, f"tracking.uri={uri}", *small))
    plain = pipeline.run(_compose(_files(tmp_path / "plain", with_ids=False), tmp_path, "tracking=none", *small))
    assert with_ids.metrics.keys() == plain.metrics.keys()
    for key, value in plain.metrics.items():
        if "seconds" not in key:
            assert with_ids.metrics[key] == value or (np.isnan(value) and np.isnan(with_ids.metrics[key])), key
    client = MlflowClient(uri)
    run_id = with_ids.run_id
    assert run_id is not None
    booster = lgb.Booster(model_file=client.download_artifacts(run_id, "model_text/model.txt", str(tmp_path)))
    for split in ("valid", "test"):
        table = with_ids.tables[split]
        assert list(table.columns) == [*plain.tables[split].columns, "top_doc_id"]
        pd.testing.assert_frame_equal(table.drop(columns="top_doc_id"), plain.tables[split])
        logged = pd.read_parquet(client.download_artifacts(run_id, f"per_query/{split}.parquet", str(tmp_path)))
        assert logged["top_doc_id"].tolist() == table["top_doc_id"].tolist()
        # the reference: score the split's file with the logged model; in every query, among the
        # rows of the highest score, the lowest label (the first row of equal labels)
        data = read_ranking_file(tmp_path / "ids" / f"{split}.txt")
        assert data.doc_ids is not None
        scores = booster.predict(data.features)
        expected, decided = [], 0
        for q in range(data.n_queries):
            a, b = int(data.offsets[q]), int(data.offsets[q + 1])
            tied = a + np.flatnonzero(scores[a:b] == scores[a:b].max())
            labels = data.labels[tied]
            decided += int(tied[np.argmin(labels)] != tied[0])  # not the first row of the block
            expected.append(data.doc_ids[tied[np.argmin(labels)]])
        assert decided >= 5  # the tie convention, not row order, picks the top of many queries
        assert table["top_doc_id"].tolist() == expected
        assert table["qid"].tolist() == data.qids.tolist()

"""Label recipes on Parquet / CSV tables (issue 29): the readers keep the behaviour columns a
recipe names, a recipe naming a column the data lacks is one line before any run, and the run
logs the label histogram of every source, on tables written here with hand-computed grades."""

from __future__ import annotations

import json
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
import pytest
from omegaconf import DictConfig, OmegaConf

from ltr.config.choices import RecipeKind
from ltr.config.groups.data import LabelRecipeConfig, LabelRuleConfig
from ltr.data.formats.readers import read_ranking_file
from ltr.errors import DataError, LtrUserError
from ltr.experiment import run as pipeline
from tests.conftest import compose_train

# Every query has 5 rows, written in this order (the file interleaves queries; the reader groups
# them). What users did, and the grade of recipe "buy" = purchase ? 3 : dwell >= 30 ? 2 : click ? 1 : 0:
#   row 0: click 1, dwell 50, purchase 1 -> 3
#   row 1: click 1, dwell 45, purchase 0 -> 2
#   row 2: click 1, dwell  3, purchase 0 -> 1
#   row 3: click 0, dwell  0, purchase 0 -> 0
#   row 4: click 0, dwell  0, purchase 0 -> 0
# so a split of Q queries has grades [2Q, Q, Q, Q] (rows of grade 0, 1, 2, 3). Recipe "score"
# (weighted: 1 click + 0.1 dwell, cut at 2, 5): scores 6, 5.5, 1.3, 0, 0 -> grades 2, 2, 0, 0, 0.
CLICK = [1, 1, 1, 0, 0]
DWELL = [50.0, 45.0, 3.0, 0.0, 0.0]
PURCHASE = [1, 0, 0, 0, 0]
BUY = [3, 2, 1, 0, 0]
SCORE = [2, 2, 0, 0, 0]
SPLIT_QUERIES = {"train": 12, "valid": 6, "test": 6}


def _table(n_queries: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(5):  # row i of every query, then row i + 1: the queries' rows interleave
        for q in range(n_queries):
            rows.append({
                "qid": 100 * seed + q, "label": int(rng.integers(0, 3)),
                "f1": float(rng.normal()), "f2": float(rng.normal()),
                "click": CLICK[i], "dwell": DWELL[i], "purchase": bool(PURCHASE[i]), "row": i,
            })  # fmt: skip
    return pd.DataFrame(rows)


def _write(tmp_path: Path, fmt: str) -> dict[str, Path]:
    files = {}
    for seed, (split, n) in enumerate(SPLIT_QUERIES.items(), start=1):
        path = tmp_path / f"{split}.{fmt}"
        frame = _table(n, seed)
        if fmt == "parquet":
            frame.to_parquet(path)
        else:
            frame.to_csv(path, index=False)
        files[split] = path
    return files


BEHAVIOURS = ["click", "dwell", "purchase"]


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_the_reader_keeps_behaviour_columns_beside_the_rows_not_as_features(tmp_path: Path, fmt: str) -> None:
    path = _write(tmp_path, fmt)["train"]
    data = read_ranking_file(path, behaviour_columns=BEHAVIOURS, feature_columns=None)
    assert data.feature_names == ("f1", "f2", "row")  # behaviours are not features
    assert data.behaviours is not None
    assert sorted(data.behaviours) == BEHAVIOURS
    rows = data.features[:, 2].astype(int)  # each row's index within its query, after grouping
    assert data.behaviours["click"].tolist() == [CLICK[r] for r in rows]
    assert data.behaviours["dwell"].tolist() == [DWELL[r] for r in rows]
    assert data.behaviours["purchase"].tolist() == [PURCHASE[r] for r in rows]
    plain = read_ranking_file(path)
    assert plain.behaviours is None
    assert "click" in plain.feature_names  # without behaviour_columns a column is a feature, as before


def test_a_behaviour_column_the_file_lacks_is_one_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "parquet")["train"]
    with pytest.raises(DataError, match=r"train.parquet has no behaviour column 'cart' \(columns: qid, label"):
        read_ranking_file(path, behaviour_columns=["click", "cart"])


def _plain(tracking_uri: str, files: dict[str, Path], *extra: str) -> DictConfig:
    """A tiny run on the tables (3 rounds), labels from the label column."""
    return compose_train([
        "data=parquet", *(f"data.{s}={p}" for s, p in files.items()), "data.cache=false",
        "data.feature_columns=[f1,f2]", "fit.num_boost_round=3", "fit.early_stopping_rounds=null",
        "fit.show_progress=false", "model.min_child_samples=2", "model.num_leaves=3",
        f"tracking.uri={tracking_uri}", *extra,
    ])  # fmt: skip


def _cfg(tracking_uri: str, files: dict[str, Path], *extra: str) -> DictConfig:
    """:func:`_plain` with the behaviour columns and the recipes "buy" and "score" (above)."""
    cfg = _plain(tracking_uri, files, f"data.behaviour_columns=[{','.join(BEHAVIOURS)}]", *extra)
    rule = LabelRuleConfig
    OmegaConf.set_struct(cfg, False)  # as a YAML overlay adds them (Hydra cannot from the command line)
    cfg.data.label_recipes["buy"] = LabelRecipeConfig(rules=[rule("purchase", 1.0, 3), rule("dwell", 30.0, 2), rule("click", 1.0, 1)])
    cfg.data.label_recipes["score"] = LabelRecipeConfig(
        kind=RecipeKind.weighted, weights={"click": 1.0, "dwell": 0.1}, thresholds=[2.0, 5.0]
    )
    OmegaConf.set_struct(cfg, True)
    return cfg


def _artifact(run_id: str, path: str, dst: Path) -> Path:
    return Path(mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path=path, dst_path=str(dst)))


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_training_on_a_recipe_of_a_table_logs_every_source_histogram(
    tmp_path: Path, tracking_uri: str, fmt: str
) -> None:
    files = _write(tmp_path, fmt)
    out = pipeline.run(_cfg(tracking_uri, files, "data.train_labels=buy", "data.eval_labels=score"))
    hist_of = {
        "buy": {s: [BUY.count(g) * n for g in range(4)] for s, n in SPLIT_QUERIES.items()},  # [2Q, Q, Q, Q]
        "score": {s: [SCORE.count(g) * n for g in range(3)] for s, n in SPLIT_QUERIES.items()},  # [3Q, 0, 2Q]
    }
    assert hist_of["buy"]["train"] == [24, 12, 12, 12]
    for g, n in enumerate(hist_of["buy"]["train"]):
        assert out.metrics[f"labels/buy/train/grade_{g}"] == n
    for g, n in enumerate(hist_of["score"]["test"]):
        assert out.metrics[f"labels/score/test/grade_{g}"] == n
    mlflow.set_tracking_uri(tracking_uri)
    # judged on "score": every query's ideal DCG@10 holds two grade-2 rows: (2^2-1)(1 + 1/log2(3))
    table = pd.read_parquet(_artifact(str(out.run_id), "per_query/test.parquet", tmp_path / "t"))
    assert len(table) == SPLIT_QUERIES["test"]
    assert np.allclose(table["idcg_at_10"], 3 * (1 + 1 / np.log2(3)), rtol=0, atol=1e-12)
    run = mlflow.get_run(out.run_id)
    assert run.data.tags["ltr.labels.train"] == "buy"
    hist = json.loads(_artifact(str(out.run_id), "labels/histogram.json", tmp_path / "a").read_text())
    assert hist["sources"] == {"train": "buy", "valid": "label", "eval": "score"}
    assert hist["histograms"]["buy"] == hist_of["buy"]
    assert hist["histograms"]["score"] == hist_of["score"]
    labels = {s: pd.read_csv(p) if fmt == "csv" else pd.read_parquet(p) for s, p in files.items()}
    assert hist["histograms"]["label"]["valid"] == np.bincount(labels["valid"]["label"], minlength=3).tolist()


def test_default_labels_of_a_table_with_recipes_are_its_label_column(tmp_path: Path, tracking_uri: str) -> None:
    """Recipes defined but not used: the run is the plain table's run, metric for metric."""
    files = _write(tmp_path, "parquet")
    base = pipeline.run(_plain(tracking_uri, files, "tracking.enabled=false"))
    with_recipes = pipeline.run(_cfg(tracking_uri, files, "tracking.enabled=false"))
    assert with_recipes.metrics["test/ndcg_at_10"] == base.metrics["test/ndcg_at_10"]
    assert with_recipes.metrics["labels/label/train/grade_0"] == float((pd.read_parquet(files["train"])["label"] == 0).sum())


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["data.behaviour_columns=[click,dwell]"], "data.label_recipes.buy: column 'purchase' is not a behaviour column of the data (click, dwell); a table's recipes grade the columns listed in data.behaviour_columns"),
        (["data.train_labels=relevance"], "data.train_labels='relevance' is not one of: label, buy, score (define a recipe in data.label_recipes)"),
    ],
)
def test_a_recipe_naming_an_unlisted_column_is_refused_before_any_run(
    tmp_path: Path, tracking_uri: str, extra: list[str], message: str
) -> None:
    files = _write(tmp_path, "parquet")
    with pytest.raises(LtrUserError) as refused:
        pipeline.run(_cfg(tracking_uri, files, *extra))
    assert str(refused.value) == message
    assert not (tmp_path / "mlflow.db").exists()


def test_a_listed_column_the_file_lacks_is_one_line_and_no_run(tmp_path: Path, tracking_uri: str) -> None:
    files = _write(tmp_path, "csv")
    with pytest.raises(DataError, match=r"train.csv has no behaviour column 'cart' \(columns: .*\); fix data.behaviour_columns"):
        pipeline.run(_cfg(tracking_uri, files, "data.behaviour_columns=[click,dwell,purchase,cart]"))
    assert not (tmp_path / "mlflow.db").exists()

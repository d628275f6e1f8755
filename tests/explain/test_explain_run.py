"""``ltr explain`` on real runs (tests/explain/conftest.py): the contributions equal ``ltr
predict``'s scores row by row, the centred ones sum per query to the score minus the query's
mean, the importance logged on the run is the one the file gives when recomputed here, the
views and ``ltr compare --explain``; the run's metrics are left as they were."""

from __future__ import annotations

import json
from pathlib import Path

import lightgbm as lgb
import numpy as np
import pandas as pd
import pytest

from ltr.cli.main import main as ltr_main
from ltr.explain import contributions, explain_input, pair_view
from ltr.explain.files import FIXED_COLUMNS
from ltr.models.inputs import split_input
from ltr.models.logged import load_run
from ltr.tracking.runs import RunStore
from tests.explain.conftest import Store


def _features(table: pd.DataFrame) -> list[str]:
    return [c for c in table.columns if c not in FIXED_COLUMNS]


def _artifacts(store: Store, run: str) -> Path:
    return store.root / "mlartifacts" / store.run_ids[run] / "artifacts"


@pytest.fixture(scope="module")
def explained(store: Store, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``ltr predict --out`` and ``ltr explain --out`` (plain, centred) of run ``a``'s test split;
    the run's metrics before them under ``metrics``."""
    folder = tmp_path_factory.mktemp("explained")
    before = RunStore(store.uri, reap=False)
    record = before.resolve("a", experiment="ltr")
    (folder / "metrics.json").write_text(json.dumps(before.metrics(record)))
    common = ["--split", "test", "--tracking-uri", store.uri]
    assert ltr_main(["predict", "a", *common, "--out", str(folder / "scores.txt")]) == 0
    assert ltr_main(["explain", "a", *common, "--out", str(folder / "x.parquet")]) == 0
    assert ltr_main(["explain", "a", *common, "--out", str(folder / "c.parquet"), "--centred", "--no-log"]) == 0
    return {"scores": folder / "scores.txt", "plain": folder / "x.parquet", "centred": folder / "c.parquet", "metrics": folder / "metrics.json"}


def test_contributions_plus_expected_value_are_ltr_predicts_scores(explained: dict[str, Path]) -> None:
    scores = np.loadtxt(explained["scores"])
    table = pd.read_parquet(explained["plain"])
    assert len(table) == scores.size
    np.testing.assert_array_equal(table["score"].to_numpy(), scores)  # the same scores, bit for bit
    rebuilt = table[_features(table)].to_numpy().sum(axis=1) + table["expected_value"].to_numpy()
    assert np.abs(rebuilt - scores).max() < 1e-6
    assert table["expected_value"].nunique() == 1
    assert list(table.columns[:4]) == ["qid", "label", "score", "expected_value"]


def test_centred_rows_of_a_query_sum_to_the_score_minus_the_querys_mean(explained: dict[str, Path]) -> None:
    table = pd.read_parquet(explained["centred"])
    plain = pd.read_parquet(explained["plain"])
    mean = table.groupby("qid", sort=False)["score"].transform("mean")
    features = _features(table)
    assert np.abs(table[features].to_numpy().sum(axis=1) - (table["score"] - mean).to_numpy()).max() < 1e-6
    np.testing.assert_allclose(table["query_mean_score"], mean, atol=1e-12)
    # independently: each plain column minus its query's mean
    np.testing.assert_allclose(table[features], plain[features] - plain.groupby("qid", sort=False)[features].transform("mean"), atol=1e-12)


def test_the_run_holds_the_importance_of_its_test_split_overall_and_per_stratum(store: Store, explained: dict[str, Path]) -> None:
    logged = json.loads((_artifacts(store, "a") / "explain" / "importance.json").read_text())
    assert (_artifacts(store, "a") / "explain" / "importance_by_stratum.png").stat().st_size > 10_000
    assert logged["split"] == "test"
    assert logged["run_id"] == store.run_ids["a"]
    groups = {g["key"]: g for g in logged["groups"]}
    assert list(groups) == ["all", "len_1-10", "len_11-50", "len_51_plus"]
    # recomputed from the centred file with pandas: per query the mean |value|, then the mean over queries
    table = pd.read_parquet(explained["centred"])
    features = _features(table)
    per_query = table[features].abs().groupby(table["qid"], sort=False).mean()
    sizes = table.groupby("qid", sort=False).size()
    stratum = pd.cut(sizes, [0, 10, 50, np.inf], labels=["len_1-10", "len_11-50", "len_51_plus"])
    for key, members in [("all", sizes.index), *((k, sizes.index[stratum == k]) for k in ["len_1-10", "len_11-50", "len_51_plus"])]:
        assert groups[key]["n_queries"] == len(members)
        assert groups[key]["n_documents"] == int(sizes[members].sum())
        expected = per_query.loc[members].mean() if len(members) else pd.Series(0.0, index=features)
        got = pd.Series(groups[key]["importance"])[features]
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)
    assert logged["features"][0] == max(features, key=lambda f: groups["all"]["importance"][f])


def test_explaining_leaves_every_metric_of_the_run_as_it_was(store: Store, explained: dict[str, Path]) -> None:
    after = RunStore(store.uri, reap=False)
    assert after.metrics(after.resolve("a", experiment="ltr")) == json.loads(explained["metrics"].read_text())


def test_one_query_in_the_runs_order_with_labels_and_top_features(store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    run = load_run("a", tracking_uri=store.uri)
    longest = split_input(run, "test")
    data = next(iter(longest.batches()))
    q = int(np.argmax(np.diff(data.offsets)))
    qid = str(data.written_qids()[q])
    capsys.readouterr()
    assert ltr_main(["explain", "a", "--split", "test", "--query", qid, "--top", "2", "--tracking-uri", store.uri]) == 0
    out = capsys.readouterr().out
    size = int(np.diff(data.offsets)[q])
    assert f"query {qid}: {size} documents in the run's order" in out
    explained = explain_input(run, split_input(run, "test"), query=qid)
    rows = explained.query
    assert rows is not None
    assert len(rows.docs) == size
    assert np.all(np.diff(rows.scores[rows.order]) <= 0)  # the run's order: no re-ranking, by score
    top_doc = rows.order[0]
    name, value = rows.top_features(int(top_doc), 1)[0]
    assert f"{rows.docs[top_doc]} " in out
    assert f"{name} {value:+.3f}" in out
    # a pair: the first and the last of the list, feature by feature
    first, last = rows.docs[rows.order[0]], rows.docs[rows.order[-1]]
    pair = pair_view(rows, first, last)
    assert abs(pair.differences.sum() - pair.score_difference) < 1e-9
    assert pair.score_difference >= 0
    assert ltr_main(["explain", "a", "--split", "test", "--query", qid, "--pair", first, last, "--tracking-uri", store.uri]) == 0
    out = capsys.readouterr().out
    assert f"{pair.score_difference:+.4f}" in out
    assert f"{first} (rank 1" in out


def test_a_reranked_run_is_explained_by_its_models_scores_and_says_so(store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    run = load_run("r", tracking_uri=store.uri)
    data = next(iter(split_input(run, "test").batches()))
    q = int(np.argmax(np.diff(data.offsets)))
    qid = str(data.written_qids()[q])
    capsys.readouterr()
    assert ltr_main(["explain", "r", "--split", "test", "--query", qid, "--no-log", "--tracking-uri", store.uri]) == 0
    assert "re-ranks (rerank=diversify): the contributions explain the model's scores, before re-ranking" in capsys.readouterr().out
    rows = explain_input(run, split_input(run, "test"), query=qid).query
    assert rows is not None
    np.testing.assert_array_equal(rows.scores, run.booster.predict(data.features[data.offsets[q] : data.offsets[q + 1]]))
    assert np.ptp(rows.scores - rows.contributions.sum(axis=1)) < 1e-9  # the model's scores: + expected_value, the same for all
    assert np.all(np.diff(rows.ranked_by[rows.order]) <= 0)  # listed in the run's final order
    assert not np.array_equal(rows.order, np.argsort(-rows.scores, kind="stable"))  # which is not the scores' order here


def test_compare_explain_lists_importance_differences_per_stratum(store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert ltr_main(["compare", "a", "b", "--explain", "--markdown", "--n-resamples", "100", "--tracking-uri", store.uri, "--log"]) == 0
    out = capsys.readouterr().out
    assert "### Feature importance: b vs a" in out
    lines = [line for line in out.splitlines() if line.startswith("| ") and line.count("|") == 6]
    assert {line.split("|")[1].strip() for line in lines} >= {"all", "1-10", "11-50", "51+"}
    client = RunStore(store.uri, reap=False).client
    compared = [r for r in client.search_runs([client.get_experiment_by_name("ltr (comparisons)").experiment_id]) if r.data.tags.get("ltr.kind") == "comparison"]
    data = json.loads(Path(client.download_artifacts(compared[0].info.run_id, "comparison/comparison.json")).read_text())
    rows = data["explain"][0]["rows"]
    assert data["explain"][0]["other"] == "b"
    assert all(abs(r["other"] - r["baseline"] - r["delta"]) < 1e-12 for r in rows)


def test_the_contributions_of_a_one_split_tree_by_hand(tmp_path: Path) -> None:
    """One tree, one split on feature 1: its contribution is the leaf's value minus the mean
    leaf value (weighted by the training rows in each leaf); feature 0 contributes nothing."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 2)).astype(np.float32)
    y = (x[:, 1] > 0).astype(float)
    booster = lgb.train({"objective": "regression", "num_leaves": 2, "learning_rate": 1.0, "min_data_in_leaf": 1, "verbose": -1}, lgb.Dataset(x, y), 1)
    tree = booster.dump_model()["tree_info"][0]["tree_structure"]
    left, right = tree["left_child"], tree["right_child"]
    expected = (left["leaf_value"] * left["leaf_count"] + right["leaf_value"] * right["leaf_count"]) / (left["leaf_count"] + right["leaf_count"])
    contrib, base = contributions(booster, x)
    leaf = np.where(x[:, 1] <= tree["threshold"], left["leaf_value"], right["leaf_value"])
    np.testing.assert_allclose(base, expected, rtol=1e-12)
    np.testing.assert_allclose(contrib[:, 1], leaf - expected, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(contrib[:, 0], 0.0)


def test_files_with_document_ids(store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--data``: Parquet with a document id column; the file carries the ids, ``--pair`` takes them."""
    assert ltr_main(["data", "write", "synthetic", "--out", str(tmp_path / "d"), "--format", "parquet", "data.n_queries=30"]) == 0
    data = tmp_path / "d" / "test.parquet"
    written = pd.read_parquet(data)
    out = tmp_path / "x.parquet"
    common = ["--data", str(data), "--doc-id-column", "doc_id", "--tracking-uri", store.uri]
    assert ltr_main(["explain", "a", *common, "--out", str(out), "--no-log"]) == 0
    table = pd.read_parquet(out)
    assert table["doc_id"].tolist() == written["doc_id"].astype(str).tolist()
    rebuilt = table[_features(table)].to_numpy().sum(axis=1) + table["expected_value"].to_numpy()
    assert np.abs(rebuilt - table["score"].to_numpy()).max() < 1e-6
    qid = str(written["qid"].iloc[0])
    docs = written.loc[written["qid"].astype(str) == qid, "doc_id"].astype(str).tolist()
    capsys.readouterr()
    assert ltr_main(["explain", "a", *common, "--query", qid, "--pair", docs[0], docs[-1]]) == 0
    mine = table[table["doc_id"].isin([docs[0], docs[-1]])].set_index("doc_id")
    difference = mine.loc[docs[0], "score"] - mine.loc[docs[-1], "score"]
    assert f"{difference:+.4f}" in capsys.readouterr().out


def test_a_refusal_after_the_work_leaves_no_file_and_nothing_on_the_run(store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "x.parquet"
    common = ["explain", "b", "--split", "test", "--out", str(out), "--log", "--tracking-uri", store.uri]
    assert ltr_main([*common, "--query", "no-such-query"]) == 2
    assert "--query no-such-query: no query 'no-such-query' in the test split of run" in capsys.readouterr().err
    run = load_run("b", tracking_uri=store.uri)
    qid = str(next(iter(split_input(run, "test").batches())).written_qids()[0])
    assert ltr_main([*common, "--query", qid, "--pair", f"{qid}-0", "no-such-doc"]) == 2
    assert f"--pair: query {qid} has no document 'no-such-doc'" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # no file, no temporary one
    assert not (_artifacts(store, "b") / "explain").exists()

"""``ltr ope RUN --log FILE --data FILE``: a real run of a written click log, its estimates logged
on the run and read back; its training queries left out; two runs' paired difference holding the
exact B - A of the simulator's click model; every refusal one line, exit 2, nothing logged."""

from __future__ import annotations

import json
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from ltr.api import predict
from ltr.cli.main import main as ltr_main
from ltr.config.groups.data import SyntheticClicksDataConfig
from ltr.data.feedback.clicks import attractiveness, examination_curve, rank_within_queries
from ltr.experiment import run as pipeline
from ltr.online.ope import at_least_one
from tests.conftest import compose_train

SIZE = ("data.n_queries=300",)
COMMON = ("data=synthetic_clicks", *SIZE, "fit.num_boost_round=20", "fit.early_stopping_rounds=10", "fit.show_progress=false",
          "model.num_leaves=7", "tracking.log_model=false", "data.train_labels=relevance")  # fmt: skip


@dataclass(frozen=True)
class Written:
    uri: str
    run_id: str
    folder: Path


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Written:
    root = tmp_path_factory.mktemp("ope")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    assert ltr_main(["data", "write", "synthetic_clicks", "--out", str(root / "data"), "--format", "parquet", *SIZE]) == 0
    overrides = [*COMMON, f"tracking.uri={uri}", "tracking.run_name=relevance"]
    out = pipeline.run(compose_train(overrides), overrides=overrides)
    assert out.run_id is not None
    clicks = [*COMMON[:-1], f"tracking.uri={uri}", "tracking.run_name=clicks"]  # trained on the log's clicks
    assert pipeline.run(compose_train(clicks), overrides=clicks).run_id is not None
    return Written(uri, out.run_id, root / "data")


def _ope_metrics(written: Written) -> dict[str, float]:
    run = MlflowClient(tracking_uri=written.uri).get_run(written.run_id)
    return {k: v for k, v in run.data.metrics.items() if k.startswith("ope/")}


def test_ltr_ope_logs_every_estimate_on_the_run(written: Written, capsys: pytest.CaptureFixture[str]) -> None:
    before = MlflowClient(tracking_uri=written.uri).get_run(written.run_id).data.metrics
    argv = ["ope", "relevance", "--log", str(written.folder / "clicks.parquet"), "--data", str(written.folder / "test.parquet"),
            "--eta", "1", "--clip", "20", "--k", "5", "--bootstrap", "200", "--tracking-uri", written.uri]  # fmt: skip
    assert ltr_main(argv) == 0
    out = capsys.readouterr().out
    assert "off-policy estimates of run" in out
    assert "look like a cascade" not in out
    assert "(not PBM" not in out
    assert "clip 20" in out
    m = _ope_metrics(written)
    for estimator in ("ips", "snips", "dr", "dm"):
        for metric in ("ctr", "clicks_at_5", "purchase_rate"):
            key = f"ope/{estimator}/{metric}"
            if estimator == "dm":  # a model's guess: its value, no interval
                assert f"{key}/low" not in m, key
                assert f"{key}/high" not in m, key
            else:
                assert m[f"{key}/low"] <= m[key] <= m[f"{key}/high"], key
            assert m[f"{key}/ess"] > 0
    dm_lines = [line for line in out.splitlines() if line.startswith("dm ")]
    assert len(dm_lines) == 3, dm_lines
    assert all("(model, no interval)" in line for line in dm_lines), dm_lines
    assert 0 < m["ope/ips/ctr"] < 1.5
    assert m["ope/n_queries"] > 0
    run = MlflowClient(tracking_uri=written.uri).get_run(written.run_id)
    assert run.data.tags["ltr.ope.clip"] == "20"
    assert run.data.tags["ltr.ope.propensities"] == "(1/rank)^1"
    after = run.data.metrics
    assert {k: v for k, v in after.items() if not k.startswith("ope/")} == before  # the run's own metrics untouched
    artifacts = {a.path for a in MlflowClient(tracking_uri=written.uri).list_artifacts(written.run_id, "ope")}
    assert "ope/ope.json" in artifacts


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("no-propensities", "propensities missing"),
        ("unknown-estimator", "--estimators 'ips,magic': each must be one of"),
        ("three-runs", "takes one run, or two (A B)"),
        ("no-overlap", "no overlap"),
        ("missing-column", "has no column 'position'"),
    ],
)
def test_refusals_are_one_line_exit_2_and_log_nothing(
    case: str, message: str, written: Written, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = written.folder / "clicks.parquet"
    props: list[str] = ["--eta", "1"]
    runs = ["relevance"]
    if case == "no-propensities":
        props = []
    elif case == "unknown-estimator":
        props = ["--eta", "1", "--estimators", "ips,magic"]
    elif case == "three-runs":
        runs = ["relevance", "clicks", "relevance"]
    elif case == "no-overlap":
        frame = pd.read_parquet(log).head(50)
        frame["doc_id"] = "other-" + frame["doc_id"].astype(str)
        log = tmp_path / "clicks.csv"
        frame.to_csv(log, index=False)
    elif case == "missing-column":
        log = tmp_path / "clicks.csv"
        pd.read_parquet(written.folder / "clicks.parquet").drop(columns=["position"]).head(50).to_csv(log, index=False)
    before = _ope_metrics(written)
    argv = ["ope", *runs, "--log", str(log), "--data", str(written.folder / "test.parquet"), *props,
            "--bootstrap", "50", "--tracking-uri", written.uri]  # fmt: skip
    assert ltr_main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("ltr: error: "), err
    assert message in err[0], err
    assert _ope_metrics(written) == before


def _exact(written: Written, run: str, queries: set[str], k: int) -> tuple[float, float]:
    """The run's exact CTR@k and clicks@k on ``queries`` under the simulator's click model (true
    grades, examination (1/rank)^eta, the default config the log was written with), its ranking of
    each query's logged documents as ltr ope joins them (the log's row order breaks ties)."""
    cfg = SyntheticClicksDataConfig()
    test = pd.read_parquet(written.folder / "test.parquet", columns=["qid", "doc_id"])
    scores = predict(run, written.folder / "test.parquet", tracking_uri=written.uri).scores
    scored = pd.DataFrame({"query": test["qid"].astype(str), "doc_id": test["doc_id"].astype(str), "score": scores})
    log = pd.read_parquet(written.folder / "clicks.parquet", columns=["query", "doc_id", "relevance"])
    log = log.assign(query=log["query"].astype(str), doc_id=log["doc_id"].astype(str))
    joined = log[log["query"].isin(queries)].merge(scored, on=["query", "doc_id"], how="inner", sort=False)
    codes, _ = pd.factorize(joined["query"], sort=False)
    order = np.argsort(codes, kind="stable")
    joined, codes = joined.iloc[order], codes[order]
    offsets = np.concatenate([[0], np.cumsum(np.bincount(codes))]).astype(np.int64)
    ranks = rank_within_queries(joined["score"].to_numpy(np.float64), offsets).astype(np.int64)
    exam = examination_curve(int(ranks.max()) + 1, eta=float(cfg.examination_eta))
    grades = joined["relevance"].to_numpy(np.int64)
    p = np.where(ranks < k, exam[ranks], 0.0) * attractiveness(grades, click_noise=cfg.click_noise, click_max=cfg.click_max)
    n_q = offsets.size - 1
    return float(at_least_one(p, codes, n_q).mean()), float(np.bincount(codes, weights=p, minlength=n_q).mean())


def test_two_runs_paired_difference_holds_the_exact_truth(written: Written, capsys: pytest.CaptureFixture[str]) -> None:
    """``ltr ope clicks relevance --json`` on the test queries (neither run trained on them): the
    difference interval of IPS, SNIPS and DR holds the exact B - A of CTR@10 and clicks@10, each
    run's values lie in their intervals, and the first line counts the training queries left out."""
    before = _ope_metrics(written)
    argv = ["ope", "clicks", "relevance", "--log", str(written.folder / "clicks.parquet"), "--data",
            str(written.folder / "test.parquet"), "--eta", "1", "--k", "10", "--bootstrap", "300", "--json",
            "--estimators", "ips,snips,dr,dm,rips", "--tracking-uri", written.uri]  # fmt: skip
    assert ltr_main(argv) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert captured.err.splitlines()[0].startswith("left out 180 of 300 logged queries as training queries of run ")
    assert out["training_queries"]["n_left_out"] == 180
    test_queries = set(pd.read_parquet(written.folder / "test.parquet", columns=["qid"])["qid"].astype(str))
    assert out["runs"]["A"]["n_queries"] == len(test_queries) == 60
    ctr_a, clicks_a = _exact(written, "clicks", test_queries, 10)
    ctr_b, clicks_b = _exact(written, "relevance", test_queries, 10)
    truth = {"ctr": ctr_b - ctr_a, "clicks_at_10": clicks_b - clicks_a}
    for estimator in ("ips", "snips", "dr"):
        for metric, true in truth.items():
            d = out["difference"][estimator][metric]
            assert d["low"] <= true <= d["high"], (estimator, metric, d, true)
            a, b = out["runs"]["A"]["estimates"][estimator][metric], out["runs"]["B"]["estimates"][estimator][metric]
            assert d["value"] == pytest.approx(b["value"] - a["value"])
    for run in ("A", "B"):
        for estimator, metrics in out["runs"][run]["estimates"].items():
            for metric, e in metrics.items():
                top = 10.0 if metric == "clicks_at_10" else 1.0
                if estimator in ("dm", "rips"):  # a model's guess (or its prefix ratios): null bounds and the reason
                    assert (e["low"], e["high"]) == (None, None), e
                    assert ("not its bias" if estimator == "dm" else "direct method's fitted attractiveness") in e["no_interval"], e
                    assert 0.0 <= e["value"] <= top
                    continue
                assert 0.0 <= e["low"] <= e["value"] <= e["high"] <= top, (run, estimator, metric, e)
    for metric, d in out["difference"]["dm"].items():
        assert (d["low"], d["high"], d["verdict"]) == (None, None, "no interval (model)"), (metric, d)
    assert out["verdict"]["estimator"] == "dr"  # the steadiest CTR, never dm
    assert out["runs"]["A"]["coverage"] == 1.0
    assert set(out["runs"]["B"]["max_weight"]) == {"ips", "snips", "dr", "dm", "rips"}
    assert out["verdict"]["verdict"] in ("B better", "A better", "cannot tell")
    assert _ope_metrics(written) == before  # two runs: nothing logged
    # the direct method first, or alone: the verdict line is never its guess
    dm_first = ["ope", "clicks", "relevance", "--log", str(written.folder / "clicks.parquet"), "--data",
                str(written.folder / "test.parquet"), "--eta", "1", "--bootstrap", "50", "--tracking-uri", written.uri]  # fmt: skip
    assert ltr_main([*dm_first, "--estimators", "dm,ips"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert next(line for line in lines if line.startswith("verdict")).startswith("verdict at 95 % (ips ctr): ")
    assert all(line.endswith("(model, no interval)  no interval (model)") for line in lines if line.startswith("dm "))
    assert ltr_main([*dm_first, "--estimators", "dm"]) == 0
    assert [line for line in capsys.readouterr().out.splitlines() if line.startswith("verdict")] == [
        "verdict: none, dm has no interval (a model's guess; ask for ips, snips or dr too)"
    ]


def test_training_queries_kept_on_request_and_the_propensities_of_a_run(
    written: Written, capsys: pytest.CaptureFixture[str]
) -> None:
    """--include-training-queries keeps them and names the bias; --propensities-from takes the
    curve the run estimated (its logged propensity/pos_k), printed with its source."""
    argv = ["ope", "relevance", "--log", str(written.folder / "clicks.parquet"), "--data", str(written.folder / "train.parquet"),
            "--propensities-from", "relevance", "--include-training-queries", "--bootstrap", "50", "--no-log",
            "--tracking-uri", written.uri]  # fmt: skip
    assert ltr_main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("kept every one of the 300 logged queries, 180 of them training queries of run ")
    assert lines[0].endswith("estimates on the run's own training clicks are biased upward")
    assert " 180 queries," in lines[1]
    assert "of run " in lines[1].split("propensities ", 1)[1]
    curve = [float(v) for v in lines[1].split("propensities ", 1)[1].split(" of run")[0].rstrip(",.").split(",")]
    metrics = MlflowClient(tracking_uri=written.uri).get_run(written.run_id).data.metrics
    assert curve[:3] == pytest.approx([metrics[f"propensity/pos_{k}"] for k in (1, 2, 3)], rel=1e-2)


def test_a_training_split_that_cannot_be_made_is_one_line(written: Written, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run on Parquet files whose training file is gone: one line naming the flag that proceeds;
    with the flag, the estimates on every logged query."""
    for split in ("train", "test"):
        shutil.copy(written.folder / f"{split}.parquet", tmp_path / f"{split}.parquet")
    overrides = ["data=parquet", f"data.train={tmp_path / 'train.parquet'}", f"data.test={tmp_path / 'test.parquet'}",
                 "data.doc_id_column=doc_id", "fit.num_boost_round=5", "fit.show_progress=false", "model.num_leaves=3",
                 "tracking.log_model=false", f"tracking.uri={written.uri}", "tracking.run_name=gone"]  # fmt: skip
    assert pipeline.run(compose_train(overrides), overrides=overrides).run_id is not None
    (tmp_path / "train.parquet").unlink()
    argv = ["ope", "gone", "--log", str(written.folder / "clicks.parquet"), "--data", str(tmp_path / "test.parquet"),
            "--propensities", "1,0.5,0.33", "--bootstrap", "50", "--no-log", "--tracking-uri", written.uri]  # fmt: skip
    assert ltr_main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "the training split of run " in err[0], err
    assert "--include-training-queries" in err[0], err
    assert ltr_main([*argv, "--include-training-queries"]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("kept every one of the 300 logged queries, any of them")


def _cascade_log(written: Written, path: Path) -> Path:
    """The written log with only each session's first click kept (and its purchase): the clicks a
    cascade user who leaves at the first click would make."""
    frame = pd.read_parquet(written.folder / "clicks.parquet").sort_values(["query", "position"], kind="stable")
    first = (frame["click"] > 0) & (frame.groupby("query")["click"].cumsum() == 1)
    frame["click"] = first.astype(np.int64)
    frame["purchase"] = frame["purchase"] * frame["click"]
    frame.to_csv(path, index=False)
    return path


def test_a_cascade_log_withholds_the_position_based_intervals(
    written: Written, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every session's first click only: ips, snips and dr print their value with no interval and
    one note says why (the plain table, --json's nulls and reason, the paired verdict); the
    values are those --assume-position-based prints with their intervals; exit 0 either way."""
    from ltr.online.ope import NOT_POSITION_BASED_REASON

    log = _cascade_log(written, tmp_path / "cascade.csv")
    data = [str(written.folder / f"{split}.parquet") for split in ("train", "valid", "test")]
    argv = ["ope", "relevance", "--log", str(log), "--data", *data, "--eta", "1", "--include-training-queries",
            "--bootstrap", "50", "--no-log", "--tracking-uri", written.uri]  # fmt: skip
    assert ltr_main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = {tuple(line.split()[:2]): line for line in lines if line.split()[:1] in (["ips"], ["snips"], ["dr"], ["dm"])}
    assert len(rows) == 12, rows
    for (estimator, _), line in rows.items():
        assert line.split()[2].replace(".", "").isdigit(), line  # the value is printed
        assert ("(model, no interval)" if estimator == "dm" else "(not PBM, no interval)") in line, line
    notes = [line for line in lines if line.startswith("note")]
    assert len(notes) == 1, notes
    assert notes[0].startswith("note: no interval for ips, snips, dr: the log has 0 sessions with two or more clicks where "
                               "position-based users would make ")  # fmt: skip
    assert notes[0].endswith("(--assume-position-based prints their intervals anyway)")
    assert ltr_main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for estimator in ("ips", "snips", "dr"):
        for metric, e in out["estimates"][estimator].items():
            assert (e["low"], e["high"], e["no_interval"]) == (None, None, NOT_POSITION_BASED_REASON), (estimator, metric)
    assert out["notes"] == [notes[0].removeprefix("note: ")]
    assert ltr_main([*argv, "--json", "--assume-position-based"]) == 0
    kept = json.loads(capsys.readouterr().out)
    for estimator in ("ips", "snips", "dr"):
        for metric, e in kept["estimates"][estimator].items():
            assert e["low"] <= e["value"] <= e["high"], (estimator, metric)
            assert e["value"] == out["estimates"][estimator][metric]["value"]  # the same values
    assert kept["notes"][0].endswith("their intervals are printed as asked (--assume-position-based) and may miss the truth")
    # two runs: every position-based difference withheld, and the verdict line says why
    paired = ["ope", "clicks", "relevance", *argv[2:]]
    assert ltr_main(paired) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines if line.startswith("verdict")] == [
        "verdict: none, the intervals of ips, snips and dr are withheld: the clicks are not position-based (the note)"
    ]
    assert all(line.endswith("(not PBM, no interval)  no interval (clicks not position-based)")
               for line in lines if line.split()[:1] in (["ips"], ["snips"], ["dr"]))  # fmt: skip
    assert ltr_main([*paired, "--json"]) == 0
    verdict = json.loads(capsys.readouterr().out)["verdict"]
    assert verdict == {"estimator": None, "metric": None, "verdict": "no interval (clicks not position-based)"}


def test_a_stop_signal_once_the_estimates_are_logged_stops_nothing(written: Written) -> None:
    """``log_ope`` makes the command's work final (``ltr.runtime.stops.committing``): a SIGINT that
    arrives after it (the "logged as" line, the command's return) ends the command with its
    estimates logged and exit 0, not exit 130 with a store the user is told was not written."""
    from ltr.models.ope_run import OpeOptions, log_ope, run_ope
    from ltr.runtime.stops import stop_signals_recorded

    options = OpeOptions(None, 1.0, 5, None, n_bootstrap=50, tracking_uri=written.uri)
    ope = run_ope("clicks", written.folder / "clicks.parquet", [written.folder / "test.parquet"], options, logs=True)
    with stop_signals_recorded():
        log_ope(ope)
        signal.raise_signal(signal.SIGINT)  # handled here, by the block's handler: no KeyboardInterrupt
    run = MlflowClient(tracking_uri=written.uri).get_run(ope.run.run_id)
    assert run.data.tags["mlflow.runName"] == "clicks"
    assert run.data.metrics["ope/ips/ctr/low"] <= run.data.metrics["ope/ips/ctr"] <= run.data.metrics["ope/ips/ctr/high"]

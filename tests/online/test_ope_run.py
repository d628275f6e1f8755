"""``ltr ope RUN --log FILE --data FILE``: a real run of a written click log, its estimates logged
on the run and read back; every refusal one line, exit 2, nothing logged."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from ltr.cli.main import main as ltr_main
from ltr.experiment import run as pipeline
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
    assert "clip 20" in out
    m = _ope_metrics(written)
    for estimator in ("ips", "snips", "dr", "dm"):
        for metric in ("ctr", "clicks_at_5", "purchase_rate"):
            key = f"ope/{estimator}/{metric}"
            assert m[f"{key}/low"] <= m[key] <= m[f"{key}/high"], key
            assert m[f"{key}/ess"] > 0
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
        ("short-propensities", "propensities missing for positions"),
        ("no-overlap", "no overlap"),
        ("missing-column", "has no column 'position'"),
    ],
)
def test_refusals_are_one_line_exit_2_and_log_nothing(
    case: str, message: str, written: Written, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = written.folder / "clicks.parquet"
    props: list[str] = ["--eta", "1"]
    if case == "no-propensities":
        props = []
    elif case == "short-propensities":
        props = ["--propensities", "1,0.5,0.3"]
    elif case == "no-overlap":
        frame = pd.read_parquet(log).head(50)
        frame["doc_id"] = "other-" + frame["doc_id"].astype(str)
        log = tmp_path / "clicks.csv"
        frame.to_csv(log, index=False)
    elif case == "missing-column":
        log = tmp_path / "clicks.csv"
        pd.read_parquet(written.folder / "clicks.parquet").drop(columns=["position"]).head(50).to_csv(log, index=False)
    before = _ope_metrics(written)
    argv = ["ope", "relevance", "--log", str(log), "--data", str(written.folder / "test.parquet"), *props,
            "--bootstrap", "50", "--tracking-uri", written.uri]  # fmt: skip
    assert ltr_main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("ltr: error: "), err
    assert message in err[0], err
    assert _ope_metrics(written) == before

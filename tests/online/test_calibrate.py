"""``ltr calibrate`` and the one OLS (:mod:`ltr.online.ols`): statsmodels as the reference, a run
read back from a real sqlite store, refusals in one line."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from ltr.cli.main import main as ltr_main
from ltr.online.calibrate import calibrate
from ltr.online.ols import fit_line
from ltr.sweeper.tradeoffs import fit_online

sm = pytest.importorskip("statsmodels.api")

#: 8 past A/B tests: offline delta of nDCG@10, online delta of GMV (%), sessions of each test.
TABLE = pd.DataFrame({
    "experiment": [f"exp{i}" for i in range(8)],
    "ndcg_at_10": [0.012, -0.004, 0.021, 0.035, 0.008, -0.015, 0.027, 0.002],
    "gmv_pct": [0.41, -0.22, 0.35, 1.02, 0.05, -0.61, 0.88, 0.19],
    "sessions": [120_000, 80_000, 200_000, 150_000, 60_000, 90_000, 300_000, 110_000],
})  # fmt: skip


def _reference(weighted: bool) -> object:
    x = sm.add_constant(TABLE["ndcg_at_10"].to_numpy())
    y = TABLE["gmv_pct"].to_numpy()
    model = sm.WLS(y, x, weights=TABLE["sessions"].to_numpy()) if weighted else sm.OLS(y, x)
    return model.fit()


@pytest.mark.parametrize("weighted", [False, True], ids=["ols", "wls"])
def test_the_line_equals_statsmodels(weighted: bool) -> None:
    ref = _reference(weighted)
    fit = fit_line(TABLE["ndcg_at_10"], TABLE["gmv_pct"], weights=TABLE["sessions"] if weighted else None)
    low, high = ref.conf_int(alpha=0.05)[1]
    assert fit.slope == pytest.approx(ref.params[1], abs=1e-9)
    assert fit.intercept == pytest.approx(ref.params[0], abs=1e-9)
    assert fit.se == pytest.approx(ref.bse[1], abs=1e-9)
    assert (fit.low, fit.high) == pytest.approx((low, high), abs=1e-9)
    assert fit.p_value == pytest.approx(ref.pvalues[1], abs=1e-9)
    assert fit.r2 == pytest.approx(ref.rsquared, abs=1e-9)


def test_fit_online_reports_the_same_inference_and_keeps_its_line() -> None:
    x, y = TABLE["ndcg_at_10"].to_numpy(), TABLE["gmv_pct"].to_numpy()
    fit = fit_online(x, y)
    ref = _reference(False)
    assert fit.slope == fit_line(x, y).slope  # one implementation
    assert (fit.slope_low, fit.slope_high) == pytest.approx(tuple(ref.conf_int(alpha=0.05)[1]), abs=1e-9)
    assert fit.p_value == pytest.approx(ref.pvalues[1], abs=1e-9)
    # the line itself is bit for bit the centred-sums line fit_online always computed
    dx, dy = x - x.mean(), y - y.mean()
    assert fit.slope == float(dx @ dy) / float(dx @ dx)


def test_ltr_calibrate_logs_a_run_read_back_from_sqlite(
    tmp_path: Path, tracking_uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    table = tmp_path / "experiments.csv"
    TABLE.to_csv(table, index=False)
    uri = tracking_uri
    figure = tmp_path / "calibration.png"
    argv = ["calibrate", str(table), "--offline", "ndcg_at_10", "--online", "gmv_pct", "--n", "sessions",
            "--unit", "% GMV", "--log", "--figure", str(figure), "--tracking-uri", uri]  # fmt: skip
    assert ltr_main(argv) == 0
    out = capsys.readouterr().out
    ref = _reference(True)
    cal = calibrate(table, "ndcg_at_10", "gmv_pct", weights="sessions", unit="% GMV")
    assert out.strip() == cal.sentence()
    assert out.startswith("each +0.1 ndcg_at_10 ≈ +")
    assert "% GMV [" in out
    assert "(p = " in out
    assert figure.stat().st_size > 10_000
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("ltr-calibration")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id], filter_string="tags.`ltr.kind` = 'calibration'")
    assert len(runs) == 1
    run = runs[0]
    assert run.info.status == "FINISHED"
    m = run.data.metrics
    assert m["calibration/slope"] == pytest.approx(ref.params[1], abs=1e-9)
    assert (m["calibration/slope_low"], m["calibration/slope_high"]) == pytest.approx(tuple(ref.conf_int(alpha=0.05)[1]), abs=1e-9)
    assert m["calibration/p_value"] == pytest.approx(ref.pvalues[1], abs=1e-9)
    assert m["calibration/n"] == 8
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id, "calibration")} | {
        a.path for a in client.list_artifacts(run.info.run_id, "figures")
    }
    assert {"calibration/experiments.csv", "calibration/calibration.json", "figures/calibration.png"} <= artifacts


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--offline", "ndcg_at_5", "--online", "gmv_pct"], "has no column 'ndcg_at_5'"),
        (["--offline", "ndcg_at_10", "--online", "experiment"], "experiment 'exp0' is not a number"),
        (["--offline", "ndcg_at_10", "--online", "gmv_pct", "--n", "gmv_pct"], "is not a number > 0"),
    ],
    ids=["missing-column", "not-a-number", "bad-weight"],
)
def test_refusals_are_one_line_exit_2_and_log_nothing(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = tmp_path / "experiments.csv"
    TABLE.to_csv(table, index=False)
    db = tmp_path / "mlflow.db"
    assert ltr_main(["calibrate", str(table), *args, "--log", "--tracking-uri", f"sqlite:///{db}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("ltr: error: "), err
    assert message in err[0], err
    assert not db.exists()

"""A user's click log (``data=parquet data.click_column=...``): the simulator's log written to
Parquet by ``ltr data write`` and read back as a stranger's file logs the click estimates,
exposure and propensities of ``data=synthetic_clicks`` on the same sessions, refuses what it
cannot use in one line, and ``ltr abtest`` fits a click model to it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from ltr.data.write import write_builtin
from ltr.experiment import run as pipeline
from ltr.models.abtest_run import load_abtest
from tests.conftest import compose_train
from tests.processes import run_ltr

N_QUERIES = 300
FAST = ("fit.num_boost_round=15", "fit.early_stopping_rounds=5", "fit.show_progress=false", "model.num_leaves=7",
        "tracking.log_model=false", "eval.clicks.propensity=estimated", "eval.clicks.propensity_bootstrap=20")  # fmt: skip
#: What the simulator's log and the written log both log (the click estimates of every evaluated
#: split per stratum, the exposure of the training log, the propensities and their interval).
SHARED = ("valid/clicks/", "test/clicks/", "valid/clicks_ips/", "test/clicks_ips/", "data/exposure_", "data/click_k",
          "propensity/")  # fmt: skip


def table_overrides(folder: Path) -> list[str]:
    """``data=parquet`` on the written files, read as a user's click log."""
    return [
        "data=parquet", *(f"data.{s}={folder / f'{s}.parquet'}" for s in ("train", "valid", "test")),
        "data.doc_id_column=doc_id", "data.position_column=position", "data.click_column=click",
        "data.behaviour_columns=[dwell,cart,purchase]", "data.popularity_feature=popularity",
    ]  # fmt: skip


@dataclass(frozen=True)
class Runs:
    uri: str
    folder: Path
    simulated: dict[str, float]
    table: dict[str, float]
    table_b: str


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    root = tmp_path_factory.mktemp("click_log")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    folder = root / "log"
    write_builtin("synthetic_clicks", folder, fmt="parquet", overrides=[f"data.n_queries={N_QUERIES}"])
    sim = ["data=synthetic_clicks", f"data.n_queries={N_QUERIES}", *FAST, f"tracking.uri={uri}", "tracking.run_name=simulated"]
    simulated = pipeline.run(compose_train(sim), overrides=sim)
    table = [*table_overrides(folder), *FAST, f"tracking.uri={uri}", "tracking.run_name=table_a"]
    table_run = pipeline.run(compose_train(table), overrides=table)
    b = [*table_overrides(folder), *FAST, "model.num_leaves=3", f"tracking.uri={uri}", "tracking.run_name=table_b"]
    table_b = pipeline.run(compose_train(b), overrides=b)
    assert table_b.run_id is not None
    return Runs(uri, folder, simulated.metrics, table_run.metrics, table_b.run_id)


def test_the_written_log_logs_the_simulators_click_metrics_bit_for_bit(runs: Runs) -> None:
    shared = {k: v for k, v in runs.simulated.items() if k.startswith(SHARED)}
    # naive and IPS NDCG@5/10 of valid and test, overall and per stratum; exposure; the propensities
    # of the positions with enough clicks to identify them (ltr.metrics.clicks.propensity.MIN_POSITION_CLICKS)
    assert len(shared) > 40
    assert {"test/clicks_ips/ndcg_at_10/len_11-50", "propensity/pos_3", "data/exposure_k80"} <= set(shared)
    assert not [k for k in shared if k.endswith(("/low", "/high"))]  # estimated: a curve with no interval
    got = {k: runs.table.get(k) for k in shared}
    assert got == shared  # the same sessions, the same model, the same code: the same floats
    # the same model ranked the same true grades (the written files' valid and test labels)
    assert runs.table["test/ndcg_at_10"] == runs.simulated["test/ndcg_at_10"]
    # what needs the simulator's true click model is not logged for a user's log
    assert not [k for k in runs.table if "/clicks_truth/" in k or "/online/" in k]
    assert [k for k in runs.simulated if "/clicks_truth/" in k]
    assert [k for k in runs.simulated if "/online/" in k]


def test_abtest_on_two_runs_of_the_written_log_rests_on_a_fitted_model(runs: Runs, tmp_path: Path) -> None:
    loaded = load_abtest("table_a", "table_b", tracking_uri=runs.uri, days=7.0, seed=1, refits=3)
    assert "fitted to the log" in loaded.model_note
    assert "eval.clicks.propensity=estimated" in loaded.model_note
    assert "3 refits on resampled queries give the model's own spread" in loaded.model_note
    fitted = loaded.a.fitted
    assert fitted is not None
    assert fitted.attract is not None
    assert fitted.examination is not None
    assert fitted.attract.shape == (loaded.a.data.n_rows,)
    assert float(fitted.attract.min()) > 0
    assert float(fitted.attract.max()) < 1
    assert fitted.examination[0] == 1.0
    assert len(fitted.refits) == 3
    assert loaded.b.fitted is None  # the simulation is under A's log's model, fitted once
    r = loaded.result
    assert r.n_sessions == 35_000
    assert r.purchases is None
    assert 0 < r.ctr.a.value < 1
    assert 0 < r.ctr.b.value < 1
    # the refits' spread is reported; no randomized session is marked, so the propensities are a
    # model's (eval.clicks.propensity=estimated) and the CTR rows have no interval, one line says why
    assert r.fit is not None
    assert r.fit.n_refits == 3
    assert r.fit.sd > 0
    assert r.anchoring is not None
    assert not r.anchoring.anchored
    assert math.isnan(r.ctr.low)
    assert math.isnan(r.ctr.high)
    assert "eval.clicks.propensity=estimated" in r.anchoring.reason
    assert "--randomized-column" in r.anchoring.reason
    # the CLI prints the line, the report the verdict, and refuses a bad --refits in one line
    proc = run_ltr(["abtest", "table_a", "table_b", "--tracking-uri", runs.uri, "--days", "3", "--refits", "2"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("ltr abtest: the click model is fitted to the log, not known: examination of ")
    assert "A (CTR, 95 %)" in proc.stdout
    assert "(no interval)" in proc.stdout
    assert "\nVerdict: no interval (model): B - A in CTR " in proc.stdout
    # a column the log does not have: one line, exit 2
    proc = run_ltr(["abtest", "table_a", "table_b", "--tracking-uri", runs.uri, "--randomized-column", "nope"])
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "nope" in proc.stderr
    assert "Traceback" not in proc.stderr


def overridden(base: list[str], extra: list[str]) -> list[str]:
    """``base`` with the keys of ``extra`` replaced (and any new ones added)."""
    keys = {e.split("=", 1)[0] for e in extra}
    return [*(a for a in base if a.split("=", 1)[0] not in keys), *extra]


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["data.position_column=null"], "data.click_column='click' needs data.position_column"),
        (["eval.clicks.propensity=config"], "has no known examination curve: give eval.clicks.propensities="),
        (["eval.clicks.propensity=harvest"], "eval.clicks.propensity=harvest needs data.logger_column"),
        (["eval.clicks.propensity=column"], "eval.clicks.propensity=column needs data.propensity_column"),
        (["data.click_column=null", "data.logger_column=ranker"], "data.logger_column is a column of a click log"),
        (["data=synthetic_clicks", "eval.clicks.propensity=harvest"], "which data=synthetic_clicks has not"),
    ],
    ids=["no-positions", "no-curve", "harvest-no-logger", "column-no-column", "logger-without-clicks", "simulator-harvest"],
)
def test_settings_a_log_cannot_serve_are_refused_in_one_line(runs: Runs, extra: list[str], needle: str) -> None:
    from ltr.errors import LtrUserError
    from ltr.experiment.checks import check_config

    base = ["data=synthetic_clicks", *FAST] if extra[0] == "data=synthetic_clicks" else [*table_overrides(runs.folder), *FAST]
    with pytest.raises(LtrUserError) as info:
        check_config(compose_train(overridden(base, extra[1:] if extra[0] == "data=synthetic_clicks" else extra)))
    assert needle in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["data.click_column=clicked"], "data.click_column='clicked': "),
        (["data.logger_column=ranker", "eval.clicks.propensity=harvest"], "data.logger_column='ranker': "),
    ],
    ids=["missing-click", "missing-logger"],
)
def test_a_log_without_a_named_column_is_exit_2_one_line_and_no_store(runs: Runs, tmp_path: Path, extra: list[str], needle: str) -> None:
    db = tmp_path / "refused.db"
    args = overridden([*table_overrides(runs.folder), *FAST], [*extra, f"tracking.uri=sqlite:///{db}", f"hydra.run.dir={tmp_path / 'out'}"])
    proc = run_ltr(["train", *args], cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("ltr: error: ")
    assert needle in line
    assert "has no column" in line
    assert not db.exists()


def test_a_log_of_two_rankers_estimates_propensities_by_intervention_harvesting(tmp_path: Path) -> None:
    """Sessions as lists (``data.qid_column=session``), their query in ``data.query_column``, the
    ranker in ``data.logger_column``: the run's propensities are those of
    :func:`estimate_propensity` on its training split, logged with their interval."""
    import pandas as pd

    from ltr.data.load import load_splits
    from ltr.metrics.clicks.propensity import estimate_propensity
    from tests.metrics.test_propensity import two_ranker_log

    log = two_ranker_log(300, 2, seed=3)
    features = np.random.default_rng(0).standard_normal((int(log["doc"].max()) + 1, 3))[log["doc"]]
    sessions = np.repeat(np.arange(log["offsets"].shape[0] - 1), np.diff(log["offsets"]))
    table = pd.DataFrame({
        "session": sessions, "query": log["query"], "doc_id": log["doc"].astype(str), "ranker": log["logger"],
        "position": log["positions"], "click": log["clicks"], "label": log["clicks"],
        **{f"f{j}": features[:, j] for j in range(3)},
    })  # fmt: skip
    path = tmp_path / "two_rankers.parquet"
    table.to_parquet(path, index=False)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    overrides = [
        "data=parquet", f"data.train={path}", "data.qid_column=session", "data.query_column=query",
        "data.doc_id_column=doc_id", "data.logger_column=ranker", "data.position_column=position",
        "data.click_column=click", "eval.clicks.propensity=harvest", "eval.clicks.propensity_bootstrap=10",
        "fit.num_boost_round=3", "fit.show_progress=false", "tracking.log_model=false", f"tracking.uri={uri}",
    ]  # fmt: skip
    cfg = compose_train(overrides)
    metrics = pipeline.run(cfg, overrides=overrides).metrics
    train = load_splits(cfg.data, cfg.split, seed=int(cfg.seed)).train
    assert train.behaviours is not None
    assert train.positions is not None
    want = estimate_propensity(
        train.behaviours["click"], train.positions, train.offsets, method="harvest", doc_ids=train.doc_ids,
        loggers=train.behaviours["ranker"], query_ids=train.behaviours["query"], n_bootstrap=10, seed=int(cfg.seed),
    )  # fmt: skip
    for k in (2, 5, 10):
        assert metrics[f"propensity/pos_{k}"] == want.propensities[k - 1]
        assert metrics[f"propensity/pos_{k}/high"] == want.high[k - 1]
    assert 0.3 < metrics["propensity/pos_2"] < 0.7  # the true 1/2
    assert "test/clicks_ips/ndcg_at_10" in metrics

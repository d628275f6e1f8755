"""Randomized sessions marked in a click log: ``ltr data write synthetic_clicks`` writes the
``randomized`` flag (0/1 per row), a run with ``data.randomized_column`` reads it as a behaviour
(never a feature: the simulator's numbers bit for bit) and logs the propensities of
``eval.clicks.propensity=randomized`` on the randomized sessions of its training split; the
settings and flags it cannot use are refused in one line; ``ltr exposure --propensity randomized``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ltr.data.write import write_builtin
from ltr.errors import DataError, LtrUserError
from ltr.experiment import run as pipeline
from tests.clicks.test_click_log import overridden, table_overrides
from tests.conftest import compose_train

N_QUERIES = 300
SHARE = "data.randomized_share=0.6"
FAST = ("fit.num_boost_round=5", "fit.show_progress=false", "model.num_leaves=7", "tracking.log_model=false",
        "eval.clicks.propensity_bootstrap=10")  # fmt: skip


@dataclass(frozen=True)
class Written:
    folder: Path
    command: str
    uri: str


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Written:
    root = tmp_path_factory.mktemp("randomized_log")
    folder = root / "log"
    done = write_builtin("synthetic_clicks", folder, fmt="parquet", overrides=[f"data.n_queries={N_QUERIES}", SHARE])
    return Written(folder, done.train_command, f"sqlite:///{root / 'mlflow.db'}")


def test_the_written_flag_marks_the_shuffled_sessions(written: Written) -> None:
    log = pd.read_parquet(written.folder / "clicks.parquet")
    train = pd.read_parquet(written.folder / "train.parquet")
    assert "data.randomized_column=randomized" in written.command
    for table in (log, train):
        assert set(table["randomized"].unique()) == {0, 1}
        assert table.groupby(table.columns[0])["randomized"].nunique().max() == 1  # constant per session
    # shuffled sessions show documents in an order unrelated to their grade; the others sort by it
    for flag, low, high in ((1, -0.1, 0.1), (0, -1.0, -0.1)):
        part = log[log["randomized"] == flag]
        assert low < np.corrcoef(part["position"], part["relevance"])[0, 1] < high
    assert 0.45 < log.groupby("query")["randomized"].first().mean() < 0.75  # data.randomized_share=0.6
    # the default log (no randomized session) has no such column
    plain = write_builtin("synthetic_clicks", written.folder.parent / "plain", fmt="parquet", overrides=["data.n_queries=20"])
    assert "randomized" not in pd.read_parquet(written.folder.parent / "plain" / "train.parquet").columns
    assert "randomized_column" not in plain.train_command


def test_a_run_estimates_on_the_randomized_sessions_and_the_flag_is_no_feature(written: Written) -> None:
    table = [*table_overrides(written.folder), "data.randomized_column=randomized", "eval.clicks.propensity=randomized",
             *FAST, f"tracking.uri={written.uri}"]  # fmt: skip
    metrics = pipeline.run(compose_train(table), overrides=table).metrics
    # independently: click-through rate by position on the randomized sessions of train.parquet
    train = pd.read_parquet(written.folder / "train.parquet")
    part = train[train["randomized"] == 1]
    clicks = part.groupby("position")["click"].sum()
    rate = part.groupby("position")["click"].mean()
    identified = [k for k in range(2, 11) if clicks.get(k - 1, 0) >= 5]
    assert identified  # some, not all, positions have 5 clicks among the randomized sessions
    for k in range(2, 11):
        if k in identified:
            assert metrics[f"propensity/pos_{k}"] == pytest.approx(rate[k - 1] / rate[0], rel=1e-12)
            assert metrics[f"propensity/pos_{k}/low"] <= metrics[f"propensity/pos_{k}"] <= metrics[f"propensity/pos_{k}/high"]
        else:
            assert f"propensity/pos_{k}" not in metrics  # not identified
    # the same log simulated in-process, same model: the same nDCG (the flag is not a feature)
    sim = ["data=synthetic_clicks", f"data.n_queries={N_QUERIES}", SHARE, *FAST, "eval.clicks.propensity=estimated",
           f"tracking.uri={written.uri}"]  # fmt: skip
    simulated = pipeline.run(compose_train(sim), overrides=sim).metrics
    assert metrics["test/ndcg_at_10"] == simulated["test/ndcg_at_10"]
    assert metrics["valid/ndcg_at_10"] == simulated["valid/ndcg_at_10"]


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["eval.clicks.propensity=randomized"], "eval.clicks.propensity=randomized needs data.randomized_column"),
        (["data=synthetic_clicks", "eval.clicks.propensity=randomized"], "data=synthetic_clicks has none"),
        (["data.click_column=null", "data.randomized_column=randomized"], "data.randomized_column is a column of a click log"),
    ],
    ids=["no-column", "simulator", "without-clicks"],
)
def test_settings_it_cannot_serve_are_refused_in_one_line(written: Written, extra: list[str], needle: str) -> None:
    from ltr.experiment.checks import check_config

    simulated = extra[0] == "data=synthetic_clicks"
    base = ["data=synthetic_clicks", *FAST] if simulated else [*table_overrides(written.folder), *FAST]
    with pytest.raises(LtrUserError) as info:
        check_config(compose_train(overridden(base, extra[1:] if simulated else extra)))
    assert needle in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("change", "needle"),
    [("mixed", "is not constant within qid"), ("zero", "marks no randomized session"), ("two", "holds 2 at qid")],
)
def test_bad_flags_in_the_training_split_are_refused_before_training(written: Written, tmp_path: Path, change: str, needle: str) -> None:
    train = pd.read_parquet(written.folder / "train.parquet")
    if change == "mixed":
        longest = train["qid"] == train["qid"].value_counts().index[0]
        train.loc[longest.to_numpy() & (train["position"] == 0).to_numpy(), "randomized"] = 1 - train.loc[longest, "randomized"].iloc[0]
    else:
        train["randomized"] = 0 if change == "zero" else np.where(train["randomized"] == 1, 2, 0)
    path = tmp_path / "train.parquet"
    train.to_parquet(path, index=False)
    table = overridden([*table_overrides(written.folder), *FAST], [f"data.train={path}", "data.randomized_column=randomized",
                       "eval.clicks.propensity=randomized", f"tracking.uri=sqlite:///{tmp_path / 'm.db'}"])  # fmt: skip
    with pytest.raises(DataError) as info:
        pipeline.run(compose_train(table), overrides=table)
    assert needle in str(info.value)
    assert "data.randomized_column='randomized'" in str(info.value)
    assert "\n" not in str(info.value)


def test_exposure_estimates_on_the_randomized_sessions(written: Written, capsys: pytest.CaptureFixture[str]) -> None:
    from ltr.cli.online.exposure import main
    from ltr.metrics.clicks.propensity import estimate_propensity

    log = written.folder / "clicks.parquet"
    assert main([str(log), "--propensity", "randomized", "--randomized-column", "randomized", "--json", "--bootstrap", "10"]) == 0
    out = json.loads(capsys.readouterr().out)
    frame = pd.read_parquet(log).sort_values("query", kind="stable")
    offsets = np.concatenate([[0], np.cumsum(frame.groupby("query", sort=True).size().to_numpy())])
    want = estimate_propensity(
        frame["click"].to_numpy(), frame["position"].to_numpy(), offsets, method="randomized",
        n_positions=int(frame["position"].max()) + 1, randomized=frame["randomized"].to_numpy(), n_bootstrap=10,
    )  # fmt: skip
    got = np.array([np.nan if v is None else v for v in out["propensities"]["propensities"]])
    np.testing.assert_array_equal(got, want.propensities)
    assert out["propensities"]["method"] == "randomized"
    assert "no_interval" not in out
    # the plain click-through rate without the flags: no interval, and the line that says why, once
    assert main([str(log), "--propensity", "ctr", "--json", "--bootstrap", "10"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert plain["no_interval"].startswith("no interval: the CTR ratio is unbiased only if every session was shown in random order")
    assert plain["no_interval"].endswith("(--randomized-column) and use --propensity randomized for one")
    assert set(plain["propensities"]["low"]) == {None}


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--propensity", "randomized"], "--propensity randomized needs --randomized-column COL"),
        (["--propensity", "randomized", "--randomized-column", "click"], "has both randomized (1) and ordered (0) rows"),
        (["--propensity", "randomized", "--randomized-column", "nope"], "nope"),
    ],
    ids=["no-column", "not-constant", "missing"],
)
def test_exposure_refuses_in_one_line(written: Written, args: list[str], needle: str) -> None:
    from ltr.cli.online.exposure import main

    with pytest.raises((LtrUserError, DataError)) as info:
        main([str(written.folder / "clicks.parquet"), *args])
    assert needle in str(info.value)
    assert "\n" not in str(info.value)

"""The one check of a click log (:mod:`ltr.data.feedback.click_checks`): numeric clicks, one document per
position of a query, more than one position; against a per-row reference, in the readers of
``ltr ope`` / ``ltr exposure``, and in training on a user's click log (``ltr train``, a
process of its own: exit 2, one line, no store). ``ltr exposure --propensity em`` on features with
missing cells. The CLI refusals of ``ltr ope`` and ``ltr exposure`` are cases of
``tests/reliability/test_bad_input.py``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ltr.cli.online.exposure import main as exposure_main
from ltr.data.feedback.click_checks import (
    check_sessions,
    first_shared_position,
    outcome_values,
    shown,
)
from ltr.data.feedback.click_file import read_click_file
from ltr.data.write import write_builtin
from ltr.errors import DataError
from ltr.metrics.clicks.propensity import estimate_propensity
from tests.metrics.test_propensity_missing import simulated_log
from tests.processes import run_ltr


def reference_shared(sessions: list[int], positions: list[int]) -> tuple[int, int] | None:
    """Row by row: the first row whose (session, position) an earlier row holds, and that row."""
    seen: dict[tuple[int, int], int] = {}
    for row, key in enumerate(zip(sessions, positions, strict=True)):
        if key in seen:
            return seen[key], row
        seen[key] = row
    return None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 5)), min_size=0, max_size=30))
def test_the_first_shared_position_matches_a_row_by_row_reference(rows: list[tuple[int, int]]) -> None:
    sessions = [s for s, _ in rows]
    positions = [p for _, p in rows]
    assert first_shared_position(np.array(sessions, dtype=np.int64), np.array(positions, dtype=np.int64)) == reference_shared(
        sessions, positions
    )


def test_messages_show_values_as_written() -> None:
    assert shown(np.float64("nan")) == "NaN"
    assert shown(np.int32(2)) == "2"
    assert shown(np.str_("q7")) == "'q7'"
    with pytest.raises(DataError, match=r"^log.csv, row 2: click 'yes' is not a number$"):
        outcome_values(pd.Series(["1", "yes"]), column="click", source="log.csv", typed=False)
    assert outcome_values(pd.Series(["1", ""]), column="click", source="log.csv", typed=False)[1] != 0  # NaN: empty
    assert outcome_values(pd.Series([True, False]), column="click", source="x.parquet", typed=True).tolist() == [1.0, 0.0]
    with pytest.raises(DataError, match="qid 7 shows two documents at position 3"):
        check_sessions(np.array([0, 0, 1, 1]), np.array([3, 3, 0, 1]), source="split", session_names=np.array([7, 8]),
                       row_numbers=False, query_word="qid")  # fmt: skip
    check_sessions(np.array([0, 1]), np.array([0, 1]), source="log.csv")  # two positions: fine


def test_a_purchase_column_of_text_and_a_nan_click_are_refused_without_numpy_repr(tmp_path: Path) -> None:
    from ltr.models.ope_run import read_log

    frame = pd.DataFrame({"query": ["a", "a"], "doc_id": ["1", "2"], "position": [0, 1], "click": [0, 1], "purchase": ["0", "1"]})
    frame.to_parquet(tmp_path / "text.parquet")
    with pytest.raises(DataError, match=r"text.parquet, row 1: purchase '0' is text"):
        read_log(tmp_path / "text.parquet")
    frame.assign(purchase=[0, 1], click=[np.nan, 1.0]).to_parquet(tmp_path / "nan.parquet")
    with pytest.raises(DataError) as info:
        read_log(tmp_path / "nan.parquet")
    assert str(info.value) == f"{tmp_path / 'nan.parquet'}, row 1: click NaN is not an integer >= 0"
    frame.assign(purchase=[0, 1], position=[2, 2]).to_csv(tmp_path / "one.csv", index=False)
    with pytest.raises(DataError, match="rows 1 and 2: query 'a' shows two documents at position 2"):
        read_log(tmp_path / "one.csv", first_position=1)  # positions named as the file writes them


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("click_checks") / "log"
    write_builtin("synthetic_clicks", folder, fmt="parquet", overrides=["data.n_queries=60"])
    return folder


@pytest.mark.slow
@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ("shared-position", "(train split): qid 0 shows two documents at position "),
        ("text-clicks", "train.parquet, row 1: click '0' is text (column type "),
    ],
)
def test_training_on_a_log_the_model_cannot_read_is_exit_2_one_line(written: Path, tmp_path: Path, change: str, needle: str) -> None:
    frame = pd.read_parquet(written / "train.parquet")
    assert frame["qid"].iloc[0] == frame["qid"].iloc[1] == 0
    if change == "shared-position":
        frame.loc[1, "position"] = frame.loc[0, "position"]  # query 0's second document at its first's position
    else:
        frame["click"] = frame["click"].astype(str)  # "0" / "1" as text
    frame.to_parquet(tmp_path / "train.parquet")
    db = tmp_path / "refused.db"
    args = [
        "data=parquet", f"data.train={tmp_path / 'train.parquet'}", f"data.valid={written / 'valid.parquet'}",
        f"data.test={written / 'test.parquet'}", "data.doc_id_column=doc_id", "data.position_column=position",
        "data.click_column=click", "data.behaviour_columns=[dwell,cart,purchase]", "fit.show_progress=false",
        "eval.clicks.propensity=estimated",
        f"tracking.uri=sqlite:///{db}", f"hydra.run.dir={tmp_path / 'out'}",
    ]  # fmt: skip
    proc = run_ltr(["train", *args], cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("ltr: error: ")
    assert needle in line, line
    assert not db.exists()


def test_exposure_estimates_the_curve_by_em_on_features_with_missing_cells(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = simulated_log(11, n_queries=300)
    sizes = np.diff(log["offsets"])
    frame = pd.DataFrame({
        "query": np.repeat([f"q{i}" for i in range(sizes.shape[0])], sizes), "position": log["positions"], "click": log["clicks"],
        **{f"f{j}": log["features"][:, j] for j in range(5)},
    })  # fmt: skip
    path = tmp_path / "log.csv"
    frame.sample(frac=1.0, random_state=0).to_csv(path, index=False)  # rows of a query not together
    argv = [str(path), "--propensity", "em", "--features", "f0,f1,f2,f3,f4", "--bootstrap", "20"]
    assert exposure_main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    read = read_click_file(path, feature_columns=[f"f{j}" for j in range(5)])
    order, offsets = read.grouped()
    assert read.features is not None
    direct = estimate_propensity(
        read.clicks[order], read.positions[order], offsets, method="em", features=read.features[order], n_bootstrap=20
    )
    assert out["propensities"]["method"] == "em"
    assert out["propensities"]["propensities"] == direct.to_dict()["propensities"]
    assert 0.35 < out["propensities"]["propensities"][1] < 0.7  # the truth at position 2: 1/2 (not a flat 1)
    assert None in out["propensities"]["propensities"]  # deep positions with too few clicks
    assert exposure_main(argv) == 0
    text = capsys.readouterr().out
    assert f"    2  {direct.propensities[1]:.3f}\n" in text  # no interval: no randomized session marked
    assert "not identified" in text
    assert text.rstrip().splitlines()[-1].startswith("no interval: EM's curve cannot be checked")


def test_a_given_curve_extends_its_last_value(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [(f"q{q}", p, int(p == q % 4)) for q in range(20) for p in range(6)]
    path = tmp_path / "log.csv"
    pd.DataFrame(rows, columns=["query", "position", "click"]).to_csv(path, index=False)
    assert exposure_main([str(path), "--propensities", "1,0.5", "--json"]) == 0
    short = json.loads(capsys.readouterr().out)
    assert exposure_main([str(path), "--propensities", "1,0.5,0.5,0.5,0.5,0.5", "--json"]) == 0
    full = json.loads(capsys.readouterr().out)
    assert short["rows"] == full["rows"]
    assert short["propensities"]["propensities"] == [1.0, 0.5, 0.5, 0.5, 0.5, 0.5]

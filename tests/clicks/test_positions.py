"""Positions: carried by RankingData, read from .position files and columns, one clear error."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from ltr.data.feedback.positions import (
    check_positions,
    concat_positions,
    find_position_file,
    read_position_file,
)
from ltr.data.ranking_data import RankingData
from ltr.errors import DataError


def _data(positions: object) -> RankingData:
    return RankingData.from_group_sizes(
        np.zeros((3, 1), np.float32), np.array([1, 0, 2]), np.array([7, 9]), np.array([2, 1]),
        positions=positions,  # type: ignore[arg-type]
    )


def test_ranking_data_carries_positions_through_take_queries() -> None:
    d = _data(np.array([1, 0, 0]))
    assert d.positions is not None
    assert d.positions.dtype == np.int32
    sub = d.take_queries(np.array([1, 0]))
    assert sub.positions is not None
    assert sub.positions.tolist() == [0, 1, 0]
    assert _data(None).take_queries(np.array([0])).positions is None


@pytest.mark.parametrize(
    ("positions", "match"),
    [(np.array([0, 1]), "one per row"), (np.array([0, -1, 2]), "negative"),
     (np.array([0.0, 1.0, 2.0]), "integers")],
)
def test_ranking_data_refuses_bad_positions(positions: np.ndarray, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        dataclasses.replace(_data(None), positions=positions)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (np.array([0.0, np.nan]), "position at row 2 of t.parquet (qid 9) is missing"),
        (np.array([0.0, 1.5]), "position 1.5 at row 2 of t.parquet (qid 9) is not an integer"),
        (np.array([-3, 0]), "position -3 at row 1 of t.parquet (qid 7) is negative"),
        (np.array([0.0, np.inf]), "position inf at row 2 of t.parquet (qid 9) is infinite"),
    ],
)
def test_column_positions_errors_name_row_and_qid(values: np.ndarray, message: str) -> None:
    with pytest.raises(DataError) as err:
        check_positions(values, source="t.parquet", where="row", row_qids=np.array([7, 9]))
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def test_position_file_is_found_beside_the_data(tmp_path: Path) -> None:
    data = tmp_path / "rank.train.gz"
    data.write_bytes(b"")
    assert find_position_file(data) is None
    (tmp_path / "rank.train.position").write_text("0\n1\n")
    assert find_position_file(data) == tmp_path / "rank.train.position"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0\n1\n", "has 2 positions but rank.train has 3 data rows"),
        ("0\nx\n2\n", "line 2 of {p} (qid 7) 'x' is not an integer"),
        ("0\n-1\n2\n", "position -1 at line 2 of {p} (qid 7) is negative"),
        ("0\n\n2\n", "line 2 of {p} (qid 7) is blank"),
        ("0\n1.0\n2\n", "line 2 of {p} (qid 7) '1.0' is not an integer"),
    ],
)
def test_position_file_errors_are_one_line(tmp_path: Path, text: str, message: str) -> None:
    p = tmp_path / "rank.train.position"
    p.write_text(text)
    with pytest.raises(DataError) as err:
        read_position_file(p, n_rows=3, data_path="rank.train", row_qids=np.array([7, 7, 9]))
    assert message.format(p=p) in str(err.value)
    assert "\n" not in str(err.value)


def test_position_file_trailing_blank_lines_are_fine(tmp_path: Path) -> None:
    p = tmp_path / "x.position"
    p.write_text("2\n0\n1\n\n")
    assert read_position_file(p, n_rows=3, data_path="x").tolist() == [2, 0, 1]


def test_missing_position_file_and_mixed_parts() -> None:
    with pytest.raises(DataError, match="does not exist"):
        read_position_file(Path("/nonexistent/x.position"), n_rows=1, data_path="x")
    with pytest.raises(DataError, match="S2 has no positions"):
        concat_positions([np.array([0], np.int32), None], ["S1", "S2"])

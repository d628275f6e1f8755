"""Positions of rows in a logged ranking: read and validate them, or stop with one clear line.

A position is the 0-based place at which a logged ranking showed a row (0 = first), one integer
``>= 0`` per data row, as LightGBM's ``Dataset(position=...)`` takes them. Two sources:

- a LightGBM ``.position`` side file next to a data file (``rank.train`` -> ``rank.train.position``;
  for ``rank.train.gz`` also ``rank.train.gz.position``): one integer per line, one line per data
  row, in file order (blank lines are not allowed: they would shift every later row);
- a column of a Parquet / CSV table (``data.position_column``).

Every problem raises :class:`ltr.errors.DataError` naming the file, the line (or row) and the qid.
The readers call these functions; :func:`concat_positions` joins the positions of several parts.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ltr.data.formats.side_files import side_file_candidates
from ltr.errors import DataError


def find_position_file(path: Path) -> Path | None:
    """The ``.position`` side file of ``path``, if one exists."""
    for candidate in side_file_candidates(path, ".position"):
        if candidate.is_file():
            return candidate
    return None


def check_positions(
    positions: NDArray[Any],
    *,
    source: str,
    where: str = "line",
    row_lines: NDArray[np.int64] | None = None,
    row_qids: NDArray[np.int64] | None = None,
) -> NDArray[np.int32]:
    """``positions`` as int32 after checking each is a finite integer ``>= 0``.

    Parameters
    ----------
    positions : numeric array, shape (n_rows,) (float is accepted if every value is integral;
        NaN marks a missing value)
    source : the file named in messages
    where : ``"line"`` (text, CSV) or ``"row"`` (Parquet)
    row_lines : 1-based line (row) number of every row in ``source``; default ``1..n_rows``
    row_qids : qid of every row, named in messages when given

    Raises
    ------
    DataError
        a missing, non-integer, negative or too large position, in one line.

    Examples
    --------
    >>> check_positions(np.array([0, 3, 1]), source="x.csv").tolist()
    [0, 3, 1]
    >>> check_positions(np.array([0.0, -1.0]), source="x.csv", row_qids=np.array([7, 7]))
    Traceback (most recent call last):
    ...
    ltr.errors.DataError: position -1 at line 2 of x.csv (qid 7) is negative; positions are 0 (shown first), 1, 2, ...
    """
    values = np.asarray(positions)
    if values.ndim != 1:
        raise DataError(f"positions of {source} must be one value per row, got shape {values.shape}")
    if not (np.issubdtype(values.dtype, np.integer) or np.issubdtype(values.dtype, np.floating)
            or values.dtype == np.bool_):
        raise DataError(f"positions of {source} are not numbers (dtype {values.dtype}); give integers 0, 1, 2, ...")
    v = values.astype(np.float64)

    def at(i: int) -> str:
        line = int(row_lines[i]) if row_lines is not None else i + 1
        qid = f" (qid {int(row_qids[i])})" if row_qids is not None else ""
        return f"{where} {line} of {source}{qid}"

    checks = (
        (np.isnan(v), "is missing; give every row a position 0, 1, 2, ..."),
        (np.isinf(v), "is infinite; positions are 0 (shown first), 1, 2, ..."),
        (v < 0, "is negative; positions are 0 (shown first), 1, 2, ..."),
        (v != np.floor(v), "is not an integer; positions are 0 (shown first), 1, 2, ..."),
        (v > np.iinfo(np.int32).max, "does not fit a 32-bit integer"),
    )
    for bad, what in checks:
        if bad.any():
            i = int(np.argmax(bad))
            shown = "" if np.isnan(v[i]) else f" {v[i]:g}"
            raise DataError(f"position{shown} at {at(i)} {what}")
    return v.astype(np.int32)


def read_position_file(
    path: Path, *, n_rows: int, data_path: str, row_qids: NDArray[np.int64] | None = None
) -> NDArray[np.int32]:
    """Positions from a LightGBM ``.position`` file: one integer per line, one line per data row.

    Raises
    ------
    DataError
        a missing file, a token that is not an integer, a negative position, a blank line, or a
        line count that differs from the rows of ``data_path``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "rank.train.position"
    >>> _ = p.write_text("0\\n1\\n0\\n")
    >>> read_position_file(p, n_rows=3, data_path="rank.train").tolist()
    [0, 1, 0]
    """
    if not path.is_file():
        raise DataError(f"position file {path} does not exist; check the path")
    lines = path.read_text().splitlines()
    while lines and not lines[-1].strip():  # a trailing newline or blank tail is fine
        lines.pop()
    if len(lines) != n_rows:
        raise DataError(
            f"{path} has {len(lines)} positions but {data_path} has {n_rows} data rows; a .position "
            "file has one position per data row, in file order"
        )
    tokens = np.array([t.strip() for t in lines], dtype=object)
    ok = np.array([t.isdigit() or (t.startswith("-") and t[1:].isdigit()) for t in tokens], dtype=bool)
    if not ok.all():
        i = int(np.argmin(ok))
        qid = f" (qid {int(row_qids[i])})" if row_qids is not None else ""
        what = "is blank" if not tokens[i] else f"{tokens[i]!r} is not an integer"
        raise DataError(
            f"line {i + 1} of {path}{qid} {what}; a .position file has one integer position "
            "(0 = shown first) per data row"
        )
    values = np.array([int(t) for t in tokens], dtype=np.int64)
    return check_positions(values, source=str(path), row_qids=row_qids)


def concat_positions(
    parts: Sequence[NDArray[np.int32] | None], names: Sequence[str]
) -> NDArray[np.int32] | None:
    """The positions of several parts stacked, None if no part has any; mixed is an error.

    Examples
    --------
    >>> concat_positions([np.array([0, 1], np.int32), np.array([0], np.int32)], ["a", "b"]).tolist()
    [0, 1, 0]
    >>> concat_positions([None, None], ["a", "b"]) is None
    True
    """
    have = [p is not None for p in parts]
    if not any(have):
        return None
    if not all(have):
        missing = [n for n, h in zip(names, have, strict=True) if not h]
        raise DataError(
            f"{', '.join(missing)} has no positions but other parts of the split do; give every "
            "part positions (a .position file or a position column), or none"
        )
    return np.concatenate([p for p in parts if p is not None]).astype(np.int32)

"""Read a click log file: one row per impression with a query, a position and a click.

A CSV (``.csv``), TSV (``.tsv`` / ``.txt``) or Parquet (``.parquet`` / ``.pq``) table with (by
default) the columns ``query``, ``position`` and ``click``; other columns are ignored. Positions
are 0-based (0 = shown first, as LightGBM's ``position``) unless ``first_position=1``; clicks are
integers >= 0. Every problem is one :class:`ltr.errors.DataError` line naming the file, the
column and the row; the rows pass :mod:`ltr.data.feedback.click_checks` (numeric clicks, one document
per position of a query, more than one position in the log).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ltr.data.feedback.click_checks import TYPED_SUFFIXES, check_click_rows, outcome_values, shown
from ltr.errors import DataError

TABLE_SUFFIXES = {".csv": ",", ".tsv": "\t", ".txt": "\t", ".parquet": None, ".pq": None}


@dataclass(frozen=True, slots=True)
class ClickFile:
    """The columns of a click log: ``qids`` (as read), 0-based ``positions``, ``clicks``."""

    qids: NDArray[np.generic]
    positions: NDArray[np.int64]
    clicks: NDArray[np.int64]
    #: float64, shape (n_rows, n_features): the ``feature_columns`` asked for (NaN: an empty cell)
    features: NDArray[np.float64] | None = None

    def grouped(self) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """``(order, offsets)``: the rows in query order (``order``, stable: each query's rows
        keep their file order) and the query boundaries of that order.

        >>> ClickFile(np.array(["b", "a", "b"]), np.array([0, 0, 1]), np.array([1, 0, 0])).grouped()
        (array([0, 2, 1]), array([0, 2, 3]))
        """
        codes, _ = pd.factorize(np.asarray(self.qids), sort=False, use_na_sentinel=False)
        order = np.argsort(codes, kind="stable").astype(np.int64)
        offsets = np.concatenate([[0], np.cumsum(np.bincount(codes))]).astype(np.int64)
        return order, offsets


def read_table_file(path: Path, columns: list[str]) -> pd.DataFrame:
    """The ``columns`` of a CSV / TSV / Parquet table (chosen by the file's suffix).

    Raises
    ------
    DataError
        An unknown suffix, an unreadable file, or a missing column (one line, naming the file).
    """
    sep = TABLE_SUFFIXES.get(path.suffix.lower(), "")
    if sep == "":
        raise DataError(f"{path}: the name must end in {', '.join(TABLE_SUFFIXES)} (the table's format)")
    try:
        if sep is None:
            frame = pd.read_parquet(path)
        else:
            frame = pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False)
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except (OSError, ValueError) as exc:
        raise DataError(f"cannot read {path}: {str(exc).splitlines()[0]}") from None
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise DataError(f"{path} has no column {missing[0]!r} (it has: {', '.join(map(str, frame.columns))})")
    return frame[columns]


def integer_column(frame: pd.DataFrame, column: str, path: Path, *, minimum: int) -> NDArray[np.int64]:
    """``frame[column]`` as int64, each value an integer >= ``minimum``; else a one-line
    `DataError` naming the row (1-based, after the header). A text column of a Parquet file is
    refused whatever it holds (:func:`ltr.data.feedback.click_checks.outcome_values`)."""
    if path.suffix.lower() in TYPED_SUFFIXES:  # a text column refused whatever it holds
        values = outcome_values(frame[column], column=column, source=str(path), typed=True)
    else:  # text by nature: each value must read as a number (else the message below)
        values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values) | (values != np.round(values)) | (values < minimum)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(f"{path}, row {i + 1}: {column} {shown(frame[column].iloc[i])} is not an integer >= {minimum}")
    return values.astype(np.int64)


def read_click_file(
    path: Path,
    *,
    query_column: str = "query",
    position_column: str = "position",
    click_column: str = "click",
    first_position: int = 0,
    feature_columns: list[str] | None = None,
) -> ClickFile:
    """Read a click log file (see the module docstring); ``feature_columns``: numeric columns
    read as the rows' features too (empty cells NaN, text refused)."""
    if first_position not in (0, 1):
        raise ValueError(f"first_position={first_position} must be 0 or 1")
    wanted = [query_column, position_column, click_column]
    frame = read_table_file(path, [*wanted, *(c for c in feature_columns or [] if c not in wanted)])
    if frame.shape[0] == 0:
        raise DataError(f"{path} has no rows")
    positions = integer_column(frame, position_column, path, minimum=first_position) - first_position
    clicks = integer_column(frame, click_column, path, minimum=0)
    check_click_rows(frame[query_column], positions, source=str(path), first_position=first_position)
    features = None
    if feature_columns:
        typed = path.suffix.lower() in TYPED_SUFFIXES
        features = np.column_stack([
            outcome_values(frame[c], column=c, source=str(path), typed=typed) for c in feature_columns
        ])  # fmt: skip
    return ClickFile(frame[query_column].to_numpy(), positions, clicks, features)

"""Read a click log file: one row per impression with a query, a position and a click.

A CSV (``.csv``), TSV (``.tsv`` / ``.txt``) or Parquet (``.parquet`` / ``.pq``) table with (by
default) the columns ``query``, ``position`` and ``click``; other columns are ignored. Positions
are 0-based (0 = shown first, as LightGBM's ``position``) unless ``first_position=1``; clicks are
integers >= 0. Every problem is one :class:`ltr.errors.DataError` line naming the file, the
column and the row.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ltr.errors import DataError

TABLE_SUFFIXES = {".csv": ",", ".tsv": "\t", ".txt": "\t", ".parquet": None, ".pq": None}


@dataclass(frozen=True, slots=True)
class ClickFile:
    """The columns of a click log: ``qids`` (as read), 0-based ``positions``, ``clicks``."""

    qids: NDArray[np.generic]
    positions: NDArray[np.int64]
    clicks: NDArray[np.int64]


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
    `DataError` naming the row (1-based, after the header)."""
    values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values) | (values != np.round(values)) | (values < minimum)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(
            f"{path}, row {i + 1}: {column} {frame[column].iloc[i]!r} is not an integer >= {minimum}"
        )
    return values.astype(np.int64)


def read_click_file(
    path: Path,
    *,
    query_column: str = "query",
    position_column: str = "position",
    click_column: str = "click",
    first_position: int = 0,
) -> ClickFile:
    """Read a click log file (see the module docstring)."""
    if first_position not in (0, 1):
        raise ValueError(f"first_position={first_position} must be 0 or 1")
    frame = read_table_file(path, [query_column, position_column, click_column])
    if frame.shape[0] == 0:
        raise DataError(f"{path} has no rows")
    positions = integer_column(frame, position_column, path, minimum=first_position) - first_position
    clicks = integer_column(frame, click_column, path, minimum=0)
    return ClickFile(frame[query_column].to_numpy(), positions, clicks)

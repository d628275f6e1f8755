"""The checks every click log passes before ``ltr`` uses it, whoever reads it.

One click log is one row per impression: the query (session) it was shown in, the position it
was shown at, what the user did (``click``, ``purchase``: numbers). ``ltr ope``, ``ltr
exposure``, ``ltr abtest`` and training on a click log refuse, in one :class:`DataError` line
naming the file (or split) and the row or query:

- an outcome column (clicks, purchases) that is not numeric: a text column of a typed file
  (a Parquet string column, even of ``"0"`` / ``"1"``), or a value of a text file (CSV / TSV)
  that does not read as a number (:func:`outcome_values`);
- two documents at one position of one query (:func:`check_sessions`): the log then says
  nothing about which of them was examined there;
- every row at the same position (:func:`check_sessions`): the log carries no position
  information, so no propensity or exposure can be estimated from it.

Everything is vectorised over the rows (a sort, no per-query loop).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ltr.errors import DataError

#: Suffixes of files whose columns carry a type (a text column there is text, not numbers).
TYPED_SUFFIXES = (".parquet", ".pq")


def shown(value: Any) -> str:
    """A value of a user's file as a message shows it: text quoted, numbers plain, never a
    numpy repr (``np.float64(nan)``).

    >>> shown(np.float64(float("nan"))), shown(np.int64(3)), shown(np.str_("1")), shown(None)
    ('NaN', '3', "'1'", 'an empty cell')
    """
    if value is None or value is pd.NA or value is pd.NaT:
        return "an empty cell"
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    if isinstance(value, str):
        return repr(str(value))  # a numpy str_ too
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return "NaN" if value != value else f"{value:g}"
    return str(value)


def _is_text(values: pd.Series) -> bool:
    return not (pd.api.types.is_numeric_dtype(values.dtype) or pd.api.types.is_bool_dtype(values.dtype))


def outcome_values(
    values: pd.Series, *, column: str, source: str, typed: bool, type_name: str | None = None
) -> NDArray[np.float64]:
    """The numbers of an outcome column (clicks, purchases) as float64 (NaN: an empty cell).

    Parameters
    ----------
    values : the column as read
    column : its name, for messages
    source : the file, for messages
    typed : the file types its columns (Parquet): a text column is refused whatever it holds;
        a text file's (CSV / TSV) values are text by nature and must each read as a number
    type_name : the column's type in the file, for messages (default the pandas dtype)

    Raises
    ------
    DataError
        a text column of a typed file, or a value that is not a number: one line naming the
        file, the row (1-based, after a header) and the value.

    Examples
    --------
    >>> outcome_values(pd.Series(["0", "1"]), column="click", source="log.csv", typed=False).tolist()
    [0.0, 1.0]
    >>> outcome_values(pd.Series(["0", "1"]), column="click", source="log.parquet", typed=True, type_name="string")
    Traceback (most recent call last):
    ...
    ltr.errors.DataError: log.parquet, row 1: click '0' is text (column type string): column 'click' must hold numbers, not text
    """
    if not _is_text(values):
        return np.asarray(values.to_numpy(dtype=np.float64, na_value=np.nan), dtype=np.float64)
    if typed:
        i = 0
        if values.shape[0] == 0:
            raise DataError(f"{source}: column {column!r} is text (column type {type_name or values.dtype}): it must hold numbers")
        raise DataError(
            f"{source}, row {i + 1}: {column} {shown(values.iloc[i])} is text (column type {type_name or values.dtype}): "
            f"column {column!r} must hold numbers, not text"
        )
    text = values.astype(str).str.strip()
    numbers = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64)
    bad = np.isnan(numbers) & (text.to_numpy() != "")
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(f"{source}, row {i + 1}: {column} {shown(values.iloc[i])} is not a number")
    return numbers


def first_shared_position(sessions: NDArray[np.integer], positions: NDArray[np.integer]) -> tuple[int, int] | None:
    """The first row (in row order) that shares its (session, position) with an earlier row, and
    that earlier row: ``(earlier, row)``; None when every (session, position) is one row.

    >>> first_shared_position(np.array([0, 0, 1, 1, 0]), np.array([0, 1, 0, 1, 1]))
    (1, 4)
    >>> first_shared_position(np.array([0, 0, 1]), np.array([0, 1, 0])) is None
    True
    """
    s = np.asarray(sessions, dtype=np.int64)
    p = np.asarray(positions, dtype=np.int64)
    if s.shape[0] < 2:
        return None
    order = np.lexsort((np.arange(s.shape[0]), p, s))  # by session, position, then row
    ss, ps = s[order], p[order]
    repeat = np.flatnonzero((ss[1:] == ss[:-1]) & (ps[1:] == ps[:-1])) + 1
    if repeat.shape[0] == 0:
        return None
    j = int(repeat[np.argmin(order[repeat])])  # the smallest row that repeats an earlier one
    # the smallest repeating row has exactly one earlier row of its key: the one just before it
    return int(order[j - 1]), int(order[j])


def check_sessions(
    sessions: NDArray[np.integer],
    positions: NDArray[np.integer],
    *,
    source: str,
    session_names: NDArray[Any] | None = None,
    row_numbers: bool = True,
    first_position: int = 0,
    query_word: str = "query",
) -> None:
    """Refuse two documents at one position of one session, and a log at one position only.

    Parameters
    ----------
    sessions : int array, shape (n_rows,): the session (query) index of every row (any codes)
    positions : int array, shape (n_rows,): 0-based positions
    source : the file (or split) named in messages
    session_names : the name of every session code (``session_names[code]``), as the file
        writes it; default the codes
    row_numbers : name the rows (1-based, in ``source``'s order); False when the rows are not
        in the file's order (a split of it): the query and the position say where
    first_position : the position of the top result as the file writes it (messages show
        positions as written)
    query_word : what a session is called in messages (``"query"``, ``"qid"``)

    Raises
    ------
    DataError
        one line naming the source, the rows (or query) and the position.

    Examples
    --------
    >>> check_sessions(np.array([0, 0, 1]), np.array([0, 0, 0]), source="log.csv", session_names=np.array(["a", "b"]))
    Traceback (most recent call last):
    ...
    ltr.errors.DataError: log.csv, rows 1 and 2: query 'a' shows two documents at position 0; a click log has one document per position of a query (session)
    """
    pos = np.asarray(positions, dtype=np.int64)
    if pos.shape[0] == 0:
        return
    shared = first_shared_position(sessions, pos)
    if shared is not None:
        i, j = shared
        code = int(np.asarray(sessions)[j])
        name = shown(session_names[code]) if session_names is not None else str(code)
        where = f"{source}, rows {i + 1} and {j + 1}" if row_numbers else source
        raise DataError(
            f"{where}: {query_word} {name} shows two documents at position {int(pos[j]) + first_position}; "
            "a click log has one document per position of a query (session)"
        )
    if int(pos.min()) == int(pos.max()):
        raise DataError(
            f"{source}: every row is at position {int(pos[0]) + first_position}: the log holds no position "
            "information (no propensity or exposure can be estimated); give each document the position it was shown at"
        )


def check_click_rows(
    queries: NDArray[Any] | pd.Series, positions: NDArray[np.integer], *, source: str, first_position: int = 0
) -> None:
    """:func:`check_sessions` on a click log file's rows in file order: ``queries`` as read
    (any ids), ``positions`` 0-based."""
    codes, names = pd.factorize(np.asarray(queries), sort=False, use_na_sentinel=False)
    check_sessions(codes, positions, source=source, session_names=np.asarray(names), first_position=first_position)

"""A user's click log as data: Parquet / CSV tables (``data=parquet``) whose rows are impressions.

``data.click_column`` names the column of clicks (0/1) and ``data.position_column`` the logged
0-based positions; optional columns: ``data.propensity_column`` (a logged propensity per row),
``data.logger_column`` (the id of the ranker that showed the list) and ``data.query_column``
(the query of each list when every list is one session: ``data.qid_column`` is then the session
id) and ``data.randomized_column`` (0 / 1, constant within a session: 1 where the session was
shown in a uniformly random order, ``eval.clicks.propensity=randomized``). They are read as behaviour columns (numeric, never features) of every split; the click view
of the splits (:func:`click_splits`) has the clicks as labels, as the click view of
``data=synthetic_clicks`` (:class:`ltr.data.load.ClickSplits`) has.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ltr.data.feedback.click_checks import TYPED_SUFFIXES, check_sessions, outcome_values, shown
from ltr.data.ranking_data import RankingData
from ltr.data.splits import Splits
from ltr.errors import DataError
from ltr.metrics.offsets import row_queries

#: The click-log options of ``data=parquet``, in the order they are read.
CLICK_OPTIONS = ("click_column", "propensity_column", "logger_column", "query_column", "randomized_column")


def click_options(data_cfg: Any) -> dict[str, str]:
    """The click-log options that are set: ``{"click_column": "click", ...}``."""
    return {key: str(getattr(data_cfg, key)) for key in CLICK_OPTIONS if getattr(data_cfg, key, None) is not None}


def is_click_log(data_cfg: Any) -> bool:
    """True for a table data option with a click column (a user's click log)."""
    return getattr(data_cfg, "click_column", None) is not None


def extra_behaviours(data_cfg: Any) -> list[str]:
    """The click-log columns that are not already behaviour columns (read as behaviours)."""
    listed = [str(c) for c in getattr(data_cfg, "behaviour_columns", None) or []]
    out: list[str] = []
    for column in click_options(data_cfg).values():
        if column not in listed and column not in out:
            out.append(column)
    return out


def table_columns(path: Path) -> list[str] | None:
    """The column names of a Parquet / CSV / TSV table (None: not a table this can read cheaply)."""
    suffix = path.suffix.lower()
    try:
        if suffix in (".parquet", ".pq"):
            import pyarrow.parquet as pq

            return [str(n) for n in pq.read_schema(path).names]
        if suffix in (".csv", ".tsv", ".txt"):
            with open(path, encoding="utf-8", errors="replace") as f:
                header = f.readline().rstrip("\r\n")
            return header.split("\t" if suffix != ".csv" else ",")
    except (OSError, ValueError):
        return None  # the reader says what is wrong with the file
    return None


def check_click_columns(data_cfg: Any, files: Mapping[str, Any]) -> None:
    """Every click-log column (and the position column) is in every split file given: else one
    line naming the option, the column and the file, before anything is read."""
    wanted = click_options(data_cfg)
    position = getattr(data_cfg, "position_column", None)
    if position is not None:
        wanted = {"position_column": str(position), **wanted}
    for file in files.values():
        if not isinstance(file, str | Path) or not str(file):
            continue
        path = Path(str(file)).expanduser()
        names = table_columns(path)
        if names is None:
            continue
        for option, column in wanted.items():
            if column not in names:
                shown = ", ".join(names[:20]) + (", ..." if len(names) > 20 else "")
                raise DataError(f"data.{option}={column!r}: {path} has no column {column!r} (columns: {shown})")
        if path.suffix.lower() in TYPED_SUFFIXES and "click_column" in wanted:
            _check_numeric_parquet(path, wanted["click_column"])


def _check_numeric_parquet(path: Path, column: str) -> None:
    """A Parquet click column of text (even ``"0"`` / ``"1"``) is refused from its schema (its
    first row read only then): :func:`ltr.data.feedback.click_checks.outcome_values`."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    kind = pq.read_schema(path).field(column).type
    if pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind) or pa.types.is_decimal(kind):
        return
    file = pq.ParquetFile(path)
    first = file.read_row_group(0, columns=[column]).column(0).slice(0, 1).to_pandas() if file.num_row_groups else pd.Series([])
    outcome_values(first.astype(object), column=column, source=str(path), typed=True, type_name=str(kind))


def clicks_of(data: RankingData, column: str, *, split: str = "") -> NDArray[np.int32]:
    """The click column of a split as int32 0/1 (a one-line `DataError` naming the first other
    value), after the split's sessions pass :func:`ltr.data.feedback.click_checks.check_sessions` (one
    document per position of a qid, more than one position); ``split`` names it in messages."""
    if data.positions is not None:
        check_sessions(
            row_queries(data.offsets), data.positions, source=f"{data.name} ({split or 'a'} split)",
            session_names=data.written_qids(), row_numbers=False, query_word="qid",
        )  # fmt: skip
    values = (data.behaviours or {}).get(column)
    if values is None:  # pragma: no cover - the reader reads every click-log column
        raise DataError(f"{data.name}: no click column {column!r}; report this as a bug")
    bad = (values != 0) & (values != 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(
            f"data.click_column={column!r} of {data.name} holds {values[i]:g} at row {i + 1}: clicks must be 0 or 1 "
            "(one row per impression)"
        )
    return values.astype(np.int32)


def click_splits(splits: Splits, column: str) -> Splits:
    """The same splits with the clicks of ``column`` as labels (positions, features, behaviours kept)."""
    for split, part in splits.items():
        if part.positions is None:
            raise DataError(f"the {split} split has no positions: a click log needs data.position_column")
    return Splits(*(dataclasses.replace(part, labels=clicks_of(part, column, split=split)) for split, part in splits.items()))


def behaviour(data: RankingData, column: str | None) -> NDArray[np.float64] | None:
    """A click-log column of a split (None when the option is unset)."""
    if column is None:
        return None
    values = (data.behaviours or {}).get(column)
    return None if values is None else np.asarray(values, dtype=np.float64)


def randomized_flags(data: RankingData, column: str, *, split: str = "train") -> NDArray[np.int8]:
    """The ``data.randomized_column`` of a split as 0 / 1 per row, checked: one `DataError` line
    naming the column and the qid for a value other than 0 / 1, a session with both, or a split
    without any randomized session."""
    values = behaviour(data, column)
    if values is None:  # pragma: no cover - the reader reads every click-log column
        raise DataError(f"{data.name}: no randomized column {column!r}; report this as a bug")
    names = np.repeat(data.written_qids(), data.group_sizes)
    bad = (values != 0) & (values != 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(
            f"data.randomized_column={column!r} of {data.name} ({split} split) holds {shown(values[i])} at qid "
            f"{shown(names[i])}: give 1 for a session shown in random order, else 0"
        )
    sizes = data.group_sizes
    ones = np.add.reduceat(values, data.offsets[:-1]) if values.size else np.zeros(0)
    mixed = np.flatnonzero((ones > 0) & (ones < sizes))
    if mixed.size:
        raise DataError(
            f"data.randomized_column={column!r} of {data.name} ({split} split) is not constant within qid "
            f"{shown(data.written_qids()[int(mixed[0])])}: a session is randomized (1) or not (0) as a whole"
        )
    if not (ones > 0).any():
        raise DataError(
            f"data.randomized_column={column!r} of {data.name} ({split} split) marks no randomized session (every row 0): "
            "name the column of the sessions shown in random order, or unset it"
        )
    return values.astype(np.int8)


def propensity_inputs(method: str, train: RankingData, options: Mapping[str, str]) -> dict[str, Any]:
    """The per-row inputs :func:`ltr.metrics.clicks.propensity.estimate_propensity` needs beyond the
    clicks and positions for ``eval.clicks.propensity=method``, from a click log's training split
    and its column options (:func:`click_options`): ``em`` the features; ``column`` the logged
    propensities; ``harvest`` the document ids, the logging rankers and the query of each list
    (its ``data.query_column``, else the list's own qid); ``randomized`` the checked flags of
    ``data.randomized_column`` (:func:`randomized_flags`), which ``em`` checks its curve against
    when the column is set; nothing for the others."""
    if method == "em":
        column = options.get("randomized_column")
        return {"features": train.features} | ({} if column is None else {"randomized": randomized_flags(train, column)})
    if method == "column":
        return {"row_propensities": behaviour(train, options.get("propensity_column"))}
    if method == "harvest":
        query = behaviour(train, options.get("query_column"))
        return {
            "doc_ids": train.doc_ids,
            "loggers": behaviour(train, options.get("logger_column")),
            "query_ids": query if query is not None else train.row_qids(),
        }
    if method == "randomized":
        return {"randomized": randomized_flags(train, options["randomized_column"])}
    return {}

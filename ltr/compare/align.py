"""Align the per-query tables of several runs by ``qid``: one value matrix per metric.

Qids are integers, or strings as the data wrote them (string-qid data since ltr kept them as
written in its tables); tables of the two kinds are never paired (:func:`align_tables`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ltr.errors import LtrUserError
from ltr.metrics import Strata
from ltr.metrics.strata import EMPTY_LABEL


@dataclass(frozen=True, slots=True)
class AlignedRuns:
    """Per-query values of several runs on the queries they share, in the first run's order.

    Attributes
    ----------
    labels : run labels, in input order (the first is the reference for query order and strata)
    qids : shape (n,), the shared query ids
    list_len : int64, shape (n,), list length of every query in the first table
    strata : object, shape (n,), stratum display label of every query in the first table
    values : metric name -> float64 array of shape (n_runs, n); NaN where a run has no value
        (``zero_idcg=skip``)
    n_dropped : per run, how many of its queries are not shared by all runs
    """

    labels: tuple[str, ...]
    qids: NDArray[np.generic]
    list_len: NDArray[np.int64]
    strata: NDArray[np.object_]
    values: dict[str, NDArray[np.float64]]
    n_dropped: tuple[int, ...]

    @property
    def n_queries(self) -> int:
        return int(self.qids.shape[0])

    def stratum_order(self) -> list[str]:
        """Stratum labels present, by increasing list length; ``empty`` last."""
        frame = pd.DataFrame({"stratum": self.strata, "list_len": self.list_len})
        first = frame.groupby("stratum", sort=False)["list_len"].min().sort_values(kind="stable")
        labels = [str(s) for s in first.index]
        return [s for s in labels if s != EMPTY_LABEL] + [s for s in labels if s == EMPTY_LABEL]


def _check_table(table: pd.DataFrame, label: str, metrics: Sequence[str]) -> None:
    missing = [c for c in ("qid", "list_len", *metrics) if c not in table.columns]
    if missing:
        have = [c for c in table.columns if c not in ("qid", "list_len", "stratum", "n_relevant")]
        raise LtrUserError(
            f"the per-query table of run {label!r} has no column {', '.join(missing)}; "
            f"it has {', '.join(map(str, have))}"
        )
    duplicated = table["qid"].duplicated()
    if duplicated.any():
        qid = table["qid"][duplicated].tolist()[0]
        raise LtrUserError(f"the per-query table of run {label!r} lists qid {qid!r} more than once")


def _qid_kind(table: pd.DataFrame, label: str) -> str:
    """``"string"`` (the qids as written), ``"number"`` or ``"empty"``: how the table names its
    queries; a table that mixes strings and numbers is refused in one line."""
    kind = pd.api.types.infer_dtype(table["qid"], skipna=False)
    if kind.startswith("mixed"):
        raise LtrUserError(
            f"the per-query table of run {label!r} names its queries by strings and by numbers "
            f"({', '.join(map(repr, table['qid'].drop_duplicates().head(3)))}, ...)"
        )
    return kind if kind in ("string", "empty") else "number"


class UnpairedQids(LtrUserError):
    """Per-query tables that name their queries by strings (as written) and by numbers."""


def _first_qid(table: pd.DataFrame) -> object:
    """The table's first qid as a Python value (its repr names it as the table holds it)."""
    first: object = table["qid"].iloc[:1].tolist()[0]
    return first


def _check_qid_kinds(tables: Sequence[pd.DataFrame], labels: Sequence[str]) -> None:
    """Integer qids are paired with integer qids and string qids with string qids, never one with
    the other: a table logged before ltr kept string qids as written holds the readers' numbers
    (0, 1, ... in file order), which name no string qid reliably."""
    kinds = [_qid_kind(table, label) for table, label in zip(tables, labels, strict=True)]
    if "string" in kinds and "number" in kinds:
        s, i = kinds.index("string"), kinds.index("number")
        raise UnpairedQids(
            f"run {labels[s]!r} names its queries as written (qid {_first_qid(tables[s])!r}) but run "
            f"{labels[i]!r} by numbers (qid {_first_qid(tables[i])!r}): a run logged before ltr kept "
            f"string qids as written numbers them 0, 1, ..., which pairs no query reliably; re-run "
            f"{labels[i]!r} (ltr rerun) to compare them"
        )


def align_tables(
    tables: Sequence[pd.DataFrame], labels: Sequence[str], *, metrics: Sequence[str]
) -> AlignedRuns:
    """Align per-query tables on the qids every table has.

    Parameters
    ----------
    tables : per-query tables (`ltr.metrics.per_query_table` layout: ``qid``, ``list_len``,
        optionally ``stratum``, and the metric columns)
    labels : one label per table, used in error messages and in the result
    metrics : metric columns to extract (each must be in every table)

    Returns
    -------
    AlignedRuns
        Queries in the first table's order, restricted to those present in every table. The
        stratum of a query is the first table's ``stratum`` column (recomputed from
        ``list_len`` with the default `Strata` when the column is absent).

    Raises
    ------
    LtrUserError
        A table lacks a column or repeats a qid, the tables share no query, or one names its
        queries by strings (the qids as written) and another by integers (a table logged
        before ltr kept string qids as written: its numbers cannot be paired with the strings).

    Examples
    --------
    >>> a = pd.DataFrame({"qid": [1, 2, 3], "list_len": [5, 20, 60], "m": [0.1, 0.2, 0.3]})
    >>> b = pd.DataFrame({"qid": [3, 1], "list_len": [60, 5], "m": [0.9, 0.8]})
    >>> r = align_tables([a, b], ["a", "b"], metrics=["m"])
    >>> r.qids.tolist(), r.values["m"].tolist(), r.n_dropped
    ([1, 3], [[0.1, 0.3], [0.8, 0.9]], (1, 0))
    """
    if len(tables) != len(labels):
        raise ValueError(f"{len(tables)} tables but {len(labels)} labels")
    if not tables:
        raise ValueError("no tables to align")
    for table, label in zip(tables, labels, strict=True):
        _check_table(table, label, metrics)
    _check_qid_kinds(tables, labels)
    first = tables[0]
    shared = pd.Index(first["qid"])
    for table in tables[1:]:
        shared = shared[shared.isin(table["qid"])]
    if len(shared) == 0:
        raise LtrUserError(f"runs {', '.join(map(repr, labels))} share no query id")
    keep = first["qid"].isin(shared).to_numpy()
    list_len = first["list_len"].to_numpy(dtype=np.int64)[keep]
    if "stratum" in first.columns:
        strata = first["stratum"].to_numpy(dtype=object)[keep]
    else:
        default = Strata()
        strata = default.label_of(default.assign(list_len))
    indexed = [table.set_index("qid") for table in tables]
    values = {
        metric: np.stack(
            [t[metric].reindex(shared).to_numpy(dtype=np.float64) for t in indexed]
        )
        for metric in metrics
    }
    return AlignedRuns(
        labels=tuple(labels),
        qids=shared.to_numpy(),
        list_len=list_len,
        strata=np.asarray(strata, dtype=object),
        values=values,
        n_dropped=tuple(len(t) - len(shared) for t in tables),
    )

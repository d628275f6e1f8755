"""Checks that turn a freshly parsed table into a valid `RankingData`, or stop with one clear line.

Every check raises :class:`ltr.errors.DataError` whose message names the file, the line (or row)
and/or the qid, and says what to do. Nothing here trains or logs to MLflow, so a bad file stops a
run before it starts.

Policies (documented in ``data/README.md``):

- **Labels** must be finite, non-negative and (by default) integers. Labels above ``max_label``
  (30 by default: LightGBM's default ``label_gain`` has 31 entries, grades 0..30) are an
  **error** that names the fix ``model.label_gain=[...]`` plus ``data.max_label=...``: grades that
  high are nearly always a wrong column (clicks, scores), and silently extending the exponential
  gain ``2**g - 1`` would let one document outweigh the rest of the data set.
- **Rows of a query that are not contiguous** are regrouped stably (queries in order of first
  appearance, rows of a query in file order) with one warning giving the count and naming the
  first such query as written (:func:`ltr.errors.qid_text`). They are never mis-grouped.
- **A query longer than** ``max_list_len`` (10,000: LightGBM's limit with its ndcg metric) is an
  error naming the qid.
- **The same qid in train and test** is a warning (``logging``), not an error; string qids are
  compared as written.
- **Feature values** may be NaN (LightGBM's missing value) but not infinite: the readers refuse
  ``inf`` / ``-inf`` (and values beyond float32's range) naming the line or the column and row,
  and :func:`check_ranking_data` refuses them in a cache entry.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ltr.data.feedback.positions import check_positions
from ltr.data.ranking_data import RankingData
from ltr.errors import DataError, qid_text

logger = logging.getLogger(__name__)

#: Grades LightGBM's default ``label_gain`` (``2**i - 1`` for ``i`` in 0..30) covers.
LIGHTGBM_MAX_DEFAULT_LABEL = 30
#: LightGBM's limit on documents per query with its ndcg metric.
LIGHTGBM_MAX_LIST_LEN = 10_000


@dataclass(frozen=True, slots=True)
class RawTable:
    """A parsed file before validation: one entry per data row, in file order.

    Parameters
    ----------
    features : float32 array, shape (n_rows, n_features)
    labels : float64 array, shape (n_rows,), as written in the file (not yet checked)
    row_qids : int64 array, shape (n_rows,), the qid of every row
    row_lines : int64 array, shape (n_rows,), 1-based line (or row) number of every row, for messages
    source : the file name used in messages
    where : ``"line"`` for text files, ``"row"`` for tables (Parquet / CSV data rows)
    feature_names : names of the feature columns, or ``()``
    positions : int32 array, shape (n_rows,), the logged 0-based position of every row (already
        checked by :mod:`ltr.data.feedback.positions`), or None when the file has none
    doc_ids : object array of str, shape (n_rows,), the document id of every row, or None
    behaviours : name -> float64 array, shape (n_rows,), behaviour columns of a table, or None
    notes : warnings of the parse that :func:`to_ranking_data` logs and hands on (e.g. to the
        cache, which repeats them on a hit)
    qid_names : when the qids were ids (strings) numbered 0, 1, ...: the id of each number, as
        written (``RankingData.qid_names``), or None
    """

    features: NDArray[np.float32]
    labels: NDArray[np.float64]
    row_qids: NDArray[np.int64]
    row_lines: NDArray[np.int64]
    source: str
    where: str = "line"
    feature_names: tuple[str, ...] = ()
    positions: NDArray[np.int32] | None = None
    doc_ids: NDArray[np.object_] | None = None
    behaviours: dict[str, NDArray[np.float64]] | None = None
    notes: tuple[str, ...] = ()
    qid_names: tuple[str, ...] | None = None

    @property
    def n_rows(self) -> int:
        return int(self.labels.shape[0])


def check_labels(
    table: RawTable, *, integer_labels: bool = True, max_label: int | None = LIGHTGBM_MAX_DEFAULT_LABEL,
    value_labels: bool = False,
) -> NDArray[np.int32]:
    """Return the labels as int32 after checking them; raise `DataError` on the first bad one.

    Parameters
    ----------
    table : the parsed file
    integer_labels : require integer grades (ranking objectives); when False, labels are
        truncated towards zero after the other checks (pointwise use only)
    max_label : the largest grade accepted, or None for no limit

    Raises
    ------
    DataError
        a NaN, infinite, negative, non-integer (when required) or too large label, naming the
        line (or row) of the file.
    """
    labels = table.labels
    checks: list[tuple[NDArray[np.bool_], str]] = [
        (np.isnan(labels), "is not a number (NaN); give every row a numeric grade 0, 1, 2, ..."),
        (np.isinf(labels), "is infinite; give every row a finite grade 0, 1, 2, ..."),
    ]
    for bad, what in checks:
        if bad.any():
            i = int(np.argmax(bad))
            raise DataError(f"label {labels[i]} at {_where(table, i)} {what}")
    neg = labels < 0
    if neg.any() and value_labels:
        i = int(np.argmax(neg))
        raise DataError(f"label {labels[i]:g} at {_where(table, i)} is negative; a value gain (revenue, margin) must be >= 0")
    if value_labels:  # real values as they are (value gains; ltr evaluate --gain value)
        return labels  # type: ignore[return-value]  # float64 here: the caller asked for values
    if neg.any():
        i = int(np.argmax(neg))
        raise DataError(
            f"label {labels[i]:g} at {_where(table, i)} is negative; relevance grades must be "
            "0, 1, 2, ... (shift or clip the labels)"
        )
    if integer_labels:
        frac = labels != np.floor(labels)
        if frac.any():
            i = int(np.argmax(frac))
            raise DataError(
                f"label {labels[i]:g} at {_where(table, i)} is not an integer; ranking objectives "
                "need integer grades: round the labels, or set data.integer_labels=false for a "
                "pointwise objective (to evaluate real values such as revenue: ltr evaluate --gain value)"
            )
    if max_label is not None and labels.size:
        too_big = labels > max_label
        if too_big.any():
            i = int(np.argmax(too_big))
            top = int(labels.max())
            raise DataError(
                f"label {labels[i]:g} at {_where(table, i)} is above {max_label}, the largest grade "
                f"LightGBM's default label_gain covers; if grades up to {top} are right, set "
                f"model.label_gain=[...] with {top + 1} gains and data.max_label={top}"
            )
    if labels.size and labels.max() > np.iinfo(np.int32).max:
        i = int(np.argmax(labels))
        raise DataError(f"label {labels[i]:g} at {_where(table, i)} does not fit a 32-bit integer")
    return labels.astype(np.int32)


def run_starts(row_qids: NDArray[np.integer]) -> NDArray[np.intp]:
    """The rows where a run of equal qids begins (row 0 included; a query whose rows are
    contiguous is one run).

    >>> run_starts(np.array([7, 7, 9, 7])).tolist()
    [0, 2, 3]
    """
    return np.flatnonzero(np.concatenate(([True], row_qids[1:] != row_qids[:-1])))


def group_rows(
    table: RawTable, *, notes: list[str] | None = None
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64] | None]:
    """Find the query boundaries; regroup stably if the rows of a query are not contiguous.

    Returns
    -------
    qids : int64 (n_queries,), in order of first appearance
    offsets : int64 (n_queries + 1,)
    order : row permutation to apply (``None`` when the rows are already contiguous)

    A regrouping logs one warning with the number of queries whose rows were split and the first
    of them, named as written (``table.qid_names``: ``qid 'q-b'``; integer qids: ``qid 7``), and
    appends it to ``notes``, if given, so a cache can repeat it.
    """
    row_qids = table.row_qids
    n = row_qids.shape[0]
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(1, np.int64), None
    starts = run_starts(row_qids)
    run_qids = row_qids[starts]
    uniq, first_run, run_count = np.unique(run_qids, return_index=True, return_counts=True)
    if uniq.shape[0] == run_qids.shape[0]:
        offsets = np.append(starts, n).astype(np.int64)
        return run_qids.astype(np.int64), offsets, None
    # Not contiguous. Queries keep the order of their first row; rows of a query keep file order.
    split_q = uniq[run_count > 1]
    q = split_q[np.argmin(first_run[run_count > 1])]
    runs_of_q = starts[run_qids == q]
    first_line = int(table.row_lines[runs_of_q[0]])
    again_line = int(table.row_lines[runs_of_q[1]])
    note = (
        f"{table.source}: rows of {split_q.shape[0]} of {uniq.shape[0]} queries are not contiguous "
        f"(qid {qid_text(int(q), table.qid_names)} at {table.where} {first_line} comes back at "
        f"{table.where} {again_line}); "
        "regrouped them stably by qid, in order of first appearance"
    )
    logger.warning("%s", note)
    if notes is not None:
        notes.append(note)
    _, first_row, inverse = np.unique(row_qids, return_index=True, return_inverse=True)
    rank = np.empty_like(first_row)
    rank[np.argsort(first_row, kind="stable")] = np.arange(first_row.shape[0])
    order = np.argsort(rank[inverse], kind="stable").astype(np.int64)
    grouped = row_qids[order]
    starts = np.flatnonzero(np.concatenate(([True], grouped[1:] != grouped[:-1])))
    offsets = np.append(starts, n).astype(np.int64)
    return grouped[starts].astype(np.int64), offsets, order


def check_list_lengths(
    table: RawTable,
    qids: NDArray[np.int64],
    offsets: NDArray[np.int64],
    *,
    max_list_len: int | None = LIGHTGBM_MAX_LIST_LEN,
    order: NDArray[np.int64] | None = None,
) -> None:
    """Raise `DataError` if a query has more than ``max_list_len`` rows (None: no limit), naming
    the query as written (``table.qid_names``)."""
    if max_list_len is None or qids.shape[0] == 0:
        return
    sizes = np.diff(offsets)
    long = sizes > max_list_len
    if long.any():
        i = int(np.argmax(long))
        first_row = int(offsets[i]) if order is None else int(order[offsets[i]])
        raise DataError(
            f"qid {qid_text(int(qids[i]), table.qid_names)} in {table.source} (first at {table.where} "
            f"{int(table.row_lines[first_row])}) has {int(sizes[i])} documents, more than "
            f"{max_list_len} (LightGBM's limit per query with its ndcg metric); split or truncate "
            "the query, or raise data.max_list_len if you do not use LightGBM's ndcg"
        )


def to_ranking_data(
    table: RawTable,
    *,
    name: str = "data",
    integer_labels: bool = True,
    max_label: int | None = LIGHTGBM_MAX_DEFAULT_LABEL,
    max_list_len: int | None = LIGHTGBM_MAX_LIST_LEN,
    notes: list[str] | None = None,
    value_labels: bool = False,
) -> RankingData:
    """Validate a parsed table and build its `RankingData` (rows contiguous per query).

    Warnings (a regrouping) are logged and appended to ``notes`` if given.

    Raises
    ------
    DataError
        on an empty table, a bad label or a too long query (see the module docstring).
    """
    if table.n_rows == 0:
        raise DataError(
            f"{table.source} has no data rows (an empty file, or only blank lines and comments); "
            "check the path, or regenerate the file"
        )
    labels = check_labels(table, integer_labels=integer_labels, max_label=max_label, value_labels=value_labels)
    for note in table.notes:
        logger.warning("%s", note)
        if notes is not None:
            notes.append(note)
    qids, offsets, order = group_rows(table, notes=notes)
    check_list_lengths(table, qids, offsets, max_list_len=max_list_len, order=order)
    features = table.features
    positions, doc_ids, behaviours = table.positions, table.doc_ids, table.behaviours
    if order is not None:
        features = features[order]
        labels = labels[order]
        if positions is not None:
            positions = positions[order]  # a position follows its row
        if doc_ids is not None:
            doc_ids = doc_ids[order]  # so does its document id
        if behaviours is not None:
            behaviours = {k: v[order] for k, v in behaviours.items()}  # and what users did with it
    return RankingData(
        features=np.ascontiguousarray(features, dtype=np.float32),
        labels=labels,
        qids=qids,
        offsets=offsets,
        feature_names=table.feature_names,
        name=name,
        positions=positions,
        doc_ids=doc_ids,
        behaviours=behaviours,
        qid_names=None if table.qid_names is None else np.asarray(table.qid_names, dtype=object)[qids],
    )


def check_ranking_data(
    data: RankingData,
    *,
    source: str,
    integer_labels: bool = True,
    max_label: int | None = LIGHTGBM_MAX_DEFAULT_LABEL,
    max_list_len: int | None = LIGHTGBM_MAX_LIST_LEN,
    n_features: int | None = None,
    feature_names: tuple[str, ...] | None = None,
) -> None:
    """Check a `RankingData` that did not come from a fresh parse (e.g. the binary cache) against
    everything :func:`to_ranking_data` and the readers refuse with the same options.

    That is: the dtypes and layout of `RankingData`, at least one row, the labels (as
    :func:`check_labels`), one group per qid (rows of a query contiguous), no query longer than
    ``max_list_len``, ``n_features`` columns when given, and ``feature_names`` when given (the
    ``feature_columns`` of a table), and no infinite feature value. Features may hold NaN, as a
    parse allows (LightGBM's missing value). Messages name rows as ``row N of {source}``.

    Raises
    ------
    DataError
        the first problem found.
    """
    expected = (
        ("features", data.features, np.float32),
        ("labels", data.labels, np.int32),
        ("qids", data.qids, np.int64),
        ("offsets", data.offsets, np.int64),
        ("positions", data.positions, np.int32),
    )
    for field, arr, dtype in expected:
        if arr is None:
            continue
        if not isinstance(arr, np.ndarray) or arr.dtype != np.dtype(dtype) or not arr.flags.c_contiguous:
            got = arr.dtype if isinstance(arr, np.ndarray) else type(arr).__name__
            raise DataError(f"{field} of {source} are {got}, not C-contiguous {np.dtype(dtype)}")
    if data.n_rows == 0:
        raise DataError(f"{source} has no data rows")
    row_qids = data.row_qids()
    numbered = data.qid_names is not None and np.array_equal(data.qids, np.arange(data.n_queries))
    table = RawTable(
        features=data.features,
        labels=data.labels.astype(np.float64),
        row_qids=row_qids,
        row_lines=np.arange(1, data.n_rows + 1, dtype=np.int64),
        source=source,
        where="row",
        feature_names=data.feature_names,
        qid_names=tuple(data.qid_names) if numbered and data.qid_names is not None else None,  # as a read numbers them
    )
    check_labels(table, integer_labels=integer_labels, max_label=max_label)
    uniq, counts = np.unique(data.qids, return_counts=True)
    if uniq.shape[0] != data.n_queries:
        q = int(uniq[np.argmax(counts > 1)])
        raise DataError(f"qid {q} has more than one group of rows in {source}; the rows of a query must be contiguous")
    check_list_lengths(table, data.qids, data.offsets, max_list_len=max_list_len)
    if data.positions is not None:
        check_positions(data.positions, source=source, where="row", row_qids=row_qids)
    if n_features is not None and data.n_features != n_features:
        raise DataError(f"{source} has {data.n_features} features, expected n_features={n_features}")
    if feature_names is not None and tuple(data.feature_names) != tuple(feature_names):
        raise DataError(f"the feature names of {source} differ from the feature columns asked for")
    found = first_infinite(data.features)
    if found is not None:
        row, col = found
        name = repr(data.feature_names[col]) if col < len(data.feature_names) else f"{col + 1}"
        raise DataError(
            f"feature {name} at row {row + 1} of {source} is {data.features[row, col]}; features "
            "may be NaN (missing) but not infinite"
        )


def first_infinite(features: NDArray[np.float32], block_bytes: int = 16 << 20) -> tuple[int, int] | None:
    """``(row, column)`` of the first +-inf in row-major order, or None (NaN is allowed).

    Scans blocks of rows of about ``block_bytes``, so no temporary as large as ``features``.
    """
    if features.ndim != 2 or features.size == 0:
        return None
    step = max(1, block_bytes // max(features.shape[1] * features.itemsize, 1))
    for start in range(0, features.shape[0], step):
        bad = np.isinf(features[start : start + step])
        if bad.any():
            row, col = np.unravel_index(int(np.argmax(bad)), bad.shape)
            return start + int(row), int(col)
    return None


def check_group_sizes(sizes: NDArray[np.int64], n_rows: int, *, query_path: str, data_path: str) -> None:
    """Check LightGBM ``.query`` group sizes against the row count of the data file.

    Raises
    ------
    DataError
        a size that is not positive, or sizes whose sum differs from the rows of the data file;
        the message says which number comes from which file.
    """
    bad = sizes <= 0
    if bad.any():
        i = int(np.argmax(bad))
        raise DataError(
            f"group size {int(sizes[i])} at line {i + 1} of {query_path} is not positive; every "
            "query needs at least one row"
        )
    total = int(sizes.sum())
    if total != n_rows:
        raise DataError(
            f"the {sizes.shape[0]} group sizes in {query_path} sum to {total} rows, but "
            f"{data_path} has {n_rows} data rows; the .query file must list the rows of each "
            "query, in file order, summing to the data rows"
        )


def check_split_set(splits: Mapping[str, RankingData], *, sources: Mapping[str, str] | None = None) -> None:
    """Checks across splits: none is empty; warn when a qid appears in both train and test
    (string qids compared as written, not by the numbers each file gives them)."""
    for split, data in splits.items():
        if data.n_rows == 0 or data.n_queries == 0:
            src = f" ({sources[split]})" if sources and split in sources else ""
            raise DataError(f"the {split} split{src} has no queries; give it data or change the split")
    train, test = splits.get("train"), splits.get("test")
    if train is None or test is None:
        return
    if train.qid_names is None and test.qid_names is None:
        shared = np.intersect1d(train.qids, test.qids)
        examples = [str(int(q)) for q in shared[:5]]
    else:  # ids numbered per file: compare them as written (an integer as its text), not their numbers
        shared = np.intersect1d(train.written_qids().astype(str), test.written_qids().astype(str))
        examples = [repr(str(q)) for q in shared[:5]]
    if shared.size:
        logger.warning(
            "%d qids appear in both train and test (e.g. %s); if they are the same queries, test "
            "scores are optimistic: split by query instead",
            shared.size, ", ".join(examples),
        )


def check_label_gain(data: Mapping[str, RankingData] | Sequence[RankingData], label_gain: Sequence[float] | None) -> None:
    """Raise `DataError` if a label has no gain: LightGBM's default covers grades 0..30.

    For the training layer: call with the model's ``label_gain`` (None: LightGBM's default).
    """
    values = data.values() if isinstance(data, Mapping) else data
    top = max((int(d.labels.max()) for d in values if d.n_rows), default=0)
    n_gains = LIGHTGBM_MAX_DEFAULT_LABEL + 1 if label_gain is None else len(label_gain)
    if top >= n_gains:
        raise DataError(
            f"the largest label is {top} but label_gain has {n_gains} entries (grades 0..{n_gains - 1}); "
            f"set model.label_gain=[...] with at least {top + 1} gains"
        )


def _where(table: RawTable, i: int) -> str:
    return f"{table.where} {int(table.row_lines[i])} of {table.source}"

"""Read label sets and score sets keyed by (query, document) for ``ltr labels``.

A label set is a TREC qrels file (``topic iter docno relevance``), or a CSV / TSV / Parquet table
with a query column, a document column and a label column (default ``qid``, ``docno``,
``label``). One table may also hold two label columns (two labellings of the same pairs). A
score set is a TREC run file (``topic Q0 docno rank score tag``) or a table with ``qid``,
``docno`` and ``score`` (or, for ``ltr labels --run``, a run's scores of a data file:
:func:`score_set`). Ids are compared as strings. Every problem is one `DataError` line.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ltr.data.feedback.click_file import integer_column, read_table_file
from ltr.data.formats.file_names import pairs_file_kind
from ltr.data.formats.trec import read_qrels, read_run
from ltr.errors import DataError

KEY = ["qid", "docno"]


def is_table(path: Path) -> bool:
    """True when ``path`` is read as a table, else as TREC qrels or run: the one rule of every
    command (:func:`ltr.data.formats.file_names.pairs_file_kind`: by name, then by content, so a
    ``run.txt`` or ``qrels.old`` is TREC and a ``.txt`` with a header row a table)."""
    return pairs_file_kind(path) == "table"


def read_label_columns(
    path: Path, label_columns: list[str], *, qid_column: str = "qid", doc_column: str = "docno"
) -> pd.DataFrame:
    """``qid, docno`` (str) and the integer ``label_columns`` of a table, or of a qrels file
    (one column, named ``label_columns[0]``). A pair given twice is an error."""
    if is_table(path):
        frame = read_table_file(path, [qid_column, doc_column, *label_columns])
        out = pd.DataFrame({"qid": frame[qid_column].astype(str), "docno": frame[doc_column].astype(str)})
        for col in label_columns:
            out[col] = integer_column(frame, col, path, minimum=-(2**31))
    else:
        if len(label_columns) != 1:
            raise DataError(f"{path} is read as TREC qrels, which hold one label set; two columns need a table")
        qrels = read_qrels(path)
        out = pd.DataFrame({
            "qid": [t.decode("utf-8", "replace") for t in qrels.topics],
            "docno": [d.decode("utf-8", "replace") for d in qrels.docnos],
            label_columns[0]: qrels.labels,
        })  # fmt: skip
    _no_duplicates(out, path)
    for col in label_columns:
        _no_negative(out, col, path)
    return out


def _no_negative(pairs: pd.DataFrame, column: str, path: Path) -> None:
    """Refuse a negative grade, as ``ltr train`` and ``ltr evaluate --data`` do: a kappa or a
    confusion matrix over grade -1 measures a convention, not an agreement."""
    labels = pairs[column].to_numpy()
    negative = labels < 0
    if negative.any():
        i = int(np.argmax(negative))
        raise DataError(
            f"label {int(labels[i])} of {path} (row {i + 1}, qid {pairs['qid'].iloc[i]!r}, docno {pairs['docno'].iloc[i]!r}) "
            "is negative; relevance grades must be 0, 1, 2, ... (shift or clip the labels)"
        )


def read_score_set(path: Path, *, qid_column: str = "qid", doc_column: str = "docno", score_column: str = "score") -> pd.DataFrame:
    """``qid, docno, score`` of a TREC run or a table; scores must be finite."""
    if is_table(path):
        frame = read_table_file(path, [qid_column, doc_column, score_column])
        scores = pd.to_numeric(frame[score_column], errors="coerce").to_numpy(dtype=np.float64)
        bad = ~np.isfinite(scores)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DataError(f"{path}, row {i + 1}: score {frame[score_column].iloc[i]!r} is not a finite number")
        out = pd.DataFrame({"qid": frame[qid_column].astype(str), "docno": frame[doc_column].astype(str), "score": scores})
    else:
        run = read_run(path)
        out = pd.DataFrame({
            "qid": [t.decode("utf-8", "replace") for t in run.topics],
            "docno": [d.decode("utf-8", "replace") for d in run.docnos],
            "score": run.scores,
        })  # fmt: skip
    _no_duplicates(out, path)
    return out


def score_set(qids: ArrayLike, docnos: ArrayLike, scores: ArrayLike, *, where: str) -> pd.DataFrame:
    """``qid, docno`` (str) and ``score`` (float64) of one score per (query, document) pair, as
    :func:`read_score_set` gives a file's (``ltr labels --run``: a run's scores of a data file).

    Raises
    ------
    DataError
        A pair given twice (``where`` names the source), or a score that is not finite.

    Examples
    --------
    >>> score_set([1, 1], ["d1", "d2"], [0.5, -1.0], where="x").values.tolist()
    [['1', 'd1', 0.5], ['1', 'd2', -1.0]]
    """
    out = pd.DataFrame({
        "qid": np.asarray(qids).astype(str),
        "docno": np.asarray(docnos).astype(str),
        "score": np.asarray(scores, dtype=np.float64),
    })  # fmt: skip
    bad = ~np.isfinite(out["score"].to_numpy())
    if bad.any():
        row = out[bad].iloc[0]
        raise DataError(f"{where}: qid {row['qid']} docno {row['docno']} has score {row['score']}, not a finite number")
    _no_duplicates(out, where)
    return out


def align(a: pd.DataFrame, b: pd.DataFrame, *, what_a: str, what_b: str) -> pd.DataFrame:
    """Join two frames on ``(qid, docno)``; both must hold exactly the same pairs.

    Raises
    ------
    DataError
        Pairs on one side only: how many, and the first one (qid and docno).
    """
    joined, only_a, only_b = _outer_join(a, b)
    for only, name, other in ((only_a, what_a, what_b), (only_b, what_b, what_a)):
        if len(only):
            raise DataError(
                f"{len(only)} (query, document) pair(s) of {name} are missing from {other}, "
                f"{_example(only)}: both sides must judge the same pairs"
            )
    return joined


def join_scores(pairs: pd.DataFrame, scores: pd.DataFrame, *, what: str, advice: str) -> pd.DataFrame:
    """The label pairs with their scores: ``scores`` must score exactly the judged pairs.

    NDCG of one ranking under each label set needs a score for every judged (query, document)
    pair, and a scored document without a judgment would have no gain on either side: both are
    refused, naming the side that lacks the pairs (``what``, the scores' source) and ``advice``
    (how to get scores of the judged pairs).

    Raises
    ------
    DataError
        Judged pairs without a score, or scored pairs judged in neither label set: how many,
        the first one (qid and docno), and what to do.
    """
    joined, unscored, unjudged = _outer_join(pairs, scores)
    if len(unscored):
        raise DataError(
            f"{what} lacks {len(unscored)} of the {len(pairs)} judged (query, document) pairs, {_example(unscored)}: "
            f"NDCG under each label set needs a score for every judged pair; {advice}"
        )
    if len(unjudged):
        raise DataError(
            f"{what} scores {len(unjudged)} (query, document) pair(s) that neither label set judges, "
            f"{_example(unjudged)}: give scores of the judged pairs only"
        )
    return joined


def _outer_join(a: pd.DataFrame, b: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """``a`` and ``b`` joined on ``(qid, docno)`` (index reset), and the pairs only ``a`` has and
    only ``b`` has."""
    joined = a.merge(b, on=KEY, how="outer", indicator=True, sort=False)
    only_a, only_b = joined[joined["_merge"] == "left_only"], joined[joined["_merge"] == "right_only"]
    return joined.drop(columns="_merge").reset_index(drop=True), only_a, only_b


def _example(only: pd.DataFrame) -> str:
    """The first pair of ``only``, for a message: ``e.g. qid 3 docno d7``."""
    first = only.iloc[0]
    return f"e.g. qid {first['qid']} docno {first['docno']}"


def _no_duplicates(frame: pd.DataFrame, path: Path | str) -> None:
    dup = frame.duplicated(KEY)
    if dup.any():
        row = frame[dup].iloc[0]
        raise DataError(f"{path}: qid {row['qid']} docno {row['docno']} appears twice")

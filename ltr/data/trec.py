"""TREC qrels and run files, and their alignment into the flat arrays `ltr.metrics` reads.

Formats (whitespace-separated, as trec_eval reads them):

- qrels: ``topic iteration docno relevance`` (relevance an integer, may be negative).
- run: ``topic Q0 docno rank score tag [anything]``; the rank column is ignored (trec_eval
  ranks by score, ties by docno descending), fields after the tag are ignored.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ltr.errors import DataError


@dataclass(frozen=True, slots=True)
class Qrels:
    """Judgments, one row per (topic, docno), in file order."""

    topics: NDArray[np.str_]
    docnos: NDArray[np.str_]
    labels: NDArray[np.int64]
    path: str = ""


@dataclass(frozen=True, slots=True)
class Run:
    """A ranking run, one row per (topic, docno), in file order."""

    topics: NDArray[np.str_]
    docnos: NDArray[np.str_]
    scores: NDArray[np.float64]
    path: str = ""


@dataclass(frozen=True, slots=True)
class TrecEvalInput:
    """A run joined to its qrels: the arguments of `ltr.metrics.per_query_table`.

    Topics are sorted as strings (trec_eval's order). Ranked rows of topic ``i`` are
    ``offsets[i]:offsets[i+1]`` of ``labels, scores, tie_keys`` (unjudged docs have label 0);
    its judgments are ``ideal_offsets[i]:ideal_offsets[i+1]`` of ``ideal_labels``.
    ``tie_keys`` is the rank of each docno in byte order, so ``ties="docno_desc"`` sorts as
    trec_eval does.
    """

    qids: NDArray[np.str_]
    labels: NDArray[np.int64]
    scores: NDArray[np.float64]
    offsets: NDArray[np.int64]
    ideal_labels: NDArray[np.int64]
    ideal_offsets: NDArray[np.int64]
    tie_keys: NDArray[np.int64]


def _split_lines(path: Path, min_fields: int, what: str) -> list[list[str]]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise DataError(f"cannot read {what} file {path}: {exc.strerror or exc}") from exc
    rows: list[list[str]] = []
    for n, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) < min_fields:
            raise DataError(
                f"line {n} of {path}: expected at least {min_fields} fields for a {what} line, "
                f"got {len(fields)}: {line.strip()!r}"
            )
        rows.append([*fields[:min_fields], str(n)])
    if not rows:
        raise DataError(f"{what} file {path} has no lines")
    return rows


def read_qrels(path: str | Path) -> Qrels:
    """Read a TREC qrels file (``topic iteration docno relevance``).

    Raises
    ------
    DataError
        Unreadable file, a line with fewer than 4 fields, a non-integer relevance, or a
        (topic, docno) judged twice; the message names the file and line.
    """
    path = Path(path)
    rows = _split_lines(path, 4, "qrels")
    frame = pd.DataFrame(rows, columns=["topic", "iter", "docno", "rel", "line"])
    rel = pd.to_numeric(frame["rel"], errors="coerce")
    bad = rel.isna() | (rel != rel.round())
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise DataError(
            f"line {frame['line'][i]} of {path}: relevance {frame['rel'][i]!r} "
            f"(topic {frame['topic'][i]}) is not an integer"
        )
    dup = frame.duplicated(["topic", "docno"])
    if dup.any():
        i = int(np.flatnonzero(dup.to_numpy())[0])
        raise DataError(
            f"line {frame['line'][i]} of {path}: docno {frame['docno'][i]} is judged twice "
            f"for topic {frame['topic'][i]}"
        )
    return Qrels(
        topics=frame["topic"].to_numpy(dtype=str),
        docnos=frame["docno"].to_numpy(dtype=str),
        labels=rel.to_numpy(dtype=np.int64),
        path=str(path),
    )


def read_run(path: str | Path) -> Run:
    """Read a TREC run file (``topic Q0 docno rank score tag``; extra fields ignored).

    Raises
    ------
    DataError
        Unreadable file, a line with fewer than 6 fields, a score that is not a finite number,
        or a docno listed twice for a topic; the message names the file, line and topic.
    """
    path = Path(path)
    rows = _split_lines(path, 6, "run")
    frame = pd.DataFrame(rows, columns=["topic", "q0", "docno", "rank", "score", "tag", "line"])
    scores = pd.to_numeric(frame["score"], errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(scores)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(
            f"line {frame['line'][i]} of {path}: score {frame['score'][i]!r} "
            f"(topic {frame['topic'][i]}) is not a finite number"
        )
    dup = frame.duplicated(["topic", "docno"])
    if dup.any():
        i = int(np.flatnonzero(dup.to_numpy())[0])
        raise DataError(
            f"line {frame['line'][i]} of {path}: docno {frame['docno'][i]} is ranked twice "
            f"for topic {frame['topic'][i]}"
        )
    return Run(
        topics=frame["topic"].to_numpy(dtype=str),
        docnos=frame["docno"].to_numpy(dtype=str),
        scores=scores,
        path=str(path),
    )


def align_run(
    run: Run,
    qrels: Qrels,
    *,
    missing_topics: str = "skip",
    unknown_topics: str = "drop",
) -> TrecEvalInput:
    """Join ``run`` to ``qrels`` as trec_eval does.

    Parameters
    ----------
    missing_topics : {"skip", "empty"}
        Qrels topics the run lacks: left out (trec_eval's default) or kept as empty queries that
        score 0 (trec_eval ``-c``).
    unknown_topics : {"drop", "error"}
        Run topics without judgments: ignored (trec_eval) or a `DataError`.
    """
    if missing_topics not in ("skip", "empty"):
        raise ValueError(f"missing_topics={missing_topics!r} is not one of 'skip', 'empty'")
    if unknown_topics not in ("drop", "error"):
        raise ValueError(f"unknown_topics={unknown_topics!r} is not one of 'drop', 'error'")
    judged_topics = np.unique(qrels.topics)
    known = np.isin(run.topics, judged_topics)
    if not known.all() and unknown_topics == "error":
        i = int(np.flatnonzero(~known)[0])
        raise DataError(
            f"topic {run.topics[i]} of run {run.path} (docno {run.docnos[i]}) has no "
            f"judgments in qrels {qrels.path}"
        )
    r_topics, r_docnos, r_scores = run.topics[known], run.docnos[known], run.scores[known]
    topics = judged_topics if missing_topics == "empty" else np.unique(r_topics)

    # labels of ranked docs: join on (topic, docno); unjudged docs are 0
    qr = pd.DataFrame({"topic": qrels.topics, "docno": qrels.docnos, "label": qrels.labels})
    rr = pd.DataFrame({"topic": r_topics, "docno": r_docnos})
    joined = rr.merge(qr, on=["topic", "docno"], how="left", sort=False)
    labels = joined["label"].fillna(0).to_numpy(dtype=np.int64)

    r_index = np.searchsorted(topics, r_topics)
    order = np.argsort(r_index, kind="stable")
    offsets = np.zeros(len(topics) + 1, dtype=np.int64)
    np.cumsum(np.bincount(r_index, minlength=len(topics)), out=offsets[1:])
    _, docno_rank = np.unique(r_docnos, return_inverse=True)

    in_topics = np.isin(qrels.topics, topics)
    q_index = np.searchsorted(topics, qrels.topics[in_topics])
    q_order = np.argsort(q_index, kind="stable")
    ideal_offsets = np.zeros(len(topics) + 1, dtype=np.int64)
    np.cumsum(np.bincount(q_index, minlength=len(topics)), out=ideal_offsets[1:])
    return TrecEvalInput(
        qids=topics,
        labels=labels[order],
        scores=r_scores[order],
        offsets=offsets,
        ideal_labels=qrels.labels[in_topics][q_order],
        ideal_offsets=ideal_offsets,
        tie_keys=docno_rank.astype(np.int64)[order],
    )


def read_trec_eval_output(path: str | Path) -> dict[str, dict[str, float]]:
    """Parse trec_eval output (``measure topic value``) into ``{measure: {topic: value}}``.

    Non-numeric values (e.g. ``relstring``) and ``runid`` are skipped.
    """
    out: dict[str, dict[str, float]] = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        fields = line.split()
        if len(fields) != 3:
            continue
        try:
            value = float(fields[2])
        except ValueError:
            continue
        if math.isfinite(value):
            out.setdefault(fields[0], {})[fields[1]] = value
    return out

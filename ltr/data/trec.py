"""TREC qrels and run files, and their alignment into the flat arrays `ltr.metrics` reads.

Formats (whitespace-separated, as trec_eval 10.0 reads them):

- qrels: ``topic iteration docno relevance`` (relevance an integer, may be negative).
- run: ``topic Q0 docno rank score tag [anything]``; the rank column is ignored (trec_eval
  ranks by score, ties by docno descending), fields after the tag are ignored.
- Blank lines and comment lines (first non-blank character ``#``) are skipped, as trec_eval 10.0
  does; a ``#`` inside a docno (MS MARCO v2.1 passage ids) is part of the docno.

Topics and docnos are byte strings: files are read in binary, nothing is decoded, and they are
matched and ordered byte by byte (C ``strcmp``, trec_eval's order). Only the topic ids shown in
the output are decoded (UTF-8; invalid bytes as ``\\xNN`` escapes, so distinct topics stay
distinct).

The reader is vectorised (numpy): the file is cut into blocks of whole lines, each block is
tokenised with array operations, and topics and docnos become integer codes (their rank in byte
order); there is no Python object per line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from ltr.errors import DataError
from ltr.metrics.conventions import UNJUDGED

#: Bytes trec_eval (C ``isspace``) treats as field separators.
_SPACE = np.zeros(256, dtype=bool)
_SPACE[[9, 10, 11, 12, 13, 32]] = True
_NEWLINE = 10
_HASH = ord("#")
#: Bytes per block of lines the tokeniser works on (its scratch memory is a few times this).
BLOCK_BYTES = 1 << 22


@dataclass(frozen=True, slots=True)
class Qrels:
    """Judgments, one row per (topic, docno), in file order; topics and docnos as bytes."""

    topics: NDArray[np.bytes_]
    docnos: NDArray[np.bytes_]
    labels: NDArray[np.int64]
    lines: NDArray[np.int64]
    path: str = ""


@dataclass(frozen=True, slots=True)
class Run:
    """A ranking run, one row per (topic, docno), in file order; topics and docnos as bytes."""

    topics: NDArray[np.bytes_]
    docnos: NDArray[np.bytes_]
    scores: NDArray[np.float64]
    lines: NDArray[np.int64]
    path: str = ""


@dataclass(frozen=True, slots=True)
class TrecEvalInput:
    """A run joined to its qrels: the arguments of `ltr.metrics.per_query_table`, plus counts.

    Topics are sorted byte by byte (trec_eval's order). Ranked rows of topic ``i`` are
    ``offsets[i]:offsets[i+1]`` of ``labels, scores, tie_keys`` (in run-file order); a ranked
    docno without a judgment has label `UNJUDGED` (gain 0 and never relevant under every
    convention). Its judgments are ``ideal_offsets[i]:ideal_offsets[i+1]`` of ``ideal_labels``.
    ``tie_keys`` is the rank of each docno in byte order, so ``ties="docno_desc"`` sorts as
    trec_eval does.

    Counts of what was left out or filled in: ``n_run_topics_unjudged`` run topics without any
    judgment (ignored, as trec_eval does) and their ``n_run_rows_unjudged_topics`` lines;
    ``n_judged_topics_without_run`` judged topics with no run line (empty queries or skipped,
    per ``missing_topics``); ``n_rows_unjudged`` ranked rows of evaluated topics without a
    judgment; ``n_rows_over_max_docs`` rows cut by ``max_docs``.
    """

    qids: NDArray[np.str_]
    labels: NDArray[np.int64]
    scores: NDArray[np.float64]
    offsets: NDArray[np.int64]
    ideal_labels: NDArray[np.int64]
    ideal_offsets: NDArray[np.int64]
    tie_keys: NDArray[np.int64]
    n_run_topics_unjudged: int = 0
    n_run_rows_unjudged_topics: int = 0
    n_judged_topics_without_run: int = 0
    n_rows_unjudged: int = 0
    n_rows_over_max_docs: int = 0

    def counts(self) -> dict[str, int]:
        """The counts above as a dict (for the summary and ``--json``)."""
        return {
            "n_run_topics_unjudged": self.n_run_topics_unjudged,
            "n_run_rows_unjudged_topics": self.n_run_rows_unjudged_topics,
            "n_judged_topics_without_run": self.n_judged_topics_without_run,
            "n_rows_unjudged": self.n_rows_unjudged,
            "n_rows_over_max_docs": self.n_rows_over_max_docs,
        }


# ---- tokeniser -----------------------------------------------------------------------------


def _read_bytes(path: Path, what: str) -> NDArray[np.uint8]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DataError(f"cannot read {what} file {path}: {exc.strerror or exc}") from exc
    if data and data[-1] != _NEWLINE:
        data += b"\n"
    return np.frombuffer(data, dtype=np.uint8)


def _strings(
    a: NDArray[np.uint8], s: NDArray[np.int64], e: NDArray[np.int64]
) -> NDArray[np.bytes_]:
    """The byte strings ``a[s[i]:e[i]]`` as one fixed-width ``S`` array (one column per byte)."""
    lens = e - s
    w = int(lens.max(initial=1))
    out = np.zeros((s.shape[0], w), dtype=np.uint8)
    last = a.shape[0] - 1
    for j in range(w):
        col = a[np.minimum(s + j, last)]
        col[lens <= j] = 0
        out[:, j] = col
    return out.view(f"S{w}").ravel()


def _line_text(a: NDArray[np.uint8], nl: NDArray[np.int64], line: int) -> str:
    lo = int(nl[line - 1]) + 1 if line > 0 else 0
    return bytes(a[lo : int(nl[line])]).decode("utf-8", "backslashreplace").strip()


def _tokenize_block(
    a: NDArray[np.uint8], first_line: int, fields: tuple[int, ...], min_fields: int,
    path: Path, what: str,
) -> tuple[NDArray[np.int64], list[NDArray[np.bytes_]]]:  # fmt: skip
    """Line numbers (1-based) and the wanted fields of the data lines of one block of lines.

    ``a`` holds whole lines (it ends with a newline). Blank and comment lines are skipped.
    """
    sp = _SPACE[a]
    before = np.empty_like(sp)
    before[0] = True
    before[1:] = sp[:-1]
    starts = np.flatnonzero(~sp & before)
    before[:-1] = sp[1:]  # now: "the next byte is a space" (the block ends with a newline)
    before[-1] = True
    ends = np.flatnonzero(~sp & before) + 1
    del sp, before
    nl = np.flatnonzero(a == _NEWLINE)
    tok_line = np.searchsorted(nl, starts)
    new = np.empty(starts.shape[0], dtype=bool)
    if new.shape[0]:
        new[0] = True
        new[1:] = tok_line[1:] != tok_line[:-1]
    first = np.flatnonzero(new)
    n_tok = np.diff(first, append=starts.shape[0])
    keep = a[starts[first]] != _HASH
    first, n_tok, line = first[keep], n_tok[keep], tok_line[first[keep]]
    short = np.flatnonzero(n_tok < min_fields)
    if short.shape[0]:
        i = int(short[0])
        raise DataError(
            f"line {first_line + int(line[i]) + 1} of {path}: expected at least {min_fields} "
            f"fields for a {what} line, got {int(n_tok[i])}: "
            f"{_line_text(a, nl, int(line[i]))!r}"
        )
    out = [_strings(a, starts[first + f], ends[first + f]) for f in fields]
    return first_line + line.astype(np.int64) + 1, out


def _read_fields(
    path: Path, fields: tuple[int, ...], min_fields: int, what: str
) -> tuple[NDArray[np.int64], list[NDArray[np.bytes_]]]:
    """Line numbers and wanted fields of every data line of a whitespace-separated file."""
    a = _read_bytes(path, what)
    lines: list[NDArray[np.int64]] = []
    cols: list[list[NDArray[np.bytes_]]] = [[] for _ in fields]
    lo = 0
    first_line = 0
    n = a.shape[0]
    while lo < n:
        hi = min(lo + BLOCK_BYTES, n)
        if hi < n:  # end the block after its last newline (a longer line: the next newline)
            back = np.flatnonzero(a[lo:hi] == _NEWLINE)
            if back.shape[0]:
                hi = lo + int(back[-1]) + 1
            else:
                hi = lo + int(np.flatnonzero(a[lo:] == _NEWLINE)[0]) + 1
        block = a[lo:hi]
        ln, fs = _tokenize_block(block, first_line, fields, min_fields, path, what)
        lines.append(ln)
        for c, f in zip(cols, fs, strict=True):
            c.append(f)
        first_line += int(np.count_nonzero(block == _NEWLINE))
        lo = hi
    line_a = np.concatenate(lines) if lines else np.zeros(0, dtype=np.int64)
    if line_a.shape[0] == 0:
        raise DataError(f"{what} file {path} has no lines (blank and # comment lines are skipped)")
    return line_a, [np.concatenate(c) if len(c) > 1 else c[0] for c in cols]


def _text(b: bytes) -> str:
    return b.decode("utf-8", "backslashreplace")


def read_qrels(path: str | Path) -> Qrels:
    """Read a TREC qrels file (``topic iteration docno relevance``).

    Raises
    ------
    DataError
        Unreadable file, a line with fewer than 4 fields, a relevance that is not an integer;
        the message names the file and line. A (topic, docno) judged twice is reported by
        `align_run`.
    """
    path = Path(path)
    lines, (topics, docnos, rel) = _read_fields(path, (0, 2, 3), 4, "qrels")
    try:
        labels = rel.astype(np.int64)
    except (ValueError, OverflowError):
        labels = np.zeros(rel.shape[0], dtype=np.int64)
        for i, r in enumerate(rel.tolist()):  # slow path, only for a file with a bad value
            try:
                labels[i] = int(r)
                continue
            except (ValueError, OverflowError):
                pass
            try:
                v = float(r)
            except ValueError:
                v = math.nan
            if not (math.isfinite(v) and v == round(v) and abs(v) < 2**62):
                raise DataError(
                    f"line {lines[i]} of {path}: relevance {_text(r)!r} (topic "
                    f"{_text(topics[i])}) is not an integer"
                ) from None
            labels[i] = int(v)
    return Qrels(topics=topics, docnos=docnos, labels=labels, lines=lines, path=str(path))


def read_run(path: str | Path) -> Run:
    """Read a TREC run file (``topic Q0 docno rank score tag``; extra fields ignored).

    Raises
    ------
    DataError
        Unreadable file, a line with fewer than 6 fields, a score that is not a finite number;
        the message names the file, line and topic. A docno ranked twice for a topic is
        reported by `align_run`.
    """
    path = Path(path)
    lines, (topics, docnos, raw) = _read_fields(path, (0, 2, 4), 6, "run")
    try:
        scores = raw.astype(np.float64)
    except ValueError:
        scores = np.full(raw.shape[0], np.nan)
        for i, r in enumerate(raw.tolist()):  # slow path, only for a file with a bad value
            try:
                scores[i] = float(r)
            except ValueError:
                break
    bad = ~np.isfinite(scores)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(
            f"line {lines[i]} of {path}: score {_text(raw[i])!r} (topic {_text(topics[i])}) "
            "is not a finite number"
        )
    return Run(topics=topics, docnos=docnos, scores=scores, lines=lines, path=str(path))


# ---- join ----------------------------------------------------------------------------------


def _check_unique(
    keys: NDArray[np.int64], lines: NDArray[np.int64], topics: NDArray[np.bytes_],
    docnos: NDArray[np.bytes_], path: str, verb: str,
) -> None:  # fmt: skip
    order = np.argsort(keys, kind="stable")
    ks = keys[order]
    dup = np.flatnonzero(ks[1:] == ks[:-1])
    if dup.shape[0]:
        rows = order[dup + 1]
        i = int(rows[np.argmin(lines[rows])])
        raise DataError(
            f"line {lines[i]} of {path}: docno {_text(docnos[i])} is {verb} twice for topic "
            f"{_text(topics[i])}"
        )


def align_run(
    run: Run,
    qrels: Qrels,
    *,
    missing_topics: str = "skip",
    max_docs: int | None = None,
) -> TrecEvalInput:
    """Join ``run`` to ``qrels`` as trec_eval 10.0 does.

    Run topics without any judgment are ignored (as trec_eval, pytrec_eval and ir_measures do)
    and counted. Ranked docnos without a judgment get label `UNJUDGED`.

    Parameters
    ----------
    missing_topics : {"skip", "empty", "error"}
        Judged topics without any run line: left out (trec_eval 9.x's default, pytrec_eval),
        kept as empty queries that score 0 (trec_eval ``-c``), or a `DataError` (trec_eval
        10.0 without ``-c``).
    max_docs : int, optional
        Keep only the first ``max_docs`` documents of each topic in trec_eval's order (score
        descending, then docno descending), whatever ties convention is used later: trec_eval
        ``-M``.

    Raises
    ------
    DataError
        A (topic, docno) judged or ranked twice; a judged topic without run lines under
        ``missing_topics="error"``.
    """
    if missing_topics not in ("skip", "empty", "error"):
        raise ValueError(
            f"missing_topics={missing_topics!r} is not one of 'skip', 'empty', 'error'"
        )
    if max_docs is not None and max_docs < 1:
        raise ValueError(f"max_docs={max_docs} must be >= 1")
    nq = qrels.topics.shape[0]
    topic_vocab, t_code = np.unique(np.concatenate([qrels.topics, run.topics]), return_inverse=True)
    docno_vocab, d_code = np.unique(np.concatenate([qrels.docnos, run.docnos]), return_inverse=True)
    n_docnos = np.int64(docno_vocab.shape[0])
    qt, rt = t_code[:nq].astype(np.int64), t_code[nq:].astype(np.int64)
    qd, rd = d_code[:nq].astype(np.int64), d_code[nq:].astype(np.int64)
    del t_code, d_code
    q_keys = qt * n_docnos + qd
    r_keys = rt * n_docnos + rd
    _check_unique(q_keys, qrels.lines, qrels.topics, qrels.docnos, qrels.path, "judged")
    _check_unique(r_keys, run.lines, run.topics, run.docnos, run.path, "ranked")

    n_t = topic_vocab.shape[0]
    judged = np.bincount(qt, minlength=n_t) > 0
    ranked = np.bincount(rt, minlength=n_t) > 0
    unjudged_topics = ranked & ~judged
    missing = judged & ~ranked
    if missing.any() and missing_topics == "error":
        t = int(np.flatnonzero(missing)[0])
        raise DataError(
            f"topic {_text(topic_vocab[t])} of qrels {qrels.path} has no lines in run {run.path} "
            f"({int(missing.sum())} judged topics have none; trec_eval 10.0 refuses this without "
            "-c): pass --missing-topics empty (score them 0, trec_eval -c) or skip"
        )
    keep = judged[rt]
    n_rows_unjudged_topics = int(keep.shape[0] - np.count_nonzero(keep))

    n_over = 0
    if max_docs is not None:
        # trec_eval's order: topic, score descending, docno descending; keep the first max_docs
        order = np.lexsort((-rd, -run.scores, rt))
        ts = rt[order]
        start = np.flatnonzero(np.r_[True, ts[1:] != ts[:-1]])
        pos = np.arange(ts.shape[0]) - np.repeat(start, np.diff(np.r_[start, ts.shape[0]]))
        within = np.empty(ts.shape[0], dtype=bool)
        within[order] = pos < max_docs
        n_over = int(np.count_nonzero(keep & ~within))
        keep &= within

    rows = np.flatnonzero(keep)
    rt, rd, r_keys = rt[rows], rd[rows], r_keys[rows]
    scores = run.scores[rows]
    # label of each ranked row: its judgment, or UNJUDGED
    q_order = np.argsort(q_keys, kind="stable")
    q_sorted = q_keys[q_order]
    pos = np.searchsorted(q_sorted, r_keys)
    pos_c = np.minimum(pos, max(q_sorted.shape[0] - 1, 0))
    found = q_sorted[pos_c] == r_keys if q_sorted.shape[0] else np.zeros(r_keys.shape[0], bool)
    labels = np.where(found, qrels.labels[q_order][pos_c], UNJUDGED)

    evaluated = judged if missing_topics == "empty" else judged & ranked
    topic_index = np.cumsum(evaluated) - 1  # topic code -> query index (for evaluated topics)
    r_q = topic_index[rt]
    order = np.argsort(r_q, kind="stable")  # file order within a topic
    n_eval = int(np.count_nonzero(evaluated))
    offsets = np.zeros(n_eval + 1, dtype=np.int64)
    np.cumsum(np.bincount(r_q, minlength=n_eval), out=offsets[1:])

    in_eval = evaluated[qt]
    q_q = topic_index[qt[in_eval]]
    i_order = np.argsort(q_q, kind="stable")
    ideal_offsets = np.zeros(n_eval + 1, dtype=np.int64)
    np.cumsum(np.bincount(q_q, minlength=n_eval), out=ideal_offsets[1:])
    qids = np.array([_text(t) for t in topic_vocab[evaluated].tolist()], dtype=str)
    return TrecEvalInput(
        qids=qids,
        labels=labels[order],
        scores=scores[order],
        offsets=offsets,
        ideal_labels=qrels.labels[in_eval][i_order],
        ideal_offsets=ideal_offsets,
        tie_keys=rd[order],
        n_run_topics_unjudged=int(np.count_nonzero(unjudged_topics)),
        n_run_rows_unjudged_topics=n_rows_unjudged_topics,
        n_judged_topics_without_run=int(np.count_nonzero(missing)),
        n_rows_unjudged=int(np.count_nonzero(~found)),
        n_rows_over_max_docs=n_over,
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

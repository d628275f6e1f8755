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

`read_trec` reads both files with compiled kernels (:mod:`ltr.data.formats._trec_kernel`; a qrels and
run of at most `INTERPRET_MAX_BYTES` together, in a process that has not loaded numba, with the
same kernels interpreted: :mod:`ltr.compiled.kernels`): the files
are memory-mapped, topics are interned and docnos hashed (64-bit, every match confirmed byte by
byte), each run line is joined to its judgment as it is read, and only tied scores have their
docnos compared; there is no Python object per line, and memory is about 40 bytes per run line
and 40 per judgment, plus the qrels file and an 8 MiB window of the run file. `read_qrels` and `read_run` list a file's fields as bytes
(for inspection and tests).
"""

from __future__ import annotations

import dataclasses
import gzip
import math
import mmap
import os
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ltr.compiled import kernels
from ltr.errors import DataError
from ltr.metrics.conventions import UNJUDGED

_NEWLINE = 10


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
    ``tie_keys`` orders the docnos of rows whose score is tied within their topic (their rank in
    byte order, from 1; 0 for rows without a tie), so ``ties="docno_desc"`` sorts as trec_eval
    does.

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
    tie_keys: NDArray[np.float64]
    n_run_topics_unjudged: int = 0
    n_run_rows_unjudged_topics: int = 0
    n_judged_topics_without_run: int = 0
    n_rows_unjudged: int = 0
    n_rows_over_max_docs: int = 0
    #: ``read_trec(values=True)``: the distinct relevance values, ascending; ``labels`` and
    #: ``ideal_labels`` are then indices into it (`UNJUDGED` aside): see `value_labels`.
    gain_values: NDArray[np.float64] | None = None

    def value_labels(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Ranked and judged labels as the real values of the qrels (``read_trec(values=True)``),
        NaN for a ranked docno without a judgment."""
        if self.gain_values is None:
            return self.labels.astype(np.float64), self.ideal_labels.astype(np.float64)
        out = []
        for codes in (self.labels, self.ideal_labels):
            v = np.full(codes.shape[0], np.nan)
            judged = codes != UNJUDGED
            v[judged] = self.gain_values[codes[judged]]
            out.append(v)
        return out[0], out[1]

    def counts(self) -> dict[str, int]:
        """The counts above as a dict (for the summary and ``--json``)."""
        return {
            "n_run_topics_unjudged": self.n_run_topics_unjudged,
            "n_run_rows_unjudged_topics": self.n_run_rows_unjudged_topics,
            "n_judged_topics_without_run": self.n_judged_topics_without_run,
            "n_rows_unjudged": self.n_rows_unjudged,
            "n_rows_over_max_docs": self.n_rows_over_max_docs,
        }


# ---- files ---------------------------------------------------------------------------------


@contextmanager
def _mapped(path: Path, what: str) -> Iterator[tuple[NDArray[np.uint8], mmap.mmap | None]]:
    """The bytes of ``path``, memory-mapped read-only (an empty file: an empty array); a gzip
    file (by its magic bytes, whatever its name) decompressed in memory; a binary file is refused
    (:func:`_check_text`)."""
    try:
        f = path.open("rb")
    except OSError as exc:
        raise DataError(f"cannot read {what} file {path}: {exc.strerror or exc}") from None
    with f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            yield np.zeros(0, dtype=np.uint8), None
            return
        if f.read(2) == _GZIP_MAGIC:
            f.seek(0)
            try:
                text = gzip.GzipFile(fileobj=f).read()
            except (OSError, EOFError, zlib.error) as exc:
                raise DataError(f"{what} file {path} is not a readable gzip file: {exc}") from None
            buf = np.frombuffer(text, dtype=np.uint8)
            _check_text(buf, path, what)
            yield buf, None
            return
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            buf = np.frombuffer(mm, dtype=np.uint8)
            _check_text(buf, path, what)
            yield buf, mm
        finally:
            with suppress(BufferError):  # a view still referenced (an exception's frame)
                mm.close()


def _release(mm: mmap.mmap | None, lo: int, hi: int) -> None:
    """Drop the pages of ``[lo, hi)`` from this process's memory (they stay in the page cache)."""
    lo = -(-lo // mmap.PAGESIZE) * mmap.PAGESIZE
    hi = hi // mmap.PAGESIZE * mmap.PAGESIZE
    if mm is not None and hi > lo and hasattr(mmap, "MADV_DONTNEED"):
        mm.madvise(mmap.MADV_DONTNEED, lo, hi - lo)


def _count_lines(buf: NDArray[np.uint8], mm: mmap.mmap | None) -> int:
    """Newlines + 1 (an upper bound of the data lines), reading the file a window at a time."""
    n = 1
    for lo in range(0, buf.shape[0], WINDOW_BYTES):
        hi = min(lo + WINDOW_BYTES, buf.shape[0])
        for a in range(lo, hi, _CHUNK):  # a boolean temporary of _CHUNK bytes, not of the window
            n += int(np.count_nonzero(buf[a : min(a + _CHUNK, hi)] == _NEWLINE))
        _release(mm, lo, hi)
    return n


def _bincount(keys: NDArray[Any], n: int) -> NDArray[np.int64]:
    """``np.bincount(keys, minlength=n)``, `_CHUNK` keys at a time (numpy widens int32 keys to
    int64: a temporary of twice their size otherwise)."""
    counts = np.zeros(n, dtype=np.int64)
    for a in range(0, keys.shape[0], _CHUNK):
        counts += np.bincount(keys[a : a + _CHUNK], minlength=n)
    return counts


def _line_no(buf: NDArray[np.uint8], offset: int) -> int:
    """The 1-based line number of the byte at ``offset``."""
    return int(np.count_nonzero(buf[:offset] == _NEWLINE)) + 1


def _line_text(buf: NDArray[np.uint8], offset: int) -> str:
    """The line that starts at (or contains) ``offset``, decoded for a message."""
    nl = np.flatnonzero(buf[offset:] == _NEWLINE)
    end = offset + int(nl[0]) if nl.shape[0] else buf.shape[0]
    return _text(bytes(buf[offset:end])).strip()


def _strings(
    a: NDArray[np.uint8], s: NDArray[np.int64], e: NDArray[np.int64]
) -> NDArray[np.bytes_]:
    """The byte strings ``a[s[i]:e[i]]`` as one fixed-width ``S`` array (one column per byte)."""
    lens = e - s
    w = int(lens.max(initial=1))
    out = np.zeros((s.shape[0], w), dtype=np.uint8)
    last = max(a.shape[0] - 1, 0)
    for j in range(w):
        col = a[np.minimum(s + j, last)]
        col[lens <= j] = 0
        out[:, j] = col
    return out.view(f"S{w}").ravel()


def _text(b: bytes) -> str:
    return b.decode("utf-8", "backslashreplace")


def _short_line(path: Path, buf: NDArray[np.uint8], at: int, what: str, need: int) -> DataError:
    text = _line_text(buf, at)
    return DataError(
        f"line {_line_no(buf, at)} of {path}: expected at least {need} fields for a {what} "
        f"line, got {len(text.split())}: {text!r}"
    )


def _real_labels(
    raw: NDArray[np.bytes_], lines: NDArray[np.int64], topics: NDArray[np.bytes_], path: Path
) -> NDArray[np.float64]:
    """Relevance values that are not plain integers, as real values (``read_trec(values=True)``):
    finite and >= 0, or an error naming the line."""
    out = np.zeros(raw.shape[0], dtype=np.float64)
    for i, r in enumerate(raw.tolist()):
        try:
            v = float(r)
        except ValueError:
            v = math.nan
        if not (math.isfinite(v) and v >= 0):
            raise DataError(
                f"line {lines[i]} of {path}: relevance {_text(r)!r} (topic {_text(topics[i])}) "
                "is not a finite value >= 0 (a value gain)"
            ) from None
        out[i] = v
    return out


def _int_labels(
    raw: NDArray[np.bytes_], lines: NDArray[np.int64], topics: NDArray[np.bytes_], path: Path
) -> NDArray[np.int64]:
    """Relevance values that are not plain integers: integral floats (``1.0``) or an error."""
    labels = np.zeros(raw.shape[0], dtype=np.int64)
    for i, r in enumerate(raw.tolist()):  # only the values the kernel could not read
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
                f"{_text(topics[i])}) is not an integer; real-valued relevance (revenue, margin) "
                "is a value gain: ltr evaluate --gain value"
            ) from None
        labels[i] = int(v)
    return labels


# ---- fields as bytes -----------------------------------------------------------------------


#: The first two bytes of every gzip file (RFC 1952).
_GZIP_MAGIC = b"\x1f\x8b"

#: How far into a file a NUL byte marks it as binary (as git and grep decide).
_BINARY_PROBE = 8192


def _check_text(buf: NDArray[np.uint8], path: Path, what: str) -> None:
    """A NUL byte near the start: the file is binary, not a TREC text file (one line saying so,
    not a field count of a line that is no line)."""
    nul = np.flatnonzero(buf[:_BINARY_PROBE] == 0)
    if nul.size:
        layout = "topic iteration docno relevance" if what == "qrels" else "topic Q0 docno rank score tag"
        raise DataError(
            f"{what} file {path} is binary (a NUL byte at offset {int(nul[0])}), not a text {what} "
            f"file ({layout}, one per line)"
        )


def _read_fields(
    path: Path, fields: tuple[int, int, int], min_fields: int, what: str
) -> tuple[NDArray[np.int64], list[NDArray[np.bytes_]]]:
    """Line numbers and three fields (as bytes) of every data line of a TREC file."""
    with _mapped(path, what) as (buf, _):
        kernel = kernels.load("ltr.data.formats._trec_kernel", small=buf.shape[0] <= INTERPRET_MAX_BYTES)
        nl = np.flatnonzero(buf == _NEWLINE)
        cap = nl.shape[0] + 1
        starts = np.zeros((cap, 3), dtype=np.int64)
        ends = np.zeros((cap, 3), dtype=np.int64)
        status, m, at = kernel.fields(buf, *fields, min_fields, starts, ends)
        if status == kernel.SHORT_LINE:
            raise _short_line(path, buf, at, what, min_fields)
        if m == 0:
            raise DataError(f"{what} file {path} has no lines (blank and # comment lines are skipped)")
        lines = np.searchsorted(nl, starts[:m, 0]).astype(np.int64) + 1
        cols = [_strings(buf, starts[:m, j], ends[:m, j]) for j in range(3)]
    return lines, cols


def read_qrels(path: str | Path) -> Qrels:
    """Read a TREC qrels file (``topic iteration docno relevance``), fields as bytes.

    Raises
    ------
    DataError
        Unreadable file, a line with fewer than 4 fields, a relevance that is not an integer;
        the message names the file and line. A (topic, docno) judged twice is reported by
        `read_trec`.
    """
    path = Path(path)
    lines, (topics, docnos, rel) = _read_fields(path, (0, 2, 3), 4, "qrels")
    try:
        labels = rel.astype(np.int64)
    except (ValueError, OverflowError):
        labels = _int_labels(rel, lines, topics, path)
    return Qrels(topics=topics, docnos=docnos, labels=labels, lines=lines, path=str(path))


def read_run(path: str | Path) -> Run:
    """Read a TREC run file (``topic Q0 docno rank score tag``), fields as bytes.

    Raises
    ------
    DataError
        Unreadable file, a line with fewer than 6 fields, a score that is not a finite number;
        the message names the file, line and topic.
    """
    path = Path(path)
    lines, (topics, docnos, raw) = _read_fields(path, (0, 2, 4), 6, "run")
    scores = _scores(raw, path, lambda i: _text(topics[i]), lambda i: int(lines[i]))
    return Run(topics=topics, docnos=docnos, scores=scores, lines=lines, path=str(path))


def _scores(
    raw: NDArray[np.bytes_], path: Path, topic_of: Callable[[int], str],
    line_of: Callable[[int], int],
) -> NDArray[np.float64]:  # fmt: skip
    """Scores from their bytes (numpy's parser); an error names the first one not finite."""
    try:
        scores = raw.astype(np.float64)
    except ValueError:
        scores = np.full(raw.shape[0], np.nan)
        for i, r in enumerate(raw.tolist()):  # only a file with a bad value gets here
            try:
                scores[i] = np.array([r]).astype(np.float64)[0]
            except ValueError:
                break
    bad = ~np.isfinite(scores)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(
            f"line {line_of(i)} of {path}: score {_text(raw[i])!r} (topic {topic_of(i)}) "
            "is not a finite number"
        )
    return scores


# ---- qrels and run joined ------------------------------------------------------------------


class _Topics:
    """The topic table the kernels intern into (see :mod:`ltr.data.formats._trec_kernel`)."""

    def __init__(self, capacity: int) -> None:
        size = 1 << max(4, int(2 * capacity - 1).bit_length())
        self.slots = np.full(size, -1, dtype=np.int64)
        half = size // 2 + 1
        self.hash = np.zeros(half, dtype=np.uint64)
        self.src = np.zeros(half, dtype=np.int8)
        self.start = np.zeros(half, dtype=np.int64)
        self.length = np.zeros(half, dtype=np.int64)
        self.n = np.zeros(1, dtype=np.int64)

    def args(self) -> tuple[NDArray[Any], ...]:
        return self.slots, self.hash, self.src, self.start, self.length, self.n

    def grow(self, kernel: Any) -> None:
        n = int(self.n[0])
        bigger = _Topics(self.slots.shape[0])
        for name in ("hash", "src", "start", "length"):
            getattr(bigger, name)[:n] = getattr(self, name)[:n]
        bigger.n[0] = n
        kernel.rehash_topics(bigger.hash, n, bigger.slots)
        self.__dict__.update(bigger.__dict__)

    def strings(self, qbuf: NDArray[np.uint8], rbuf: NDArray[np.uint8]) -> NDArray[np.bytes_]:
        """Every topic's bytes, by code."""
        n = int(self.n[0])
        src, start, length = self.src[:n], self.start[:n], self.length[:n]
        w = int(length.max(initial=1))
        out = np.zeros(n, dtype=f"S{w}")
        for s, buf in ((0, qbuf), (1, rbuf)):
            rows = np.flatnonzero(src == s)
            if rows.shape[0]:
                out[rows] = _strings(buf, start[rows], start[rows] + length[rows])
        return out


def read_trec(
    run_path: str | Path,
    qrels_path: str | Path,
    *,
    missing_topics: str = "skip",
    max_docs: int | None = None,
    values: bool = False,
) -> TrecEvalInput:
    """Read a TREC run and its qrels and join them as trec_eval 10.0 does.

    ``values``: relevance may be any finite real >= 0 (value gains: revenue, margin); the
    labels are then codes into ``gain_values`` (`TrecEvalInput.value_labels` gives the values).

    The files are memory-mapped and read by compiled kernels: the run a window of
    `WINDOW_BYTES` at a time (pages already read are released), topics interned and docnos
    looked up in a hash table of the judgments (confirmed byte by byte), so memory is about 40
    bytes per run line plus one window, and nothing is a Python object per line. Run topics
    without any judgment are ignored (as trec_eval, pytrec_eval and ir_measures do) and
    counted; ranked docnos without a judgment get label `UNJUDGED`.

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
        Unreadable files, short lines, a relevance that is not an integer, a score that is not
        a finite number, a (topic, docno) judged or ranked twice, a judged topic without run
        lines under ``missing_topics="error"``; the message names the file and line.
    """
    if missing_topics not in ("skip", "empty", "error"):
        raise ValueError(
            f"missing_topics={missing_topics!r} is not one of 'skip', 'empty', 'error'"
        )
    if max_docs is not None and max_docs < 1:
        raise ValueError(f"max_docs={max_docs} must be >= 1")
    qpath, rpath = Path(qrels_path), Path(run_path)
    with _mapped(qpath, "qrels") as (qbuf, _), _mapped(rpath, "run") as (rbuf, rmm):
        small = qbuf.shape[0] + rbuf.shape[0] <= INTERPRET_MAX_BYTES
        kernel = kernels.load("ltr.data.formats._trec_kernel", small=small)
        cap = _count_lines(qbuf, None)  # judgments at most
        topics = _Topics(TOPICS_START)
        found: list[NDArray[np.float64]] | None = [] if values else None
        judged = _ingest_qrels(qpath, qbuf, rbuf, topics, cap, kernel, found)
        # no name holds the run's rows here, so _join frees each column when done with it
        joined = _join(qpath, rpath, qbuf, rbuf, topics, judged,
                     _ingest_run(rpath, rbuf, rmm, qbuf, topics, judged, kernel), missing_topics,
                     max_docs, kernel)  # fmt: skip
    return joined if not found else dataclasses.replace(joined, gain_values=found[0])


@dataclass(frozen=True, slots=True)
class _Judgments:
    """The qrels as the run kernel reads them: per judgment, topic code, docno (offset and
    length in the qrels), hash, label; ``slots``: the hash table of (topic, docno) to judgment."""

    slots: NDArray[np.int32]
    topic: NDArray[np.int32]
    d0: NDArray[np.int64]
    dlen: NDArray[np.int32]
    hash: NDArray[np.uint64]
    label: NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class _RunRows:
    """Per run line: topic code, docno offset/length/hash, score, label (or `UNJUDGED`)."""

    topic: NDArray[np.int32]
    d0: NDArray[np.int64]
    dlen: NDArray[np.int32]
    hash: NDArray[np.uint64]
    score: NDArray[np.float64]
    label: NDArray[np.int64]


def _line_start(buf: NDArray[np.uint8], offset: int) -> int:
    """The offset where the line holding byte ``offset`` starts."""
    hi = offset
    while hi > 0:
        lo = max(0, hi - 4096)
        nl = np.flatnonzero(buf[lo:hi] == _NEWLINE)
        if nl.shape[0]:
            return lo + int(nl[-1]) + 1
        hi = lo
    return 0


def _ingest_qrels(
    path: Path, qbuf: NDArray[np.uint8], rbuf: NDArray[np.uint8], topics: _Topics, cap: int, kernel: Any,
    values_out: list[NDArray[np.float64]] | None = None,
) -> _Judgments:
    """Intern the qrels' topics and fill the judgment table (the qrels are read whole; ``cap``:
    an upper bound of their lines). With ``values_out`` (a list), relevance may be any finite
    real >= 0: the labels are then codes into the distinct values, appended to ``values_out``."""
    if cap >= 2**31:
        raise DataError(f"qrels file {path} has {cap - 1:,} lines; at most {2**31 - 2:,} are read")
    values = None if values_out is None else np.zeros(cap, dtype=np.float64)
    size = 1 << max(4, int(2 * cap - 1).bit_length())
    slots = np.full(size, -1, dtype=np.int32)
    topic, dlen = np.zeros(cap, dtype=np.int32), np.zeros(cap, dtype=np.int32)
    d0, label = np.zeros(cap, dtype=np.int64), np.zeros(cap, dtype=np.int64)
    hashes = np.zeros(cap, dtype=np.uint64)
    slow_at = np.zeros((cap, 3), dtype=np.int64)  # pages are only taken by the rows written
    m, at, n_slow = 0, 0, 0
    while True:
        status, m, at, other, n_slow = kernel.ingest_qrels(
            qbuf, at, m, n_slow, rbuf, *topics.args(), slots, topic, d0, dlen, hashes, label, slow_at
        )
        if status != kernel.GROW_TOPICS:
            break
        topics.grow(kernel)
    if status == kernel.SHORT_LINE:
        raise _short_line(path, qbuf, at, "qrels", 4)
    if status == kernel.DUPLICATE:
        docno = _text(bytes(qbuf[d0[other] : d0[other] + dlen[other]]))
        topic_text = _line_text(qbuf, at).split()[0]
        raise DataError(
            f"line {_line_no(qbuf, at)} of {path}: docno {docno} is judged twice for topic "
            f"{topic_text}"
        )
    if m == 0:
        raise DataError(f"qrels file {path} has no lines (blank and # comment lines are skipped)")
    slow = slow_at[:n_slow, 0].copy()
    if n_slow:  # relevance values such as "1.0", or errors
        raw = _strings(qbuf, slow_at[:n_slow, 1], slow_at[:n_slow, 2])
        starts = [_line_start(qbuf, int(a)) for a in slow_at[:n_slow, 1]]
        lines = np.array([_line_no(qbuf, a) for a in starts], dtype=np.int64)
        tops = np.array([_line_text(qbuf, a).split()[0].encode() for a in starts], dtype=bytes)
        if values is None:
            label[slow] = _int_labels(raw, lines, tops, path)
        else:
            values[slow] = _real_labels(raw, lines, tops, path)
    del slow_at
    if values is not None and values_out is not None:  # real relevance: codes into the distinct values
        fast = np.ones(m, dtype=bool)
        fast[slow] = False
        values[:m][fast] = label[:m][fast]
        neg = np.flatnonzero(values[:m] < 0)
        if neg.shape[0]:
            i = int(neg[0])
            start = _line_start(qbuf, int(d0[i]))
            raise DataError(
                f"line {_line_no(qbuf, start)} of {path}: relevance {values[i]:g} (topic "
                f"{_line_text(qbuf, start).split()[0]}) is negative; a value gain must be >= 0"
            )
        table = np.unique(values[:m])
        label[:m] = np.searchsorted(table, values[:m])
        values_out.append(table)
    return _Judgments(slots, topic[:m], d0[:m], dlen[:m], hashes[:m], label[:m])


#: Up to this many bytes of qrels and run together, the kernels run interpreted when numba is not
#: loaded yet (:mod:`ltr.compiled.kernels`): at most about 0.25 s there (4 us a byte) against about 1 s
#: for numba's import and cache load on the 2-core machine of ``benchmarks/``.
INTERPRET_MAX_BYTES = 64 << 10
#: Bytes of the run file read per kernel call; pages already read are released after each.
WINDOW_BYTES = 1 << 23
#: Elements of a temporary array in a pass over a whole file or column.
_CHUNK = 1 << 20
#: Topics the topic table holds at first (it doubles whenever it is half full).
TOPICS_START = 1 << 10
#: Rows whose score the kernel leaves to numpy, per call (the call returns early when full).
SLOW_ROWS = 1 << 16


def _ingest_run(
    path: Path, rbuf: NDArray[np.uint8], rmm: mmap.mmap | None, qbuf: NDArray[np.uint8],
    topics: _Topics, judged: _Judgments, kernel: Any,
) -> _RunRows:  # fmt: skip
    """Read the run a window at a time: topic codes, docnos, scores and joined labels."""
    cap = _count_lines(rbuf, rmm)
    if cap >= 2**31:
        raise DataError(f"run file {path} has {cap - 1:,} lines; at most {2**31 - 2:,} are read")
    r_topic = np.zeros(cap, dtype=np.int32)
    r_d0 = np.zeros(cap, dtype=np.int64)
    r_dlen = np.zeros(cap, dtype=np.int32)
    r_hash = np.zeros(cap, dtype=np.uint64)
    r_score = np.zeros(cap, dtype=np.float64)
    r_label = np.zeros(cap, dtype=np.int64)
    slow = np.zeros((SLOW_ROWS, 3), dtype=np.int64)
    n = rbuf.shape[0]
    row, lo = 0, 0
    while lo < n:
        hi = min(lo + WINDOW_BYTES, n)
        status, row, nxt, at, n_slow = kernel.ingest_run(
            rbuf, lo, hi, row, qbuf, *topics.args(), judged.slots, judged.topic, judged.d0,
            judged.dlen, judged.hash, judged.label, UNJUDGED, r_topic, r_d0, r_dlen, r_hash,
            r_score, r_label, slow,
        )  # fmt: skip
        if n_slow:
            rows, a, b = slow[:n_slow, 0], slow[:n_slow, 1], slow[:n_slow, 2]
            at_score = a.copy()  # where each score is, for a message
            raw = _strings(rbuf, a, b)
            r_score[rows] = _scores(
                raw, path, partial(_topic_of_row, rbuf, at_score),
                partial(_line_of_row, rbuf, at_score),
            )
        if status == kernel.SHORT_LINE:
            raise _short_line(path, rbuf, at, "run", 6)
        if status == kernel.GROW_TOPICS:
            topics.grow(kernel)
        _release(rmm, lo, nxt)
        lo = nxt
    if row == 0:
        raise DataError(f"run file {path} has no lines (blank and # comment lines are skipped)")
    return _RunRows(r_topic[:row], r_d0[:row], r_dlen[:row], r_hash[:row], r_score[:row],
                    r_label[:row])  # fmt: skip


def _topic_of_row(buf: NDArray[np.uint8], at: NDArray[np.int64], i: int) -> str:
    return _topic_at(buf, int(at[i]))


def _line_of_row(buf: NDArray[np.uint8], at: NDArray[np.int64], i: int) -> int:
    return _line_no(buf, int(at[i]))


def _topic_at(buf: NDArray[np.uint8], offset: int) -> str:
    """The topic (first field) of the line holding byte ``offset``."""
    return _line_text(buf, _line_start(buf, offset)).split()[0]


def _join(
    qpath: Path, rpath: Path, qbuf: NDArray[np.uint8], rbuf: NDArray[np.uint8],
    topics: _Topics, judged: _Judgments, run: _RunRows, missing_topics: str,
    max_docs: int | None, kernel: Any,
) -> TrecEvalInput:  # fmt: skip
    """Group the run rows by topic (byte order), check them, keep the evaluated topics."""
    names = topics.strings(qbuf, rbuf)
    n_t = names.shape[0]
    order_t = np.argsort(names, kind="stable")
    rank = np.empty(n_t, dtype=np.int32)
    rank[order_t] = np.arange(n_t, dtype=np.int32)
    sorted_names = names[order_t]
    q_rank = rank[judged.topic]
    cols: list[NDArray[Any]] = [run.d0, run.dlen, run.hash, run.score, run.label]
    r_rank = rank[run.topic]
    del run  # the columns live in ``cols`` only
    counts = _bincount(r_rank, n_t)
    bounds = np.zeros(n_t + 1, dtype=np.int64)
    np.cumsum(counts, out=bounds[1:])
    if r_rank.shape[0] > 1 and bool(np.any(r_rank[1:] < r_rank[:-1])):  # not grouped yet
        dest = np.empty(r_rank.shape[0], dtype=np.int32)  # run rows < 2**31: see _ingest_run
        kernel.group_positions(r_rank, bounds, dest)
        for j in range(len(cols)):
            cols[j] = _scatter(cols[j], dest)
        del dest
    del r_rank
    d0, dlen, hashes, scores, labels = cols
    del cols

    rep, _ = kernel.first_repeat(bounds, hashes, d0, dlen, rbuf)
    if rep >= 0:
        docno = _text(bytes(rbuf[d0[rep] : d0[rep] + dlen[rep]]))
        raise DataError(
            f"line {_line_no(rbuf, int(d0[rep]))} of {rpath}: docno {docno} is ranked twice for "
            f"topic {_topic_at(rbuf, int(d0[rep]))}"
        )
    del hashes
    tie_keys = np.zeros(scores.shape[0], dtype=np.float64)
    tied = np.flatnonzero(kernel.tied_rows(bounds, scores, scores.view(np.uint64)))
    if tied.shape[0]:  # ties by docno in byte order (only tied rows are compared)
        docnos = _strings(rbuf, d0[tied], d0[tied] + dlen[tied])
        tie_keys[tied] = np.unique(docnos, return_inverse=True)[1].ravel() + 1
        del docnos
    del d0, dlen, tied

    judged_t = _bincount(q_rank, n_t) > 0
    ranked_t = counts > 0
    missing = judged_t & ~ranked_t
    if missing.any() and missing_topics == "error":
        t = int(np.flatnonzero(missing)[0])
        raise DataError(
            f"topic {_text(sorted_names[t])} of qrels {qpath} has no lines in run {rpath} "
            f"({int(missing.sum())} judged topics have none; trec_eval 10.0 refuses this without "
            "-c): pass --missing-topics empty (score them 0, trec_eval -c) or skip"
        )
    evaluated = judged_t if missing_topics == "empty" else judged_t & ranked_t
    n_rows_unjudged_topics = int(counts[~judged_t].sum())
    kept_counts = np.where(judged_t, counts, 0)
    n_over = 0
    keep: NDArray[np.bool_] | None = None
    if n_rows_unjudged_topics:
        keep = np.repeat(judged_t, counts)
    if max_docs is not None:
        # trec_eval's order: topic, score descending, docno descending; keep the first max_docs
        row_topic = np.repeat(np.arange(n_t, dtype=np.int64), counts)
        order = np.lexsort((-tie_keys, -scores, row_topic))
        pos = np.arange(order.shape[0]) - bounds[row_topic[order]]
        within = np.empty(order.shape[0], dtype=bool)
        within[order] = pos < max_docs
        del order, pos, row_topic
        if keep is not None:
            within &= keep
        n_over = int(kept_counts.sum() - np.count_nonzero(within))
        kept_counts = np.minimum(kept_counts, max_docs)
        keep = within
    if keep is not None:
        labels, scores, tie_keys = labels[keep], scores[keep], tie_keys[keep]
    del keep

    n_eval = int(np.count_nonzero(evaluated))
    offsets = np.zeros(n_eval + 1, dtype=np.int64)
    np.cumsum(kept_counts[evaluated], out=offsets[1:])
    topic_index = np.cumsum(evaluated) - 1  # topic rank -> query index (evaluated topics)
    in_eval = evaluated[q_rank]
    q_q = topic_index[q_rank[in_eval]]
    i_order = np.argsort(q_q, kind="stable")
    ideal_offsets = np.zeros(n_eval + 1, dtype=np.int64)
    np.cumsum(np.bincount(q_q, minlength=n_eval), out=ideal_offsets[1:])
    qids = np.array([_text(t) for t in sorted_names[evaluated].tolist()], dtype=str)
    return TrecEvalInput(
        qids=qids,
        labels=labels,
        scores=scores,
        offsets=offsets,
        ideal_labels=judged.label[in_eval][i_order],
        ideal_offsets=ideal_offsets,
        tie_keys=tie_keys,
        n_run_topics_unjudged=int(np.count_nonzero(ranked_t & ~judged_t)),
        n_run_rows_unjudged_topics=n_rows_unjudged_topics,
        n_judged_topics_without_run=int(np.count_nonzero(missing)),
        n_rows_unjudged=int(np.count_nonzero(labels == UNJUDGED)),
        n_rows_over_max_docs=n_over,
    )


def _scatter(a: NDArray[Any], dest: NDArray[np.int32]) -> NDArray[Any]:
    out = np.empty_like(a)
    out[dest] = a
    return out


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

"""Parse LETOR / SVMlight / LightGBM sparse text into dense arrays, fast.

Format, one data row per line::

    <label> [qid:<int>] <index>:<value> <index>:<value> ... [# comment]

- Indices are 1-based; index ``j`` lands in column ``j - 1``; a missing index means 0.
- ``#`` starts a comment that runs to the end of the line; blank and comment-only lines are
  skipped (but counted, so messages name the real line number).
- Tokens are separated by spaces or tabs; ``\\r\\n`` line ends are accepted.
- Values are decimal numbers (``1``, ``-0.5``, ``3e-4``), or ``nan`` (features only: a NaN
  feature is LightGBM's "missing"). An infinite feature (``inf``, ``-inf``, or a number beyond
  float32's +-3.4e38 such as ``1e39``) is an error: it has no place in a tree's bins and nearly
  always comes from a broken export.
- The feature matrix is dense, one float32 column per index up to the largest seen. Without a
  fixed ``n_features``, an index above :data:`MAX_FEATURE_INDEX` (1,000,000) is an error, raised
  at the first line that has it and before anything that wide is allocated (index 999999999
  would mean 3.7 GiB per row). With ``n_features`` the width is fixed and any index above it is
  an error; a width this machine cannot allocate is reported as a `DataError` too.

The parse is a numba kernel over the raw bytes, one chunk (32 MiB) at a time, so memory stays
near the size of the output and a progress bar can follow the bytes. Each chunk is cut at line
ends into one part per core (up to 4), parsed at once on threads (the kernel releases the GIL);
a part that meets an error or a wider row sends the chunk back to one thread, so messages and
results are exactly those of a sequential parse. Numbers are read with
Clinger's fast path (exact for up to 18 significant digits and exponents within +-22, which covers
every file of the field), then rounded to float32.

Errors are raised as :class:`ltr.errors.DataError`, naming the file and line.
"""

from __future__ import annotations

import gzip
import io
import itertools
import os
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import IO, Any, cast

import numpy as np
from numpy.typing import NDArray

from ltr.compiled import kernels
from ltr.data.validate import RawTable
from ltr.errors import DataError
from ltr.runtime.terminal import console as terminal_console

CHUNK_BYTES = 32 << 20
#: Threads that parse parts of a chunk at once (the kernel releases the GIL).
PARSE_THREADS = min(os.cpu_count() or 1, 4)
#: Chunks smaller than this are parsed on one thread.
PARALLEL_MIN_BYTES = 1 << 20
#: Files at least this large get a progress bar (when stderr is a terminal).
PROGRESS_MIN_BYTES = 16 << 20
#: The largest feature index accepted without a fixed ``n_features``: the dense matrix has one
#: float32 column per index up to the largest (1,000,000 columns = 4 MB per row).
MAX_FEATURE_INDEX = 1_000_000
#: Bytes of the smallest row block allocated at a time when rows are very wide (rows are at
#: least 16, at most 1024 per block; 1024 for up to 16,384 features).
ROW_BLOCK_BYTES = 64 << 20

def _kernel() -> ModuleType:
    """The numba kernels, imported on the first parse so that importing readers stays light."""
    return kernels.compiled("ltr.data.formats._text_kernel")


@contextmanager
def open_bytes(path: Path) -> Iterator[tuple[IO[bytes], IO[bytes]]]:
    """Open ``path`` for reading bytes, gunzipping ``.gz`` (by magic number, not only name).

    Yields ``(stream, raw)``: read data from ``stream``; ``raw.tell()`` is the position in the file
    on disk (for progress).
    """
    try:
        raw = open(path, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        raise DataError(f"data file {path} does not exist; check the path") from None
    except IsADirectoryError:
        raise DataError(f"data file {path} is a directory, not a file") from None
    try:
        magic = raw.peek(2)[:2] if isinstance(raw, io.BufferedReader) else b""
        if magic == b"\x1f\x8b":
            with gzip.GzipFile(fileobj=raw, mode="rb") as stream:
                yield cast(IO[bytes], stream), raw
        else:
            yield raw, raw
    finally:
        raw.close()


def read_head(path: Path, n_bytes: int = 1 << 20) -> bytes:
    """The first ``n_bytes`` of the (decompressed) file."""
    with open_bytes(path) as (stream, _):
        try:
            return stream.read(n_bytes)
        except (OSError, EOFError) as exc:
            raise DataError(f"cannot read {path}: {exc}") from None


def head_has_qid(head: bytes) -> bool | None:
    """Whether the first data line of ``head`` has a ``qid:`` token (None: no data line)."""
    buf = np.frombuffer(head, dtype=np.uint8)
    _, n_lines, span = _kernel().scan_head(buf, 1)
    if n_lines == 0:
        return None
    return bool(span >= 0)


class _Progress:
    """A rich progress bar over the bytes of a file; silent when stderr is not a terminal."""

    def __init__(self, path: Path, total: int, enabled: bool | None) -> None:
        if enabled is None:
            enabled = total >= PROGRESS_MIN_BYTES and sys.stderr.isatty()
        self._bar: Any = None
        if enabled:
            from rich.progress import (
                BarColumn,
                DownloadColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
                TransferSpeedColumn,
            )

            self._bar = Progress(
                TextColumn("parsing {task.description}"),
                BarColumn(),
                DownloadColumn(),
                TransferSpeedColumn(),
                TimeRemainingColumn(),
                console=terminal_console(stderr=True),
                transient=True,
            )
            self._task = self._bar.add_task(path.name, total=total)
            self._bar.start()

    def update(self, done: int) -> None:
        if self._bar is not None:
            self._bar.update(self._task, completed=done)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()


def parse_svmlight(
    path: str | Path,
    *,
    qid_required: bool = True,
    n_features: int | None = None,
    progress: bool | None = None,
) -> RawTable:
    """Parse a LETOR / SVMlight / LightGBM text file (optionally gzipped) into a `RawTable`.

    Parameters
    ----------
    path : the file; gzip is recognised by its magic bytes
    qid_required : True: every data line needs ``qid:<id>`` (LETOR); False: no line may have one
        (LightGBM form, groups come from a ``.query`` file); the returned ``row_qids`` are then -1
    n_features : fixed width; an index above it is an error. None: the largest index seen, at
        most `MAX_FEATURE_INDEX`
    progress : show a progress bar; None = when stderr is a terminal and the file is large

    Returns
    -------
    RawTable
        features float32 (n_rows, width), raw float64 labels, per-row qids and line numbers.

    Raises
    ------
    DataError
        naming the file and line: a missing file, malformed token, non-numeric label, missing
        (or unexpected) ``qid:``, feature index < 1 or above ``n_features`` (without it: above
        `MAX_FEATURE_INDEX`), a duplicate index in a line, a non-numeric or infinite feature
        value, or a feature matrix too large to allocate.
    """
    path = Path(path)
    source = str(path)
    try:
        total = os.stat(path).st_size
    except FileNotFoundError:
        raise DataError(f"data file {path} does not exist; check the path") from None
    qid_mode = 1 if qid_required else 0
    bar = _Progress(path, total, progress)
    try:
        with open_bytes(path) as (stream, raw):
            return _parse_stream(stream, raw, total, source, qid_mode, n_features, bar)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise DataError(f"cannot read {path}: {exc}") from None
    finally:
        bar.close()


class _Rows:
    """The growing output arrays of a parse, and the kernel state between calls."""

    def __init__(self, n_rows: int, width: int, qid_mode: int, source: str, n_features: int | None) -> None:
        self.source = source
        with _out_of_memory(source, n_rows, width, 1):
            self.features = np.zeros((n_rows, width), np.float32)
        self.labels = np.zeros(n_rows, np.float64)
        self.qids = np.full(n_rows, -1, np.int64)
        self.lines = np.zeros(n_rows, np.int64)
        self.doc_spans = np.full((n_rows, 2), -1, np.int64)
        self.seen = [np.full(width, -1, np.int64) for _ in range(max(PARSE_THREADS, 1))]
        self.qid_mode = qid_mode
        self.n_features = n_features
        self.row = 0
        self.line_no = 0
        self.max_index = 0
        # Doc ids of the rows parsed so far: one list of str per chunk (None: no docid in it),
        # and the rows of each chunk that have one.
        self.doc_chunks: list[list[str] | None] = []
        self.doc_found: list[NDArray[np.bool_]] = []

    def collect_doc_ids(self, buf: NDArray[np.uint8], row0: int) -> None:
        """Keep the doc ids of rows ``row0:self.row``, just parsed from ``buf`` (before it is reused).

        Costs one vectorised test per chunk when no row of the chunk has a ``docid``.
        """
        spans = self.doc_spans[row0 : self.row]
        if spans.shape[0] == 0:
            return
        found = spans[:, 0] >= 0
        if not found.any():
            self.doc_chunks.append(None)
        else:
            text = bytes(_kernel().gather_spans(buf, spans)).decode("utf-8", errors="replace")
            ids = text.split("\n")
            ids.pop()  # after the last newline
            self.doc_chunks.append(ids)
        self.doc_found.append(found)

    def doc_ids(self, row_lines: NDArray[np.int64]) -> tuple[NDArray[np.object_] | None, tuple[str, ...]]:
        """The doc ids of all rows (None unless every data line names one) and a note when only
        some do (the rows then get none, and the note names the first line without one)."""
        if not any(ids is not None for ids in self.doc_chunks):
            return None, ()
        found = np.concatenate(self.doc_found)
        if not found.all():
            first = int(row_lines[int(np.argmin(found))])
            note = (
                f"{self.source}: {int(found.sum()):,} of {found.shape[0]:,} data lines name a document "
                f"(# docid = ...) but line {first} does not; the rows get no doc ids (give every "
                "line a docid, or none)"
            )
            return None, (note,)
        out = np.empty(found.shape[0], dtype=object)
        start = 0
        for ids in self.doc_chunks:
            assert ids is not None  # every row has one
            out[start : start + len(ids)] = ids
            start += len(ids)
        return out, ()

    def grow_rows(self, at_least: int) -> None:
        width = self.features.shape[1]
        cap = max(2 * self.features.shape[0], at_least, _min_rows(width))
        with _out_of_memory(self.source, cap, width, self.line_no + 1):
            self.features = _grow(self.features, (cap, width))
        self.labels = _grow(self.labels, (cap,))
        self.qids = _grow(self.qids, (cap,), fill=-1)
        self.lines = _grow(self.lines, (cap,))
        self.doc_spans = _grow(self.doc_spans, (cap, 2), fill=-1)

    def grow_width(self, index: int, line: int) -> None:
        if self.n_features is not None:
            raise DataError(
                f"feature index {index} at line {line} of {self.source} is above "
                f"n_features={self.n_features}; raise n_features or fix the index"
            )
        if index > MAX_FEATURE_INDEX:
            raise DataError(
                f"feature index {index} at line {line} of {self.source} is above "
                f"{MAX_FEATURE_INDEX:,}, the widest feature matrix read without data.n_features "
                f"(one float32 column per index up to the largest: {_size(4 * index)} per row "
                "here); renumber the features 1..N, or fix the width with data.n_features=N "
                "(any index above N is then refused)"
            )
        new_width = min(max(index, int(self.features.shape[1] * 1.5)), MAX_FEATURE_INDEX)
        rows = self.features.shape[0]
        with _out_of_memory(self.source, rows, new_width, line):
            self.features = _grow(self.features, (rows, new_width))
        self.seen = [np.full(new_width, -1, np.int64) for _ in self.seen]

    def parse(self, buf: NDArray[np.uint8], pos: int) -> None:
        """Parse ``buf[pos:]`` (whole lines) on one thread, growing as needed."""
        seen = self.seen[0]
        seen.fill(-1)
        while True:
            status, pos, self.line_no, self.row, tok, info, self.max_index = _kernel().parse_chunk(
                buf, pos, self.line_no, self.row, self.features, self.labels, self.qids, self.lines,
                seen, self.qid_mode, self.max_index, _kernel().POW10, self.doc_spans,
            )
            if status == _kernel().OK:
                return
            if status == _kernel().NEED_ROWS:
                self.grow_rows(self.row + 1)
            elif status == _kernel().NEED_WIDTH:
                self.grow_width(info, self.line_no + 1)
                seen = self.seen[0]
            else:
                raise DataError(_message(status, buf, tok, self.line_no, info, self.source))

    def parse_parallel(
        self, data: bytearray, buf: NDArray[np.uint8], pos: int, pool: ThreadPoolExecutor
    ) -> None:
        """Parse ``buf[pos:]`` in ``PARSE_THREADS`` parts at once (the kernel releases the GIL).

        Each part gets its first line number (counted newlines) and a row range sized by its
        newline count; rows left free by blank or comment lines are closed up afterwards. Anything
        but a clean parse (an error, a wider row) falls back to :meth:`parse` from ``pos``.
        """
        n = buf.shape[0]
        cuts = [pos]
        for k in range(1, len(self.seen)):
            nl = data.find(b"\n", pos + (n - pos) * k // len(self.seen), n)
            cuts.append(max(n if nl < 0 else nl + 1, cuts[-1]))
        cuts.append(n)
        starts_line, starts_row = [], []
        line, row = self.line_no, self.row
        for a, b in itertools.pairwise(cuts):
            newlines = data.count(b"\n", a, b)
            starts_line.append(line)
            starts_row.append(row)
            line += newlines
            row += newlines + (1 if b > a and data[b - 1] != 10 else 0)
        if row > self.features.shape[0]:
            self.grow_rows(row)
        for seen in self.seen:
            seen.fill(-1)
        jobs = [
            pool.submit(
                _kernel().parse_chunk, buf[:b], a, ln, r, self.features, self.labels, self.qids, self.lines,
                seen, self.qid_mode, self.max_index, _kernel().POW10, self.doc_spans,
            )
            for a, b, ln, r, seen in zip(cuts[:-1], cuts[1:], starts_line, starts_row, self.seen, strict=True)
        ]
        results = [job.result() for job in jobs]
        if any(res[0] != _kernel().OK for res in results):
            self.features[self.row : row] = 0  # drop partial rows, then redo on one thread
            self.parse(buf, pos)
            return
        dst = self.row
        for start, res in zip(starts_row, results, strict=True):
            count = res[3] - start
            if start != dst:
                for arr in (self.features, self.labels, self.qids, self.lines, self.doc_spans):
                    arr[dst : dst + count] = arr[start : start + count].copy()
            dst += count
        if dst < row:
            self.features[dst:row] = 0
            self.qids[dst:row] = -1
        self.row = dst
        self.line_no = results[-1][2]
        self.max_index = max(res[6] for res in results)


def _parse_stream(
    stream: IO[bytes],
    raw: IO[bytes],
    total: int,
    source: str,
    qid_mode: int,
    n_features: int | None,
    bar: _Progress,
) -> RawTable:
    out: _Rows | None = None
    # One reusable block: the unparsed tail of a chunk moves to the front, the next read lands
    # behind it (readinto: no copy of the whole chunk).
    block = bytearray(CHUNK_BYTES + (1 << 16))
    n_left = 0
    eof = False
    with ThreadPoolExecutor(max_workers=max(PARSE_THREADS, 1)) as pool:
        while not eof:
            if len(block) - n_left < CHUNK_BYTES // 2:  # a line longer than a chunk: make room
                block.extend(bytes(CHUNK_BYTES))
            with memoryview(block) as view:
                got = stream.readinto(view[n_left:]) if hasattr(stream, "readinto") else 0
            eof = got == 0
            end = n_left + got
            cut = end if eof else block.rfind(b"\n", 0, end) + 1
            if cut == 0 and not eof:  # no line end yet: read on
                n_left = end
                continue
            buf = np.frombuffer(block, dtype=np.uint8, count=cut)
            pos = 0
            if out is None:
                head_max, head_lines, span = _kernel().scan_head(buf, 2000)
                if n_features is not None:
                    width = n_features
                else:  # an index too wide is refused by the parse, with its line: start narrow
                    width = head_max if 1 <= head_max <= MAX_FEATURE_INDEX else 1
                span = span if span >= 0 else -span - 1
                # Estimate the row count from the bytes per line of the head (on disk, for gzip).
                ratio = raw.tell() / end if end else 1.0
                disk_per_line = max(ratio * span / max(head_lines, 1), 1.0)
                est_rows = int(total / disk_per_line * 1.1) + _min_rows(width)
                out = _Rows(est_rows, width, qid_mode, source, n_features)
                if block.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte order mark
                    pos = 3
            row0 = out.row
            if PARSE_THREADS > 1 and cut - pos >= PARALLEL_MIN_BYTES:
                out.parse_parallel(block, buf, pos, pool)
            else:
                out.parse(buf, pos)
            out.collect_doc_ids(buf, row0)
            del buf  # release the export, so the block may grow
            block[: end - cut] = block[cut:end]
            n_left = end - cut
            bar.update(raw.tell())
    if out is None:  # pragma: no cover - the loop always parses the final (maybe empty) block
        out = _Rows(0, 0, qid_mode, source, n_features)
    row = out.row
    width = out.max_index if n_features is None else n_features
    if row == 0:
        width = n_features or 0
    features = out.features[:row]
    if features.shape[1] != width:
        features = np.ascontiguousarray(features[:, :width])
    row_lines = out.lines[:row].copy()
    doc_ids, notes = out.doc_ids(row_lines)
    return RawTable(
        features=features,
        labels=out.labels[:row].copy(),
        row_qids=out.qids[:row].copy(),
        row_lines=row_lines,
        source=source,
        doc_ids=doc_ids,
        notes=notes,
    )


def _min_rows(width: int) -> int:
    """The smallest row block: 1024 rows, fewer (down to 16) for rows wider than 16,384 features."""
    return max(16, min(1024, ROW_BLOCK_BYTES // (4 * max(width, 1))))


def _size(n_bytes: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if n_bytes < 1024 or unit == "TiB":
            return f"{n_bytes:.0f} {unit}" if unit == "bytes" else f"{n_bytes:.1f} {unit}"
        n_bytes /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


@contextmanager
def _out_of_memory(source: str, rows: int, width: int, line: int) -> Iterator[None]:
    """Turn a failed allocation of the ``rows`` x ``width`` float32 matrix into a `DataError`."""
    try:
        yield
    except MemoryError:
        raise DataError(
            f"the feature matrix of {source} needs {rows:,} rows x {width:,} features x 4 bytes "
            f"({_size(4 * rows * width)}) by line {line}, more than this machine can allocate; "
            "lower data.n_features, or renumber the features 1..N"
        ) from None


def _grow(a: NDArray[Any], shape: tuple[int, ...], fill: int = 0) -> NDArray[Any]:
    out = np.full(shape, fill, a.dtype) if fill else np.zeros(shape, a.dtype)
    out[tuple(slice(0, s) for s in a.shape)] = a
    return out


def _token(buf: NDArray[np.uint8], start: int) -> str:
    end = start
    n = buf.shape[0]
    while end < n and buf[end] not in (_kernel().SPACE, _kernel().TAB, _kernel().CR, _kernel().LF, _kernel().HASH) and end - start < 60:
        end += 1
    return bytes(buf[start:end]).decode("utf-8", errors="replace")


def _message(status: int, buf: NDArray[np.uint8], tok: int, line: int, info: int, source: str) -> str:
    t = _token(buf, tok)
    at = f"at line {line} of {source}"
    if status == _kernel().MALFORMED:
        return (
            f"malformed token {t!r} {at}: expected <index>:<value>, qid:<id> or a # comment; "
            "fix or remove the line"
        )
    if status == _kernel().BAD_LABEL:
        return (
            f"label {t!r} {at} is not a number; each line must start with its relevance grade "
            "(0, 1, 2, ...)"
        )
    if status == _kernel().MISSING_QID:
        return (
            f"line {line} of {source} has no qid:<id>; every line of a LETOR / SVMlight ranking "
            "file needs one after the label (for a file without qids, put the group sizes in a "
            ".query file beside it)"
        )
    if status == _kernel().BAD_QID:
        digits = t.partition(":")[2]
        if digits.lstrip("+-").isdigit():
            return f"{t!r} {at} is too long: qids have at most 18 digits; renumber the queries"
        return f"{t!r} {at} is not an integer qid; write qid:<integer>"
    if status == _kernel().DUPLICATE_QID:
        return f"a second qid {t!r} {at}; give each line one qid:<id>"
    if status == _kernel().UNEXPECTED_QID:
        return (
            f"{t!r} {at}, but the groups come from a .query file and the first line has no qid; "
            "use qid: on every line or a .query file, not both"
        )
    if status == _kernel().BAD_INDEX:
        return (
            f"feature index {info} {at} is not positive; indices are 1-based (1:<value> is the "
            "first feature): renumber the features"
        )
    if status == _kernel().INF_VALUE:
        beyond = "" if t.lstrip("+-").lower().startswith("inf") else " (beyond float32's +-3.4e38)"
        return (
            f"feature {info} has infinite value {t!r}{beyond} {at}; an infinity has no place in "
            "a tree's bins and usually comes from a broken export: write a finite number, or nan "
            "for a missing value"
        )
    if status == _kernel().DUPLICATE_INDEX:
        return f"feature index {info} appears twice {at}; keep one value per feature in a line"
    if status == _kernel().BAD_VALUE:
        return (
            f"feature {info} has non-numeric value {t!r} {at}; write a number (nan for a "
            "missing value)"
        )
    return f"cannot parse {t!r} {at} (status {status})"

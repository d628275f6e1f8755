"""The numba kernels of :mod:`ltr.data.formats.read_text`: parse SVMlight / LETOR bytes, scan a file's head.

Kept apart so that importing the readers does not import numba: :mod:`ltr.data.formats.read_text`
imports this module on the first parse (numba's import and cache load cost about a second).
Status codes are the kernels' return values; :func:`ltr.data.formats.read_text._message` explains them.
``NEED_WIDTH`` returns the index that did not fit; the caller refuses one above its width limit
(:data:`ltr.data.formats.read_text.MAX_FEATURE_INDEX`) before allocating anything, so the kernel needs
no limit of its own. ``INF_VALUE``: a feature value that is infinite once stored as float32
(``inf``, ``-inf``, or beyond float32's range such as ``1e39``); NaN stays allowed.
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

# Kernel status codes.
OK = 0
NEED_ROWS = 1
NEED_WIDTH = 2
MALFORMED = 10
BAD_LABEL = 11
MISSING_QID = 12
BAD_QID = 13
BAD_INDEX = 14
DUPLICATE_INDEX = 15
BAD_VALUE = 16
UNEXPECTED_QID = 17
DUPLICATE_QID = 18
INF_VALUE = 19

POW10 = np.array([10.0**i for i in range(23)], dtype=np.float64)

SPACE, TAB, CR, LF, HASH, COLON = 32, 9, 13, 10, 35, 58


@numba.njit(cache=True, inline="always")
def _is_sep(c: int) -> bool:  # pragma: no cover - compiled
    return c == 32 or c == 9 or c == 13


@numba.njit(cache=True)
def _parse_float(buf: Any, a: int, b: int, pow10: Any) -> tuple[float, bool]:  # pragma: no cover - compiled
    """Parse ``buf[a:b]`` as a decimal float; returns (value, ok)."""
    i = a
    neg = False
    if i < b and (buf[i] == 45 or buf[i] == 43):  # - +
        neg = buf[i] == 45
        i += 1
    if i >= b:
        return 0.0, False
    c = buf[i] | 32
    if c == 110 or c == 105:  # n i: nan, inf, infinity (any case)
        n = b - i
        if n == 3 and c == 110 and (buf[i + 1] | 32) == 97 and (buf[i + 2] | 32) == 110:
            return np.nan, True
        if c == 105 and (n == 3 or n == 8) and (buf[i + 1] | 32) == 110 and (buf[i + 2] | 32) == 102:
            if n == 8:
                word = (105, 110, 105, 116, 121)  # "inity"
                for k in range(5):
                    if (buf[i + 3 + k] | 32) != word[k]:
                        return 0.0, False
            return (-np.inf if neg else np.inf), True
        return 0.0, False
    mant = 0
    nd = 0
    exp10 = 0
    any_digit = False
    while i < b and 48 <= buf[i] <= 57:
        any_digit = True
        if nd < 18:
            mant = mant * 10 + (buf[i] - 48)
            if mant > 0:
                nd += 1
        else:
            exp10 += 1
        i += 1
    if i < b and buf[i] == 46:  # .
        i += 1
        while i < b and 48 <= buf[i] <= 57:
            any_digit = True
            if nd < 18:
                mant = mant * 10 + (buf[i] - 48)
                if mant > 0:
                    nd += 1
                exp10 -= 1
            i += 1
    if not any_digit:
        return 0.0, False
    if i < b and (buf[i] | 32) == 101:  # e E
        i += 1
        eneg = False
        if i < b and (buf[i] == 45 or buf[i] == 43):
            eneg = buf[i] == 45
            i += 1
        if i >= b:
            return 0.0, False
        e = 0
        while i < b and 48 <= buf[i] <= 57:
            if e < 100000:
                e = e * 10 + (buf[i] - 48)
            i += 1
        exp10 += -e if eneg else e
    if i != b:
        return 0.0, False
    v = float(mant)
    if exp10 < 0:
        v = v / pow10[-exp10] if exp10 >= -22 else v / 10.0 ** (-exp10)
    elif exp10 > 0:
        v = v * pow10[exp10] if exp10 <= 22 else v * 10.0**exp10
    return (-v if neg else v), True


@numba.njit(cache=True)
def parse_int(buf: Any, a: int, b: int) -> tuple[int, bool]:  # pragma: no cover - compiled
    """Parse ``buf[a:b]`` as a (signed) integer of at most 18 digits; returns (value, ok)."""
    i = a
    neg = False
    if i < b and (buf[i] == 45 or buf[i] == 43):
        neg = buf[i] == 45
        i += 1
    if i >= b or b - i > 18:
        return 0, False
    v = 0
    while i < b:
        d = buf[i] - 48
        if d < 0 or d > 9:
            return 0, False
        v = v * 10 + d
        i += 1
    return (-v if neg else v), True


@numba.njit(cache=True)
def find_docid(buf: Any, a: int, b: int) -> tuple[int, int]:  # pragma: no cover - compiled
    """The value of the first ``docid = X`` (or ``docid=X``, any case) in the comment ``buf[a:b]``.

    ``docid`` must start the comment or follow a space, tab or ``#``; the value is the run of
    bytes after ``=`` (and optional spaces or tabs) up to the next space, tab, CR or the end.
    A ``docid`` without ``=`` or with an empty value is passed over. Returns ``(start, end)`` of
    the value, or ``(-1, -1)`` when the comment names no document.
    """
    i = a
    while i + 5 < b:
        if (
            (buf[i] | 32) == 100  # d
            and (i == a or buf[i - 1] == 32 or buf[i - 1] == 9 or buf[i - 1] == 35)
            and (buf[i + 1] | 32) == 111  # o
            and (buf[i + 2] | 32) == 99  # c
            and (buf[i + 3] | 32) == 105  # i
            and (buf[i + 4] | 32) == 100  # d
        ):
            j = i + 5
            while j < b and (buf[j] == 32 or buf[j] == 9):
                j += 1
            if j < b and buf[j] == 61:  # =
                j += 1
                while j < b and (buf[j] == 32 or buf[j] == 9):
                    j += 1
                k = j
                while k < b and not _is_sep(buf[k]):
                    k += 1
                if k > j:
                    return j, k
        i += 1
    return -1, -1


@numba.njit(cache=True)
def gather_spans(buf: Any, spans: Any) -> Any:  # pragma: no cover - compiled
    """The bytes of every span ``buf[start:end]`` of ``spans`` (int64, (m, 2)), each followed by
    a newline (a span of -1 adds only the newline): one buffer to decode and split at once."""
    m = spans.shape[0]
    total = 0
    for r in range(m):
        if spans[r, 0] >= 0:
            total += spans[r, 1] - spans[r, 0]
    out = np.empty(total + m, np.uint8)
    o = 0
    for r in range(m):
        a = spans[r, 0]
        if a >= 0:
            for i in range(a, spans[r, 1]):
                out[o] = buf[i]
                o += 1
        out[o] = 10
        o += 1
    return out


@numba.njit(cache=True, nogil=True)
def parse_chunk(  # pragma: no cover - compiled
    buf: Any,
    pos: int,
    line_no: int,
    row: int,
    features: Any,
    labels: Any,
    qids: Any,
    lines: Any,
    seen: Any,
    qid_mode: int,
    max_index: int,
    pow10: Any,
    doc_spans: Any,
) -> tuple[int, int, int, int, int, int, int]:
    """Parse whole lines of ``buf`` from ``pos`` into row ``row`` onwards.

    ``qid_mode``: 1 = every line needs ``qid:``, 0 = no line may have one. ``line_no`` is the
    number of lines before ``pos``. ``doc_spans`` (int64, shape (rows, 2)) receives, for every
    row, the bytes ``[start, end)`` of ``buf`` that hold the row's ``docid`` in its comment
    (:func:`find_docid`), or ``(-1, -1)``. Returns ``(status, pos, line_no, row, token_start, info,
    max_index)``: on ``NEED_ROWS`` / ``NEED_WIDTH`` call again from the returned ``pos`` (the
    start of the line) after growing the arrays; on an error, ``token_start`` and ``info`` locate it.
    """
    n = buf.shape[0]
    cap = features.shape[0]
    width = features.shape[1]
    while pos < n:
        line_start = pos
        while pos < n and _is_sep(buf[pos]):
            pos += 1
        if pos >= n:
            break
        c = buf[pos]
        if c == 10:
            pos += 1
            line_no += 1
            continue
        if c == 35:
            while pos < n and buf[pos] != 10:
                pos += 1
            pos += 1
            line_no += 1
            continue
        this_line = line_no + 1
        if row >= cap:
            return 1, line_start, line_no, row, line_start, 0, max_index
        # label
        a = pos
        while pos < n and not _is_sep(buf[pos]) and buf[pos] != 10 and buf[pos] != 35:
            pos += 1
        v, ok = _parse_float(buf, a, pos, pow10)
        if not ok:
            return 11, line_start, this_line, row, a, 0, max_index
        labels[row] = v
        has_qid = False
        doc_a = -1
        doc_b = -1
        while True:
            while pos < n and _is_sep(buf[pos]):
                pos += 1
            if pos >= n or buf[pos] == 10:
                break
            if buf[pos] == 35:
                hash_at = pos
                while pos < n and buf[pos] != 10:
                    pos += 1
                doc_a, doc_b = find_docid(buf, hash_at + 1, pos)
                break
            a = pos
            c = buf[pos]
            if 48 <= c <= 57:
                # Fast path, one pass: <digits>:<number>
                idx = 0
                while pos < n and 48 <= buf[pos] <= 57 and pos - a < 18:
                    idx = idx * 10 + (buf[pos] - 48)
                    pos += 1
                if pos >= n or buf[pos] != 58:
                    return 10, line_start, this_line, row, a, 0, max_index
                pos += 1
                if idx == 0:
                    return 14, line_start, this_line, row, a, 0, max_index
                if idx > width:
                    return 2, line_start, line_no, row, a, idx, max_index
                col = idx - 1
                if seen[col] == row:
                    return 15, line_start, this_line, row, a, idx, max_index
                seen[col] = row
                v0 = pos
                neg = False
                if pos < n and (buf[pos] == 45 or buf[pos] == 43):
                    neg = buf[pos] == 45
                    pos += 1
                mant = 0
                d0 = pos
                while pos < n and 48 <= buf[pos] <= 57:
                    mant = mant * 10 + (buf[pos] - 48)
                    pos += 1
                digits = pos - d0
                n_frac = 0
                if pos < n and buf[pos] == 46:
                    pos += 1
                    f0 = pos
                    while pos < n and 48 <= buf[pos] <= 57:
                        mant = mant * 10 + (buf[pos] - 48)
                        pos += 1
                    n_frac = pos - f0
                    digits += n_frac
                if 0 < digits <= 18 and (pos >= n or _is_sep(buf[pos]) or buf[pos] == 10 or buf[pos] == 35):
                    v = float(mant)
                    if n_frac > 0:
                        v = v / pow10[n_frac]
                    features[row, col] = -v if neg else v
                else:
                    # exponent, nan / inf, or an error: the general parser decides
                    while pos < n and not _is_sep(buf[pos]) and buf[pos] != 10 and buf[pos] != 35:
                        pos += 1
                    v, ok = _parse_float(buf, v0, pos, pow10)
                    if not ok:
                        return 16, line_start, this_line, row, v0, idx, max_index
                    features[row, col] = v
                    # inf, or beyond float32 (the fast path above never overflows: < 1e18)
                    if math.isinf(features[row, col]):
                        return 19, line_start, this_line, row, v0, idx, max_index
                if idx > max_index:
                    max_index = idx
                continue
            colon = -1
            while pos < n and not _is_sep(buf[pos]) and buf[pos] != 10 and buf[pos] != 35:
                if buf[pos] == 58 and colon < 0:
                    colon = pos
                pos += 1
            if colon < 0:
                return 10, line_start, this_line, row, a, 0, max_index
            if colon - a == 3 and buf[a] == 113 and buf[a + 1] == 105 and buf[a + 2] == 100:  # qid
                if qid_mode == 0:
                    return 17, line_start, this_line, row, a, 0, max_index
                if has_qid:
                    return 18, line_start, this_line, row, a, 0, max_index
                q, ok = parse_int(buf, colon + 1, pos)
                if not ok:
                    return 13, line_start, this_line, row, a, 0, max_index
                qids[row] = q
                has_qid = True
                continue
            idx, ok = parse_int(buf, a, colon)
            if ok and idx <= 0:
                return 14, line_start, this_line, row, a, idx, max_index
            return 10, line_start, this_line, row, a, 0, max_index
        if qid_mode == 1 and not has_qid:
            return 12, line_start, this_line, row, line_start, 0, max_index
        lines[row] = this_line
        doc_spans[row, 0] = doc_a
        doc_spans[row, 1] = doc_b
        row += 1
        pos += 1  # the newline (or one past the end)
        line_no += 1
    return 0, n, line_no, row, n, 0, max_index


@numba.njit(cache=True)
def scan_head(buf: Any, max_lines: int) -> tuple[int, int, int]:  # pragma: no cover - compiled
    """Over the first ``max_lines`` data lines: (largest index, data lines, bytes they span).

    Also tells whether the first data line has ``qid:`` (returned as the sign of the bytes:
    negative = no qid). Malformed tokens are ignored here; the real parse reports them.
    """
    n = buf.shape[0]
    pos = 0
    lines = 0
    best = 0
    first_has_qid = -1
    while pos < n and lines < max_lines:
        while pos < n and _is_sep(buf[pos]):
            pos += 1
        if pos >= n:
            break
        if buf[pos] == 10 or buf[pos] == 35:
            while pos < n and buf[pos] != 10:
                pos += 1
            pos += 1
            continue
        has_qid = 0
        while pos < n and buf[pos] != 10 and buf[pos] != 35:
            a = pos
            colon = -1
            while pos < n and not _is_sep(buf[pos]) and buf[pos] != 10 and buf[pos] != 35:
                if buf[pos] == 58 and colon < 0:
                    colon = pos
                pos += 1
            if colon > a:
                if colon - a == 3 and buf[a] == 113 and buf[a + 1] == 105 and buf[a + 2] == 100:
                    has_qid = 1
                else:
                    idx, ok = parse_int(buf, a, colon)
                    if ok and idx > best:
                        best = idx
            while pos < n and _is_sep(buf[pos]):
                pos += 1
        while pos < n and buf[pos] != 10:
            pos += 1
        pos += 1
        if first_has_qid < 0:
            first_has_qid = has_qid
        lines += 1
    span = min(pos, n)
    return best, lines, span if first_has_qid == 1 else -span - 1

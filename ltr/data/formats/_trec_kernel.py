"""The numba kernels of :mod:`ltr.data.formats.trec`: tokenise TREC lines, intern topics, join docnos.

Kept apart so that importing :mod:`ltr.data.formats.trec` does not import numba (its import and cache
load cost about a second); :mod:`ltr.data.formats.trec` imports this module when it reads a file.

Conventions shared by every kernel:

- a *buffer* is a read-only ``uint8`` array (a memory-mapped file); a field is ``buf[a:b]``;
- separators are the bytes C ``isspace`` accepts (space, ``\\t``, ``\\v``, ``\\f``, ``\\r``) and
  ``\\n`` ends a line; a line whose first non-blank byte is ``#`` is a comment (trec_eval 10.0);
- topics are interned in an open-addressing table (``slots``: topic code or -1) over 64-bit
  FNV-1a hashes; a topic's bytes live in the qrels buffer (``src`` 0) or the run buffer
  (``src`` 1) at its first occurrence, and are compared byte by byte on every hash match, so a
  hash collision never merges two topics;
- judgments are found by (topic code, docno) in a second table, again confirmed byte by byte.

Status codes are the kernels' first return value; :mod:`ltr.data.formats.trec` turns them into messages.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from ltr.data.formats._text_kernel import parse_int

OK = 0
SHORT_LINE = 1
BAD_VALUE = 2
GROW_TOPICS = 3
DUPLICATE = 4

NEWLINE, HASH = 10, 35
FNV_OFFSET = np.uint64(0xCBF29CE484222325)
FNV_PRIME = np.uint64(0x100000001B3)
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
#: Decimal scores with a mantissa up to 2**53 and |exponent| <= 22 are parsed exactly here
#: (one correctly rounded division or product); others are parsed by numpy from their bytes.
MAX_EXACT_MANTISSA = 1 << 53
POW10 = np.array([10.0**i for i in range(23)], dtype=np.float64)


@numba.njit(cache=True, inline="always")
def _sep(c: int) -> bool:  # pragma: no cover - compiled
    return c == 32 or c == 9 or c == 11 or c == 12 or c == 13


@numba.njit(cache=True)
def next_line(
    buf: Any, i: int, n: int, fa: int, fb: int, fc: int, min_fields: int, out: Any
) -> tuple[int, int]:  # pragma: no cover - compiled
    """Tokenise the line starting at ``i``: (kind, start of the next line).

    kind 0: a data line, fields ``fa, fb, fc`` at ``out[0:2], out[2:4], out[4:6]``; 1: a blank
    or comment line; 2: a data line with fewer than ``min_fields`` fields.
    """
    while i < n and _sep(buf[i]):
        i += 1
    if i >= n:
        return 1, n
    if buf[i] == NEWLINE:
        return 1, i + 1
    if buf[i] == HASH:
        while i < n and buf[i] != NEWLINE:
            i += 1
        return 1, min(i + 1, n)
    f = 0
    while i < n and buf[i] != NEWLINE:
        s = i
        while i < n and buf[i] != NEWLINE and not _sep(buf[i]):
            i += 1
        if f == fa:
            out[0], out[1] = s, i
        elif f == fb:
            out[2], out[3] = s, i
        elif f == fc:
            out[4], out[5] = s, i
        f += 1
        while i < n and _sep(buf[i]):
            i += 1
        if f >= min_fields:
            while i < n and buf[i] != NEWLINE:
                i += 1
            break
    return (0 if f >= min_fields else 2), min(i + 1, n)


@numba.njit(cache=True)
def fields(
    buf: Any, fa: int, fb: int, fc: int, min_fields: int, starts: Any, ends: Any
) -> tuple[int, int, int]:  # pragma: no cover - compiled
    """Fields ``fa, fb, fc`` of every data line: (status, lines found, offset of a bad line).

    ``starts``/``ends`` have shape (>= number of lines, 3).
    """
    n = buf.shape[0]
    out = np.zeros(6, dtype=np.int64)
    i = 0
    m = 0
    while i < n:
        start = i
        kind, i = next_line(buf, i, n, fa, fb, fc, min_fields, out)
        if kind == 1:
            continue
        if kind == 2:
            return SHORT_LINE, m, start
        for j in range(3):
            starts[m, j] = out[2 * j]
            ends[m, j] = out[2 * j + 1]
        m += 1
    return OK, m, -1


@numba.njit(cache=True, inline="always")
def _hash(buf: Any, a: int, b: int) -> Any:  # pragma: no cover - compiled
    h = FNV_OFFSET
    for i in range(a, b):
        h = (h ^ np.uint64(buf[i])) * FNV_PRIME
    return h


@numba.njit(cache=True, inline="always")
def _mix(h: Any) -> Any:  # pragma: no cover - compiled
    """splitmix64's finaliser: spreads a hash over the low bits the tables index by."""
    h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


@numba.njit(cache=True, inline="always")
def _equal(x: Any, xa: Any, xb: Any, y: Any, ya: Any, yb: Any) -> bool:  # pragma: no cover
    if xb - xa != yb - ya:
        return False
    for k in range(xb - xa):  # noqa: SIM110 - a generator does not compile in numba
        if x[xa + k] != y[ya + k]:
            return False
    return True


@numba.njit(cache=True)
def _intern(
    buf: Any, src: int, a: int, b: int, qbuf: Any, rbuf: Any, slots: Any, t_hash: Any,
    t_src: Any, t_start: Any, t_len: Any, n_topics: Any,
) -> Any:  # pragma: no cover - compiled
    """The code of topic ``buf[a:b]`` (``src``: 0 qrels, 1 run), added when new."""
    h = _hash(buf, a, b)
    mask = slots.shape[0] - 1
    s = np.int64(_mix(h) & np.uint64(mask))
    while True:
        c = slots[s]
        if c < 0:
            c = n_topics[0]
            n_topics[0] = c + 1
            slots[s] = c
            t_hash[c], t_src[c], t_start[c], t_len[c] = h, src, a, b - a
            return c
        if t_hash[c] == h:
            other = qbuf if t_src[c] == 0 else rbuf
            if _equal(other, t_start[c], t_start[c] + t_len[c], buf, a, b):
                return c
        s = (s + 1) & mask


@numba.njit(cache=True)
def rehash_topics(t_hash: Any, n_topics: int, slots: Any) -> None:  # pragma: no cover - compiled
    """Fill an empty (all -1) ``slots`` table with topic codes ``0..n_topics-1``."""
    mask = slots.shape[0] - 1
    for c in range(n_topics):
        s = np.int64(_mix(t_hash[c]) & np.uint64(mask))
        while slots[s] >= 0:
            s = (s + 1) & mask
        slots[s] = c


@numba.njit(cache=True)
def _parse_score(buf: Any, a: int, b: int) -> tuple[float, bool]:  # pragma: no cover - compiled
    """``buf[a:b]`` as a decimal number when it can be parsed exactly here: (value, ok).

    ok is False for anything else (more than 2**53 in the digits, an exponent beyond 22, inf,
    nan, hex, malformed): the caller parses those bytes with numpy, which decides.
    """
    i = a
    neg = False
    if i < b and (buf[i] == 45 or buf[i] == 43):
        neg = buf[i] == 45
        i += 1
    mant = np.int64(0)
    exp10 = 0
    digits = 0
    while i < b and 48 <= buf[i] <= 57:
        mant = mant * 10 + (np.int64(buf[i]) - 48)
        digits += 1
        if mant > MAX_EXACT_MANTISSA:
            return 0.0, False
        i += 1
    if i < b and buf[i] == 46:
        i += 1
        while i < b and 48 <= buf[i] <= 57:
            mant = mant * 10 + (np.int64(buf[i]) - 48)
            digits += 1
            exp10 -= 1
            if mant > MAX_EXACT_MANTISSA:
                return 0.0, False
            i += 1
    if digits == 0:
        return 0.0, False
    if i < b and (buf[i] == 101 or buf[i] == 69):
        i += 1
        e, ok = parse_int(buf, i, b)
        if not ok or e > 400 or e < -400:
            return 0.0, False
        exp10 += e
        i = b
    if i != b or exp10 > 22 or exp10 < -22:
        return 0.0, False
    v = float(mant)
    if exp10 < 0:
        v = v / POW10[-exp10]
    elif exp10 > 0:
        v = v * POW10[exp10]
    return (-v if neg else v), True


@numba.njit(cache=True, inline="always")
def _find_judgment(
    buf: Any, a: int, b: int, code: int, dh: Any, qbuf: Any, q_slots: Any, q_topic: Any,
    q_d0: Any, q_dlen: Any, q_hash: Any,
) -> tuple[Any, Any]:  # fmt: skip  # pragma: no cover - compiled
    """The judgment of topic ``code`` and docno ``buf[a:b]`` (hash ``dh``) in the table
    ``q_slots`` (its docnos in ``qbuf``): (slot, row), row -1 with the empty slot it would take."""
    mask = q_slots.shape[0] - 1
    s = np.int64(_mix(dh ^ (np.uint64(code + 1) * GOLDEN)) & np.uint64(mask))
    while True:
        e = np.int64(q_slots[s])
        if e < 0 or (
            q_topic[e] == code and q_hash[e] == dh and _equal(qbuf, q_d0[e], q_d0[e] + q_dlen[e], buf, a, b)
        ):
            return s, e
        s = (s + 1) & mask


@numba.njit(cache=True)
def ingest_qrels(
    qbuf: Any, lo: int, row: int, n_slow: int, rbuf: Any, slots: Any, t_hash: Any, t_src: Any,
    t_start: Any, t_len: Any, n_topics: Any, q_slots: Any, q_topic: Any, q_d0: Any, q_dlen: Any,
    q_hash: Any, q_label: Any, slow: Any,
) -> tuple[int, int, int, int, int]:  # fmt: skip  # pragma: no cover - compiled
    """The judgments of ``qbuf`` from offset ``lo`` on, stored from row ``row`` on:
    (status, judgments, offset, other row, slow rows).

    Per judgment: topic code, docno ``qbuf[q_d0:q_d0+q_dlen]`` and its hash, label. A relevance
    that is not a plain integer is listed in ``slow`` as (row, field start, field end), from
    entry ``n_slow`` on (``slow`` holds one entry per line): the caller parses those.
    The offset is where the bad line starts (``SHORT_LINE``, ``DUPLICATE``: the (topic, docno)
    of that line was judged before, at row ``other``) or, for ``GROW_TOPICS`` (the topic table
    is half full; grow it), where the next call starts.
    """
    n = qbuf.shape[0]
    out = np.zeros(6, dtype=np.int64)
    cap = slots.shape[0] // 2
    i = lo
    m = row
    while i < n:
        if n_topics[0] >= cap:
            return GROW_TOPICS, m, i, -1, n_slow
        start = i
        kind, i = next_line(qbuf, i, n, 0, 2, 3, 4, out)
        if kind == 1:
            continue
        if kind == 2:
            return SHORT_LINE, m, start, -1, n_slow
        code = _intern(qbuf, 0, out[0], out[1], qbuf, rbuf, slots, t_hash, t_src, t_start,
                       t_len, n_topics)  # fmt: skip
        dh = _hash(qbuf, out[2], out[3])
        s, e = _find_judgment(qbuf, out[2], out[3], code, dh, qbuf, q_slots, q_topic, q_d0, q_dlen, q_hash)
        if e >= 0:
            return DUPLICATE, m, start, e, n_slow
        q_slots[s] = m
        v, ok = parse_int(qbuf, out[4], out[5])
        q_topic[m], q_d0[m], q_dlen[m], q_hash[m] = code, out[2], out[3] - out[2], dh
        q_label[m] = v
        if not ok:
            slow[n_slow, 0], slow[n_slow, 1], slow[n_slow, 2] = m, out[4], out[5]
            n_slow += 1
        m += 1
    return OK, m, n, -1, n_slow


@numba.njit(cache=True)
def ingest_run(
    rbuf: Any, lo: int, hi: int, row: int, qbuf: Any, slots: Any, t_hash: Any, t_src: Any,
    t_start: Any, t_len: Any, n_topics: Any, q_slots: Any, q_topic: Any, q_d0: Any,
    q_dlen: Any, q_hash: Any, q_label: Any, unjudged: int, r_topic: Any, r_d0: Any,
    r_dlen: Any, r_hash: Any, r_score: Any, r_label: Any, slow: Any,
) -> tuple[int, int, int, int, int]:  # fmt: skip  # pragma: no cover - compiled
    """The run lines starting in ``rbuf[lo:hi]``, stored from row ``row`` on.

    Returns (status, next row, offset where the next call starts, offset of a bad line, slow
    rows). Per run line: topic code, docno offset/length/hash, score and the label of its
    judgment (``unjudged`` when the topic has no judgment of that docno). Rows whose score
    needs numpy are listed in ``slow`` as (row, field start, field end); when ``slow`` is full
    the call returns early (status OK): call again from the returned offset. ``GROW_TOPICS``:
    the topic table is half full; grow it and call again from the returned offset.
    """
    n = rbuf.shape[0]
    out = np.zeros(6, dtype=np.int64)
    cap = slots.shape[0] // 2
    n_slow = 0
    code = -1
    last0, last1 = np.int64(0), np.int64(-1)  # the previous line's topic (none yet)
    i = lo
    while i < hi:
        if n_slow == slow.shape[0]:
            return OK, row, i, -1, n_slow
        if n_topics[0] >= cap:
            return GROW_TOPICS, row, i, -1, n_slow
        start = i
        kind, i = next_line(rbuf, i, n, 0, 2, 4, 6, out)
        if kind == 1:
            continue
        if kind == 2:
            return SHORT_LINE, row, i, start, n_slow
        if not _equal(rbuf, last0, last1, rbuf, out[0], out[1]):  # runs list a topic's lines together
            code = _intern(rbuf, 1, out[0], out[1], qbuf, rbuf, slots, t_hash, t_src, t_start,
                           t_len, n_topics)  # fmt: skip
            last0, last1 = out[0], out[1]
        dh = _hash(rbuf, out[2], out[3])
        _, e = _find_judgment(rbuf, out[2], out[3], code, dh, qbuf, q_slots, q_topic, q_d0, q_dlen, q_hash)
        label = q_label[e] if e >= 0 else unjudged
        v, ok = _parse_score(rbuf, out[4], out[5])
        if not ok:
            slow[n_slow, 0], slow[n_slow, 1], slow[n_slow, 2] = row, out[4], out[5]
            n_slow += 1
            v = np.nan
        r_topic[row], r_d0[row], r_dlen[row], r_hash[row] = code, out[2], out[3] - out[2], dh
        r_score[row], r_label[row] = v, label
        row += 1
    return OK, row, i, -1, n_slow


@numba.njit(cache=True, inline="always")
def _pow2(n: Any) -> Any:  # pragma: no cover - compiled
    """The smallest power of two >= max(n, 1)."""
    size = 1
    while size < n:
        size *= 2
    return size


@numba.njit(cache=True)
def _table_size(offsets: Any) -> Any:  # pragma: no cover - compiled
    """Slots of a scratch hash table that holds any one group of ``offsets`` at load <= 1/2."""
    widest = 1
    for g in range(offsets.shape[0] - 1):
        widest = max(widest, offsets[g + 1] - offsets[g])
    return _pow2(2 * widest)


@numba.njit(cache=True)
def group_positions(keys: Any, offsets: Any, dest: Any) -> None:  # pragma: no cover - compiled
    """Stable counting sort: ``dest[i]``, where row ``i`` goes when rows are grouped by ``keys``.

    ``offsets[k]`` is the first position of group ``k``.
    """
    nxt = offsets[:-1].copy()
    for i in range(keys.shape[0]):
        k = keys[i]
        dest[i] = nxt[k]
        nxt[k] += 1


@numba.njit(cache=True)
def first_repeat(
    offsets: Any, r_hash: Any, r_d0: Any, r_dlen: Any, rbuf: Any
) -> tuple[int, int]:  # pragma: no cover - compiled
    """The earliest (by file offset) row whose docno repeats an earlier row of its group.

    Returns (row, earlier row) or (-1, -1). Groups are ``offsets[g]:offsets[g+1]``, rows within
    a group in file order.
    """
    table = np.empty(_table_size(offsets), dtype=np.int64)
    best, best_prev = -1, -1
    for g in range(offsets.shape[0] - 1):
        a, b = offsets[g], offsets[g + 1]
        mask = _pow2(2 * (b - a)) - 1
        table[: mask + 1] = -1
        for r in range(a, b):
            s = np.int64(_mix(r_hash[r]) & np.uint64(mask))
            while True:
                e = table[s]
                if e < 0:
                    table[s] = r
                    break
                if r_hash[e] == r_hash[r] and _equal(
                    rbuf, r_d0[e], r_d0[e] + r_dlen[e], rbuf, r_d0[r], r_d0[r] + r_dlen[r]
                ):
                    if best < 0 or r_d0[r] < r_d0[best]:
                        best, best_prev = r, e
                    break
                s = (s + 1) & mask
    return best, best_prev


@numba.njit(cache=True)
def tied_rows(offsets: Any, scores: Any, bits: Any) -> Any:  # pragma: no cover - compiled
    """True for every row whose score equals another score of its group (0.0 == -0.0).

    ``bits`` is ``scores.view(np.uint64)``.
    """
    table = np.empty(_table_size(offsets), dtype=np.int64)
    tied = np.zeros(scores.shape[0], dtype=np.bool_)
    for g in range(offsets.shape[0] - 1):
        a, b = offsets[g], offsets[g + 1]
        mask = _pow2(2 * (b - a)) - 1
        table[: mask + 1] = -1
        for r in range(a, b):
            v = scores[r]
            h = _mix(bits[r] if v != 0.0 else np.uint64(0))
            s = np.int64(h & np.uint64(mask))
            while True:
                e = table[s]
                if e < 0:
                    table[s] = r
                    break
                if scores[e] == v:
                    tied[e] = True
                    tied[r] = True
                    break
                s = (s + 1) & mask
    return tied

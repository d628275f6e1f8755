"""Hashes of arrays: the parse cache's checksum, and hashes kept for arrays that cannot change.

:func:`array_digest` is sha256 over the sha256 digests of an array's :data:`CHUNK_BYTES`
chunks (C order, bytes as stored; dtype and shape are not part of it), the chunks hashed in
parallel threads (hashlib releases the GIL). The parse cache stores it per array and checks it
on every read (:mod:`ltr.data.cache`).

Arrays that cannot change (:func:`is_frozen`: read-only, and so is everything their memory
comes from) keep what was computed from their bytes: :func:`remembered` returns a value of a
kind (the fingerprint's content hash) again for the same array objects without reading them;
entries are dropped when an array is freed. The parse cache hands out frozen arrays, so the
jobs of a sweep, which share them, hash them once.
"""

from __future__ import annotations

import functools
import hashlib
import os
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

MB = 1024 * 1024
#: Arrays are hashed in chunks of this size (part of the checksum's definition).
CHUNK_BYTES = 8 * MB

_Array = np.ndarray[Any, Any]
#: (kind, ids of the arrays) -> (weak references to them, the value); leaves with any array.
_KNOWN: dict[tuple[str, tuple[int, ...]], tuple[tuple[weakref.ReferenceType[_Array], ...], str]] = {}


def chunk_digest(chunk: _Array) -> bytes:
    """sha256 of one chunk's bytes (a contiguous uint8 view)."""
    return hashlib.sha256(chunk.data).digest()


def combine(digests: Sequence[bytes]) -> str:
    """The array digest of the chunk digests, in chunk order (hex)."""
    return hashlib.sha256(b"".join(digests)).hexdigest()


def hash_workers(n_chunks: int) -> int:
    """Threads for hashing ``n_chunks`` chunks: at most the cores, at most 4."""
    return max(1, min(n_chunks, os.cpu_count() or 1, 4))


def array_digest(arr: _Array) -> str:
    """The checksum of an array's bytes (see the module docstring), computed now."""
    flat = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
    chunks = [flat[i : i + CHUNK_BYTES] for i in range(0, flat.shape[0], CHUNK_BYTES)] or [flat]
    workers = hash_workers(len(chunks))
    if workers == 1:
        return combine([chunk_digest(c) for c in chunks])
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return combine(list(pool.map(chunk_digest, chunks)))


def is_frozen(arr: _Array) -> bool:
    """True when neither ``arr`` nor any array its memory belongs to is writeable, and the
    memory is owned by one of them (not a foreign buffer another object may write to)."""
    a: Any = arr
    while isinstance(a, np.ndarray):
        if a.flags.writeable:
            return False
        if a.base is None:
            return bool(a.flags.owndata)
        a = a.base
    return isinstance(a, bytes)  # immutable Python bytes


def freeze(arr: _Array) -> _Array:
    """Make ``arr`` and every array its memory belongs to read-only (in place); return ``arr``."""
    a: Any = arr
    while isinstance(a, np.ndarray):
        a.flags.writeable = False
        a = a.base
    return arr


def remembered(arrays: Sequence[_Array], kind: str, compute: Callable[[], str]) -> str:
    """``compute()``, a value of ``kind`` derived from the bytes of these very ``arrays``: kept
    while they all are frozen (:func:`is_frozen`) and alive, and returned again for them
    without calling ``compute``. Arrays that may change are computed every time."""
    key = (kind, tuple(id(a) for a in arrays))
    frozen = all(is_frozen(a) for a in arrays)
    entry = _KNOWN.get(key)
    if entry is not None and frozen and all(ref() is a for ref, a in zip(entry[0], arrays, strict=True)):
        return entry[1]
    value = compute()
    if frozen:
        refs = tuple(weakref.ref(a, functools.partial(_forget, key)) for a in arrays)
        _KNOWN[key] = (refs, value)
    return value


def _forget(key: tuple[str, tuple[int, ...]], _ref: weakref.ReferenceType[_Array]) -> None:
    """One of the arrays of ``key`` was freed: drop the entry."""
    _KNOWN.pop(key, None)

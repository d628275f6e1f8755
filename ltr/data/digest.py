"""Checksums of arrays, computed once per array: the parse cache's checksum is the fingerprint's.

:func:`array_digest` is sha256 over the sha256 digests of an array's :data:`CHUNK_BYTES`
chunks (C order, bytes as stored; dtype and shape are not part of it), the chunks hashed in
parallel threads (hashlib releases the GIL). The parse cache stores it per array and checks it
on every read (:mod:`ltr.data.cache`); the data fingerprint hashes it with each array's name,
dtype and shape (:mod:`ltr.data.fingerprint`).

An array that cannot change (:func:`is_frozen`: read-only, and so is everything its memory
comes from) keeps its digest: :func:`remember` records it (the cache does after writing or
verifying an entry), :func:`digest` returns it without reading the bytes again. Entries are
keyed by the array object and dropped when the array is freed.
"""

from __future__ import annotations

import functools
import hashlib
import os
import weakref
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

MB = 1024 * 1024
#: Arrays are hashed in chunks of this size (part of the checksum's definition).
CHUNK_BYTES = 8 * MB

_Array = np.ndarray[Any, Any]
#: id(array) -> (a weak reference to it, its digest); an entry leaves with its array.
_KNOWN: dict[int, tuple[weakref.ReferenceType[_Array], str]] = {}


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


def remember(arr: _Array, digest_hex: str) -> None:
    """Keep ``digest_hex`` as the digest of ``arr`` if ``arr`` is frozen (else do nothing)."""
    if not is_frozen(arr):
        return
    key = id(arr)
    _KNOWN[key] = (weakref.ref(arr, functools.partial(_forget, key)), digest_hex)


def _forget(key: int, ref: weakref.ReferenceType[_Array]) -> None:
    """Drop the entry of a freed array (unless the id was taken by a newer array's entry)."""
    entry = _KNOWN.get(key)
    if entry is not None and entry[0] is ref:
        del _KNOWN[key]


def known_digest(arr: _Array) -> str | None:
    """The remembered digest of ``arr``, or None."""
    entry = _KNOWN.get(id(arr))
    if entry is None or entry[0]() is not arr or not is_frozen(arr):
        return None
    return entry[1]


def digest(arr: _Array) -> str:
    """:func:`array_digest` of ``arr``: the remembered one, else computed (and remembered when
    ``arr`` is frozen)."""
    known = known_digest(arr)
    if known is not None:
        return known
    value = array_digest(arr)
    remember(arr, value)
    return value

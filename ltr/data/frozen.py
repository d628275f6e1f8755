"""Arrays that cannot change, and the hashes kept for them.

Arrays that cannot change (:func:`is_frozen`: read-only, and so is everything their memory
comes from) keep what was computed from their bytes: :func:`remembered` returns a value of a
kind (the fingerprint's content hash) again for the same array objects without reading them;
entries are dropped when an array is freed. The parse cache hands out frozen arrays, so the
jobs of a sweep, which share them, hash them once.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

_Array = np.ndarray[Any, Any]
#: (kind, ids of the arrays) -> (weak references to them, the value); leaves with any array.
_KNOWN: dict[tuple[str, tuple[int, ...]], tuple[tuple[weakref.ReferenceType[_Array], ...], str]] = {}


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

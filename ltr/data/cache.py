"""A binary cache of parsed data files, so the second read of a large text file takes a blink.

Contract:

- An entry is keyed by the file's resolved path, size, mtime and ctime (nanoseconds), inode,
  the reader options and :data:`CACHE_VERSION`. Any change to the file (rewrite, append,
  ``touch``, replacement by a copy) changes the key, so a changed file is never served stale;
  the stat is taken again after loading and the entry is ignored if the file changed meanwhile.
- An entry is a directory named by its key holding ``.npy`` files (read without pickle;
  ``positions.npy`` only when the data has positions; ``doc_id_utf8.npy`` and
  ``doc_id_offsets.npy``, the doc ids as UTF-8 bytes and offsets, only when it has doc ids;
  ``qid_name_utf8.npy`` and ``qid_name_offsets.npy`` likewise, its string qids as written)
  plus ``meta.json``. ``meta.json`` records
  the dtype, shape and a checksum of every array (sha256 over 8 MiB chunks, see
  :func:`array_digest`) and a checksum of itself (:func:`meta_digest`).
- Every read verifies the entry: exactly the expected files, ``meta.json`` a JSON object of the
  expected form, every ``.npy`` header as recorded, every checksum. The arrays then go through
  :func:`ltr.data.validate.check_ranking_data` with the reader options of the key, so a cache
  never lets through what a parse would refuse. An entry failing any of this is logged as one
  warning line and removed; the caller parses the file again and stores a fresh entry.
- An entry is written into a temporary directory (``.tmp.*``) in the cache directory and renamed
  into place, so a killed process never leaves half an entry under a key; leftovers are swept
  after an hour. Two processes writing the same entry at once are safe: the first rename wins,
  the other process drops its copy (both hold identical arrays).
- Size limit: after every write the least recently used entries (the mtime of ``meta.json``,
  touched on every hit) are removed until the cache holds at most ``max_mb`` MiB
  (``data.cache_max_mb``, default 2048; ``$LTR_CACHE_MAX_MB`` overrides it, ``none``: no limit).
  An entry larger than the limit on its own is not stored.
- The default directory is ``$LTR_CACHE_DIR``, else ``~/.cache/ltr/data``. ``ltr cache`` shows
  and clears it (:mod:`ltr.cli.cache`).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import math
import os
import re
import shutil
import tempfile
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ltr.data.formats import doc_ids as doc_id_arrays
from ltr.data.frozen import freeze
from ltr.data.ranking_data import RankingData
from ltr.data.validate import LIGHTGBM_MAX_DEFAULT_LABEL, LIGHTGBM_MAX_LIST_LEN, check_ranking_data
from ltr.errors import DataError, LtrUserError

logger = logging.getLogger(__name__)

#: Bump when the parse or the entry layout changes: old entries are then ignored (and age out).
CACHE_VERSION = 5  # 4: doc ids (doc_id_utf8.npy + doc_id_offsets.npy); 5: string qids as written (qid_name_*)
#: Default size limit in MiB (``data.cache_max_mb``).
DEFAULT_MAX_MB = 2048
MB = 1024 * 1024
#: Arrays are hashed in chunks of this size (part of the checksum's definition).
CHUNK_BYTES = 8 * MB
#: Temporary (``.tmp.*``) and removed (``.trash.*``) directories older than this are swept.
LEFTOVER_AGE_S = 3600.0

_REQUIRED = ("features", "labels", "qids", "offsets")
_POSITIONS = "positions"  # optional: stored only when the data has positions
# optional, both or neither: the doc ids as UTF-8 bytes back to back and their offsets
_DOC_UTF8, _DOC_OFFSETS = "doc_id_utf8", "doc_id_offsets"
# optional, both or neither: string qids as written (RankingData.qid_names), encoded as doc ids are
_QID_UTF8, _QID_OFFSETS = "qid_name_utf8", "qid_name_offsets"
_OPTIONAL = (_POSITIONS, _DOC_UTF8, _DOC_OFFSETS, _QID_UTF8, _QID_OFFSETS)
_DTYPES = {
    "features": np.dtype(np.float32).str,
    "labels": np.dtype(np.int32).str,
    "qids": np.dtype(np.int64).str,
    "offsets": np.dtype(np.int64).str,
    _POSITIONS: np.dtype(np.int32).str,
    _DOC_UTF8: np.dtype(np.uint8).str,
    _DOC_OFFSETS: np.dtype(np.int64).str,
    _QID_UTF8: np.dtype(np.uint8).str,
    _QID_OFFSETS: np.dtype(np.int64).str,
}
_META = "meta.json"
_KEY_RE = re.compile(r"^[0-9a-f]{32}$")
_TMP = ".tmp."
_TRASH = ".trash."
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


class _BadEntry(Exception):
    """An entry that fails verification; the message says why (one line)."""


def cache_limit_mb(configured: int | None = DEFAULT_MAX_MB) -> int | None:
    """The size limit in MiB: ``$LTR_CACHE_MAX_MB`` if set (``none``: no limit), else ``configured``.

    Raises
    ------
    DataError
        ``$LTR_CACHE_MAX_MB`` or ``configured`` is not a non-negative integer.
    """
    env = os.environ.get("LTR_CACHE_MAX_MB", "").strip()
    if env:
        if env.lower() in ("none", "null"):
            return None
        try:
            value = int(env)
        except ValueError:
            raise DataError(
                f"LTR_CACHE_MAX_MB={env!r} is not an integer; give the cache limit in MB, or none for no limit"
            ) from None
        if value < 0:
            raise DataError(f"LTR_CACHE_MAX_MB={value} is negative; give the cache limit in MB, or none")
        return value
    if configured is None:
        return None
    if isinstance(configured, bool) or not isinstance(configured, int) or configured < 0:
        raise DataError(f"data.cache_max_mb={configured!r} must be a non-negative integer (MB) or null")
    return configured


def file_state(paths: Sequence[Path]) -> list[list[Any]]:
    """The identity of each file as the cache sees it: path, size, mtime, ctime, inode."""
    state: list[list[Any]] = []
    for p in paths:
        st = os.stat(p)
        state.append([str(p.resolve()), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino])
    return state


def cache_key(paths: Sequence[Path], options: Mapping[str, Any]) -> str:
    """Hex key of the files (see :func:`file_state`) and the reader options."""
    blob = json.dumps(
        {"v": CACHE_VERSION, "files": file_state(paths), "options": dict(options)},
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


# -- checksums ----------------------------------------------------------------------------------


def _chunk_digest(chunk: np.ndarray[Any, Any]) -> bytes:
    return hashlib.sha256(chunk.data).digest()


def _combine(digests: Sequence[bytes]) -> str:
    return hashlib.sha256(b"".join(digests)).hexdigest()


def _workers(n_chunks: int) -> int:
    return max(1, min(n_chunks, os.cpu_count() or 1, 4))


def array_digest(arr: np.ndarray[Any, Any]) -> str:
    """The checksum of an array's bytes (C order): sha256 of the sha256 digests of its
    :data:`CHUNK_BYTES` chunks, the chunks hashed in parallel threads (hashlib releases the GIL).
    Dtype and shape are not part of it: ``meta.json`` records them and has its own checksum."""
    flat = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
    chunks = [flat[i : i + CHUNK_BYTES] for i in range(0, flat.shape[0], CHUNK_BYTES)] or [flat]
    workers = _workers(len(chunks))
    if workers == 1:
        return _combine([_chunk_digest(c) for c in chunks])
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return _combine(list(pool.map(_chunk_digest, chunks)))


def meta_digest(meta: Mapping[str, Any]) -> str:
    """The checksum of ``meta.json`` without its own ``digest`` field (canonical JSON)."""
    body = {k: v for k, v in meta.items() if k != "digest"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _read_verified(f: io.BufferedReader, flat: np.ndarray[Any, Any], *, verify: bool) -> str | None:
    """Fill ``flat`` (uint8) from ``f``; with ``verify``, return its :func:`array_digest`, each
    chunk hashed in a thread while the next one is read."""
    n = flat.shape[0]
    if not verify:
        _fill(f, flat)
        return None
    n_chunks = max(1, math.ceil(n / CHUNK_BYTES))
    if n_chunks == 1:
        _fill(f, flat)
        return _combine([_chunk_digest(flat)])
    with ThreadPoolExecutor(max_workers=_workers(n_chunks)) as pool:
        futures: list[Future[bytes]] = []
        for i in range(0, n, CHUNK_BYTES):
            chunk = flat[i : i + CHUNK_BYTES]
            _fill(f, chunk)
            futures.append(pool.submit(_chunk_digest, chunk))
        return _combine([fut.result() for fut in futures])


def _fill(f: io.BufferedReader, buf: np.ndarray[Any, Any]) -> None:
    view = buf.data
    got = 0
    while got < len(view):
        n = f.readinto(view[got:])
        if not n:
            raise _BadEntry(f"{Path(f.name).name} is truncated ({got} of {len(view)} data bytes)")
        got += n


# -- reading ------------------------------------------------------------------------------------


def load_cached(
    cache_dir: Path, paths: Sequence[Path], options: Mapping[str, Any], *, verify: bool = True
) -> tuple[RankingData, list[str]] | None:
    """The cached `RankingData` of ``paths`` read with ``options`` and the warnings its parse
    gave, or None on a miss.

    A bad entry (see the module docstring) is logged as one warning, removed, and is a miss.
    ``verify=False`` skips the checksums (only for measuring their cost).
    """
    key = cache_key(paths, options)
    entry = cache_dir / key
    try:
        st = os.lstat(entry)
    except OSError:
        return None
    try:
        data, notes = _read_entry(entry, key, verify=verify)
        _validate(data, options, entry)
    except _BadEntry as exc:
        try:
            same = os.lstat(entry).st_ino == st.st_ino
        except OSError:
            same = False
        if not same:  # removed (eviction, clear) or replaced by another process meanwhile
            logger.debug("cache entry %s was removed or replaced while being read", entry)
            return None
        reason = " ".join(str(exc).split())
        removed = discard_entry(entry, st.st_ino)
        logger.warning(
            "%s bad cache entry %s (%s); parsing %s again", "removed" if removed else "could not remove",
            entry, reason, ", ".join(str(p) for p in paths),
        )
        return None
    if cache_key(paths, options) != key:  # the file changed while we read the entry
        return None
    with contextlib.suppress(OSError):
        os.utime(entry / _META)  # last use, for the LRU eviction
    logger.debug("cache hit for %s: %s", [str(p) for p in paths], entry)
    return data, notes


# -- the entries this process used last ----------------------------------------------------------

#: How many entries a process keeps in memory (a LETOR fold rotation reads five parts).
RECENT_ENTRIES = 8
#: key -> (data, notes) of the entries this process read or wrote last, most recent last.
_RECENT: OrderedDict[str, tuple[RankingData, list[str]]] = OrderedDict()


def recent_entry(cache_dir: Path, key: str) -> tuple[RankingData, list[str]] | None:
    """The data of entry ``key`` (:func:`cache_key` of the files' state before reading) if this
    process read or wrote it lately (the next job of a sweep, the next fold), else None: the same
    (read-only) arrays, no disk read. A changed file has another key, so it is a miss here too.
    A hit still marks the entry on disk as used (LRU)."""
    hit = _RECENT.get(key)
    if hit is None:
        return None
    _RECENT.move_to_end(key)
    with contextlib.suppress(OSError):
        os.utime(cache_dir / key / _META)  # last use, for the LRU eviction
    return hit


def keep_recent(key: str, data: RankingData, notes: Sequence[str]) -> None:
    """Remember ``data`` (its arrays read-only) as entry ``key``, the :func:`cache_key` taken
    before it was read, dropping the least recently used beyond :data:`RECENT_ENTRIES`."""
    _RECENT[key] = (data, list(notes))
    _RECENT.move_to_end(key)
    while len(_RECENT) > RECENT_ENTRIES:
        _RECENT.popitem(last=False)


def freeze_arrays(data: RankingData) -> RankingData:
    """Make the arrays of ``data`` read-only (in place; see :func:`ltr.data.frozen.freeze`):
    what the cache hands out is shared between jobs, and its fingerprint is kept."""
    for arr in (data.features, data.labels, data.qids, data.offsets, data.positions, data.doc_ids, data.qid_names):
        if arr is not None:
            freeze(arr)
    return data


def forget_recent() -> None:
    """Drop the in-memory entries (the disk cache is untouched)."""
    _RECENT.clear()


def _read_entry(entry: Path, key: str, *, verify: bool) -> tuple[RankingData, list[str]]:
    if not entry.is_dir():
        raise _BadEntry("not a directory")
    try:
        names = set(os.listdir(entry))
        raw = (entry / _META).read_bytes()
    except FileNotFoundError:
        raise _BadEntry(f"missing {_META}") from None
    except OSError as exc:
        raise _BadEntry(f"cannot read it: {exc}") from None
    meta = _parse_meta(raw, key)
    specs: dict[str, dict[str, Any]] = meta["arrays"]
    expected = {_META} | {f"{name}.npy" for name in specs}
    if names != expected:
        missing, extra = sorted(expected - names), sorted(names - expected)
        parts = ([f"missing {', '.join(missing)}"] if missing else []) + ([f"unexpected {', '.join(extra)}"] if extra else [])
        raise _BadEntry("; ".join(parts))
    arrays = {name: _read_array(entry / f"{name}.npy", spec, verify=verify) for name, spec in specs.items()}
    try:
        doc_ids = None
        if _DOC_UTF8 in arrays:
            doc_ids = freeze(doc_id_arrays.decode(arrays[_DOC_UTF8], arrays[_DOC_OFFSETS]))
        qid_names = None
        if _QID_UTF8 in arrays:
            qid_names = freeze(doc_id_arrays.decode(arrays[_QID_UTF8], arrays[_QID_OFFSETS]))
        data = RankingData(
            features=arrays["features"],
            labels=arrays["labels"],
            qids=arrays["qids"],
            offsets=arrays["offsets"],
            feature_names=tuple(meta["feature_names"]),
            name=meta["name"],
            positions=arrays.get(_POSITIONS),
            doc_ids=doc_ids,
            qid_names=qid_names,
        )
    except ValueError as exc:
        raise _BadEntry(str(exc)) from None
    return data, list(meta["notes"])


def _parse_meta(raw: bytes, key: str) -> dict[str, Any]:
    """``meta.json`` as a dict of the expected form, else `_BadEntry` saying what is wrong."""
    try:
        meta = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise _BadEntry(f"{_META} is not valid JSON: {exc}") from None
    if not isinstance(meta, dict):
        raise _BadEntry(f"{_META} holds a JSON {_json_type(meta)}, not an object")

    def want(field: str, ok: Callable[[Any], bool], what: str) -> Any:
        if field not in meta or not ok(meta[field]):
            raise _BadEntry(f"{_META} field {field!r} is missing or not {what}")
        return meta[field]

    want("version", lambda v: v == CACHE_VERSION, f"version {CACHE_VERSION}")
    want("key", lambda v: v == key, "the entry's key")
    want("name", lambda v: isinstance(v, str), "a string")
    want("feature_names", _is_str_list, "a list of strings")
    want("notes", _is_str_list, "a list of strings")
    want("digest", lambda v: isinstance(v, str), "a string")
    arrays = want("arrays", lambda v: isinstance(v, dict), "an object")
    names = set(arrays)
    if (
        not set(_REQUIRED) <= names <= {*_REQUIRED, *_OPTIONAL}
        or (_DOC_UTF8 in names) != (_DOC_OFFSETS in names)
        or (_QID_UTF8 in names) != (_QID_OFFSETS in names)
    ):
        raise _BadEntry(
            f"{_META} lists arrays {sorted(names)}, expected {list(_REQUIRED)} (+ {_POSITIONS}, "
            f"+ {_DOC_UTF8} with {_DOC_OFFSETS}, + {_QID_UTF8} with {_QID_OFFSETS})"
        )
    for name, spec in arrays.items():
        ok = (
            isinstance(spec, dict)
            and spec.get("dtype") == _DTYPES[name]
            and isinstance(spec.get("shape"), list)
            and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in spec["shape"])
            and isinstance(spec.get("sha256"), str)
            and _HEX64.match(spec["sha256"]) is not None
        )
        if not ok:
            raise _BadEntry(f"{_META} describes {name} wrongly: {json.dumps(spec)[:200]}")
    if meta_digest(meta) != meta["digest"]:
        raise _BadEntry(f"checksum mismatch of {_META}")
    return meta


def _is_str_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _json_type(v: Any) -> str:
    return {list: "array", str: "string", int: "number", float: "number", bool: "boolean"}.get(type(v), "null")


def _read_array(path: Path, spec: Mapping[str, Any], *, verify: bool) -> np.ndarray[Any, Any]:
    """Read one ``.npy`` file whose header must match ``spec``; with ``verify``, check its checksum."""
    dtype, shape = np.dtype(spec["dtype"]), tuple(spec["shape"])
    try:
        with open(path, "rb") as f:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                hshape, fortran, hdtype = np.lib.format.read_array_header_1_0(f)
            elif version == (2, 0):
                hshape, fortran, hdtype = np.lib.format.read_array_header_2_0(f)
            else:
                raise _BadEntry(f"{path.name} has .npy format version {version}")
            if hshape != shape or hdtype != dtype or fortran:
                raise _BadEntry(
                    f"{path.name} holds {hdtype} {hshape}{' (Fortran order)' if fortran else ''}, "
                    f"{_META} says {dtype} {shape}"
                )
            nbytes = math.prod(shape) * dtype.itemsize
            size = os.fstat(f.fileno()).st_size
            if size != f.tell() + nbytes:
                raise _BadEntry(f"{path.name} has {size - f.tell()} data bytes, expected {nbytes}")
            arr = np.empty(shape, dtype=dtype)
            digest = _read_verified(f, arr.reshape(-1).view(np.uint8), verify=verify)
    except _BadEntry:
        raise
    except (OSError, ValueError, EOFError) as exc:
        raise _BadEntry(f"cannot read {path.name}: {exc}") from None
    if verify and digest != spec["sha256"]:
        raise _BadEntry(f"checksum mismatch of {path.name}")
    return freeze(arr)  # shared between the jobs of a process (see recent_entry)


def _validate(data: RankingData, options: Mapping[str, Any], entry: Path) -> None:
    """What a parse with ``options`` refuses, the cache refuses too."""
    columns = options.get("feature_columns")
    try:
        check_ranking_data(
            data,
            source=f"cache entry {entry.name}",
            integer_labels=bool(options.get("integer_labels", True)),
            max_label=options.get("max_label", LIGHTGBM_MAX_DEFAULT_LABEL),
            max_list_len=options.get("max_list_len", LIGHTGBM_MAX_LIST_LEN),
            n_features=options.get("n_features"),
            feature_names=None if columns is None else tuple(str(c) for c in columns),
        )
    except LtrUserError as exc:
        raise _BadEntry(str(exc)) from None


# -- writing ------------------------------------------------------------------------------------


def store_cached(
    cache_dir: Path,
    paths: Sequence[Path],
    options: Mapping[str, Any],
    data: RankingData,
    *,
    notes: Sequence[str] = (),
    max_mb: int | None = DEFAULT_MAX_MB,
) -> None:
    """Store ``data`` (and the warnings of its parse, ``notes``) under the key of ``paths`` and
    ``options``, then evict least recently used entries down to ``max_mb`` MiB (None: no
    limit; pass it through :func:`cache_limit_mb` first). Failures only log a warning."""
    key = cache_key(paths, options)
    arrays: dict[str, np.ndarray[Any, Any]] = {name: getattr(data, name) for name in _REQUIRED}
    if data.positions is not None:
        arrays[_POSITIONS] = data.positions
    if data.doc_ids is not None:
        arrays[_DOC_UTF8], arrays[_DOC_OFFSETS] = doc_id_arrays.encode(data.doc_ids)
    if data.qid_names is not None:
        arrays[_QID_UTF8], arrays[_QID_OFFSETS] = doc_id_arrays.encode(data.qid_names)
    size = sum(int(a.nbytes) for a in arrays.values())
    if max_mb is not None and size > max_mb * MB:
        logger.warning(
            "not caching %s: its arrays take %s, more than the cache limit of %d MB; raise "
            "data.cache_max_mb (or LTR_CACHE_MAX_MB) to cache it",
            ", ".join(str(p) for p in paths), format_size(size), max_mb,
        )
        return
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f"{_TMP}{key}.", dir=cache_dir))
        try:
            specs: dict[str, dict[str, Any]] = {}
            for name, arr in arrays.items():
                arr = np.ascontiguousarray(arr, dtype=np.dtype(_DTYPES[name]))
                np.save(tmp / f"{name}.npy", arr, allow_pickle=False)
                specs[name] = {"dtype": arr.dtype.str, "shape": list(arr.shape), "sha256": array_digest(arr)}
            meta: dict[str, Any] = json.loads(json.dumps({
                "version": CACHE_VERSION, "key": key, "files": file_state(paths), "options": dict(options),
                "name": data.name, "feature_names": list(data.feature_names), "notes": list(notes),
                "arrays": specs, "written": time.time(),
            }, default=str))
            meta["digest"] = meta_digest(meta)
            (tmp / _META).write_text(json.dumps(meta, indent=1))
            try:
                os.rename(tmp, cache_dir / key)
            except OSError:  # another process stored the same entry first: keep its copy
                shutil.rmtree(tmp, ignore_errors=True)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    except OSError as exc:
        logger.warning("could not write the data cache in %s: %s", cache_dir, exc)
        return
    enforce_limit(cache_dir, max_mb, keep=key)


#: The one thread that runs :func:`store_later`'s writes, in order (made on first use).
_store_thread: list[ThreadPoolExecutor] = []
_stores: list[Future[None]] = []


def store_later(
    cache_dir: Path,
    paths: Sequence[Path],
    options: Mapping[str, Any],
    data: RankingData,
    *,
    notes: Sequence[str] = (),
    max_mb: int | None = DEFAULT_MAX_MB,
) -> None:
    """:func:`store_cached` in a background thread, so that the caller goes on (reads the next
    file, bins, trains) while the entry is written. ``data``'s arrays must be read-only
    (:func:`freeze_arrays`). Writes run one at a time, in call order; :func:`wait_for_stores`
    waits for them. The entry appears as :func:`store_cached` makes it: renamed into place when
    complete, so a reader never sees part of it and a process killed meanwhile leaves only a
    temporary directory (swept later)."""
    write_later(store_cached, cache_dir, paths, options, data, notes=notes, max_mb=max_mb)


def write_later(write: Callable[..., None], *args: Any, **kwargs: Any) -> Future[None]:
    """Run ``write(*args, **kwargs)`` in the one background thread of the cache writes (after
    the writes queued before it); :func:`wait_for_stores` waits for it with the others. What it
    reads must not change until then."""
    if not _store_thread:
        _store_thread.append(ThreadPoolExecutor(max_workers=1, thread_name_prefix="ltr-cache-store"))
    future = _store_thread[0].submit(write, *args, **kwargs)
    _stores.append(future)
    return future


def wait_for_stores() -> None:
    """Wait until every write :func:`store_later` started has ended (a failure to write was
    logged as a warning; any other exception is raised here); the writing thread then ends too
    (the next :func:`store_later` starts another), so none outlives the command's work."""
    try:
        while _stores:
            _stores.pop(0).result()
    finally:
        if _store_thread:
            _store_thread.pop().shutdown(wait=True)


def discard_entry(path: Path, inode: int | None = None) -> bool:
    """Remove an entry (or leftover): rename it out of the way (atomic), then delete it. With
    ``inode``, only if ``path`` is still that directory (not a fresh entry written meanwhile)."""
    try:
        if inode is not None and os.lstat(path).st_ino != inode:
            return False
        trash = path.parent / f"{_TRASH}{path.name}.{uuid.uuid4().hex[:8]}"
        os.rename(path, trash)
    except OSError:
        return False
    if trash.is_dir() and not trash.is_symlink():
        shutil.rmtree(trash, ignore_errors=True)
    else:
        trash.unlink(missing_ok=True)
    return True


# -- size, eviction, clearing -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EntryInfo:
    """One entry (or leftover directory) of the cache: its path, size in bytes and last use."""

    path: Path
    size: int
    last_used: float


def format_size(n_bytes: int) -> str:
    """``n_bytes`` in MB (MiB), e.g. ``'12.3 MB'``."""
    return f"{n_bytes / MB:.1f} MB"


def _dir_size(path: Path) -> int:
    total = 0
    try:
        with os.scandir(path) as it:
            for e in it:
                with contextlib.suppress(OSError):
                    total += e.stat(follow_symlinks=False).st_size
    except OSError:
        pass
    return total


def list_entries(cache_dir: Path) -> tuple[list[EntryInfo], list[EntryInfo]]:
    """The entries of ``cache_dir`` (least recently used first) and its leftovers (temporary or
    removed directories of interrupted writes). Other files in the directory are not ours."""
    entries: list[EntryInfo] = []
    leftovers: list[EntryInfo] = []
    try:
        children = list(os.scandir(cache_dir))
    except OSError:
        return entries, leftovers
    for child in children:
        name = child.name
        is_entry = _KEY_RE.match(name) is not None
        if not (is_entry or name.startswith((_TMP, _TRASH))):
            continue
        path = Path(child.path)
        try:
            st = child.stat(follow_symlinks=False)
            last = st.st_mtime
            if is_entry:
                try:
                    last = os.stat(path / _META).st_mtime
                except OSError:
                    last = 0.0  # no meta.json: a broken entry goes first
        except OSError:
            continue
        info = EntryInfo(path, _dir_size(path) if child.is_dir(follow_symlinks=False) else st.st_size, last)
        (entries if is_entry else leftovers).append(info)
    entries.sort(key=lambda e: e.last_used)
    return entries, leftovers


def enforce_limit(cache_dir: Path, max_mb: int | None, *, keep: str | None = None) -> list[EntryInfo]:
    """Sweep leftovers older than :data:`LEFTOVER_AGE_S`, then remove the least recently used
    entries (never ``keep``) until the cache holds at most ``max_mb`` MiB; returns the removed
    entries."""
    entries, leftovers = list_entries(cache_dir)
    now = time.time()
    for left in leftovers:
        if now - left.last_used > LEFTOVER_AGE_S:
            _remove(left.path)
    if max_mb is None:
        return []
    total = sum(e.size for e in entries)
    removed: list[EntryInfo] = []
    for e in entries:
        if total <= max_mb * MB:
            break
        if e.path.name == keep:
            continue
        if discard_entry(e.path):
            removed.append(e)
        total -= e.size
    if removed:
        logger.info(
            "evicted %d least recently used cache entries (%s) to stay under %d MB",
            len(removed), format_size(sum(e.size for e in removed)), max_mb,
        )
    return removed


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def clear_cache(cache_dir: Path) -> tuple[int, int]:
    """Remove every entry and leftover of ``cache_dir``; returns (entries removed, bytes freed).
    Files that are not the cache's are left alone. An entry that cannot be removed (a folder
    that can only be read) is an :class:`LtrUserError` once the others are removed."""
    entries, leftovers = list_entries(cache_dir)
    n, freed = 0, 0
    kept: list[Path] = []
    for e in entries:
        if discard_entry(e.path):
            n += 1
            freed += e.size
        elif e.path.is_dir():
            kept.append(e.path)
    for left in leftovers:
        if left.path.exists():
            _remove(left.path)
            freed += left.size
    errors = [error for error in map(_removal_error, kept) if error]
    if errors:
        raise LtrUserError(f"cannot clear {cache_dir}: {len(errors)} of its {len(entries)} entries cannot be removed ({errors[0]})")
    return n, freed


def _removal_error(entry: Path) -> str:
    """Why ``entry`` cannot be removed (its rename's error), or "" when it was, this time."""
    trash = entry.parent / f"{_TRASH}{entry.name}.{uuid.uuid4().hex[:8]}"
    try:
        os.rename(entry, trash)
    except FileNotFoundError:
        return ""
    except OSError as exc:
        return exc.strerror or str(exc)
    shutil.rmtree(trash, ignore_errors=True)
    return ""

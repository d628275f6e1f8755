"""A binary cache of parsed data files, so the second read of a large text file takes a blink.

Contract:

- An entry is keyed by the file's resolved path, size, mtime and ctime (nanoseconds), inode,
  the reader options and :data:`CACHE_VERSION`. Any change to the file (rewrite, append,
  ``touch``, replacement by a copy) changes the key, so a changed file is never served stale;
  the stat is taken again after loading and the entry is dropped if the file changed meanwhile.
- An entry is a directory of ``.npy`` files (plain ``numpy.load``, no pickle; ``positions.npy``
  only when the data has positions) plus ``meta.json``,
  written to a temporary directory and renamed into place, so a crash never leaves half an entry.
- The default directory is ``$LTR_CACHE_DIR``, else ``~/.cache/ltr/data``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ltr.data.ranking_data import RankingData

logger = logging.getLogger(__name__)

#: Bump when the parse or the entry layout changes: old entries are then ignored.
CACHE_VERSION = 2
_ARRAYS = ("features", "labels", "qids", "offsets")
_POSITIONS = "positions"  # optional: stored only when the data has positions


def default_cache_dir() -> Path:
    """``$LTR_CACHE_DIR`` if set, else ``~/.cache/ltr/data``."""
    env = os.environ.get("LTR_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "ltr" / "data"


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


def load_cached(
    cache_dir: Path, paths: Sequence[Path], options: Mapping[str, Any]
) -> tuple[RankingData, list[str]] | None:
    """The cached `RankingData` of ``paths`` read with ``options`` and the warnings its parse
    gave, or None on a miss."""
    key = cache_key(paths, options)
    entry = cache_dir / key
    if not (entry / "meta.json").is_file():
        return None
    try:
        meta = json.loads((entry / "meta.json").read_text())
        arrays = {name: np.load(entry / f"{name}.npy", allow_pickle=False) for name in _ARRAYS}
        positions = (
            np.load(entry / f"{_POSITIONS}.npy", allow_pickle=False) if meta.get("has_positions") else None
        )
        data = RankingData(
            features=arrays["features"],
            labels=arrays["labels"],
            qids=arrays["qids"],
            offsets=arrays["offsets"],
            feature_names=tuple(meta["feature_names"]),
            name=str(meta["name"]),
            positions=positions,
        )
    except (OSError, ValueError, KeyError) as exc:
        logger.warning("ignoring unreadable cache entry %s: %s", entry, exc)
        return None
    if cache_key(paths, options) != key:  # the file changed while we read the entry
        return None
    logger.debug("cache hit for %s: %s", [str(p) for p in paths], entry)
    return data, [str(n) for n in meta.get("notes", [])]


def store_cached(
    cache_dir: Path,
    paths: Sequence[Path],
    options: Mapping[str, Any],
    data: RankingData,
    *,
    notes: Sequence[str] = (),
) -> None:
    """Store ``data`` (and the warnings of its parse, ``notes``) under the key of ``paths`` and
    ``options``; failures only log a warning."""
    key = cache_key(paths, options)
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=cache_dir))
        try:
            for name in _ARRAYS:
                np.save(tmp / f"{name}.npy", getattr(data, name), allow_pickle=False)
            if data.positions is not None:
                np.save(tmp / f"{_POSITIONS}.npy", data.positions, allow_pickle=False)
            meta = {"files": file_state(paths), "options": dict(options), "name": data.name,
                    "feature_names": list(data.feature_names), "version": CACHE_VERSION,
                    "notes": list(notes), "has_positions": data.positions is not None}
            (tmp / "meta.json").write_text(json.dumps(meta, default=str))
            try:
                tmp.rename(cache_dir / key)
            except OSError:  # another process stored the same entry first
                shutil.rmtree(tmp, ignore_errors=True)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    except OSError as exc:
        logger.warning("could not write the data cache in %s: %s", cache_dir, exc)

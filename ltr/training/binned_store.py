"""LightGBM's binned data sets on disk, so a later process (a joblib worker, the next ``ltr train``)
skips binning.

Beside the parse cache (:mod:`ltr.data.cache`), in its ``binned/`` folder, one entry per binning
key (:func:`ltr.training.binned.binning_key`: the data's content fingerprint and every parameter
that shapes the binned data) and LightGBM version:

- an entry is a directory named by the key's hash holding ``train.bin``, ``valid.bin`` and
  ``test.bin`` (``lgb.Dataset.save_binary``; valid and test binned with train's bins) and
  ``meta.json`` (the key, LightGBM's version, each file's size and sha256, and a checksum of
  itself). Any change of the data (a file rewritten: a new fingerprint) or of a binning
  parameter is a new key, never a stale entry;
- it is written into a temporary directory and renamed into place: a killed process leaves no
  half entry, and of two processes building the same entry the first rename wins and the other
  drops its identical copy;
- a read verifies sizes and checksums and has LightGBM load the files at once; an entry that
  fails (corrupt, truncated, removed meanwhile) is logged as one warning, removed, and the data
  is binned again;
- after each write the least recently used entries (``meta.json``'s mtime, touched on every
  hit) are evicted down to ``max_mb`` MiB (:func:`ltr.data.cache.enforce_limit`); an entry
  larger than the limit is not stored. ``ltr cache`` lists and clears them with the parse cache.

A data set loaded from its binary file trains the model a fresh build would, bit for bit
(``tests/test_binned_cache.py``). Positions (``model.position_bias``) are not stored; those runs
bin in memory only.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lightgbm as lgb

from ltr.data.cache import MB, discard_entry, enforce_limit, format_size, meta_digest
from ltr.training import lightgbm_log  # LightGBM's lines to the log, not stdout

log = logging.getLogger(__name__)

#: Bump when the entry layout changes: old entries are then ignored (and age out).
STORE_VERSION = 2  # 2: entries built with the training parameters (not LightGBM's defaults)
#: The files of an entry, in the order the data sets are returned (train, valid, test).
FILES = ("train.bin", "valid.bin", "test.bin")
_META = "meta.json"
_TMP = ".tmp."


@dataclass(frozen=True, slots=True)
class BinnedStore:
    """Where binned data sets are kept (``directory``) and its size limit in MiB (None: none)."""

    directory: Path
    max_mb: int | None = 4096

    def entry_name(self, key: tuple[Any, ...]) -> str:
        """The entry directory's name: 32 hex digits of the key, the layout and LightGBM's version."""
        blob = json.dumps([STORE_VERSION, lgb.__version__, repr(key)])
        return hashlib.sha256(blob.encode()).hexdigest()[:32]

    def load(self, key: tuple[Any, ...], params: dict[str, Any]) -> tuple[lgb.Dataset, tuple[lgb.Dataset, ...]] | None:
        """The data sets stored under ``key``, constructed by LightGBM from their files, or None."""
        entry = self.directory / self.entry_name(key)
        try:
            st = os.lstat(entry)
        except OSError:
            return None
        t0 = time.perf_counter()
        try:
            _verify(entry, self.entry_name(key))
            train = lgb.Dataset(str(entry / FILES[0]), params=params, free_raw_data=False).construct()
            evals = tuple(
                lgb.Dataset(str(entry / name), reference=train, params=params, free_raw_data=False).construct()
                for name in FILES[1:]
            )
        except (_BadEntry, lgb.basic.LightGBMError, OSError) as exc:
            same = False
            with contextlib.suppress(OSError):
                same = os.lstat(entry).st_ino == st.st_ino
            if same:
                discard_entry(entry, st.st_ino)
                log.warning("removed bad binned-data entry %s (%s); binning the data again", entry, " ".join(str(exc).split()))
            return None
        with contextlib.suppress(OSError):
            os.utime(entry / _META)  # last use, for the LRU eviction
        log.info("binned data: loaded from %s in %.2f s (same data and binning parameters)", entry, time.perf_counter() - t0)
        return train, evals

    def save(self, key: tuple[Any, ...], train: lgb.Dataset, evals: tuple[lgb.Dataset, ...]) -> None:
        """Store constructed data sets under ``key`` (failures only log a warning), then evict.
        Called in a background thread: LightGBM's lines go to the log from there too."""
        lightgbm_log.in_this_thread()
        name = self.entry_name(key)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f"{_TMP}{name}.", dir=self.directory))
            try:
                for dataset, file in zip((train, *evals), FILES, strict=True):
                    dataset.save_binary(str(tmp / file))
                sizes = {file: (tmp / file).stat().st_size for file in FILES}
                files = {file: {"size": sizes[file], "sha256": _file_digest(tmp / file)} for file in FILES}
                size = sum(sizes.values())
                if self.max_mb is not None and size > self.max_mb * MB:
                    log.warning(
                        "not keeping the binned data (%s, more than the limit of %d MB; raise "
                        "data.binned_cache_max_mb to keep it)", format_size(size), self.max_mb,
                    )  # fmt: skip
                    shutil.rmtree(tmp, ignore_errors=True)
                    return
                meta: dict[str, Any] = {
                    "version": STORE_VERSION, "key": name, "binning_key": repr(key),
                    "lightgbm": lgb.__version__, "files": files, "written": time.time(),
                }  # fmt: skip
                meta["digest"] = meta_digest(meta)
                (tmp / _META).write_text(json.dumps(meta, indent=1))
                try:
                    os.rename(tmp, self.directory / name)
                except OSError:  # another process stored the same entry first: keep its copy
                    shutil.rmtree(tmp, ignore_errors=True)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
        except (OSError, lgb.basic.LightGBMError) as exc:
            log.warning("could not keep the binned data in %s: %s", self.directory, exc)
            return
        enforce_limit(self.directory, self.max_mb, keep=name)


class _BadEntry(Exception):
    """An entry that fails verification; the message says why (one line)."""


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(8 * MB), b""):
            h.update(chunk)
    return h.hexdigest()


def _verify(entry: Path, name: str) -> None:
    try:
        meta = json.loads((entry / _META).read_bytes())
    except (OSError, ValueError) as exc:
        raise _BadEntry(f"cannot read {_META}: {exc}") from None
    if not isinstance(meta, dict) or meta.get("digest") != meta_digest(meta):
        raise _BadEntry(f"checksum mismatch of {_META}")
    if meta.get("version") != STORE_VERSION or meta.get("key") != name or meta.get("lightgbm") != lgb.__version__:
        raise _BadEntry(f"{_META} is of another key, layout or LightGBM version")
    files = meta.get("files")
    if not isinstance(files, dict) or sorted(files) != sorted(FILES):
        raise _BadEntry(f"{_META} lists files {files!r}")
    for file, spec in files.items():
        path = entry / file
        try:
            size = path.stat().st_size
        except OSError:
            raise _BadEntry(f"missing {file}") from None
        if size != spec.get("size"):
            raise _BadEntry(f"{file} has {size} bytes, {spec.get('size')} expected")
        if _file_digest(path) != spec.get("sha256"):
            raise _BadEntry(f"checksum mismatch of {file}")

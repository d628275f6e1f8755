"""The paths of a tracking store that no command may write as its output.

A command's output (``ltr predict --out``, ``ltr evaluate --per-query``, a ``--figure``, ...)
must never land on the store it, or ``ltr train``, keeps runs in: :func:`store_paths` names

- ``files``: a sqlite store's database file, its ``-journal``, ``-wal`` and ``-shm`` files and
  the store lock (``<db>.lock``, :func:`ltr.tracking.sqlite.lock.lock_path`);
- ``roots``: the folders that hold runs' artifacts: ``mlartifacts`` beside the database (where
  ``ltr`` puts them, :func:`ltr.tracking.uri.artifact_root_for`), every local artifact location
  the store's experiments record (read from the database with the standard library's
  ``sqlite3``, read-only: no MLflow), and ``mlartifacts`` and ``mlruns`` of the working
  directory (where ``mlflow server`` and MLflow's file store keep them by default).

Reading never creates or changes a file: a store that does not exist yet has its paths all
the same (a command must not write where ``ltr train`` will create the store).
"""

from __future__ import annotations

import contextlib
import sqlite3
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from ltr.tracking.sqlite.lock import lock_path, sqlite_db_path
from ltr.tracking.uri import ARTIFACTS_DIR, find_tracking_uri

#: The files sqlite keeps beside a database while it writes (rollback journal, WAL, shared memory).
SQLITE_SIDE_SUFFIXES = ("-journal", "-wal", "-shm")
#: MLflow's default artifact folder of a file store (``./mlruns``).
MLRUNS_DIR = "mlruns"


@dataclass(frozen=True)
class StorePaths:
    """``files``: the store's own files (absolute); ``roots``: its artifact folders (absolute)."""

    files: tuple[Path, ...]
    roots: tuple[Path, ...]


def _local_path(location: str) -> Path | None:
    """The local folder of a ``file://`` URI or an absolute path; None for any other location."""
    if location.startswith("file://"):
        parsed = urllib.parse.urlparse(location)
        if parsed.netloc not in ("", "localhost"):
            return None
        return Path(urllib.parse.unquote(parsed.path))
    return Path(location) if location.startswith("/") else None


def _recorded_roots(db: Path) -> list[Path]:
    """The local artifact locations the experiments of the sqlite store ``db`` record; [] when
    it cannot be read (missing, not a database, locked for long)."""
    if not db.is_file():
        return []
    try:
        with contextlib.closing(sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True, timeout=5)) as conn:
            rows = conn.execute("SELECT artifact_location FROM experiments").fetchall()
    except sqlite3.Error:
        return []
    found = (_local_path(str(loc or "")) for (loc,) in rows)
    return [p for p in found if p is not None]


def _absolute(path: Path) -> Path:
    return Path(path).expanduser().resolve()


def store_paths(uri: str | None = None, *, cwd: Path | None = None) -> StorePaths:
    """The paths of the store ``uri`` (None: the one a command finds, :func:`find_tracking_uri`,
    and the one ``ltr train`` would write in ``cwd``) and of MLflow's default artifact folders
    in ``cwd`` (default: the working directory); see the module docstring."""
    here = (cwd or Path.cwd()).resolve()
    uris = {find_tracking_uri(uri, start=here)}
    if not uri:
        uris.add(find_tracking_uri(None, start=here, writing=True))
    files: list[Path] = []
    roots: list[Path] = [here / ARTIFACTS_DIR, here / MLRUNS_DIR]
    for one in sorted(uris):
        db = sqlite_db_path(one)
        if db is None:
            continue
        db = _absolute(db)
        files += [db, *(db.with_name(db.name + s) for s in SQLITE_SIDE_SUFFIXES), lock_path(db)]
        roots += [db.parent / ARTIFACTS_DIR, *_recorded_roots(db)]
    unique_roots = tuple(dict.fromkeys(_absolute(r) for r in roots))
    return StorePaths(tuple(dict.fromkeys(files)), unique_roots)

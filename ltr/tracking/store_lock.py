"""Serialise use of a sqlite MLflow store across processes.

MLflow creates and migrates the sqlite schema on first connection; two processes doing that at
once (parallel sweep jobs, a job and ``ltr ui``) fail with "table ... already exists". An
exclusive ``flock`` on ``<db>.lock`` around creation (:func:`ltr.tracking.store.ensure_store`)
and around every write makes it safe.

The lock is re-entrant within a process: a block that holds it may call code that takes it
again (``flock`` on a second file descriptor would deadlock on the first). Threads of one process
take turns, like processes.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from ltr.errors import LtrUserError

SQLITE_PREFIX = "sqlite:///"


class _Held:
    """The process's hold on one lock file: a thread lock and, while held, the open file."""

    def __init__(self) -> None:
        self.thread_lock = threading.RLock()
        self.depth = 0
        self.handle: IO[str] | None = None


_held: dict[Path, _Held] = {}
_held_guard = threading.Lock()


def _forget_after_fork() -> None:
    # A forked child shares the parent's open file description (and so its flock): it must open
    # its own file to hold the lock for itself.
    global _held_guard
    _held.clear()
    _held_guard = threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)


def sqlite_db_path(uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` URI (query string dropped); None for other URIs."""
    if not uri.startswith(SQLITE_PREFIX):
        return None
    return Path(uri.removeprefix(SQLITE_PREFIX).split("?", 1)[0])


def lock_path(db_path: Path) -> Path:
    """``<db>.lock`` beside the database file."""
    return db_path.with_name(db_path.name + ".lock")


def _open_lock_file(db_path: Path) -> IO[str]:
    try:
        db_path.parent.mkdir(parents=True, exist_ok=True)
        return open(lock_path(db_path), "a+")
    except OSError as exc:
        reason = f"{exc.strerror or exc} ({exc.filename or db_path.parent})"
        for ancestor in db_path.parents:
            if ancestor.exists():
                if not ancestor.is_dir():
                    reason = f"{ancestor} is a file, not a directory"
                break
        raise LtrUserError(
            f"cannot write beside the MLflow store {db_path}: {reason}; pick a writable place "
            f"with tracking.uri=sqlite:///path/mlflow.db"
        ) from exc


def touch_lock_file(db_path: Path) -> None:
    """Create the directory of ``db_path`` and its lock file; `LtrUserError` when we cannot."""
    _open_lock_file(db_path).close()


@contextmanager
def sqlite_store_lock(uri: str) -> Iterator[None]:
    """Hold an exclusive lock for a ``sqlite:///`` store; a no-op for other stores."""
    db_path = sqlite_db_path(uri)
    if db_path is None:
        yield
        return
    key = db_path.absolute()
    with _held_guard:
        held = _held.setdefault(key, _Held())
    with held.thread_lock:
        if held.depth == 0:
            handle = _open_lock_file(db_path)
            try:
                fcntl.flock(handle, fcntl.LOCK_EX)
            except BaseException:
                handle.close()
                raise
            held.handle = handle
        held.depth += 1
        try:
            yield
        finally:
            held.depth -= 1
            if held.depth == 0 and held.handle is not None:
                handle, held.handle = held.handle, None
                try:
                    fcntl.flock(handle, fcntl.LOCK_UN)
                finally:
                    handle.close()

"""Serialise use of a sqlite MLflow store across processes.

MLflow creates and migrates the sqlite schema on first connection; two processes doing that at
once (parallel sweep jobs, a job and ``ltr ui``) fail with "table ... already exists". An
exclusive ``flock`` on ``<db>.lock`` around creation (:func:`ltr.tracking.store.ensure_store`)
and around every write makes it safe.

The lock is re-entrant within a process: a block that holds it may call code that takes it
again (``flock`` on a second file descriptor would deadlock on the first). Threads of one process
take turns, like processes.

A process that waits longer than :data:`WAIT_NOTICE_S` for the lock says so once, on the
``ltr.tracking.sqlite.lock`` logger (stderr, or where configured logging sends it: ``ltr train``'s
log lines): which file, and the holder's pid, state and command line when ``/proc/locks`` shows
it (a job stopped with Ctrl-Z holds the lock until it goes on).
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from ltr.errors import LtrUserError
from ltr.runtime.terminal import printable
from ltr.tracking.liveness.proc_files import command_line, proc_stat

SQLITE_PREFIX = "sqlite:///"

#: Seconds a process waits for the lock before it says what it waits for.
WAIT_NOTICE_S = 3.0

log = logging.getLogger(__name__)


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


def lock_holder(handle: IO[str]) -> str:
    """Who holds the ``flock`` of the open lock file ``handle``, as a user reads it: ``pid 123,
    stopped (Ctrl-Z? ...): python -m ltr train ...`` (the command line on one line, escaped, at
    most 120 characters); ``another process`` when ``/proc/locks`` does not show it (another pid
    namespace, not Linux)."""
    st = os.fstat(handle.fileno())
    inode = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        with open("/proc/locks") as locks:
            pids = [
                f[4]
                for f in (line.split() for line in locks)
                if len(f) > 5 and f[1] == "FLOCK" and f[5] == inode
            ]
    except OSError:
        pids = []
    pid = next((p for p in pids if p.isdigit() and int(p) not in (0, os.getpid())), None)
    if pid is None:
        return "another process"
    described = f"pid {pid}"
    stat = proc_stat(pid)
    if stat is not None and stat[0] in ("T", "t"):
        described += ", stopped (Ctrl-Z? `fg` or `kill -CONT` lets it go on)"
    command = printable(command_line(pid))
    if command:
        described += f": {command if len(command) <= 120 else command[:117] + '...'}"
    return described


def _wait_for(handle: IO[str], db_path: Path) -> None:
    """``flock`` ``handle`` exclusively; after :data:`WAIT_NOTICE_S` still waiting, say once what for."""
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        pass

    def notice() -> None:
        try:
            holder = lock_holder(handle)
        except (OSError, ValueError):  # the file closed under us: the wait has ended
            return
        log.warning(
            "waiting for the MLflow store's lock %s, held by %s", lock_path(db_path), holder
        )

    timer = threading.Timer(WAIT_NOTICE_S, notice)
    timer.daemon = True
    timer.name = "ltr-store-lock-notice"
    timer.start()
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
    finally:
        timer.cancel()
        timer.join()


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
                _wait_for(handle, db_path)
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

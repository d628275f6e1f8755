"""Serialise first use of a sqlite MLflow store across processes.

MLflow creates and migrates the sqlite schema on first connection; two processes doing that at
once (parallel sweep jobs, a job and ``ltr ui``) fail with "table ... already exists". An
exclusive ``flock`` on ``<db>.lock`` around that first use makes it safe.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def sqlite_store_lock(uri: str) -> Iterator[None]:
    """Hold an exclusive lock for a ``sqlite:///`` store; a no-op for other stores."""
    if not uri.startswith("sqlite:///"):
        yield
        return
    db_path = Path(uri.removeprefix("sqlite:///"))
    db_path.parent.mkdir(parents=True, exist_ok=True)
    with open(db_path.with_name(db_path.name + ".lock"), "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)

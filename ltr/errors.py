"""Errors a user can fix: the CLI prints them as one line and exits non-zero, without a traceback.

And :class:`Terminated`, which a stop signal raises (here, not in :mod:`ltr.tracking.lifecycle`
where it is used, so that ``ltr``'s dispatcher catches it without importing the tracking code),
:func:`full_device` / :func:`write_failed`, how every write that met a full device becomes the
one line of :class:`DeviceFull`, and :func:`qid_text`, how every message names a query (here,
below the data and the metrics that both use it)."""

from __future__ import annotations

import errno
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy only for the type: ltr.errors imports nothing (every command loads it)
    import numpy as np
    from numpy.typing import NDArray


class LtrUserError(Exception):
    """Bad input or configuration. The message says what is wrong and where (file, line, qid)."""


class ServerFault(LtrUserError):
    """A server the settings name (an MLflow tracking server, a database) that does not answer,
    or fails what it is asked (its artifact store full): one line like every user error, but
    exit 1, not 2: the settings may well be right and the server down or out of room, so the
    same command may work later."""


class DataError(LtrUserError):
    """A data file or data configuration cannot be used as given."""


class ScoreError(DataError, ValueError):
    """Scores that cannot be measured (a NaN score), naming the query as the input wrote it.

    A :class:`DataError`, so every command prints it as one line; a ``ValueError`` too, as the
    metric functions raise for arguments they cannot take."""


class DeviceFull(Exception):
    """A write that found its device full (a disk, a quota; the store's sqlite file, a run's
    artifacts): ``ltr`` prints the message as one line and exits 1 (the input was fine; the
    machine had no room)."""


class Terminated(BaseException):
    """Raised by ``ltr``'s SIGTERM handler so a run ends KILLED, like Ctrl-C (exit 143)."""


#: ``errno`` of a full device: no space, a quota, a file size limit (``ulimit -f``).
FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
#: What sqlite says of a full disk (``SQLITE_FULL``), through sqlalchemy and MLflow.
_SQLITE_FULL = "database or disk is full"
#: How pyarrow's ``OSError`` names the error of a failed write (it sets no ``errno``).
_ARROW_ERRNO = re.compile(r"\[errno (\d+)\]")


def is_full(exc: BaseException) -> bool:
    """True for the error of a write to a full device (``/dev/full``, a full disk, a quota)."""
    return isinstance(exc, OSError) and _errno(exc) in FULL_ERRNOS


def _errno(exc: OSError) -> int | None:
    if exc.errno is not None:
        return exc.errno
    found = _ARROW_ERRNO.search(str(exc))
    return int(found.group(1)) if found else None


def full_device(exc: BaseException, *, store: str | None = None) -> str | None:
    """What was full when ``exc`` (or an exception it was raised from) is a write to a full
    device: ``"<path>: No space left on device"``, the path from the error (a file) or ``store``
    (a store's sqlite error, pyarrow's error, name no file); None for any other error.

    >>> full_device(OSError(errno.ENOSPC, "No space left on device", "/data/out.csv"))
    '/data/out.csv: No space left on device'
    >>> full_device(RuntimeError("(sqlite3.OperationalError) database or disk is full"), store="/s/mlflow.db")
    '/s/mlflow.db: the database or its disk is full'
    """
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, DeviceFull):
            return str(cause)
        if isinstance(cause, OSError) and is_full(cause):
            path = cause.filename or store or "a file"
            return f"{path}: {cause.strerror or 'No space left on device'}"
        if _SQLITE_FULL in str(cause):
            return f"{store or 'the MLflow store'}: the database or its disk is full"
        cause = cause.__cause__ or cause.__context__
    return None


def write_failed(exc: BaseException, message: str, *, path: object) -> LtrUserError | DeviceFull:
    """The error to raise for a write to ``path`` that failed with ``exc``: :class:`DeviceFull`
    naming the path when its device was full (exit 1), else an :class:`LtrUserError` saying
    ``message`` (exit 2)."""
    full = full_device(exc, store=str(path))
    return DeviceFull(full) if full is not None else LtrUserError(message)


def qid_text(qid: int, names: Sequence[str] | NDArray[np.object_] | None) -> str:
    """Query ``qid`` as every message names it: its id as written, quoted, when the input's qids
    were ids (strings) that a reader numbered, ``names[qid]`` (``ltr.data.validate.RawTable.qid_names``
    indexed by number, ``ltr.data.ranking_data.RankingData.qid_names`` by position); else the
    integer.

    >>> qid_text(7, None), qid_text(1, ("q-a", "q-b"))
    ('7', "'q-b'")
    """
    return str(qid) if names is None else repr(str(names[qid]))

"""Errors a user can fix: the CLI prints them as one line and exits non-zero, without a traceback.

And :class:`Terminated`, which a stop signal raises (here, not in :mod:`ltr.tracking.lifecycle`
where it is used, so that ``ltr``'s dispatcher catches it without importing the tracking code),
and :func:`qid_text`, how every message names a query (here, below the data and the metrics
that both use it)."""

from __future__ import annotations

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


def qid_text(qid: int, names: Sequence[str] | NDArray[np.object_] | None) -> str:
    """Query ``qid`` as every message names it: its id as written, quoted, when the input's qids
    were ids (strings) that a reader numbered, ``names[qid]`` (``ltr.data.validate.RawTable.qid_names``
    indexed by number, ``ltr.data.ranking_data.RankingData.qid_names`` by position); else the
    integer.

    >>> qid_text(7, None), qid_text(1, ("q-a", "q-b"))
    ('7', "'q-b'")
    """
    return str(qid) if names is None else repr(str(names[qid]))

"""A Dask worker lost during a job (killed, out of memory, its host gone) as one line, not a traceback.

``distributed`` reports a worker that dies under a task in several ways, depending on when it
dies: the task's future is cancelled (``FutureCancelledError``: "already forgotten"), the
scheduler gives up re-running it (``KilledWorker``), or a connection closes mid-transfer
(``CommClosedError``). Inside :func:`worker_loss_as_error` each becomes one
:class:`~ltr.errors.LtrUserError` saying what happened and where to look, raised from the
original (kept as its cause); the run then ends FAILED with that line in ``ltr.error`` and the
command exits non-zero without a traceback. A stop signal still wins
(:func:`ltr.runtime.stops.as_stop`): a Ctrl-C that tears the cluster down ends the run
KILLED, not FAILED.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ltr.errors import LtrUserError


def _lost_worker_errors() -> tuple[type[BaseException], ...]:
    """The exception types of ``distributed`` that mean a worker (or the link to it) was lost."""
    from distributed import KilledWorker
    from distributed.client import FutureCancelledError
    from distributed.comm.core import CommClosedError

    return (FutureCancelledError, KilledWorker, CommClosedError)


@contextmanager
def worker_loss_as_error(what: str) -> Iterator[None]:
    """Turn a lost Dask worker inside the block into one `LtrUserError` naming ``what`` was running.

    >>> with worker_loss_as_error("the job on the cluster"):
    ...     pass
    """
    lost = _lost_worker_errors()
    try:
        yield
    except lost as exc:
        detail = " ".join(str(exc).split()) or type(exc).__name__
        raise LtrUserError(
            f"a Dask worker was lost during {what} ({type(exc).__name__}: {detail[:200]}); a worker "
            "killed (the OOM killer, a signal) or a host gone stops the job: see the workers' logs "
            "and run it again"
        ) from exc

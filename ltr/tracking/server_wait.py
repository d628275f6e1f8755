"""Waiting for a tracking server that does not answer, and things made once per experiment.

A request to an MLflow server that fails because nobody answers (refused, reset, closed, timed
out, or a proxy's 502/503/504: :data:`ltr.tracking.lifecycle.UNANSWERED`) is tried again until
``tracking.server_wait_s`` seconds have passed since its first failure (:class:`ServerWait`),
with one line every :data:`LINE_EVERY_S` seconds while waiting::

    ltr: waiting for the tracking server http://mlflow-host:5000 (12 s of 120 s; connection refused)

Each try is MLflow's own request, with its short retries (``HTTP_ENV_DEFAULTS`` in
:mod:`ltr.tracking.store`: about 2 s). When the window ends, :class:`ServerSilent` is raised:
one line naming the server, the request and the window (``server_line``, which
:func:`ltr.tracking.lifecycle.server_fault` reads). After that, requests to the same server are
tried once (no second window: ending the run FAILED is tried, not waited for) until one gets an
answer. A request the server answered and failed (a 500, a full artifact store) is not waited for.

A thing MLflow creates once per experiment (a dataset, an experiment tag) that two jobs create
at the same moment fails in one of them with the database's unique-key conflict (PostgreSQL's
``UniqueViolation``, sqlite's ``UNIQUE constraint failed``): :func:`once_made` takes that for
"another job made it first" and asks once more, which finds it made.

Free of mlflow imports: the exception MLflow raises is judged by its message.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ltr.errors import ServerFault
from ltr.tracking.lifecycle import UNANSWERED, FailedRequest, failed_request
from ltr.tracking.liveness.heartbeat import DEFAULT_SERVER_WAIT_S

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Seconds between two "waiting for the tracking server" lines.
LINE_EVERY_S = 5.0
#: Seconds between two tries (each try is MLflow's request, itself about 2 s with its retries).
PAUSE_S = 1.0

#: A unique-key conflict as PostgreSQL, sqlite, MySQL and SQL Server word it.
_UNIQUE_CONFLICT = re.compile(
    r"UniqueViolation|duplicate key value violates unique constraint|UNIQUE constraint failed|"
    r"Duplicate entry .* for key|Violation of (?:PRIMARY|UNIQUE) KEY constraint"
)


class ServerSilent(ServerFault):
    """A tracking server that did not answer within ``tracking.server_wait_s``; ``server_line``
    says so in one line (exit 1, as every :class:`ltr.errors.ServerFault`)."""

    def __init__(self, server_line: str) -> None:
        super().__init__(server_line)
        self.server_line = server_line


def _not_a_retry(record: logging.LogRecord) -> bool:
    """False for urllib3's line about one of MLflow's own retries (``Retrying (Retry(...)) after
    connection broken by ...``): the wait's own line says it, every few seconds."""
    return not str(record.msg).startswith("Retrying (")


def quiet_retries() -> None:
    """Leave urllib3's line of each of MLflow's retries out (the wait's line says it); once per
    process."""
    pool_log = logging.getLogger("urllib3.connectionpool")
    if _not_a_retry not in pool_log.filters:
        pool_log.addFilter(_not_a_retry)


def unanswered(exc: BaseException) -> FailedRequest | None:
    """The request ``exc`` reports failed because the server did not answer; None otherwise
    (another error, or a server that answered and failed it)."""
    failed = failed_request(exc)
    if failed is None or failed.server_side or failed.why not in UNANSWERED:
        return None
    return failed


@dataclass
class ServerWait:
    """Waits up to ``window_s`` seconds for the server of each call (:meth:`call`)."""

    window_s: float = DEFAULT_SERVER_WAIT_S
    #: True once a wait ended without an answer: later calls are tried once, until one is answered.
    gave_up: bool = field(default=False)

    def call(self, action: Callable[[], T]) -> T:
        """``action()``, tried again while it fails with :func:`unanswered` and the window lasts;
        :class:`ServerSilent` (from the last failure) when the window ends."""
        started = time.monotonic()
        shown: float | None = None
        while True:
            try:
                result = action()
            except Exception as exc:
                failed = unanswered(exc)
                if failed is None:
                    raise
                waited = time.monotonic() - started
                if self.gave_up or waited >= self.window_s:
                    line = self._line(failed, waited)
                    self.gave_up = True
                    raise ServerSilent(line) from exc
                now = time.monotonic()
                if shown is None or now - shown >= LINE_EVERY_S:
                    shown = now
                    log.warning(
                        "ltr: waiting for the tracking server %s (%.0f s of %g s; %s)",
                        failed.base, waited, self.window_s, failed.why,
                    )  # fmt: skip
                time.sleep(min(PAUSE_S, max(self.window_s - waited, 0.0)))
                continue
            self.gave_up = False
            return result

    def _line(self, failed: FailedRequest, waited: float) -> str:
        if self.gave_up:
            return f"the MLflow server at {failed.base} does not answer ({failed.what}: {failed.why})"
        return (
            f"the MLflow server at {failed.base} did not answer for {waited:.0f} s ({failed.what}: {failed.why}); "
            f"tracking.server_wait_s={self.window_s:g} is how long a run waits for it"
        )


class WaitingClient:
    """An ``MlflowClient`` (``direct``) each of whose calls waits for its server (``wait``:
    :meth:`ServerWait.call`). Attributes that are not methods are the client's own."""

    def __init__(self, direct: Any, wait: ServerWait) -> None:
        self.direct = direct
        self.wait = wait

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in {"direct", "wait"}:  # pickling, before __dict__ is back
            raise AttributeError(name)
        found = getattr(self.direct, name)
        if not callable(found):
            return found

        def waiting(*args: Any, **kwargs: Any) -> Any:
            return self.wait.call(lambda: found(*args, **kwargs))

        waiting.__name__ = name
        waiting.__doc__ = found.__doc__
        return waiting


def unique_conflict(exc: BaseException) -> bool:
    """True when ``exc`` (or its cause) is a database's unique-key conflict, as MLflow passes it on
    (its SQL store's error, or a server's answer quoting it)."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if _UNIQUE_CONFLICT.search(str(cause)):
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def once_made(action: Callable[[], T], what: str) -> T:
    """``action()``, which makes something once per experiment (``what``, for the debug log):
    when another job made it at the same moment (:func:`unique_conflict`), once more."""
    try:
        return action()
    except Exception as exc:
        if not unique_conflict(exc):
            raise
        log.debug("ltr: another job made %s at the same moment; asking again", what)
        return action()


__all__ = [
    "DEFAULT_SERVER_WAIT_S",
    "ServerSilent",
    "ServerWait",
    "WaitingClient",
    "once_made",
    "quiet_retries",
    "unanswered",
    "unique_conflict",
]

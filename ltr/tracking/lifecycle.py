"""The run lifecycle: every run that starts ends FINISHED, FAILED or KILLED, whatever interrupts it.

:func:`tracked_run` is the one way a job's run is started and ended; :func:`end_run` is the one
way any run (a sweep's parent too) is ended. Ending a run holds SIGINT and SIGTERM back (they are
delivered once the run's terminal state is written), so a second Ctrl-C or ``kill`` cannot leave
it RUNNING. A process killed outright (SIGKILL, the OOM killer) cannot end its run; its run is
found and marked KILLED the next time the store is opened (``ltr.tracking.store``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from ltr.errors import DeviceFull, ServerFault, Terminated, full_device
from ltr.runtime.stops import as_stop, raise_if_stop_requested, signals_deferred
from ltr.tracking.base import RunStatus, Tracker

#: MLflow's message for an HTTP request to a tracking server that failed for good (refused,
#: timed out, or 5xx answers after its retries): the URL and the reason.
_SERVER_REQUEST = re.compile(r"API request to (\S+) failed with exception (.*)", re.S)
#: What urllib3's retry errors say, as a line says it: (found in the message, said).
_REASONS = (
    ("500 error responses", "too many 500 error responses"),
    ("502 error responses", "too many 502 error responses"),
    ("503 error responses", "too many 503 error responses"),
    ("504 error responses", "too many 504 error responses"),
    ("Connection reset by peer", "connection reset by peer"),
    ("Remote end closed connection", "connection closed without an answer"),
    ("Connection refused", "connection refused"),
    ("No route to host", "no route to host"),
    ("timed out", "timed out"),
)
#: Reasons that mean the server answered and failed the request itself.
_SERVER_SIDE = frozenset({"too many 500 error responses", "connection reset by peer"})
#: Reasons that mean the server is not there (stopped, restarting, or behind a proxy that says
#: so): a run waits for it (:mod:`ltr.tracking.server_wait`), unless the server answered the
#: request and failed it itself (:attr:`FailedRequest.server_side`).
UNANSWERED = frozenset({
    "connection refused", "connection reset by peer", "connection closed without an answer", "no route to host",
    "timed out",
    "too many 502 error responses", "too many 503 error responses", "too many 504 error responses",
})
_ARTIFACTS_PATH = re.compile(r"/mlflow-artifacts/artifacts/(?:[^/]+/){2}artifacts/(\S+)")


@dataclass(frozen=True, slots=True)
class FailedRequest:
    """A request to a tracking server that failed after MLflow's retries: the server's base URL,
    what was asked (the API path, or ``the artifact <path>``), why (one of :data:`_REASONS`' words,
    or the end of the first line of the cause) and whether the server answered and failed it
    itself (an artifact upload answered with 500s or a reset: ``server_side``)."""

    base: str
    what: str
    why: str
    server_side: bool
    artifact: str | None


def failed_request(exc: BaseException) -> FailedRequest | None:
    """The request a tracking server failed for good that ``exc`` (or what caused it) reports;
    None for anything else."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        found = _SERVER_REQUEST.search(str(cause)) if type(cause).__name__ == "MlflowException" else None
        if found is not None:
            url, reason = found.groups()
            base = url.split("/api/", 1)[0] if "/api/" in url else url
            why = next((said for known, said in _REASONS if known in reason), reason.strip().splitlines()[0][-200:])
            artifact = _ARTIFACTS_PATH.search(url)
            path = artifact.group(1) if artifact is not None else None
            what = f"the artifact {path}" if path is not None else url.removeprefix(base)
            return FailedRequest(base, what, why, path is not None and why in _SERVER_SIDE, path)
        cause = cause.__cause__ or cause.__context__
    return None


def server_fault(exc: BaseException) -> str | None:
    """What ``exc`` (or what caused it) says of a tracking server that failed a request after
    MLflow's retries (or that did not answer for ``tracking.server_wait_s``: an exception with a
    ``server_line``), as one line naming the server and what it failed; None for anything else."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:  # a wait that ended says so itself
        seen.add(id(cause))
        line = getattr(cause, "server_line", None)
        if isinstance(line, str):
            return line
        cause = cause.__cause__ or cause.__context__
    failed = failed_request(exc)
    if failed is None:
        return None
    if failed.server_side:  # it answered, and failed the upload
        return (
            f"the MLflow server at {failed.base} could not store the artifact {failed.artifact} ({failed.why}): "
            "its artifact store may be full; see the server's log"
        )
    return f"the MLflow server at {failed.base} failed a request ({failed.what}: {failed.why})"


def _end_failed(tracker: Tracker, error: str) -> bool:
    """End the run FAILED with ``error`` where the store can still take it (True); a store too
    full to record it, or a server that does not answer, is left as it is (False: the run stays
    RUNNING until a command that can write the store reaps it)."""
    try:
        end_run(tracker, RunStatus.FAILED, error=error)
    except Exception as exc:
        if full_device(exc) is None and server_fault(exc) is None:
            raise
        return False
    return True


def end_run(tracker: Tracker, status: RunStatus, *, error: str | None = None) -> None:
    """End ``tracker``'s run with ``status`` (and the ``ltr.error`` tag), signals deferred."""
    with signals_deferred():
        tracker.end_run(status, error=error)


def _start_run(tracker: Tracker, run_name: str, tags: Mapping[str, str], parent_run_id: str | None) -> str | None:
    """The new run's id (None without tracking); a store too full to hold it: :class:`DeviceFull`."""
    try:
        return tracker.start_run(run_name, tags, parent_run_id=parent_run_id) or None
    except Exception as refused:
        full = full_device(refused, store=getattr(tracker, "store_path", None))
        if full is None:
            raise
        raise DeviceFull(f"{full}; no run was created") from refused


@contextmanager
def tracked_run(
    tracker: Tracker,
    run_name: str,
    tags: Mapping[str, str],
    *,
    parent_run_id: str | None = None,
) -> Iterator[str | None]:
    """Start a run, yield its id (None without tracking), end it by how the block ended.

    FINISHED when the block returns, KILLED on ``KeyboardInterrupt`` / :class:`Terminated`
    or on any exception raised once a stop signal was recorded (:func:`as_stop`: the stop's
    exception is raised instead), FAILED on any other exception (its type and message become the
    ``ltr.error`` tag); the exception is re-raised, but for a write to a full device
    (:func:`full_device`): :class:`DeviceFull`, one line naming what was full, and for a
    request a tracking server failed for good (:func:`server_fault`): :class:`ServerFault`, one
    line naming the server and the request.
    """
    raise_if_stop_requested()
    started, run_id = False, None
    try:
        with signals_deferred():  # a signal held here is raised as the block ends: the run exists then
            run_id = _start_run(tracker, run_name, tags, parent_run_id)
            started = True
        yield run_id
        raise_if_stop_requested()  # a signal whose exception was swallowed: the run is KILLED
    except BaseException as raised:
        if not started:
            raise
        exc = as_stop(raised)
        if not isinstance(exc, KeyboardInterrupt | Terminated):
            full = full_device(exc, store=getattr(tracker, "store_path", None))
            if full is not None:  # one line naming what was full, not MLflow's SQL
                ended = _end_failed(tracker, f"DeviceFull: {full}")
                if run_id is not None:
                    full += f"; run {run_id} is marked FAILED" if ended else f"; run {run_id} could not be marked FAILED (the store is full)"
                raise DeviceFull(full) from raised
            fault = server_fault(exc)
            if fault is not None:  # one line naming the server, not MLflow's retry trace
                ended = _end_failed(tracker, f"ServerFault: {fault}")
                if run_id is not None:
                    fault += f"; run {run_id} is marked FAILED" if ended else f"; run {run_id} could not be marked FAILED (the server did not answer)"
                raise ServerFault(fault) from raised
            end_run(tracker, RunStatus.FAILED, error=f"{type(exc).__name__}: {exc}")
            raise
        end_run(tracker, RunStatus.KILLED, error=f"{type(exc).__name__}: interrupted")
        if run_id is not None:
            exc.add_note(f"run {run_id} is marked KILLED")
        if exc is raised:
            raise
        raise exc from raised
    end_run(tracker, RunStatus.FINISHED)

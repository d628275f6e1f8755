"""A live run's heartbeat, and the rule that finds a run dead without seeing its process.

While a run is RUNNING, a daemon thread of its process (:class:`Heartbeat`) writes the run's tag
:data:`TAG_HEARTBEAT` (the time, UTC, ISO 8601) every ``heartbeat_s`` seconds. The run also
carries :data:`TAG_STALE_AFTER`: how many seconds without a beat make it dead
(``heartbeat_s * stale_after``, :class:`Liveness`). A command that opens the store on another
host, where the run's pid means nothing, reaps a RUNNING run whose last beat (or start, before
the first beat) is older than that (:func:`silent_for`); runs of this host are judged by their
process (:mod:`ltr.tracking.store`), so a stopped (SIGSTOP) or slow process here is never reaped.

The thread only writes that one tag: it reads nothing the run computes and draws no random
number, so a run's metrics are the same with or without it. It is stopped, and joined, before
the run's end is written, and as a daemon it never keeps a process alive. A beat that fails (a
store busy or down) is logged at debug level and the next one tried: a heartbeat is never a
reason for a run to fail. Times are the hosts' clocks: keep them in step (NTP) to well within
the staleness bound.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass

log = logging.getLogger(__name__)

#: The time of a run's last heartbeat (UTC, ISO 8601 with milliseconds).
TAG_HEARTBEAT = "ltr.heartbeat"
#: Seconds without a heartbeat after which another host takes the run for dead.
TAG_STALE_AFTER = "ltr.heartbeat.stale_after_s"
#: ``tracking.heartbeat_s`` and ``tracking.stale_after`` by default (:mod:`ltr.config.schema`).
DEFAULT_HEARTBEAT_S = 30.0
DEFAULT_STALE_AFTER = 10
#: ``tracking.server_wait_s`` by default (:mod:`ltr.tracking.server_wait`).
DEFAULT_SERVER_WAIT_S = 120.0
#: How long :meth:`Heartbeat.stop` waits for a beat in progress (a store that does not answer).
_JOIN_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class Liveness:
    """``tracking.heartbeat_s`` (None: no heartbeat) and ``tracking.stale_after`` (beats missed);
    ``tracking.server_wait_s``: how long the run waits for a tracking server that does not answer
    (:mod:`ltr.tracking.server_wait`; 0: not at all)."""

    heartbeat_s: float | None = DEFAULT_HEARTBEAT_S
    stale_after: int = DEFAULT_STALE_AFTER
    server_wait_s: float = DEFAULT_SERVER_WAIT_S

    def __post_init__(self) -> None:
        if self.heartbeat_s is not None and not self.heartbeat_s > 0:
            raise ValueError(f"heartbeat_s={self.heartbeat_s} must be > 0 (or None: no heartbeat)")
        if self.stale_after < 2:
            raise ValueError(f"stale_after={self.stale_after} must be >= 2 (beats missed)")
        if not self.server_wait_s >= 0:
            raise ValueError(f"server_wait_s={self.server_wait_s} must be >= 0 (seconds)")

    @property
    def stale_after_s(self) -> float | None:
        """Seconds without a beat that make a run dead (None: no heartbeat)."""
        return None if self.heartbeat_s is None else self.heartbeat_s * self.stale_after

    def start_tags(self, now: dt.datetime | None = None) -> dict[str, str]:
        """The tags a run starts with: its first beat and its staleness bound ({} without a heartbeat)."""
        bound = self.stale_after_s
        if bound is None:
            return {}
        return {TAG_HEARTBEAT: beat_time(now), TAG_STALE_AFTER: f"{bound:g}"}


def beat_time(now: dt.datetime | None = None) -> str:
    """``now`` (default: the current time) as :data:`TAG_HEARTBEAT` holds it."""
    return (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC).isoformat(timespec="milliseconds")


def silent_for(tags: Mapping[str, str], start_time_ms: int | None, now: dt.datetime) -> tuple[float, float] | None:
    """(seconds since the run's last beat, its staleness bound) at ``now``, from its ``tags``
    (the run's start, ``start_time_ms``, when it has no beat yet); None for a run without a
    heartbeat (older runs, ``tracking.heartbeat_s=null``) or with unreadable tags.

    >>> t0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    >>> silent_for({TAG_HEARTBEAT: beat_time(t0), TAG_STALE_AFTER: "3"}, None, t0 + dt.timedelta(seconds=5))
    (5.0, 3.0)
    >>> silent_for({}, 0, t0) is None
    True
    """
    try:
        bound = float(tags[TAG_STALE_AFTER])
        if TAG_HEARTBEAT in tags:
            last = dt.datetime.fromisoformat(tags[TAG_HEARTBEAT])
        elif start_time_ms is not None:
            last = dt.datetime.fromtimestamp(start_time_ms / 1000, dt.UTC)
        else:
            return None
    except (KeyError, ValueError):
        return None
    return (now - last).total_seconds(), bound


class Heartbeat:
    """Calls ``beat`` (which writes :data:`TAG_HEARTBEAT`) every ``every_s`` seconds in a daemon
    thread, from :meth:`start` until :meth:`stop`."""

    def __init__(self, beat: Callable[[], None], every_s: float, *, name: str = "ltr-heartbeat") -> None:
        self._beat = beat
        self._every_s = every_s
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stopped.wait(self._every_s):
            try:
                self._beat()
            except Exception as exc:  # a busy or unreachable store: the next beat may get through
                log.debug("ltr: a heartbeat could not be written: %s", exc)

    def stop(self) -> None:
        """No beat after this returns (but one a store left hanging for more than 10 s)."""
        self._stopped.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(_JOIN_TIMEOUT_S)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()


def liveness_of(tracking: object) -> Liveness:
    """The :class:`Liveness` of a ``tracking`` config (``heartbeat_s``, ``stale_after``,
    ``server_wait_s``; the defaults for a config without them)."""
    heartbeat_s = getattr(tracking, "heartbeat_s", DEFAULT_HEARTBEAT_S)
    stale_after = getattr(tracking, "stale_after", DEFAULT_STALE_AFTER)
    server_wait_s = getattr(tracking, "server_wait_s", DEFAULT_SERVER_WAIT_S)
    return Liveness(None if heartbeat_s is None else float(heartbeat_s), int(stale_after), float(server_wait_s))


__all__ = ["TAG_HEARTBEAT", "TAG_STALE_AFTER", "Heartbeat", "Liveness", "beat_time", "liveness_of", "silent_for"]

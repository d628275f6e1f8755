"""The unit tier's contract, checked while its tests run: no training, no store, no process.

A test of the ``unit`` tier (``tests/conftest.py``) fails when, in its setup, call or teardown
(its fixtures included), this process

- starts a process: the audit events of :mod:`subprocess` and :mod:`os` (``fork``, ``exec``,
  ``posix_spawn``, ``spawn``, ``system``);
- opens an sqlite database (``sqlite3.connect``: every MLflow store ``ltr`` writes is sqlite);
- binds or connects a socket (a server, a Dask scheduler on TCP, an MLflow server);
- trains a LightGBM model: a booster made from a training set asks LightGBM for the names of
  its training metrics (``Booster.__get_eval_info``, which takes a ctypes address: the audit
  event ``ctypes.addressof`` from that function of ``lightgbm.basic``); a booster made from a
  model file or string to predict does not (``tests/test_tier_guard.py`` checks both, so a
  LightGBM release that moves this call fails there, not silently);
- has a Dask scheduler alive at the end of the test that was not alive before it (an in-process
  ``LocalCluster`` uses no socket).

Nothing is patched: the checks are Python's audit hooks (:func:`sys.addaudithook`, PEP 578),
which see these calls as they happen, and a look at Dask's own registry of schedulers. Such a
test belongs in the ``integration`` tier (list its module in ``INTEGRATION_MODULES`` or give it
an integration fixture) or, for a subprocess, ``e2e`` (``@pytest.mark.slow``). A module-scoped
fixture is checked in the setup of the test that makes it: under ``-m unit`` that is the first
unit test using it.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Generator
from types import FrameType
from typing import Any

import pytest

#: Audit events that start a process.
PROCESS_EVENTS = frozenset(
    {"subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.exec", "os.system", "pty.spawn"}
)
#: Audit events of a server or a client of one.
SOCKET_EVENTS = frozenset({"socket.bind", "socket.connect"})


class TierGuard:
    """Records what a unit test does that its tier forbids (one instance per process: an audit
    hook cannot be removed, so it stays installed and checks only while a unit test runs)."""

    def __init__(self) -> None:
        self.active = False
        self.seen: list[str] = []
        #: threads alive before the test began, other than the test's own: what they do is not
        #: the test's (an earlier test's MLflow or Dask thread still closing down, say). Thread
        #: objects, not idents: an ended thread's ident is reused by the next thread started
        self.others: frozenset[threading.Thread] = frozenset()
        sys.addaudithook(self._hook)

    def start(self, active: bool) -> None:
        """Begin a test's checks (``active``: it is a unit test)."""
        self.active = active
        self.seen = []
        self.others = frozenset(threading.enumerate()) - {threading.current_thread()}

    def _hook(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.active or threading.current_thread() in self.others:
            return
        if event in PROCESS_EVENTS:
            self._note(f"started a process ({event}: {_short(args)})")
        elif event == "sqlite3.connect":
            self._note(f"opened an sqlite database ({_short(args)}): a store")
        elif event in SOCKET_EVENTS:
            self._note(f"used a socket ({event}: {_short(args)})")
        elif event == "ctypes.addressof" and _training_lightgbm(sys._getframe(1)):
            self._note("trained a LightGBM model (a booster made from a training set)")

    def _note(self, what: str) -> None:
        if what not in self.seen:
            self.seen.append(what)


def _training_lightgbm(frame: FrameType) -> bool:
    """Whether ``frame`` (the caller of ``ctypes.addressof``) is LightGBM reading a training
    booster's metric names."""
    return frame.f_code.co_qualname == "Booster.__get_eval_info" and frame.f_globals.get("__name__") == "lightgbm.basic"


def _short(args: tuple[Any, ...]) -> str:
    text = ", ".join(map(str, args))
    return text if len(text) <= 160 else text[:157] + "..."


def _schedulers() -> set[int]:
    """The Dask schedulers alive in this process (none when Dask's distributed is not imported)."""
    scheduler = getattr(sys.modules.get("distributed.scheduler"), "Scheduler", None)
    return set(map(id, getattr(scheduler, "_instances", ()))) if scheduler is not None else set()


class TierGuardPlugin:
    """Turns the guard on around each unit test and fails the phase in which it saw something."""

    def __init__(self) -> None:
        self.guard = TierGuard()
        self._schedulers: set[int] = set()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        self.guard.start(item.get_closest_marker("unit") is not None)
        self._schedulers = _schedulers()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> None:
        if self.guard.active and _schedulers() - self._schedulers:
            self.guard._note("started a Dask scheduler")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
        outcome = yield
        report = outcome.get_result()
        if self.guard.seen and report.passed:
            report.outcome = "failed"
            report.longrepr = (
                f"{item.nodeid} is in the unit tier (no training, no store, no process) but it "
                + "; ".join(self.guard.seen)
                + ": move it to the integration tier (tests/conftest.py) or e2e (@pytest.mark.slow)"
            )
        self.guard.seen = []  # each phase fails for what it did itself
        if call.when == "teardown":
            self.guard.active = False

"""A process waiting for a local store's lock says once what it waits for: the file and the
holder (pid, stopped or not, command line), read from ``/proc/locks``.

The holder is a real process taking the real lock; the waiter is a thread of the test process.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from ltr.tracking.sqlite import lock as store_lock
from ltr.tracking.sqlite.lock import lock_path, sqlite_store_lock

pytestmark = pytest.mark.skipif(
    not Path("/proc/locks").exists(), reason="needs Linux's /proc/locks"
)

HOLDER = """
import sys, time
from ltr.tracking.sqlite.lock import sqlite_store_lock
with sqlite_store_lock(sys.argv[1]):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


@contextmanager
def holder(uri: str, hold_s: float) -> Iterator[subprocess.Popen[str]]:
    """A process that holds the lock of ``uri`` for ``hold_s`` seconds (then exits); killed after."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, uri, str(hold_s)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "held\n"
        yield proc
    finally:
        proc.kill()
        proc.wait(timeout=30)


def take_in_thread(uri: str) -> tuple[threading.Thread, list[float]]:
    """Take the lock in a thread; the list gets the monotonic time it was acquired."""
    acquired: list[float] = []

    def take() -> None:
        with sqlite_store_lock(uri):
            acquired.append(time.monotonic())

    thread = threading.Thread(target=take)
    thread.start()
    return thread, acquired


def notices(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "ltr.tracking.sqlite.lock"]


def test_a_waiter_names_the_stopped_holder_once_and_goes_on_when_it_ends(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_lock, "WAIT_NOTICE_S", 0.3)
    caplog.set_level(logging.WARNING, logger="ltr.tracking.sqlite.lock")
    db = tmp_path / "mlflow.db"
    uri = f"sqlite:///{db}"
    with holder(uri, 600) as proc:
        os.kill(proc.pid, signal.SIGSTOP)
        thread, acquired = take_in_thread(uri)
        deadline = time.monotonic() + 20
        while not notices(caplog) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # a second notice would come now, were there one
        (message,) = notices(caplog)
        assert not acquired
        assert message.startswith(
            f"waiting for the MLflow store's lock {lock_path(db)}, held by pid {proc.pid}, stopped"
        )
        assert "sqlite_store_lock" in message  # the holder's command line
        assert "\n" not in message
        proc.kill()
        thread.join(timeout=20)
    assert acquired
    assert not thread.is_alive()
    assert not [t for t in threading.enumerate() if t.name == "ltr-store-lock-notice"]


def test_a_running_holder_is_named_without_stopped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_lock, "WAIT_NOTICE_S", 0.2)
    caplog.set_level(logging.WARNING, logger="ltr.tracking.sqlite.lock")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    with holder(uri, 1.5) as proc:
        thread, acquired = take_in_thread(uri)
        thread.join(timeout=30)
        assert proc.wait(timeout=30) == 0
    (message,) = notices(caplog)
    assert f"held by pid {proc.pid}: " in message
    assert "stopped" not in message
    assert acquired


def test_a_short_wait_or_no_wait_says_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="ltr.tracking.sqlite.lock")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    with sqlite_store_lock(uri):  # uncontended: no notice thread at all
        assert not [t for t in threading.enumerate() if t.name == "ltr-store-lock-notice"]
    with holder(uri, 0.2):
        thread, acquired = take_in_thread(uri)
        thread.join(timeout=30)
    assert acquired
    assert notices(caplog) == []


def test_the_holder_is_another_process_when_proc_locks_does_not_show_it(tmp_path: Path) -> None:
    db = tmp_path / "mlflow.db"
    with sqlite_store_lock(f"sqlite:///{db}"), open(lock_path(db)) as handle:
        assert store_lock.lock_holder(handle) == "another process"  # our own pid is never named

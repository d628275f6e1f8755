"""``tests/tier_guard.py`` sees what the unit tier forbids (a process, an sqlite store, a socket,
LightGBM training) as it happens, and nothing of work that does none of them (reading and
writing files, numpy, a LightGBM model that only predicts).

These tests do on purpose what the guard looks for, so they are not unit tests: ``slow`` (e2e).
"""

from __future__ import annotations

import socket
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.tier_guard import TierGuard

pytestmark = pytest.mark.slow


@pytest.fixture
def guard() -> Iterator[TierGuard]:
    """A guard watching this test (its audit hook stays installed, inactive, after it)."""
    watching = TierGuard()
    watching.start(active=True)
    yield watching
    watching.active = False


def test_plain_work_is_not_seen(guard: TierGuard, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("1 qid:1 1:0.5\n")
    assert (tmp_path / "a.txt").read_text().startswith("1 qid:1")
    assert np.sort(np.array([3, 1, 2])).tolist() == [1, 2, 3]
    assert guard.seen == []


def test_a_process_is_seen(guard: TierGuard) -> None:
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    assert any(seen.startswith("started a process (subprocess.Popen") for seen in guard.seen), guard.seen


def test_an_sqlite_database_is_seen(guard: TierGuard, tmp_path: Path) -> None:
    sqlite3.connect(tmp_path / "mlflow.db").close()
    assert guard.seen == [f"opened an sqlite database ({tmp_path / 'mlflow.db'}): a store"]


def test_a_socket_is_seen(guard: TierGuard) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
    assert [seen.split(" (")[1].split(":")[0] for seen in guard.seen] == ["socket.bind"]


def test_lightgbm_training_is_seen_and_prediction_is_not(guard: TierGuard) -> None:
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(200, 3)), rng.normal(size=200)
    guard.active = False  # a model to predict with, made unwatched
    model = lgb.train({"objective": "regression", "num_leaves": 3, "verbose": -1}, lgb.Dataset(x, y), num_boost_round=2).model_to_string()
    guard.active = True
    lgb.Booster(model_str=model).predict(x)
    assert guard.seen == []
    lgb.train({"objective": "regression", "num_leaves": 3, "verbose": -1}, lgb.Dataset(x, y), num_boost_round=2)
    assert guard.seen == ["trained a LightGBM model (a booster made from a training set)"]


def test_a_thread_older_than_the_test_is_not_the_tests(tmp_path: Path) -> None:
    """An earlier test's thread still at work (closing a store, say) does not fail the next
    unit test; a thread the test starts itself is the test's."""
    go, done = threading.Event(), threading.Event()

    def older() -> None:
        go.wait(30)
        sqlite3.connect(tmp_path / "older.db").close()
        done.set()

    thread = threading.Thread(target=older)
    thread.start()
    watching = TierGuard()
    watching.start(active=True)  # the test begins with `older` alive
    go.set()
    assert done.wait(30)
    thread.join()
    assert watching.seen == []
    # started after `older` ended, so it often gets `older`'s ident: still the test's own
    mine = threading.Thread(target=lambda: sqlite3.connect(tmp_path / "mine.db").close())
    mine.start()
    mine.join()
    assert [what for what in watching.seen if "sqlite" in what]
    watching.active = False

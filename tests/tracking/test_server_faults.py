"""How a request a tracking server failed for good reads: one line naming the server and the
request (:func:`ltr.tracking.lifecycle.server_fault`), from MLflow's own messages; which failures
are waited for, and a unique-key conflict taken for "made by another job"
(:mod:`ltr.tracking.server_wait`; the real server: tests/tracking/test_team_server.py)."""

from __future__ import annotations

import itertools
import logging
import pickle
import time
from pathlib import Path

import pytest
from mlflow.exceptions import MlflowException

from ltr.cli.main import main
from ltr.errors import ServerFault
from ltr.tracking.lifecycle import server_fault
from ltr.tracking.server_wait import (
    ServerWait,
    WaitingClient,
    once_made,
    unanswered,
    unique_conflict,
)

BASE = "http://127.0.0.1:5000"
ARTIFACT = f"{BASE}/api/2.0/mlflow-artifacts/artifacts/1/5c796ad4cf144183baea7a9b670493ee/artifacts/config/config.yaml"


def test_a_full_artifact_store_names_the_artifact_and_the_likely_cause() -> None:
    exc = MlflowException(
        f"API request to {ARTIFACT} failed with exception HTTPConnectionPool(host='127.0.0.1', port=5000): Max retries "
        "exceeded with url: /api/2.0/mlflow-artifacts/artifacts/1/5c79/artifacts/config/config.yaml (Caused by "
        "ResponseError('too many 500 error responses'))"
    )
    assert server_fault(exc) == (
        f"the MLflow server at {BASE} could not store the artifact config/config.yaml (too many 500 error responses): "
        "its artifact store may be full; see the server's log"
    )
    reset = MlflowException(
        f"API request to {ARTIFACT} failed with exception HTTPConnectionPool(host='127.0.0.1', port=5000): Max retries "
        "exceeded with url: /api/2.0/mlflow-artifacts/... (Caused by ProtocolError('Connection aborted.', "
        "ConnectionResetError(104, 'Connection reset by peer')))"
    )  # a server that answers before it has read the whole upload closes the connection
    assert server_fault(reset) == (
        f"the MLflow server at {BASE} could not store the artifact config/config.yaml (connection reset by peer): "
        "its artifact store may be full; see the server's log"
    )


def test_a_server_gone_mid_run_names_the_request_and_a_cause_behind_another_exception() -> None:
    gone = MlflowException(
        f"API request to {BASE}/api/2.0/mlflow/runs/log-batch failed with exception "
        "HTTPConnectionPool(host='127.0.0.1', port=5000): Max retries exceeded (Caused by NewConnectionError: "
        "Failed to establish a new connection: [Errno 111] Connection refused)"
    )
    try:
        try:
            raise gone
        except MlflowException as inner:
            raise RuntimeError("while logging the run's metrics") from inner
    except RuntimeError as outer:
        line = server_fault(outer)
    assert line == f"the MLflow server at {BASE} failed a request (/api/2.0/mlflow/runs/log-batch: connection refused)"
    refused = MlflowException(f"API request to {ARTIFACT} failed with exception ... [Errno 111] Connection refused)")
    assert server_fault(refused) == (
        f"the MLflow server at {BASE} failed a request (the artifact config/config.yaml: connection refused)"
    ), "a server that is not there is not said to be full"


def test_other_errors_are_no_server_fault() -> None:
    assert server_fault(MlflowException("RESOURCE_DOES_NOT_EXIST: Run 'x' not found")) is None
    assert server_fault(ValueError(f"API request to {BASE} failed with exception x")) is None  # not MLflow's


def refused(path: str = "/api/2.0/mlflow/runs/log-batch") -> MlflowException:
    """MLflow's message for a request to a server that is not there."""
    return MlflowException(
        f"API request to {BASE}{path} failed with exception HTTPConnectionPool(host='127.0.0.1', port=5000): Max "
        f"retries exceeded with url: {path} (Caused by NewConnectionError(\"HTTPConnection(host='127.0.0.1', "
        "port=5000): Failed to establish a new connection: [Errno 111] Connection refused\"))"
    )


def test_a_server_that_is_not_there_is_waited_for_and_one_that_failed_a_request_is_not() -> None:
    gone = unanswered(refused())
    assert gone is not None
    assert (gone.base, gone.what, gone.why) == (BASE, "/api/2.0/mlflow/runs/log-batch", "connection refused")
    proxy = MlflowException(
        f"API request to {BASE}/api/2.0/mlflow/runs/get failed with exception HTTPConnectionPool(host='127.0.0.1', "
        "port=5000): Max retries exceeded with url: /api/2.0/mlflow/runs/get (Caused by ResponseError('too many 503 "
        "error responses'))"
    )
    assert unanswered(proxy) is not None
    full = MlflowException(
        f"API request to {ARTIFACT} failed with exception HTTPConnectionPool(host='127.0.0.1', port=5000): Max retries "
        "exceeded with url: /api/2.0/mlflow-artifacts/... (Caused by ResponseError('too many 500 error responses'))"
    )
    assert unanswered(full) is None, "the server answered and failed it: no wait"
    assert unanswered(MlflowException("RESOURCE_DOES_NOT_EXIST: Run 'x' not found")) is None


def test_a_wait_tries_again_until_the_server_answers_then_ends_in_one_line(caplog: pytest.LogCaptureFixture) -> None:
    """Three refusals then an answer: the answer. A server that never answers: the window (0.3 s)
    ends in one line; after it, a request is tried once (no second window) until one is answered."""
    wait = ServerWait(window_s=30)
    tries = []

    def answers_on_the_fourth_try() -> str:
        tries.append(time.monotonic())
        if len(tries) < 4:
            raise refused()
        return "answered"

    with caplog.at_level(logging.WARNING, logger="ltr.tracking.server_wait"):
        assert wait.call(answers_on_the_fourth_try) == "answered"
    assert len(tries) == 4
    assert [round(b - a) for a, b in itertools.pairwise(tries)] == [1, 1, 1]  # PAUSE_S apart
    assert caplog.messages == [f"ltr: waiting for the tracking server {BASE} (0 s of 30 s; connection refused)"]

    def never() -> str:
        tries.append(time.monotonic())
        raise refused()

    short = ServerWait(window_s=0.3)
    tries.clear()
    with pytest.raises(ServerFault) as raised:
        short.call(never)
    assert str(raised.value) == (
        f"the MLflow server at {BASE} did not answer for 0 s (/api/2.0/mlflow/runs/log-batch: connection refused); "
        "tracking.server_wait_s=0.3 is how long a run waits for it"
    )
    assert server_fault(RuntimeError("ended")) is None
    outer = RuntimeError("while logging")
    outer.__cause__ = raised.value
    assert server_fault(outer) == str(raised.value), "found behind another exception"
    assert len(tries) == 2
    tries.clear()
    with pytest.raises(ServerFault, match="does not answer"):
        short.call(never)  # gave up already: once
    assert len(tries) == 1
    assert short.call(lambda: "back") == "back"
    assert not short.gave_up


def test_an_error_that_is_no_silence_is_raised_at_once() -> None:
    wait = ServerWait(window_s=30)
    tries = []

    def not_found() -> None:
        tries.append(1)
        raise MlflowException("RESOURCE_DOES_NOT_EXIST: Run 'x' not found")

    with pytest.raises(MlflowException, match="not found"):
        wait.call(not_found)
    assert tries == [1]


def test_a_unique_key_conflict_is_taken_for_made_by_another_job_and_asked_once_more() -> None:
    postgres = MlflowException(
        'BAD_REQUEST: (psycopg.errors.UniqueViolation) duplicate key value violates unique constraint "dataset_pk"\n'
        "DETAIL:  Key (experiment_id, name, digest)=(1, train, abc) already exists."
    )
    sqlite = MlflowException("(sqlite3.IntegrityError) UNIQUE constraint failed: datasets.experiment_id, datasets.name")
    assert unique_conflict(postgres)
    assert unique_conflict(sqlite)
    assert not unique_conflict(MlflowException("FOREIGN KEY constraint failed"))
    made: list[str] = []

    def make() -> str:
        if not made:
            made.append("theirs")
            raise postgres
        return "found"

    assert once_made(make, "the dataset train") == "found"
    with pytest.raises(MlflowException, match="UNIQUE constraint failed"):
        once_made(lambda: (_ for _ in ()).throw(sqlite), "twice")  # a second conflict is raised


def test_a_waiting_client_survives_pickling_and_passes_calls_on() -> None:
    """A launcher pickles a sweep's tracker, client included."""
    from mlflow.tracking import MlflowClient

    client = WaitingClient(MlflowClient(tracking_uri=BASE), ServerWait(window_s=7))
    copy = pickle.loads(pickle.dumps(client))
    assert copy.wait.window_s == 7
    assert copy.tracking_uri == BASE  # not a method: the client's own attribute
    assert copy.get_run.__name__ == "get_run"


def test_server_wait_s_below_0_is_refused_before_any_data_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["train", "debug=default", "tracking.server_wait_s=-1"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("ltr: error: ")
    assert "tracking.server_wait_s=-1" in line
    assert not (tmp_path / "mlflow.db").exists()

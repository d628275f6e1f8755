"""How a request a tracking server failed for good reads: one line naming the server and the
request (:func:`ltr.tracking.lifecycle.server_fault`), from MLflow's own messages."""

from __future__ import annotations

from mlflow.exceptions import MlflowException

from ltr.tracking.lifecycle import server_fault

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

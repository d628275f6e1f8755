"""Reading a finished run of a local sqlite store without MLflow (``ltr.tracking.sqlite.local_runs``)
gives what reading it through MLflow (``RunStore.resolve``) gives, or nothing (then MLflow
answers): checked against RunStore on a real store, with runs made by a real MlflowClient."""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from ltr.errors import LtrUserError
from ltr.tracking.runs import RunStore
from ltr.tracking.sqlite.local_runs import find_local_run
from ltr.tracking.sqlite.migrations import mlflow_head_revision, mlflow_revisions
from ltr.tracking.store import alembic_revisions
from ltr.tracking.uri import artifact_root_for
from tests.conftest import made_store


def _run(client: MlflowClient, experiment_id: str, name: str, status: str, artifacts: dict[str, str]) -> str:
    run = client.create_run(experiment_id, run_name=name, tags={"ltr.data.name": "tiny"})
    for path, text in artifacts.items():
        client.log_text(run.info.run_id, text, path)
    client.set_terminated(run.info.run_id, status)
    time.sleep(0.002)  # distinct start times, so "the latest finished" is well defined
    return str(run.info.run_id)


@pytest.fixture
def store(tmp_path: Path) -> tuple[str, dict[str, str]]:
    """A store with: a run named once; a name two finished runs share (and a killed one); a
    killed run; a run in another experiment."""
    uri = made_store(tmp_path / "mlflow.db")
    client = MlflowClient(tracking_uri=uri)
    artifacts = artifact_root_for(uri)  # beside the store, as ltr's trackers put them (not ./mlruns)
    ltr_id = client.create_experiment("ltr", artifact_location=artifacts)
    other_id = client.create_experiment("other", artifact_location=artifacts)
    model = {"model_text/model.txt": "tree\n"}
    ids = {
        "once": _run(client, ltr_id, "once", "FINISHED", model),
        "twice-old": _run(client, ltr_id, "twice", "FINISHED", model),
        "twice-killed": _run(client, ltr_id, "twice", "KILLED", {}),
        "twice-new": _run(client, ltr_id, "twice", "FINISHED", model),
        "killed": _run(client, ltr_id, "killed", "KILLED", model),
        "elsewhere": _run(client, other_id, "elsewhere", "FINISHED", model),
    }
    return uri, ids


def test_the_revisions_read_from_the_scripts_are_alembics() -> None:
    head, known = alembic_revisions()
    read = mlflow_revisions()
    assert read is not None
    assert (read.head, read.known) == (head, known)
    assert mlflow_head_revision() == head
    assert len(known) > 50  # MLflow 3's history, not an empty folder read as one


def test_a_finished_run_is_found_as_mlflow_finds_it(store: tuple[str, dict[str, str]]) -> None:
    uri, ids = store
    refs = ["once", "twice", ids["once"], ids["once"][:10], f"  {ids['twice-old']} ", ids["elsewhere"]]
    for ref in refs:
        local = find_local_run(uri, ref, experiment="ltr")
        mlflow_store = RunStore(uri)
        expected = mlflow_store.resolve(ref, experiment="ltr")
        assert local is not None, ref
        assert local.record == expected, ref
        assert local.notes == mlflow_store.notes, ref
        assert local.artifact("model_text/model.txt") is not None
        assert local.artifact("model_text/model.txt").read_text() == "tree\n"  # type: ignore[union-attr]
        assert local.artifact("config/config.yaml") is None
    found = find_local_run(uri, "twice", experiment="ltr")
    assert found is not None
    assert found.record.run_id == ids["twice-new"]
    assert found.notes
    assert "matches 3 runs" in found.notes[0]


def test_what_mlflow_must_answer_is_left_to_it(store: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    uri, ids = store
    # a run that did not finish (MLflow reaps dead runs and says why), no such run, a run of
    # another experiment by name, a name with a quote, nothing
    for ref in ["killed", ids["killed"], "nothing", "", "elsewhere", "it's", "0" * 32]:
        assert find_local_run(uri, ref, experiment="ltr") is None, ref
    assert find_local_run(uri, "once", experiment="no such experiment") is None
    assert find_local_run(f"sqlite:///{tmp_path / 'none.db'}", "once", experiment="ltr") is None
    assert find_local_run("http://127.0.0.1:1", "once", experiment="ltr") is None
    # a store at another schema revision: MLflow refuses it, and so the local read declines
    db = Path(uri.removeprefix("sqlite:///"))
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("UPDATE alembic_version SET version_num = 'cfd24bdc0731'")
    assert find_local_run(uri, "once", experiment="ltr") is None
    with pytest.raises(LtrUserError, match="schema version"):
        RunStore(uri)


def test_a_run_whose_artifacts_are_elsewhere_is_left_to_mlflow(store: tuple[str, dict[str, str]]) -> None:
    uri, ids = store
    db = Path(uri.removeprefix("sqlite:///"))
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("UPDATE runs SET artifact_uri = 'mlflow-artifacts:/1/x/artifacts' WHERE run_uuid = ?", (ids["once"],))
    assert find_local_run(uri, "once", experiment="ltr") is None
    assert find_local_run(uri, "twice", experiment="ltr") is not None


@pytest.mark.slow
def test_reading_a_local_run_does_not_import_mlflow(store: tuple[str, dict[str, str]]) -> None:
    uri, ids = store
    code = (
        "import sys; from ltr.tracking.sqlite.local_runs import find_local_run; "
        f"run = find_local_run({uri!r}, 'once', experiment='ltr'); "
        "print(run.record.run_id, 'mlflow' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == [ids["once"], "False"]

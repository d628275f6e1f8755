"""The reaper's line names the host id it ran as (issue 56): a run of another host taken for dead
by its silent heartbeat says which host reaped it, by name and by ``$LTR_HOST_ID`` (a machine
cloned from one image has the same host name as its source)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from ltr.tracking.liveness.heartbeat import TAG_HEARTBEAT, TAG_STALE_AFTER, beat_time
from ltr.tracking.store import TAG_ERROR, process_identity, process_tags, reap_dead_runs
from tests.conftest import made_store


def test_the_reaper_names_the_host_id_it_ran_as(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    client = MlflowClient(made_store(tmp_path / "mlflow.db"))
    experiment = client.create_experiment("ltr")
    other = {**process_identity(), "host": "host-a", "host_id": "id-of-host-a", "pid": "4242"}
    silent_since = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=600)
    tags = process_tags(other) | {TAG_HEARTBEAT: beat_time(silent_since), TAG_STALE_AFTER: "300"}
    run_id = client.create_run(experiment, tags=tags, run_name="silent").info.run_id
    monkeypatch.setenv("LTR_HOST_ID", "host-b-clone")
    assert reap_dead_runs(client, [experiment]) == [run_id]
    error = client.get_run(run_id).data.tags[TAG_ERROR]
    assert error.startswith("process 4242 on host-a sent no heartbeat for ")
    assert f"(found by ltr on {process_identity()['host']} as host id host-b-clone at " in error

"""ltr leaves MLflow's process-wide URIs as it found them (:mod:`ltr.tracking.mlflow_uris`): a
notebook that trains and promotes through ltr keeps its own MLflow tracking and registry."""

from __future__ import annotations

import os
from pathlib import Path

import mlflow
import pytest
from mlflow.tracking import MlflowClient
from mlflow.tracking._model_registry import utils as registry_utils
from mlflow.tracking._tracking_service import utils as tracking_utils

from ltr.cli.main import main as ltr_main
from ltr.experiment import run as pipeline
from ltr.tracking.mlflow_uris import REGISTRY_ENV, TRACKING_ENV, pointed_at
from tests.conftest import compose_train


def _state() -> tuple[object, object, str | None, str | None]:
    return (tracking_utils._tracking_uri, registry_utils._registry_uri,
            os.environ.get(TRACKING_ENV), os.environ.get(REGISTRY_ENV))  # fmt: skip


@pytest.mark.parametrize("user", [None, "sqlite:////tmp/the-users-own.db"])
def test_the_uris_are_the_stores_inside_and_the_users_after(user: str | None) -> None:
    for var in (TRACKING_ENV, REGISTRY_ENV):
        os.environ.pop(var, None)
    tracking_utils._tracking_uri, registry_utils._registry_uri = None, None
    if user is not None:
        mlflow.set_tracking_uri(user)
        mlflow.set_registry_uri(user)
    before = _state()
    with pointed_at("sqlite:////tmp/ltr-store.db", registry=True):
        assert mlflow.get_tracking_uri() == "sqlite:////tmp/ltr-store.db"
        assert mlflow.get_registry_uri() == "sqlite:////tmp/ltr-store.db"
        assert os.environ[TRACKING_ENV] == "sqlite:////tmp/ltr-store.db"
    assert _state() == before
    with pytest.raises(RuntimeError, match="inside"), pointed_at("sqlite:////tmp/ltr-store.db"):
        raise RuntimeError("inside")
    assert _state() == before
    assert (os.environ.get(TRACKING_ENV), os.environ.get(REGISTRY_ENV)) == (user, user)


def test_a_tracked_run_and_its_promotion_leave_the_users_mlflow_as_it_was(tmp_path: Path, tracking_uri: str) -> None:
    """The user's MLflow points at their own store; ltr trains into and promotes in another.
    (Before: the promotion left the registry URI at ltr's store, and a client made later in the
    process registered in, and read, the wrong registry.)"""
    users = f"sqlite:///{tmp_path / 'users.db'}"
    mlflow.set_tracking_uri(users)
    mlflow.set_registry_uri(users)
    before = _state()
    uri = tracking_uri
    outcome = pipeline.run(compose_train(["debug=default", "fit.show_progress=false", f"tracking.uri={uri}"]))
    assert _state() == before
    assert ltr_main(["promote", str(outcome.run_id), "--name", "ranker", "--n-resamples", "200", "--tracking-uri", uri]) == 0
    assert _state() == before
    version = MlflowClient(tracking_uri=uri, registry_uri=uri).get_model_version_by_alias("ranker", "champion")
    assert version.run_id == outcome.run_id
    assert MlflowClient(tracking_uri=users, registry_uri=users).search_registered_models() == []

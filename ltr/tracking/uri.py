"""Where the MLflow store lives: an absolute sqlite path by default, so Hydra never splits it."""

from __future__ import annotations

from pathlib import Path

DB_NAME = "mlflow.db"
ARTIFACTS_DIR = "mlartifacts"


def default_tracking_uri(root: Path | None = None) -> str:
    """``sqlite:///<root>/mlflow.db`` with ``root`` the launch directory (absolute)."""
    base = (root or Path.cwd()).resolve()
    return f"sqlite:///{base / DB_NAME}"


def resolve_tracking_uri(uri: str | None) -> str:
    """``tracking.uri`` as given, or the default local store when ``None``/empty.

    A relative sqlite path is made absolute against the launch directory.
    """
    if not uri:
        return default_tracking_uri()
    if uri.startswith("sqlite:///") and not uri.startswith("sqlite:////"):
        path = Path(uri.removeprefix("sqlite:///"))
        if not path.is_absolute():
            return f"sqlite:///{path.resolve()}"
    return uri


def artifact_root_for(uri: str) -> str | None:
    """Artifacts of a sqlite store go beside its database file; servers choose their own."""
    if uri.startswith("sqlite:///"):
        db_path = Path(uri.removeprefix("sqlite:///"))
        return (db_path.parent / ARTIFACTS_DIR).as_uri()
    return None


#: Where ``ltr ui`` serves by default.
UI_PORT = 5000
#: The experiment's shared view of the runs table (headline columns first), saved by each run
#: as the experiment tag ``mlflow.sharedViewState.ltr``.
VIEW_KEY = "ltr"


def ui_path(experiment_id: str, run_id: str | None = None, *, view: bool = True) -> str:
    """The UI's route (after ``#``) of a run's page, or of the experiment's runs table with our
    shared view (``view``: the experiment has one); both in model-training mode (not MLflow's
    GenAI screens)."""
    root = f"/experiments/{experiment_id}/runs"
    if run_id:
        return f"{root}/{run_id}?workflowType=machine_learning"
    shared = f"viewStateShareKey={VIEW_KEY}&" if view else ""
    return f"{root}?{shared}workflowType=machine_learning"


def ui_url(base: str, experiment_id: str, run_id: str | None = None, *, view: bool = True) -> str:
    """:func:`ui_path` on the UI at ``base`` (``http://127.0.0.1:5000``, a tracking server)."""
    return f"{base.rstrip('/')}/#{ui_path(experiment_id, run_id, view=view)}"

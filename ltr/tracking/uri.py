"""Where the MLflow store lives: an absolute sqlite path by default, so Hydra never splits it."""

from __future__ import annotations

import os
import urllib.parse
from pathlib import Path

DB_NAME = "mlflow.db"
ARTIFACTS_DIR = "mlartifacts"
#: Environment variables that name the store runs are read from, in this order.
URI_ENV_VARS = ("LTR_TRACKING_URI", "MLFLOW_TRACKING_URI")
#: A directory holding one of these is a project root: the last place a store is looked for.
ROOT_MARKERS = ("pyproject.toml", ".git")


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


def project_root(start: Path | None = None) -> Path | None:
    """The nearest of ``start`` (default: cwd) and its parents that holds ``pyproject.toml`` or
    ``.git``; None outside a project."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if any((folder / marker).exists() for marker in ROOT_MARKERS):
            return folder
    return None


def uri_from_environment() -> tuple[str, str] | None:
    """``(variable, value)`` of the first of :data:`URI_ENV_VARS` set to a non-blank value, else
    None. ``mlflow.set_tracking_uri(X)`` sets ``$MLFLOW_TRACKING_URI`` in MLflow 3, so a notebook
    that points its MLflow somewhere points ``ltr`` there too."""
    for var in URI_ENV_VARS:
        value = os.environ.get(var, "").strip()
        if value:
            return var, value
    return None


def find_tracking_uri(uri: str | None = None, *, start: Path | None = None, writing: bool = False) -> str:
    """The store of every command and of the Python API, readers (``ltr predict``, ``promote``,
    ``compare``, ``rerun``, ``abtest``, ``ui``, ``ltr.api``, the notebooks) and ``ltr train``
    (``writing``) alike: the first of

    1. ``uri`` as given (``--tracking-uri``, a function's argument, ``tracking.uri``);
    2. ``$LTR_TRACKING_URI``, then ``$MLFLOW_TRACKING_URI`` (:func:`uri_from_environment`);
    3. ``mlflow.db`` in ``start`` (default: the working directory), where ``ltr train`` writes
       (``writing``: always this one, created if missing);
    4. ``mlflow.db`` in the project root above it (:func:`project_root`), so a notebook in
       ``notebooks/`` finds the store ``make train`` wrote at the root;
    5. else ``sqlite:///<start>/mlflow.db``, which readers refuse as "no MLflow store at ...".

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     root = Path(tmp)
    ...     _ = (root / "pyproject.toml").write_text("")
    ...     _ = (root / "mlflow.db").write_bytes(b"")
    ...     (root / "notebooks").mkdir()
    ...     found = find_tracking_uri(start=root / "notebooks")
    ...     written = find_tracking_uri(start=root / "notebooks", writing=True)
    ...     found == f"sqlite:///{(root / 'mlflow.db').resolve()}", written.endswith("notebooks/mlflow.db")
    (True, True)
    """
    if uri:
        return resolve_tracking_uri(uri)
    from_environment = uri_from_environment()
    if from_environment is not None:
        return resolve_tracking_uri(from_environment[1])
    here = (start or Path.cwd()).resolve()
    if writing:
        return default_tracking_uri(here)
    root = project_root(here)
    for folder in (here, root):
        if folder is not None and (folder / DB_NAME).is_file():
            return default_tracking_uri(folder)
    return default_tracking_uri(here)


def environment_variable_of(uri: str) -> str | None:
    """The variable (``MLFLOW_TRACKING_URI``) whose value is the store ``uri``, if it is the one
    :func:`uri_from_environment` gives; a message about the store names it, so a user sees why
    it is that store."""
    from_environment = uri_from_environment()
    if from_environment is None or resolve_tracking_uri(from_environment[1]) != resolve_tracking_uri(uri):
        return None
    return from_environment[0]


def redacted(uri: str) -> str:
    """``uri`` with its password (``postgresql://user:secret@host/db``) shown as ``***``.

    >>> redacted("postgresql://me:secret@db:5432/mlflow")
    'postgresql://me:***@db:5432/mlflow'
    """
    parts = urllib.parse.urlsplit(uri)
    if parts.password is None:
        return uri
    return uri.replace(f":{parts.password}@", ":***@", 1)


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

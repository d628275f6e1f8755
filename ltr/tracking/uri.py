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

"""Find a finished run of a local sqlite store without importing MLflow (``ltr predict``'s start).

Importing MLflow and its SQLAlchemy store costs ``ltr predict`` about 4 s of CPU (measured on the
2-core machine, #24), more than scoring 300,000 rows; what predict needs of the store is one run
(id, name, status, tags) and two of its artifact files (``config/config.yaml``,
``model_text/model.txt``). For a ``sqlite:///`` store whose artifacts are local files,
:func:`find_local_run` reads them with the standard library's ``sqlite3`` (read-only) from the
tables of MLflow's schema (``experiments``, ``runs``, ``tags``), as
:mod:`ltr.tracking.sqlite.moved` already does, and gives the run's artifact folder.

It answers only where the answer is the one :meth:`ltr.tracking.runs.RunStore.resolve` gives;
otherwise it returns None and the caller opens the store through MLflow, whose checks and
messages then apply unchanged. None when:

- the URI is not a plain ``sqlite:///path`` to an existing file, or ``MLFLOW_WORKSPACE`` is set;
- the store's schema is not MLflow's head (``alembic_version`` against the head of the installed
  MLflow's migration scripts, read from their files), or a migration left ``_alembic_tmp_`` tables
  (``ltr.tracking.store`` refuses or rebuilds such stores);
- the reference does not resolve, by ``RunStore.resolve``'s rules (run id in any experiment; run
  name in the experiment, the latest finished one of several; a unique id prefix), to a FINISHED
  run: a run that did not finish, or no run, goes through MLflow, which reaps dead runs and says
  what is wrong; a name with a quote or backslash in it goes through MLflow too;
- the experiment is not in MLflow's default workspace, or names several;
- the experiments' artifact locations point at a moved store's folder (the store then needs
  :func:`ltr.tracking.sqlite.moved.follow_moved_artifacts`, which opening it through MLflow does);
- the run's artifact location is not a local folder (``mlflow-artifacts:``, ``s3://``, ...).

What opening through MLflow does and this does not: reap the store's dead runs (RUNNING runs
whose process is gone; :func:`ltr.tracking.store.reap_dead_runs`). A finished run is never
reaped, so the answer is the same; the next command that opens the store with MLflow (``ltr
train``, ``ltr compare``, ``ltr ui``) reaps them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sqlite3
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

from ltr.tracking.records import RunRecord
from ltr.tracking.sqlite.lock import SQLITE_PREFIX
from ltr.tracking.sqlite.migrations import mlflow_head_revision
from ltr.tracking.sqlite.moved import moved_roots

log = logging.getLogger(__name__)

_RUN_ID = re.compile(r"[0-9a-f]{32}")
_ID_PREFIX = re.compile(r"[0-9a-f]{1,31}")
#: MLflow's tag holding a run's name (``attributes.run_name`` filters match it).
_RUN_NAME_TAG = "mlflow.runName"
_DEFAULT_WORKSPACE = "default"


@dataclass(frozen=True)
class LocalRun:
    """A FINISHED run of a local sqlite store and the folder of its artifacts."""

    uri: str
    record: RunRecord
    artifacts: Path
    #: what resolving the reference decided on the user's behalf (as ``RunStore.notes``)
    notes: list[str] = field(default_factory=list)

    def artifact(self, path: str) -> Path | None:
        """The local file of the run's artifact ``path``, or None when it is not there."""
        found = self.artifacts / path
        return found if found.is_file() else None


def _db_path(uri: str) -> Path | None:
    if not uri.startswith(SQLITE_PREFIX) or "?" in uri:
        return None
    db = Path(uri.removeprefix(SQLITE_PREFIX))
    return db if db.is_absolute() and db.is_file() else None


def _local_folder(location: str | None) -> Path | None:
    """The folder of a ``file://`` (or plain absolute path) artifact location; None otherwise."""
    if not location:
        return None
    if location.startswith("file://"):
        parsed = urllib.parse.urlparse(location)
        if parsed.netloc not in ("", "localhost"):
            return None
        path = Path(urllib.parse.unquote(parsed.path))
    elif location.startswith("/"):
        path = Path(location)
    else:
        return None
    return path if path.is_dir() else None


def find_local_run(uri: str, ref: str, *, experiment: str) -> LocalRun | None:
    """The FINISHED run ``ref`` names in the local store ``uri`` (a resolved tracking URI), read
    without MLflow; None whenever MLflow must answer (see the module docstring)."""
    db = _db_path(uri)
    ref = ref.strip()
    if db is None or not ref or "'" in ref or "\\" in ref or os.environ.get("MLFLOW_WORKSPACE"):
        return None
    try:
        with contextlib.closing(sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True, timeout=30)) as conn:
            return _find(conn, db, uri, ref, experiment)
    except sqlite3.Error as exc:  # not (yet) MLflow's schema, locked, unreadable: MLflow says
        log.debug("ltr: reading %s without MLflow failed: %s", db, exc)
        return None


def _find(conn: sqlite3.Connection, db: Path, uri: str, ref: str, experiment: str) -> LocalRun | None:
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    head = mlflow_head_revision()
    if head is None or any(t.startswith("_alembic_tmp_") for t in tables) or "alembic_version" not in tables:
        return None
    if [r[0] for r in conn.execute("SELECT version_num FROM alembic_version")] != [head]:
        return None
    locations = [str(loc or "") for (loc,) in conn.execute("SELECT artifact_location FROM experiments")]
    if moved_roots(db, locations):
        return None
    workspaces = "workspace" in {r[1] for r in conn.execute("PRAGMA table_info(experiments)")}
    notes: list[str] = []
    run = _by_id(conn, ref, workspaces) if _RUN_ID.fullmatch(ref) else None
    if run is None:
        rows = conn.execute(
            "SELECT experiment_id" + (", workspace" if workspaces else "") + " FROM experiments WHERE name = ?",
            (experiment,),
        ).fetchall()
        if len(rows) != 1 or (workspaces and rows[0][1] != _DEFAULT_WORKSPACE):
            return None
        run, notes = _by_name_or_prefix(conn, int(rows[0][0]), ref)
    if run is None:
        return None
    run_id, name, status, location, experiment_id = run
    if status != "FINISHED":
        return None
    folder = _local_folder(location)
    if folder is None:
        return None
    tags = dict(conn.execute("SELECT key, value FROM tags WHERE run_uuid = ?", (run_id,)).fetchall())
    record = RunRecord(
        run_id=run_id,
        run_name=name or tags.get(_RUN_NAME_TAG, ""),
        experiment_id=str(experiment_id),
        status=status,
        tags=tags,
    )
    return LocalRun(uri, record, folder, notes)


_RUN_COLUMNS = "r.run_uuid, r.name, r.status, r.artifact_uri, r.experiment_id"


def _by_id(conn: sqlite3.Connection, run_id: str, workspaces: bool) -> tuple[str, str, str, str, int] | None:
    row = conn.execute(
        f"SELECT {_RUN_COLUMNS}" + (", e.workspace" if workspaces else "")
        + " FROM runs r JOIN experiments e ON e.experiment_id = r.experiment_id"
        " WHERE r.run_uuid = ? AND r.lifecycle_stage != 'deleted'",
        (run_id,),
    ).fetchone()
    if row is None or (workspaces and row[5] != _DEFAULT_WORKSPACE):
        return None
    return (row[0], row[1], row[2], row[3], row[4])


def _by_name_or_prefix(
    conn: sqlite3.Connection, experiment_id: int, ref: str
) -> tuple[tuple[str, str, str, str, int] | None, list[str]]:
    """``RunStore._resolve``'s name, then prefix, rules on the active runs of one experiment."""
    by_name = conn.execute(
        f"SELECT {_RUN_COLUMNS}, r.start_time FROM runs r JOIN tags t ON t.run_uuid = r.run_uuid"
        " WHERE r.experiment_id = ? AND r.lifecycle_stage = 'active' AND t.key = ? AND t.value = ?",
        (experiment_id, _RUN_NAME_TAG, ref),
    ).fetchall()
    if len(by_name) == 1:
        return tuple(by_name[0][:5]), []
    finished = [r for r in by_name if r[2] == "FINISHED"]
    if finished:
        latest = max(finished, key=lambda r: (r[5] or 0, r[0]))
        notes = [
            f"run name {ref!r} matches {len(by_name)} runs; using the latest finished one, "
            f"{latest[0][:8]} (pass a run id for another)"
        ]
        return tuple(latest[:5]), notes
    if by_name or not _ID_PREFIX.fullmatch(ref):
        return None, []
    by_prefix = conn.execute(
        f"SELECT {_RUN_COLUMNS} FROM runs r WHERE r.experiment_id = ? AND r.lifecycle_stage = 'active'"
        " AND substr(r.run_uuid, 1, ?) = ?",
        (experiment_id, len(ref), ref),
    ).fetchall()
    return (tuple(by_prefix[0]) if len(by_prefix) == 1 else None), []

"""New sqlite stores copied from an empty one instead of built by MLflow's migrations.

MLflow builds a new sqlite store by running every schema migration of its history (2.2 s of a
2-core machine, each time a new ``tracking.uri`` is first used: a fresh clone's first run, each
test or benchmark with its own store). An empty store holds three rows: the schema version, the
Default experiment and the default workspace. So the first store built by the migrations is kept
as a *template*, ``<cache>/mlflow-stores/empty-<MLflow version>-<schema head>.db``
(:func:`ltr.config.groups.data.default_cache_dir`), and later stores are copies of it, with what MLflow
writes per store set as MLflow sets it: the Default experiment's artifact location
(``<artifact root>/0``) and its creation and update times (now, in ms). A store made this way
holds the same schema and rows as one MLflow builds (``tests/tracking/test_store.py``).

A template is used only when it is the installed MLflow's (its version and the schema head read
from its migration scripts in the name) and the copy passes the same inspection as a built store;
one that fails (or is no database) is removed, and the store built by the migrations becomes the
next template. Templates are written atomically
(a temporary file renamed), so concurrent creators copy a complete one or none; a cache folder
that cannot be written only means the migrations run each time.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sqlite3
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from ltr.config.groups.data import default_cache_dir
from ltr.tracking.sqlite.migrations import mlflow_head_revision

log = logging.getLogger(__name__)

#: The Default experiment MLflow creates in every new store.
DEFAULT_EXPERIMENT_ID = 0


def template_path() -> Path | None:
    """The installed MLflow's empty-store template (it may not exist yet); None when its schema
    head cannot be read from the migration scripts."""
    head = mlflow_head_revision()
    if head is None:
        return None
    try:
        version = metadata.version("mlflow")
    except metadata.PackageNotFoundError:
        return None
    return default_cache_dir().expanduser() / "mlflow-stores" / f"empty-{version}-{head}.db"


def copy_template(target: Path, artifact_root: str, *, complete: Callable[[Path], bool]) -> bool:
    """Fill ``target`` (a new file nobody else reads yet) with a copy of the template, its Default
    experiment's artifacts under ``artifact_root``, when the copy is ``complete``; else (no
    template, or one that is no database or not complete: removed) False, ``target`` empty."""
    template = template_path()
    if template is None or not template.is_file():
        return False
    try:
        shutil.copyfile(template, target)
        now = int(time.time() * 1000)
        with contextlib.closing(sqlite3.connect(target)) as con, con:
            con.execute(
                "UPDATE experiments SET artifact_location = ?, creation_time = ?, last_update_time = ? "
                "WHERE experiment_id = ?",
                (f"{artifact_root}/{DEFAULT_EXPERIMENT_ID}", now, now, DEFAULT_EXPERIMENT_ID),
            )
        if complete(target):
            return True
        log.debug("the store template %s is not a complete store", template)
        discard_template()  # the next store the migrations build is kept instead
    except (OSError, sqlite3.Error) as exc:
        log.debug("not copying the store template %s: %s", template, exc)
        if isinstance(exc, sqlite3.Error):  # not a store: the next build keeps a new template
            discard_template()
    with contextlib.suppress(OSError):
        target.write_bytes(b"")
    return False


def keep_template(built: Path) -> None:
    """Keep ``built`` (a complete empty store the migrations just built) as the template, unless
    one exists; failures are ignored (the next creation builds again)."""
    template = template_path()
    if template is None or template.is_file():
        return
    tmp = template.with_name(f".{template.name}.{os.getpid()}.tmp")
    try:
        template.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, tmp)
        os.replace(tmp, template)
    except OSError as exc:
        log.debug("not keeping a store template at %s: %s", template, exc)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def discard_template() -> None:
    """Remove the template (a copy of it was no complete store)."""
    template = template_path()
    if template is not None:
        with contextlib.suppress(OSError):
            template.unlink(missing_ok=True)

"""A local store that was copied or moved keeps its artifacts: they follow the database.

A sqlite store records absolute artifact locations (``file:///A/mlartifacts/1`` for an
experiment, ``.../<run id>/artifacts`` for each run). Copy ``A/`` to ``B/`` and the copy still
reads and writes ``A``'s artifacts: a rerun from ``B`` would recreate ``A``'s folders, and with
``A`` removed the copy's runs lose their artifacts. :func:`follow_moved_artifacts` repoints the
copy at its own ``mlartifacts`` folder (``B/mlartifacts``, where :func:`ltr.tracking.uri.artifact_root_for`
puts a new store's artifacts) when that folder is there: the artifacts were copied with the
database. Locations elsewhere (a custom root, a server's) are never touched.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

from ltr.tracking.uri import ARTIFACTS_DIR

log = logging.getLogger(__name__)


def moved_roots(db: Path, locations: list[str]) -> dict[str, str]:
    """Old ``file://.../mlartifacts`` root -> this store's own, for each experiment location
    of another store's layout (``.../mlartifacts``, or ``.../mlartifacts/<id>`` for MLflow's
    Default experiment) when this store has its own ``mlartifacts`` folder (copied along)."""
    own = db.parent.resolve() / ARTIFACTS_DIR
    roots: dict[str, str] = {}
    if not own.is_dir():
        return roots
    for location in locations:
        if not location.startswith("file://"):
            continue
        path = Path(location.removeprefix("file://"))
        root = path if path.name == ARTIFACTS_DIR else path.parent
        if root.name == ARTIFACTS_DIR and root != own:
            roots[root.as_uri()] = own.as_uri()
    return roots


def follow_moved_artifacts(db: Path) -> None:
    """Repoint the experiments and runs of the sqlite store ``db`` at ``<db dir>/mlartifacts``
    when they name another store's ``mlartifacts`` folder that was copied beside ``db`` (see the
    module docstring). Call it under the store lock; a store we cannot write is left as is."""
    try:
        with sqlite3.connect(db) as conn:
            rows = conn.execute("SELECT artifact_location FROM experiments").fetchall()
            roots = moved_roots(db, [str(loc or "") for (loc,) in rows])
            for old, new in roots.items():
                for table, column in (("experiments", "artifact_location"), ("runs", "artifact_uri")):
                    conn.execute(
                        f"UPDATE {table} SET {column} = ? || substr({column}, ?) WHERE {column} = ? OR {column} LIKE ? || '/%'",
                        (new, len(old) + 1, old, old),
                    )
                log.info("ltr: the store %s was moved: its artifacts are read from %s (were %s)", db, new, old)
    except sqlite3.Error as exc:  # read-only, or not (yet) an MLflow schema: nothing to follow
        log.debug("ltr: not following moved artifacts of %s: %s", db, exc)

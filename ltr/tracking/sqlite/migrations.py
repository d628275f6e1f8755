"""The installed MLflow's store schema history, read from its migration scripts without importing
MLflow or alembic.

MLflow's sqlite schema is versioned by alembic: each script of
``mlflow/store/db_migrations/versions/`` declares its ``revision`` and ``down_revision``
(a parent, a tuple of parents for a merge, or None for the first). :func:`mlflow_revisions` reads
those two lines of every script (a few ms) where alembic's ``ScriptDirectory`` imports every
script as a module (0.7 s of a 2-core machine, on every ``ltr train``'s store check).
``tests/tracking/test_local_runs.py`` checks both give the same head and the same revisions.
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

_REVISION = re.compile(r"^revision\s*(?::[^=]*)?=\s*['\"](\w+)['\"]", re.MULTILINE)
_DOWN_REVISION = re.compile(r"^down_revision\s*(?::[^=]*)?=\s*(.+)$", re.MULTILINE)


@dataclass(frozen=True)
class Revisions:
    """The schema head (the one revision no script names as its parent) and every revision."""

    head: str
    known: frozenset[str]


@lru_cache(maxsize=1)
def mlflow_revisions() -> Revisions | None:
    """The installed MLflow's migration history; None when it has not one clear head, a script
    names a parent no script declares, or the scripts cannot be read (callers then ask MLflow or
    alembic)."""
    spec = importlib.util.find_spec("mlflow")
    if spec is None or not spec.submodule_search_locations:
        return None
    versions = Path(next(iter(spec.submodule_search_locations))) / "store" / "db_migrations" / "versions"
    revisions: set[str] = set()
    parents: set[str] = set()
    try:
        for script in sorted(versions.glob("*.py")):
            text = script.read_text(encoding="utf-8")
            found = _REVISION.search(text)
            if found is None:
                continue
            revisions.add(found.group(1))
            down = _DOWN_REVISION.search(text)
            if down is not None:
                parents.update(re.findall(r"['\"](\w+)['\"]", down.group(1)))
    except OSError:
        return None
    heads = revisions - parents
    if len(heads) != 1 or not parents <= revisions:
        return None
    return Revisions(next(iter(heads)), frozenset(revisions))


def mlflow_head_revision() -> str | None:
    """The head of :func:`mlflow_revisions`, or None."""
    revisions = mlflow_revisions()
    return None if revisions is None else revisions.head

"""Fixtures of the reliability tests: the Optuna storages a fault is tried on (a sqlite file, and a
database on a real PostgreSQL server, :mod:`tests.postgres`)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.postgres import create_database, running_postgres

#: The kinds of Optuna storage the storage-fault tests run on.
STORAGE_KINDS = ["sqlite", "postgresql"]


@pytest.fixture(scope="session")
def postgres_port() -> Iterator[int]:
    """A PostgreSQL server for the tests of this folder (started once, when a test first needs
    it; skipped, with one reason, without the server binaries)."""
    with running_postgres() as port:
        yield port


@pytest.fixture(params=STORAGE_KINDS)
def study_storage(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[str], str]:
    """A maker of new, empty Optuna storages: ``name`` -> its database URL (another database for
    each name): a sqlite file, or a database of the PostgreSQL server."""
    if request.param == "postgresql":
        port: int = request.getfixturevalue("postgres_port")
        return lambda name: create_database(port, f"{name}_{uuid.uuid4().hex[:8]}")
    folder = tmp_path / "studies"
    folder.mkdir()

    def sqlite(name: str) -> str:
        return f"sqlite:///{folder / f'{name}.db'}"

    return sqlite

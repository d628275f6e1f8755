"""Fixtures of the reliability tests: the Optuna storages a fault is tried on."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

#: The kinds of Optuna storage the storage-fault tests run on.
STORAGE_KINDS = ["sqlite"]


@pytest.fixture(params=STORAGE_KINDS)
def study_storage(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[str], str]:
    """A maker of new, empty Optuna storages: ``name`` -> its database URL (another database for
    each name)."""
    folder = tmp_path / "studies"
    folder.mkdir()

    def sqlite(name: str) -> str:
        return f"sqlite:///{folder / f'{name}.db'}"

    return sqlite

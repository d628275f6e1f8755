"""Every test runs outside the checkout, in an empty folder of its own, and a module's fixtures in
the module's folder above them (``tests/conftest.py``): the store ``make train`` leaves at the root
(README's first command) is not found by the tests of ``make test`` (its second), and nothing a
test runs writes into it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ltr.tracking.uri import find_tracking_uri, project_root
from tests.conftest import REPO


@pytest.fixture(scope="module")
def module_folder() -> Path:
    """The working directory of this module's fixtures."""
    return Path.cwd().resolve()


def test_a_test_works_in_an_empty_folder_outside_the_checkout() -> None:
    here = Path.cwd().resolve()
    assert not here.is_relative_to(REPO.resolve())
    assert os.listdir(here) == []
    assert project_root(here) is None
    assert find_tracking_uri() == f"sqlite:///{here / 'mlflow.db'}"


def test_a_test_has_its_own_folder_in_its_modules(module_folder: Path) -> None:
    here = Path.cwd().resolve()
    assert here != module_folder
    assert here.parent == module_folder
    assert not module_folder.is_relative_to(REPO.resolve())
    assert project_root(module_folder) is None

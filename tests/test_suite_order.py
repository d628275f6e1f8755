"""The order ``make test``'s processes take the modules in (``tests/conftest.py``): the longest
first, each module's tests together and in their own order."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from tests.conftest import LONGEST_MODULES, REPO, _longest_first


def test_every_longest_module_exists_once() -> None:
    assert len(set(LONGEST_MODULES)) == len(LONGEST_MODULES)
    missing = [m for m in LONGEST_MODULES if not (REPO / m).is_file()]
    assert missing == [], "renamed or removed: update tests/conftest.py's LONGEST_MODULES"


def test_the_longest_modules_come_first_then_the_most_tests() -> None:
    def items(module: str, n: int) -> list[Any]:
        return [SimpleNamespace(fspath=REPO / module, name=f"{module}::{i}") for i in range(n)]

    small, big = items("tests/test_synthetic.py", 2), items("tests/metrics/test_top.py", 3)
    long_b, long_a = items(LONGEST_MODULES[1], 1), items(LONGEST_MODULES[0], 2)
    given = [*small, *long_b, *big, *long_a]
    ordered = _longest_first(given)
    assert [item.name for item in ordered] == [item.name for item in [*long_a, *long_b, *big, *small]]

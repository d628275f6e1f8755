"""The examples of the manual's pages of :data:`tests.docs.pages.FIRST_HALF` run (tests/docs/examples.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.examples import page_id, pages, run_page
from tests.docs.pages import FIRST_HALF

PAGES = [p for p in pages() if page_id(p) in FIRST_HALF]


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_page_examples_run(page: Path, tmp_path: Path) -> None:
    run_page(page, tmp_path)

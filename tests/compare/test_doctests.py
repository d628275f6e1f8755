"""The examples in the docstrings of the compare modules run."""

from __future__ import annotations

import doctest
import importlib

import pytest

from ltr.cli.compare import main

MODULES = ["ltr.compare.stats", "ltr.compare.align", "ltr.compare.comparison", "ltr.compare.render", "ltr.compare.plots"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0


def test_help_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "--baseline" in capsys.readouterr().out

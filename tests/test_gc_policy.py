"""The ``ltr`` process's garbage collector (:mod:`ltr.cli.support.gc_policy`): no full collection in a
command of ltr's size, young cyclic garbage freed as always, in-process callers untouched."""

from __future__ import annotations

import gc
import subprocess
import sys
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

from ltr.cli.main import main
from ltr.cli.support.gc_policy import FULL_EVERY, collect_rarely


@pytest.fixture
def thresholds() -> Iterator[tuple[int, int, int]]:
    before = gc.get_threshold()
    try:
        yield before
    finally:
        gc.set_threshold(*before)


class Node:
    """A container object that can sit in a reference cycle (and be weakly referenced)."""

    def __init__(self) -> None:
        self.other: Node | None = None


def test_only_the_full_collection_is_made_rare(thresholds: tuple[int, int, int]) -> None:
    collect_rarely()
    assert gc.get_threshold() == (thresholds[0], thresholds[1], FULL_EVERY)


def test_young_cycles_are_still_freed_without_an_explicit_collection(thresholds: tuple[int, int, int]) -> None:
    collect_rarely()
    gc.collect()  # start from empty young generations
    a, b = Node(), Node()
    a.other, b.other = b, a
    gone = weakref.ref(a)
    del a, b
    assert gone() is not None  # a cycle: reference counting alone cannot free it
    keep = [[] for _ in range(5 * thresholds[0])]  # allocations trigger generation-0 collections
    assert gone() is None
    del keep


def test_in_process_callers_keep_their_collector(thresholds: tuple[int, int, int], capsys: pytest.CaptureFixture[str]) -> None:
    """Only the process entry (``ltr.cli.main.run``) sets the policy; ``main`` (tests, scripts) does not."""
    assert main(["--help"]) == 0
    assert gc.get_threshold() == thresholds
    assert "usage" in capsys.readouterr().out.lower()


PROBE = """
import atexit, gc, sys
full = []
gc.callbacks.append(lambda phase, info: full.append(1) if phase == "stop" and info["generation"] == 2 else None)
atexit.register(lambda: print("full collections", len(full), "matplotlib", "matplotlib" in sys.modules, file=sys.stderr))
sys.argv = ["ltr", *sys.argv[1:]]
from ltr.cli.main import run
run()
"""


@pytest.mark.slow
def test_a_tracked_train_runs_no_full_collection_and_loads_no_matplotlib(tmp_path: Path) -> None:
    """The ``ltr train`` process (as the console script runs it): its figures are drawn by its
    figure worker, and its collector runs no full collection; the run is logged as always."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    out = subprocess.run(
        [sys.executable, "-c", PROBE, "train", "data.n_queries=300", "fit.num_boost_round=40", "model.num_leaves=7",
         f"tracking.uri={uri}", f"hydra.run.dir={tmp_path / 'run'}"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    assert "full collections 0 matplotlib False" in out.stderr.splitlines()[-1]
    assert "MLflow run " in out.stdout

"""`top_rows`: the first-ranked row of every query under each tie convention, against a sort."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ltr.metrics.top import top_rows
from tests.conftest import examples


def _reference(scores: np.ndarray, labels: np.ndarray, keys: np.ndarray, offsets: np.ndarray, ties: str) -> list[int]:
    """Sort every query's rows by (-score, tie rule, row) and take the first."""
    out = []
    for q in range(len(offsets) - 1):
        rows = list(range(int(offsets[q]), int(offsets[q + 1])))
        if not rows:
            out.append(-1)
            continue
        rule = {
            "stable": lambda r: 0, "average": lambda r: 0, "pessimistic": lambda r: labels[r],
            "optimistic": lambda r: -labels[r], "docno_desc": lambda r: -keys[r],
        }[ties]
        out.append(min(rows, key=lambda r: (-scores[r], rule(r), r)))
    return out


@settings(max_examples=examples(150), deadline=None)
@given(
    sizes=st.lists(st.integers(0, 6), min_size=1, max_size=8),
    ties=st.sampled_from(["stable", "average", "pessimistic", "optimistic", "docno_desc"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_top_rows_equals_sorting_each_query(sizes: list[int], ties: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(offsets[-1])
    scores = rng.integers(0, 3, n).astype(np.float64)  # few values: many ties
    labels = rng.integers(0, 4, n)
    keys = rng.permutation(n)
    got = top_rows(scores, offsets, labels=labels, ties=ties, tie_keys=keys)
    assert got.tolist() == _reference(scores, labels, keys, offsets, ties)


def test_top_rows_refuses_what_it_cannot_order() -> None:
    off = np.array([0, 2])
    with pytest.raises(ValueError, match="needs the labels"):
        top_rows(np.zeros(2), off, ties="pessimistic")
    with pytest.raises(ValueError, match="needs tie_keys"):
        top_rows(np.zeros(2), off, ties="docno_desc")
    with pytest.raises(ValueError, match="is NaN"):
        top_rows(np.array([0.0, np.nan]), off)


def test_docstring_examples_run() -> None:
    import doctest

    from ltr.metrics import top

    result = doctest.testmod(top)
    assert result.attempted > 0
    assert result.failed == 0

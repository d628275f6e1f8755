"""Progress with the time left (:mod:`ltr.runtime.progress`): the one rule every long command prints by."""

from __future__ import annotations

import doctest

import pytest

import ltr.runtime.progress
from ltr.runtime.progress import ProgressLine, rich_columns, time_left

pytestmark = pytest.mark.unit


def test_doctests() -> None:
    assert doctest.testmod(ltr.runtime.progress).failed == 0


@pytest.mark.parametrize(
    ("elapsed", "done", "total", "text"),
    [
        (10.0, 5, 10, "about 10 s left"),  # 2 s a step, 5 steps left
        (0.0, 0, 10, "about 0 s left"),  # nothing done yet: no pace, nothing claimed
        (60.0, 1, 3, "about 2 min left"),  # 120 s: minutes from 90 s on
        (3600.0, 1, 4, "about 3.0 h left"),  # 10,800 s: hours from 90 min on
        (5.0, 7, 7, "done"),
    ],
)
def test_time_left_is_the_mean_pace_times_the_steps_left(elapsed: float, done: int, total: int, text: str) -> None:
    assert time_left(elapsed, done, total) == text


def test_a_progress_line_is_quiet_at_first_then_throttled_then_says_done(capsys: pytest.CaptureFixture[str]) -> None:
    now = [0.0]
    line = ProgressLine("fits", quiet_s=3.0, every_s=10.0, clock=lambda: now[0])
    for step, t in enumerate([1.0, 2.0, 4.0, 6.0, 15.0, 16.0], start=1):
        now[0] = t
        line(step, 10)
    now[0] = 20.0
    line(10, 10)
    assert capsys.readouterr().err.splitlines() == [
        "fits: 3/10, about 9 s left",  # 4 s for 3 steps, 7 steps left
        "fits: 5/10, about 15 s left",  # 10 s after the last line: 15 s for 5 steps
        "fits: 10/10, done",  # the end always shows
    ]


def test_a_rich_bar_shows_the_time_left() -> None:
    from rich.progress import TimeRemainingColumn

    assert any(isinstance(column, TimeRemainingColumn) for column in rich_columns("boosting"))

"""Progress of long work, with the time left: one rule for every command.

:func:`time_left` says how long the rest of a job of ``total`` equal steps takes at the pace so
far; :class:`ProgressLine` prints ``<label>: done/total, about N s left`` on stderr for work that
is not on a terminal's progress bar, once the work has taken a few seconds, then every few
seconds and at the end; :func:`rich_columns` are the columns of a rich bar, time left included.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from typing import Any

__all__ = ["ProgressLine", "rich_columns", "time_left"]


def time_left(elapsed: float, done: int, total: int) -> str:
    """``about 12 s left`` / ``about 3 min left`` / ``about 2.0 h left`` at the mean pace so far;
    ``done`` when nothing is left.

    >>> time_left(10.0, 5, 10), time_left(30.0, 1, 10), time_left(1.0, 4, 4)
    ('about 10 s left', 'about 4 min left', 'done')
    """
    if done >= total:
        return "done"
    left = elapsed / max(done, 1) * (total - done)
    if left < 90:
        return f"about {left:.0f} s left"
    if left < 5400:
        return f"about {left / 60:.0f} min left"
    return f"about {left / 3600:.1f} h left"


class ProgressLine:
    """``progress(done, total)``: a line on stderr, ``<label>: done/total, about N s left``, once
    the work has taken :attr:`quiet_s` seconds, then every :attr:`every_s` seconds and at the end
    (quick work prints nothing)."""

    def __init__(self, label: str, *, quiet_s: float = 3.0, every_s: float = 10.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.label, self.quiet_s, self.every_s, self.clock = label, quiet_s, every_s, clock
        self.start = clock()
        self.shown = -math.inf

    def __call__(self, done: int, total: int) -> None:
        now = self.clock()
        elapsed = now - self.start
        if elapsed < self.quiet_s or (done < total and now - self.shown < self.every_s):
            return
        self.shown = now
        print(f"{self.label}: {done}/{total}, {time_left(elapsed, done, total)}", file=sys.stderr, flush=True)


def rich_columns(label: str, *extra: Any) -> list[Any]:
    """The columns of a rich progress bar of ``label``: the bar, done/total, ``extra`` (e.g. a
    status text), the time taken and the time left (imports rich)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return [TextColumn(label), BarColumn(), MofNCompleteColumn(), *extra, TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn()]

"""``ltr predict``'s read-ahead and kernel warm-up (``ltr.models.overlap``): the same items in the
same order, errors where they happened, a bounded lead, and no thread left behind."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from ltr.models.overlap import read_ahead

OURS = ("ltr-read-ahead", "ltr-kernel-warmup")


def _ours() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name in OURS]


def test_items_come_in_order_and_the_reader_is_gone() -> None:
    assert list(read_ahead(iter(range(100)), depth=3)) == list(range(100))
    assert list(read_ahead(iter([]))) == []
    assert _ours() == []


def test_an_error_is_raised_where_its_item_would_have_come() -> None:
    def items() -> Iterator[int]:
        yield 1
        yield 2
        raise ValueError("bad row 7")

    ahead = read_ahead(items())
    assert [next(ahead), next(ahead)] == [1, 2]
    with pytest.raises(ValueError, match="bad row 7"):
        next(ahead)
    assert _ours() == []


def test_the_reader_stays_at_most_depth_plus_one_ahead_and_stops_when_the_consumer_does() -> None:
    pulled: list[int] = []
    closed = threading.Event()

    def items() -> Iterator[int]:
        try:
            for i in range(1000):
                pulled.append(i)
                yield i
        finally:
            closed.set()

    ahead = read_ahead(items(), depth=2)
    assert next(ahead) == 0
    time.sleep(0.5)  # time for the reader to run as far ahead as it may
    # item 0 taken, 2 waiting in the queue, 1 read and waiting for a slot
    assert len(pulled) <= 1 + 2 + 1
    ahead.close()
    assert closed.is_set()  # the source generator was closed too
    assert _ours() == []


def test_depth_must_be_positive() -> None:
    with pytest.raises(ValueError, match="depth=0"):
        next(read_ahead(iter([1]), depth=0))

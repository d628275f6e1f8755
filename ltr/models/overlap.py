"""What ``ltr predict`` overlaps with scoring: reading the next batch, loading numba's kernels.

- :func:`read_ahead`: the batches of an iterator, read in a background thread up to ``depth``
  batches ahead of the consumer. Arrow's Parquet reads and LightGBM's ``predict`` release the
  GIL, so reading batch ``i + 1`` runs beside scoring, ranking and writing batch ``i``. Memory:
  at most ``depth + 2`` batches (one being read, ``depth`` waiting, one being scored). The
  batches and their order are the iterator's: nothing a batch holds changes.
- :class:`KernelWarmup`: a thread that ranks a batch of two rows as the run ranks, so numba's
  kernels (with the first call's set-up, about 1 s of CPU on the 2-core machine, #24) load
  while the first real batch is read and scored. It writes nothing and changes nothing a
  batch's result depends on: a kernel is compiled or loaded once per process whoever calls it
  first (numba's compiler lock serialises the two threads). An error in it is logged (debug)
  and otherwise ignored: the main thread then meets it itself.

Neither thread outlives the call that started it: closing :func:`read_ahead`'s generator (the
input done, an error, Ctrl-C) stops and joins its reader; :meth:`KernelWarmup.join` waits for
the warm-up.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterator
from typing import TypeVar

import numpy as np

from ltr.data.ranking_data import RankingData
from ltr.experiment.sources import rank_split
from ltr.experiment.spec import ExperimentSpec

log = logging.getLogger(__name__)

T = TypeVar("T")

#: How often (seconds) a blocked reader checks whether the consumer has gone.
_POLL_S = 0.1


class _End:
    """The reader's last word: the input is done, or ``error`` ended it."""

    def __init__(self, error: BaseException | None) -> None:
        self.error = error


def read_ahead(items: Iterator[T], *, depth: int = 1) -> Iterator[T]:
    """``items`` in order, read by a background thread up to ``depth`` items ahead.

    An exception of ``items`` is raised here, where its item would have come. Closing this
    generator stops the reader (it drops what it holds) and joins it before returning.

    Examples
    --------
    >>> list(read_ahead(iter(range(5))))
    [0, 1, 2, 3, 4]
    """
    if depth < 1:
        raise ValueError(f"depth={depth} must be >= 1")
    slots: queue.Queue[T | _End] = queue.Queue(maxsize=depth)
    gone = threading.Event()

    def put(item: T | _End) -> bool:
        while not gone.is_set():
            try:
                slots.put(item, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def read() -> None:
        try:
            for item in items:
                if not put(item):
                    return
        except BaseException as exc:  # handed to the consumer, raised there
            put(_End(exc))
            return
        put(_End(None))

    reader = threading.Thread(target=read, name="ltr-read-ahead", daemon=True)
    reader.start()
    try:
        while True:
            got = slots.get()
            if isinstance(got, _End):
                if got.error is not None:
                    raise got.error
                return
            yield got
    finally:
        gone.set()
        reader.join()
        close = getattr(items, "close", None)
        if close is not None:
            close()


class KernelWarmup:
    """Rank two rows as ``spec``'s run ranks (``rerank=...``, the per-query table under its
    conventions) in a background thread: numba's kernels load beside the first batch."""

    def __init__(self, spec: ExperimentSpec, n_features: int) -> None:
        self._thread = threading.Thread(target=self._run, args=(spec, n_features), name="ltr-kernel-warmup", daemon=True)
        self._thread.start()

    @staticmethod
    def _run(spec: ExperimentSpec, n_features: int) -> None:
        try:
            tiny = RankingData(
                features=np.zeros((2, n_features), dtype=np.float32),
                labels=np.array([1, 0], dtype=np.int32),
                qids=np.array([0], dtype=np.int64),
                offsets=np.array([0, 2], dtype=np.int64),
                name="warm-up",
            )
            rank_split(spec, tiny, np.array([0.5, 0.25]), max_gain=1.0)
        except Exception:  # the main thread meets the same error itself, and reports it
            log.debug("ltr: warming the kernels up in the background failed", exc_info=True)

    def join(self) -> None:
        """Wait for the warm-up (at once when it is done)."""
        self._thread.join()

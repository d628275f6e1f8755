"""``ltr partition``'s progress while it writes the partitions, on stderr: a rich bar per split
on a terminal, else a line per partition file (:class:`WriteProgress`)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ltr.runtime.progress import rich_columns
from ltr.runtime.terminal import console as terminal_console

if TYPE_CHECKING:
    from ltr.dask.partition_writer.files import PartitionWritten
    from ltr.data.ranking_data import RankingData

__all__ = ["WriteProgress"]


class WriteProgress:
    """Per-partition progress on stderr: a rich bar per split on a terminal, else a line each."""

    def __init__(self, splits: Mapping[str, RankingData], n_partitions: Mapping[str, int]) -> None:
        self._bar: Any = None
        self._tasks: dict[str, Any] = {}
        if sys.stderr.isatty():
            from rich.progress import Progress, TextColumn

            self._bar = Progress(
                *rich_columns("writing {task.description:<5}", TextColumn("partitions")),
                console=terminal_console(stderr=True), transient=True,
            )  # fmt: skip
            for split, data in splits.items():
                self._tasks[split] = self._bar.add_task(split, total=min(n_partitions[split], data.n_queries))

    def __enter__(self) -> WriteProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None and self._bar.live.is_started:
            self._bar.stop()

    def advance(self, part: PartitionWritten) -> None:
        """After each partition file: the bar (shown from the first file on, so that a refusal
        before any write prints nothing but its error) or a line."""
        if self._bar is not None:
            if not self._bar.live.is_started:
                self._bar.start()
            self._bar.advance(self._tasks[part.split])
        else:
            line = f"{part.split}: {part.path.name} ({part.index + 1}/{part.count}): {part.n_queries:,} queries, "
            print(f"{line}{part.n_rows:,} rows, {part.n_bytes:,} bytes", file=sys.stderr, flush=True)

"""The files ``ltr predict`` writes, all or nothing.

- ``scores``: one model score per input row, in input order (what ``booster.predict`` and the
  MLflow pyfunc return), each written with round-trip precision (``repr``).
- ``trec_run``: ``qid Q0 docno rank score tag`` per row (the qid as the input wrote it, a
  string qid included), each query's rows in the run's final
  order (re-ranking included); ``score`` is the final order's score (the model's score, or
  ``0, -1, -2, ...`` after re-ranking), with round-trip precision, so an evaluator that handles
  ties (``ltr evaluate``) sees exactly the run's order and ties. Tied rows are listed in input
  order. ``docno`` is the row's document id (LETOR ``#docid``, a document id column), else
  ``{qid}-{i}`` with ``i`` the row's 0-based place in its query in the input.
- ``per_query``: the per-query table, when the input has labels: CSV (floats with round-trip
  precision) for a ``.csv`` name, Parquet for any other (``.parquet``, ``.pq``, ...): never a
  Parquet file under a ``.csv`` name (:func:`ltr.data.formats.file_names.written_table_format`).

Every file is written to a temporary sibling and renamed into place only when every batch is
through: an error, Ctrl-C or SIGTERM leaves the targets as they were. One of them may go to
standard output instead (``--out -``: ``to_stdout``), written as it is made (the per-query table
as CSV). Before any input is read, the one output guard of every verb
(:func:`ltr.cli.support.output_guard.check_outputs`) makes sure each output can be written and is
neither the tracking store, nor inside its artifact folders, nor an input: each refused in one
line. A write that fails later (a full disk) is one line too.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import IO

import numpy as np
import pandas as pd

from ltr.data.formats.file_names import written_table_format
from ltr.errors import DataError, LtrUserError, write_failed
from ltr.metrics.offsets import row_queries
from ltr.models.predict import Prediction, ScoredBatch
from ltr.runtime.stops import committing


@contextlib.contextmanager
def _writing(path: Path) -> Iterator[None]:
    """An ``OSError`` while writing ``path`` (a full disk, a folder gone) as one line (a full
    device: :class:`ltr.errors.DeviceFull`, exit 1)."""
    try:
        yield
    except OSError as exc:
        raise write_failed(exc, f"cannot write {path}: {exc.strerror or exc}", path=path) from None


def trec_lines(batch: ScoredBatch, tag: str) -> pd.DataFrame:
    """The TREC run rows of one batch, each query's rows in final order (ties: input order)."""
    data = batch.data
    sizes = np.diff(data.offsets)
    query = row_queries(data.offsets)
    within = np.arange(data.n_rows) - np.repeat(data.offsets[:-1], sizes)
    order = np.lexsort((np.arange(data.n_rows), -batch.scores, query))
    qids = np.repeat(data.written_qids(), sizes)
    if batch.doc_ids is not None:
        docnos: pd.Series = pd.Series(batch.doc_ids[order], dtype=object)
        spaced = docnos.str.contains(r"\s", regex=True)
        if spaced.any():
            raise DataError(
                f"document id {docnos[spaced].iloc[0]!r} of qid {qids[order][np.argmax(spaced.to_numpy())]} holds "
                "white space: a TREC run line cannot carry it (use ids without spaces)"
            )
    else:
        docnos = pd.Series(qids[order]).astype(str) + "-" + pd.Series(within[order]).astype(str)
    return pd.DataFrame(
        {"qid": qids[order], "q0": "Q0", "docno": docnos, "rank": within + 1, "score": batch.scores[order], "tag": tag}
    )


class PredictionFiles:
    """The output files of one ``ltr predict``; a context manager that renames them into place on
    success and removes its temporary files otherwise. ``to_stdout``: the one output
    (``scores``, ``trec_run`` or ``per_query``) written to standard output instead of a file."""

    def __init__(
        self, *, scores: Path | None, trec_run: Path | None, per_query: Path | None, tag: str, to_stdout: str | None = None
    ) -> None:
        self.targets = {name: path for name, path in (("scores", scores), ("trec_run", trec_run), ("per_query", per_query)) if path}
        self.tag = tag
        self.to_stdout = to_stdout
        self._temps: dict[str, Path] = {}
        self._handles: dict[str, IO[str]] = {}
        if to_stdout is not None:
            self.targets[to_stdout] = Path("-")
            if to_stdout != "per_query":
                self._handles[to_stdout] = sys.stdout

    def __enter__(self) -> PredictionFiles:
        for name, target in self.targets.items():
            if name == self.to_stdout:
                continue
            temp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
            self._temps[name] = temp
            if name != "per_query":
                with _writing(target):
                    self._handles[name] = temp.open("w", encoding="utf-8", newline="\n")
        return self

    def _writing(self, name: str) -> contextlib.AbstractContextManager[None]:
        """A failed write of output ``name`` as one line; standard output's errors (a closed pipe,
        a full device) are the dispatcher's to handle."""
        return contextlib.nullcontext() if name == self.to_stdout else _writing(self.targets[name])

    def write(self, batch: ScoredBatch) -> None:
        """Append one batch's rows to the scores file and the TREC run."""
        if "scores" in self._handles:
            with self._writing("scores"):
                self._handles["scores"].write("".join(f"{s!r}\n" for s in batch.model_scores.tolist()))
        if "trec_run" in self._handles:
            lines = trec_lines(batch, self.tag)
            with self._writing("trec_run"):
                lines.to_csv(self._handles["trec_run"], sep=" ", header=False, index=False)

    def finish(self, prediction: Prediction) -> list[Path]:
        """Write the per-query table (Parquet or CSV, by its name: :func:`ltr.data.formats.file_names.written_table_format`), close
        and rename every file into place; the paths written."""
        if "per_query" in self.targets and prediction.table is None:
            raise LtrUserError("--per-query needs labels in the data (a label column): there is nothing to evaluate")
        if self.to_stdout == "per_query" and prediction.table is not None:
            prediction.table.to_csv(sys.stdout, index=False)
        if "per_query" in self._temps and prediction.table is not None:
            temp = self._temps["per_query"]
            with _writing(self.targets["per_query"]):
                if written_table_format(self.targets["per_query"]) == "csv":
                    prediction.table.to_csv(temp, index=False)
                else:
                    prediction.table.to_parquet(temp, index=False)
        for name, handle in self._handles.items():
            if name == self.to_stdout:
                handle.flush()
                continue
            with _writing(self.targets[name]):
                handle.flush()
                os.fsync(handle.fileno())
                handle.close()
        with committing():  # every file renamed, or none; a stop signal after that stops nothing
            for name, temp in self._temps.items():
                with _writing(self.targets[name]):
                    os.replace(temp, self.targets[name])
        self._temps.clear()
        return [path for name, path in self.targets.items() if name != self.to_stdout]

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for name, handle in self._handles.items():
            if name != self.to_stdout:
                with contextlib.suppress(OSError):
                    handle.close()
        for temp in self._temps.values():
            with contextlib.suppress(OSError):
                temp.unlink()

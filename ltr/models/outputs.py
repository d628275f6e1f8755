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
- ``per_query``: the per-query table (Parquet), when the input has labels.

Every file is written to a temporary sibling and renamed into place only when every batch is
through: an error, Ctrl-C or SIGTERM leaves the targets as they were.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from types import TracebackType
from typing import IO

import numpy as np
import pandas as pd

from ltr.errors import DataError, LtrUserError
from ltr.models.predict import Prediction, ScoredBatch


def check_target(path: Path, option: str) -> Path:
    """``path`` as an output: its folder must exist and it must not be a folder (one line)."""
    path = path.expanduser()
    if path.is_dir():
        raise LtrUserError(f"{option} {path} is a directory; give a file name")
    if not path.parent.is_dir():
        raise LtrUserError(f"{option} {path}: the folder {path.parent} does not exist")
    return path


def trec_lines(batch: ScoredBatch, tag: str) -> pd.DataFrame:
    """The TREC run rows of one batch, each query's rows in final order (ties: input order)."""
    data = batch.data
    sizes = np.diff(data.offsets)
    query = np.repeat(np.arange(data.n_queries), sizes)
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
    success and removes its temporary files otherwise."""

    def __init__(self, *, scores: Path | None, trec_run: Path | None, per_query: Path | None, tag: str) -> None:
        self.targets = {name: path for name, path in (("scores", scores), ("trec_run", trec_run), ("per_query", per_query)) if path}
        self.tag = tag
        self._temps: dict[str, Path] = {}
        self._handles: dict[str, IO[str]] = {}

    def __enter__(self) -> PredictionFiles:
        for name, target in self.targets.items():
            temp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
            self._temps[name] = temp
            if name != "per_query":
                self._handles[name] = temp.open("w", encoding="utf-8", newline="\n")
        return self

    def write(self, batch: ScoredBatch) -> None:
        """Append one batch's rows to the scores file and the TREC run."""
        if "scores" in self._handles:
            self._handles["scores"].write("".join(f"{s!r}\n" for s in batch.model_scores.tolist()))
        if "trec_run" in self._handles:
            trec_lines(batch, self.tag).to_csv(self._handles["trec_run"], sep=" ", header=False, index=False)

    def finish(self, prediction: Prediction) -> list[Path]:
        """Write the per-query table, close and rename every file into place; the paths written."""
        if "per_query" in self._temps:
            if prediction.table is None:
                raise LtrUserError("--per-query needs labels in the data (a label column): there is nothing to evaluate")
            prediction.table.to_parquet(self._temps["per_query"], index=False)
        for handle in self._handles.values():
            handle.flush()
            os.fsync(handle.fileno())
            handle.close()
        for name, temp in self._temps.items():
            os.replace(temp, self.targets[name])
        self._temps.clear()
        return list(self.targets.values())

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for handle in self._handles.values():
            with contextlib.suppress(OSError):
                handle.close()
        for temp in self._temps.values():
            with contextlib.suppress(OSError):
                temp.unlink()

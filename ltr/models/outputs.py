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
  Parquet file under a ``.csv`` name (:func:`ltr.data.file_names.written_table_format`).

Every file is written to a temporary sibling and renamed into place only when every batch is
through: an error, Ctrl-C or SIGTERM leaves the targets as they were. Before any input is read,
:func:`check_target` makes sure each output can be written (its folder exists and takes a file;
an existing target is a regular file, never a device or a pipe, which the rename would replace)
and :func:`check_not_inputs` that none is an input file, a side file of one or inside an input
folder: each refused in one line. A write that fails later (a full disk) is one line too.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO

import numpy as np
import pandas as pd

from ltr.data.file_names import written_table_format
from ltr.data.query_parts import partition_files
from ltr.data.side_files import side_file_candidates
from ltr.errors import DataError, LtrUserError, write_failed
from ltr.models.predict import Prediction, ScoredBatch
from ltr.stops import committing


def check_target(path: Path, option: str) -> Path:
    """``path`` as an output, checked before any input is read (one line each): not a folder,
    not an existing file that is not a regular file (a device or a pipe: the rename into place
    would replace it), in a folder that exists and takes a new file (a file is made there and
    removed: ``/proc/x``, a read-only folder are refused here, not after scoring)."""
    path = path.expanduser()
    if path.is_dir():
        raise LtrUserError(f"{option} {path} is a directory; give a file name")
    if path.exists() and not path.is_file():
        raise LtrUserError(f"{option} {path} is not a regular file (a device or a pipe); give a file name")
    if not path.parent.is_dir():
        raise LtrUserError(f"{option} {path}: the folder {path.parent} does not exist")
    try:
        fd, probe = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise write_failed(exc, f"{option} {path}: cannot write a file in {path.parent} ({exc.strerror or exc})", path=path.parent) from None
    return path


def check_not_inputs(targets: Mapping[str, Path], inputs: Sequence[Path]) -> None:
    """Refuse an output (``targets``: option -> path) that is one of the ``inputs`` (the same file
    by path or by inode: a hard link, a symlink), a side file of one (``.query``, ``.position``)
    or inside an input folder: writing it would destroy or add to the data being read."""
    files: list[Path] = []
    folders: list[Path] = []
    for given in inputs:
        path = given.expanduser()
        if path.is_dir():
            folders.append(path.resolve())
            files += partition_files(path)
        else:
            files.append(path)
            files += [c for ext in (".query", ".position") for c in side_file_candidates(path, ext) if c.is_file()]
    for option, target in targets.items():
        resolved = target.resolve()
        for folder in folders:
            if resolved.is_relative_to(folder):
                raise LtrUserError(f"{option} {target} is inside the input folder {folder}; write it elsewhere")
        for f in files:
            if resolved == f.resolve() or (target.exists() and f.exists() and os.path.samefile(target, f)):
                raise LtrUserError(f"{option} {target} is the input {f}: writing it would destroy the data; name another file")


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
                with _writing(target):
                    self._handles[name] = temp.open("w", encoding="utf-8", newline="\n")
        return self

    def write(self, batch: ScoredBatch) -> None:
        """Append one batch's rows to the scores file and the TREC run."""
        if "scores" in self._handles:
            with _writing(self.targets["scores"]):
                self._handles["scores"].write("".join(f"{s!r}\n" for s in batch.model_scores.tolist()))
        if "trec_run" in self._handles:
            lines = trec_lines(batch, self.tag)
            with _writing(self.targets["trec_run"]):
                lines.to_csv(self._handles["trec_run"], sep=" ", header=False, index=False)

    def finish(self, prediction: Prediction) -> list[Path]:
        """Write the per-query table (Parquet or CSV, by its name: :func:`ltr.data.file_names.written_table_format`), close
        and rename every file into place; the paths written."""
        if "per_query" in self._temps:
            if prediction.table is None:
                raise LtrUserError("--per-query needs labels in the data (a label column): there is nothing to evaluate")
            temp = self._temps["per_query"]
            with _writing(self.targets["per_query"]):
                if written_table_format(self.targets["per_query"]) == "csv":
                    prediction.table.to_csv(temp, index=False)
                else:
                    prediction.table.to_parquet(temp, index=False)
        for name, handle in self._handles.items():
            with _writing(self.targets[name]):
                handle.flush()
                os.fsync(handle.fileno())
                handle.close()
        with committing():  # every file renamed, or none; a stop signal after that stops nothing
            for name, temp in self._temps.items():
                with _writing(self.targets[name]):
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

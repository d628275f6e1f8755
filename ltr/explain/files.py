"""The contributions file of ``ltr explain --out``: Parquet, one row per document, written whole
or not at all.

Columns: ``qid`` (as the input wrote it), ``doc_id`` (when the data has document ids),
``label`` (when it has labels), ``score`` (the model's score, what ``ltr predict --out``
writes), then ``expected_value`` and one float64 column per feature, named as the model names
it, so that the feature columns plus ``expected_value`` equal ``score``. Centred
(``--centred``): ``query_mean_score`` (the query's mean score) instead of ``expected_value``,
and each feature column minus its query's mean, so that the feature columns plus
``query_mean_score`` equal ``score`` and the feature columns alone sum to the score minus the
query's mean score.

Rows are written batch by batch (one row group each) to a temporary sibling that is renamed into
place once every batch is through (:meth:`ContributionsFile.commit`, inside the command's
:func:`ltr.runtime.stops.committing` block: :func:`ltr.explain.logged.commit`): an error, Ctrl-C or
SIGTERM leaves the target as it was.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from numpy.typing import NDArray

from ltr.data.formats.file_names import table_format_by_name
from ltr.errors import LtrUserError, write_failed

#: The columns the file holds besides the features.
FIXED_COLUMNS = ("qid", "doc_id", "label", "score", "expected_value", "query_mean_score")


def check_out_name(out: Path) -> None:
    """Refuse an ``--out`` named as CSV (the file is Parquet), in one line."""
    if table_format_by_name(out) == "csv":
        raise LtrUserError(f"--out {out} is named as CSV, but ltr explain writes Parquet; name it e.g. contributions.parquet")


def check_feature_names(names: Sequence[str]) -> None:
    """Refuse a model whose feature is named as one of :data:`FIXED_COLUMNS` (its column would
    be ambiguous), in one line."""
    clash = next((n for n in names if n in FIXED_COLUMNS), None)
    if clash is not None:
        raise LtrUserError(f"the model has a feature named {clash!r}, a column ltr explain --out writes itself; rename the column")


@contextlib.contextmanager
def _writing(path: Path) -> Iterator[None]:
    try:
        yield
    except OSError as exc:
        raise write_failed(exc, f"cannot write {path}: {exc.strerror or exc}", path=path) from None


class ContributionsFile:
    """The ``--out`` file (module docstring); a context manager that removes its temporary file
    unless :meth:`finish` renamed it into place."""

    def __init__(self, target: Path, feature_names: Sequence[str], *, centred: bool) -> None:
        self.target = target
        self.feature_names = tuple(feature_names)
        self.centred = centred
        self.n_rows = 0
        self._temp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
        self._writer: pq.ParquetWriter | None = None

    def write(
        self,
        qids: NDArray[np.generic],
        doc_ids: NDArray[np.object_] | None,
        labels: NDArray[np.int32] | None,
        scores: NDArray[np.float64],
        base: NDArray[np.float64],
        values: NDArray[np.float64],
    ) -> None:
        """Append one batch: per row its ``qid``, ``doc_id``, ``label``, ``score``, the base
        (``expected_value``, or ``query_mean_score`` when centred) and the feature ``values``."""
        columns: dict[str, pa.Array] = {"qid": pa.array(qids.tolist() if qids.dtype == object else qids)}
        if doc_ids is not None:
            columns["doc_id"] = pa.array(doc_ids.tolist(), type=pa.string())
        if labels is not None:
            columns["label"] = pa.array(labels)
        columns["score"] = pa.array(scores)
        columns["query_mean_score" if self.centred else "expected_value"] = pa.array(base)
        for j, name in enumerate(self.feature_names):
            columns[name] = pa.array(np.ascontiguousarray(values[:, j]))
        table = pa.table(columns)
        with _writing(self.target):
            if self._writer is None:
                self._writer = pq.ParquetWriter(self._temp, table.schema)
            self._writer.write_table(table.cast(self._writer.schema))
        self.n_rows += table.num_rows

    def close(self) -> None:
        """Close the temporary file and flush it to disk (:meth:`commit` renames it)."""
        with _writing(self.target):
            if self._writer is None:  # pragma: no cover - an input has at least one query
                raise LtrUserError("no rows to write")
            self._writer.close()
            self._writer = None
            with open(self._temp, "rb") as written:
                os.fsync(written.fileno())

    def commit(self) -> Path:
        """Rename the closed file into place (inside the caller's :func:`ltr.runtime.stops.committing`); the target."""
        with _writing(self.target):
            os.replace(self._temp, self.target)
        return self.target

    def __enter__(self) -> ContributionsFile:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._writer is not None:
            with contextlib.suppress(Exception):
                self._writer.close()
        with contextlib.suppress(OSError):
            self._temp.unlink()

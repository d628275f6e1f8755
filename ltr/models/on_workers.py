"""``ltr predict RUN --data DIR --dask``: a directory of whole-query Parquet files scored on Dask
workers, one task per file.

Each worker reads its file (the model's feature columns by name, the qid column, the label and
document id columns when present), scores it with the run's model, applies the run's ranking
step and builds the file's per-query table: exactly :func:`ltr.models.predict.score_batch` on
that file. Only the scores, qids, labels, document ids and the per-query table come back to the
client, never the features. Before any task the client reads the qid columns (8 bytes a row)
and checks that each query's rows are contiguous and in one file; it writes the outputs in file
order. The files must be readable by every worker under the same path (a
shared file system, or a :class:`~distributed.LocalCluster` on this machine).

The result is the one ``ltr predict RUN --data DIR`` gives without ``--dask`` (same files, byte
for byte; same summary, bit for bit), batch = file: ERR's normaliser is the largest gain of all
files (read first, label column only); a run whose ranking needs the whole input at once
(:func:`ltr.models.inputs.split_wide_step`) takes it per file, as the streamed path does with
several files (a warning says so).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from ltr.config.schema import TrainerConfig
from ltr.data.formats.table_features import RowNames
from ltr.data.formats.table_qids import number_qids, refuse_string_qids
from ltr.data.validate import run_starts
from ltr.errors import DataError
from ltr.models.inputs import (
    STRING_QIDS,
    ParquetPlan,
    PredictInput,
    column_names,
    parquet_files,
    parquet_input_plan,
    read_whole_file,
    whole_input_warning,
)
from ltr.models.logged import LoggedRun
from ltr.models.predict import (
    BatchSink,
    Prediction,
    ScoredBatch,
    ShippedModel,
    collect,
    score_batch,
)

log = logging.getLogger(__name__)


def score_file(
    model: ShippedModel,
    path: str,
    columns: list[str],
    qid_column: str,
    label_column: str | None,
    doc_id_column: str | None,
    max_gain: float | None,
    first_qid: int | None = None,
) -> ScoredBatch:
    """One file read, scored, ranked and tabulated (on a worker); the returned batch holds no
    features (``data.features`` has zero columns). ``first_qid``: the qids are ids (strings),
    numbered from ``first_qid`` in order of first appearance and written as they are."""
    names = _feature_names(columns, qid_column, label_column, doc_id_column)
    data = read_whole_file(Path(path), columns, names, qid_column, label_column, doc_id_column, qid_ids=first_qid is not None)
    if first_qid:
        data = dataclasses.replace(data, qids=data.qids + first_qid)
    scored = score_batch(model, data, labelled=label_column is not None, max_gain=max_gain, where=path)
    light = dataclasses.replace(scored.data, features=np.empty((data.n_rows, 0), dtype=np.float32), feature_names=())
    return dataclasses.replace(scored, data=light)


def _feature_names(columns: list[str], qid_column: str, label_column: str | None, doc_id_column: str | None) -> list[str]:
    skip = {qid_column, label_column, doc_id_column} - {None}
    return [c for c in columns if c not in skip]


@dataclass(frozen=True)
class WorkerInput:
    """Parquet files checked on the client (columns, labels, ERR's normaliser), to be scored on
    the workers of ``trainer``'s cluster, one task per file."""

    run: LoggedRun
    files: list[Path]
    plan: ParquetPlan
    trainer: TrainerConfig
    qid_column: str
    label_column: str | None
    doc_id_column: str | None
    source: PredictInput
    #: the first number of each file's queries when the qids are ids (strings), else None
    first_qids: list[int] | None = None

    def predict(self, *, sink: BatchSink | None = None, keep: bool = False) -> Prediction:
        """Score every file on the workers and collect the batches in file order, as
        :func:`ltr.models.predict.predict_input` does (``sink`` in order, the summary)."""
        from ltr.dask.train import dask_client

        model = ShippedModel.of(self.run)
        with _quiet("distributed"), dask_client(self.trainer) as client:
            shared = client.scatter(model, broadcast=True, hash=False)
            futures = [
                client.submit(
                    score_file, shared, str(path), self.plan.columns, self.qid_column, self.label_column,
                    self.doc_id_column, self.plan.max_gain, None if self.first_qids is None else self.first_qids[i], pure=False, key=f"ltr-predict-{self.run.run_id[:8]}-{i}",
                )
                for i, path in enumerate(self.files)
            ]
            try:
                return collect(self.run, _in_order(futures), self.source, sink=sink, keep=keep)
            finally:
                client.cancel(futures)


def dask_input(
    run: LoggedRun,
    paths: Sequence[str | Path],
    trainer: TrainerConfig,
    *,
    qid_column: str | None = None,
    label_column: str | None = None,
    doc_id_column: str | None = None,
) -> WorkerInput:
    """The Parquet files of ``paths`` (directories of ``*.parquet``, or files) checked for
    ``run``'s model, to be scored on the cluster ``trainer`` describes (a LocalCluster of
    ``n_workers`` x ``threads_per_worker``, or ``scheduler_address``). Column options default to
    the run's data settings, then ``qid`` / ``label``, as :func:`ltr.models.inputs.open_input`."""
    qid_column, label_column, doc_id_column, asked_by = column_names(run, qid_column, label_column, doc_id_column)
    files = parquet_files([Path(p).expanduser() for p in paths])
    plan = parquet_input_plan(run, files, qid_column, label_column, doc_id_column, asked_by)
    numbering = number_qids(files, qid_column)  # ids: checked and numbered over the files
    if numbering is None:
        check_query_files(files, qid_column)
    whole_input_warning(run, files)
    described = f"{len(files)} Parquet file{'s' if len(files) > 1 else ''} on Dask workers ({files[0]}{' ...' if len(files) > 1 else ''})"
    source = PredictInput(described, lambda: iter(()), plan.labelled, plan.n_rows, plan.max_gain, streamed=True)
    return WorkerInput(
        run, files, plan, trainer, qid_column, label_column if plan.labelled else None, plan.doc_id_column, source,
        None if numbering is None else numbering.firsts,
    )


@contextmanager
def _quiet(name: str) -> Iterator[None]:
    """``name``'s logger at WARNING in the block (the cluster's INFO lines are not progress)."""
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(max(level, logging.WARNING))
    try:
        yield
    finally:
        logger.setLevel(level)


def check_query_files(files: list[Path], qid_column: str) -> None:
    """Every query's rows contiguous and in one file, from the qid columns alone (read on the
    client before any task: 8 bytes a row); one line naming the query and the file(s)."""
    first_file: dict[int, Path] = {}
    for path in files:
        row_qids = refuse_string_qids(pq.read_table(path, columns=[qid_column]).column(0), qid_column, RowNames.of_file(path), STRING_QIDS)
        qids = row_qids[run_starts(row_qids)]
        unique, counts = np.unique(qids, return_counts=True)
        if np.any(counts > 1):
            raise DataError(f"the rows of qid {unique[np.argmax(counts > 1)]} in {path} are not contiguous; group each query's rows together")
        again = [q for q in qids.tolist() if q in first_file]
        if again:
            raise DataError(f"qid {again[0]} is in {first_file[again[0]]} and in {path}: each query's rows must sit in one file")
        first_file.update(dict.fromkeys(qids.tolist(), path))


def _in_order(futures: list[Any]) -> Iterator[ScoredBatch]:
    """The workers' batches in file order, each released on the cluster once taken."""
    for future in futures:
        batch: ScoredBatch = future.result()
        future.release()
        yield batch

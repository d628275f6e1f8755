"""Score data with a logged run's model and rank it exactly as the run did.

:func:`predict` takes a :class:`ltr.models.logged.LoggedRun` and data (a `RankingData`, or the
batches of :mod:`ltr.models.inputs`): the model's scores (``booster.predict``: the best round's
trees), then the run's ranking step (``rerank=...``, or the scores' own order), then, when the data
has labels, the per-query table and the stratified summary under the run's conventions. On the
rows the run evaluated, every summary value equals the run's logged ``{split}/...`` metric bit for
bit: same trees, same float32 features, the same ranking and table code as ``ltr train``.

Batches are whole queries; ERR's normaliser (the largest gain of the whole input) is given to
every batch, so a table built batch by batch equals the table of the whole input.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import lightgbm as lgb
import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ltr.config.choices import RerankKind
from ltr.data.ranking_data import RankingData
from ltr.errors import DataError
from ltr.experiment.evaluation import split_summary
from ltr.experiment.sources import rank_split
from ltr.experiment.spec import ExperimentSpec
from ltr.metrics.table import check_scores_not_nan
from ltr.models.inputs import PredictInput
from ltr.models.logged import LoggedRun
from ltr.models.overlap import KernelWarmup, read_ahead
from ltr.training.backends import MODEL_FILES, backend_of, load_model

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ScoredBatch:
    """One batch of whole queries, scored and ranked.

    ``model_scores``: the model's score of every row (what the MLflow pyfunc returns);
    ``scores``: the run's final order as scores (the model's scores, or with re-ranking the
    re-ranked order ``0, -1, -2, ...``); ``table``: the per-query table when ``labelled``.
    """

    data: RankingData
    model_scores: NDArray[np.float64]
    scores: NDArray[np.float64]
    table: pd.DataFrame | None
    labelled: bool

    @property
    def doc_ids(self) -> NDArray[np.object_] | None:
        """The rows' document ids (LETOR ``#docid``, a document id column), or None."""
        return self.data.doc_ids


@dataclass
class Prediction:
    """What :func:`predict` gives back once every batch is through: the per-query table and the
    stratified summary (keys as the run's metrics without the split prefix: ``ndcg_at_10``,
    ``ndcg_at_10/len_1-10``, ``n_queries``, ...) when the data has labels."""

    n_rows: int = 0
    n_queries: int = 0
    seconds: float = 0.0
    table: pd.DataFrame | None = None
    summary: dict[str, float] = field(default_factory=dict)
    #: the scored batches, in input order, when :func:`predict` was asked to keep them
    batches: list[ScoredBatch] = field(default_factory=list)

    @property
    def model_scores(self) -> NDArray[np.float64]:
        """Every kept batch's model scores, concatenated (row order of the input)."""
        return np.concatenate([b.model_scores for b in self.batches]) if self.batches else np.empty(0)

    @property
    def scores(self) -> NDArray[np.float64]:
        """Every kept batch's final-order scores, concatenated (row order of the input)."""
        return np.concatenate([b.scores for b in self.batches]) if self.batches else np.empty(0)


class RunModel(Protocol):
    """What scoring needs of a run: its model (the best round's trees), its checked settings and
    a label for messages (a :class:`LoggedRun`, or its picklable :class:`ShippedModel`)."""

    @property
    def booster(self) -> lgb.Booster: ...

    @property
    def spec(self) -> ExperimentSpec: ...

    @property
    def n_features(self) -> int: ...

    @property
    def label(self) -> str: ...


@dataclass(frozen=True)
class ShippedModel:
    """A run's model and settings without its store: what a Dask worker receives. The model
    travels as its library's own file (``model``: LightGBM's text as ``str``; XGBoost's JSON and
    CatBoost's binary file as ``bytes``, ``backend`` naming which), made into a scoring model
    once per object on the worker."""

    model_text: str | bytes
    spec: ExperimentSpec
    label: str
    backend: str = "lightgbm"

    @functools.cached_property
    def booster(self) -> Any:
        if self.backend == "lightgbm":
            return lgb.Booster(model_str=str(self.model_text))
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / MODEL_FILES[self.backend]
            path.write_bytes(bytes(self.model_text) if isinstance(self.model_text, bytes) else self.model_text.encode())
            return load_model(self.backend, path)

    @property
    def n_features(self) -> int:
        return int(self.booster.num_feature())

    def __getstate__(self) -> dict[str, object]:
        return {k: v for k, v in self.__dict__.items() if k != "booster"}  # the file travels, not the model

    @classmethod
    def of(cls, run: LoggedRun) -> ShippedModel:
        backend = backend_of(run.spec.config.model)
        if backend == "lightgbm":
            return cls(run.booster.model_to_string(num_iteration=-1), run.spec, run.label)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / MODEL_FILES[backend]
            run.booster.save_model(str(path))
            return cls(path.read_bytes(), run.spec, run.label, backend)


def check_width(run: RunModel, data: RankingData, where: str) -> NDArray[np.float32]:
    """``data``'s features as the model's columns: fewer columns (a sparse text file whose last
    features are absent) are padded with zeros, more are refused in one line."""
    width = run.n_features
    if data.n_features > width:
        raise DataError(
            f"{where} has {data.n_features} features but the model of run {run.label} takes {width}"
        )
    if data.n_features == width:
        return data.features
    padded = np.zeros((data.n_rows, width), dtype=np.float32)
    padded[:, : data.n_features] = data.features
    return padded


def score_batch(
    run: RunModel, data: RankingData, *, labelled: bool, max_gain: float | None = None, where: str = "the data"
) -> ScoredBatch:
    """The model's scores of ``data`` (whole queries), the run's ranking of them, and their
    per-query table if ``labelled``. ``max_gain``: the largest gain of the whole input (ERR's
    normaliser) when ``data`` is one batch of several. A NaN score raises
    :class:`ltr.errors.ScoreError` (:func:`ltr.metrics.table.check_scores_not_nan`), labelled or not."""
    features = check_width(run, data, where)
    if features is not data.features:
        data = dataclasses.replace(data, features=features)
    model_scores = np.asarray(run.booster.predict(features), dtype=np.float64)
    # a NaN score (a damaged model) is refused with or without labels, never written
    check_scores_not_nan(model_scores, data.offsets, data.qids, data.qid_names)
    if not labelled and run.spec.config.rerank.kind == RerankKind.none:
        return ScoredBatch(data, model_scores, model_scores, None, False)
    ranked = rank_split(run.spec, data, model_scores, max_gain=max_gain)
    table = ranked.table if labelled else None  # its qids as written (rank_split names them)
    return ScoredBatch(data, model_scores, ranked.scores, table, labelled)


def predict(
    run: LoggedRun,
    batches: Iterable[RankingData],
    *,
    labelled: bool,
    max_gain: float | None = None,
    where: str = "the data",
) -> Iterator[ScoredBatch]:
    """Score and rank ``batches`` (whole queries each) with ``run``'s model, yielding each
    :class:`ScoredBatch` as it is done (writers and progress take them one at a time)."""
    for data in batches:
        yield score_batch(run, data, labelled=labelled, max_gain=max_gain, where=where)


def summarize_batches(run: RunModel, scored: Iterable[ScoredBatch], *, keep: bool = False) -> Prediction:
    """Run every batch through, keeping the per-query tables (one row per query), and return the
    :class:`Prediction` with the stratified summary of the labelled input."""
    out = Prediction()
    tables: list[pd.DataFrame] = []
    t0 = time.perf_counter()
    for batch in scored:
        out.n_rows += batch.data.n_rows
        out.n_queries += batch.data.n_queries
        if batch.table is not None:
            tables.append(batch.table)
        if keep:
            out.batches.append(batch)
    if tables:
        whole = tables[0] if len(tables) == 1 else pd.concat(tables, ignore_index=True)
        out.table, out.summary = split_summary(run.spec, whole)
    out.seconds = time.perf_counter() - t0
    return out


class BatchSink(Protocol):
    """Where scored batches go as they are done (the output files of ``ltr predict``)."""

    def write(self, batch: ScoredBatch) -> None: ...


def predict_input(
    run: LoggedRun, source: PredictInput, *, sink: BatchSink | None = None, keep: bool = False
) -> Prediction:
    """Score, rank and (with labels) evaluate every batch of ``source`` with ``run``'s model.

    Each batch goes to ``sink`` as it is done; progress is logged per batch of a streamed input.
    ``keep``: also keep the scored batches in the result (memory grows with the input).

    A streamed input is read one batch ahead in a background thread, and numba's kernels load in
    another while the first batch is read (:mod:`ltr.models.overlap`): the same batches, in the
    same order, with the same results; memory holds about three batches.
    """
    warmup = KernelWarmup(run.spec, run.n_features) if source.labelled or run.spec.config.rerank.kind != RerankKind.none else None
    batches = read_ahead(source.batches()) if source.streamed else source.batches()
    try:
        scored = predict(run, batches, labelled=source.labelled, max_gain=source.max_gain, where=source.description)
        return collect(run, scored, source, sink=sink, keep=keep)
    finally:
        close = getattr(batches, "close", None)
        if close is not None:
            close()  # stops and joins the reader (at once when the input is done)
        if warmup is not None:
            warmup.join()


def collect(
    run: RunModel, scored: Iterable[ScoredBatch], source: PredictInput, *, sink: BatchSink | None = None, keep: bool = False
) -> Prediction:
    """Take scored batches of ``source`` (scored here, or on Dask workers) to ``sink`` in order,
    logging progress for a streamed input, and summarise them (:func:`summarize_batches`).

    Raises
    ------
    ltr.errors.ScoreError
        a score that is NaN (naming its qid as the input wrote it): a ``DataError``, one line in
        ``ltr predict`` (local or ``--dask``) and ``ltr.api.predict`` alike.
    """
    t0 = time.perf_counter()
    done = 0

    def counted(batches: Iterable[ScoredBatch]) -> Iterator[ScoredBatch]:
        nonlocal done
        for batch in batches:
            if sink is not None:
                sink.write(batch)
            done += batch.data.n_rows
            if source.streamed:
                log.info("scored %d of %d rows (%.0f %%)", done, source.n_rows, 100 * done / max(source.n_rows, 1))
            yield batch

    prediction = summarize_batches(run, counted(scored), keep=keep)
    prediction.seconds = time.perf_counter() - t0
    return prediction

"""Data behind one interface: in memory (with or without a click view), or partitioned on workers.

A :class:`DataSource` knows its data's fingerprint, records its splits as the run's inputs, and
trains a :class:`ltr.training.trainer.Trainer` on itself, returning a :class:`Scored`: the
:class:`TrainResult`, the per-query tables of the evaluated splits (cut-offs ``spec.table_ks``),
LightGBM's gap decomposition per split, LightGBM's own values at the best round, and any
extra per-split summaries (click estimates). :func:`open_source` reads and validates the data
of a spec; the data option's ``kind`` picks the source, nothing else branches on it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ltr.config.choices import RerankKind
from ltr.config.groups.data import default_cache_dir
from ltr.data.config_rules import popularity_column
from ltr.data.feedback.click_log import click_options, click_splits, is_click_log, propensity_inputs
from ltr.data.feedback.clicks import simulate_online_ctr
from ltr.data.feedback.recipes import grade_counts, with_recipe
from ltr.data.fingerprint import fingerprint, part_fingerprints
from ltr.data.load import ClickSplits, load_click_splits, load_splits
from ltr.data.ranking_data import RankingData
from ltr.data.splits import Splits
from ltr.errors import DataError, LtrUserError
from ltr.experiment.spec import ExperimentSpec
from ltr.metrics import MetricConventions, per_query_table
from ltr.metrics.clicks.exposure import ExposureReport, exposure_report
from ltr.metrics.clicks.ips import (
    click_summary,
    click_tables,
    estimate_propensities,
    propensity_table,
)
from ltr.metrics.clicks.propensity import PropensityEstimate, estimate_propensity, interval_note
from ltr.metrics.reports.gap import LibraryGap, LightgbmGap, library_gap, library_of, lightgbm_gap
from ltr.metrics.tail import tail_exposure, tail_items
from ltr.metrics.top import with_top_doc_ids
from ltr.online.propensity_check import check_position_based
from ltr.rerank import score_order
from ltr.rerank.step import rerank_split
from ltr.tracking import Tracker
from ltr.training.artifact import INPUT_EXAMPLE_ROWS
from ltr.training.binned_store import BinnedStore
from ltr.training.local import TrainResult
from ltr.training.trainer import Trainer

log = logging.getLogger(__name__)


def query_table(
    spec: ExperimentSpec,
    data: RankingData,
    scores: NDArray[np.float64],
    diversity: pd.DataFrame | None,
    *,
    max_gain: float | None = None,
) -> pd.DataFrame:
    """The per-query table of ``scores`` on ``data`` under the run's conventions (cut-offs
    ``spec.table_ks``), with the re-ranker's diversity columns if any, and last ``top_doc_id``
    (the document ranked first) when ``data`` has doc ids. ``max_gain``: ERR's
    normaliser when ``data`` is a part of a split (the split's largest gain). The ``qid`` column
    holds the qids as written (:meth:`RankingData.with_written_qids`: the strings of string-qid
    data, else the integers), not the numbers the metrics ran on."""
    table = per_query_table(
        data.labels, scores, data.offsets, data.qids,
        ks=spec.table_ks, conventions=spec.conventions, strata=spec.strata, max_gain=max_gain,
        qid_names=data.qid_names,
    )  # fmt: skip
    if diversity is not None:
        table = pd.concat([table, diversity.set_axis(table.index)], axis=1)
    table = with_top_doc_ids(table, data.doc_ids, scores, data.offsets, labels=data.labels, ties=spec.conventions.ties)
    return data.with_written_qids(table)


@dataclass(frozen=True)
class Ranked:
    """One split ranked as the run ranks it: ``scores`` give the final order (the model's scores,
    or with ``rerank=...`` the re-ranked order as scores), ``table`` its per-query table;
    ``pre_rerank`` the table of the model's own order when the run re-ranks, else None."""

    scores: NDArray[np.float64]
    model_scores: NDArray[np.float64]
    table: pd.DataFrame
    pre_rerank: pd.DataFrame | None


def rank_split(
    spec: ExperimentSpec, data: RankingData, scores: NDArray[np.float64], *, max_gain: float | None = None
) -> Ranked:
    """The run's ranking step on the model's ``scores`` of ``data`` (``rerank=...`` or none) and
    the per-query tables of the final order (and of the model's order when it re-ranks), with
    ``tail_at_k`` columns when the data names a popularity feature (:func:`_with_tail`)."""
    if spec.config.rerank.kind == RerankKind.none:
        return Ranked(scores, scores, query_table(spec, data, scores, _with_tail(spec, data, scores, None), max_gain=max_gain), None)
    column = popularity_column(spec.config.data, data)
    popularity = None if column is None else data.features[:, column]
    reranked = rerank_split(spec.config.rerank, data, scores, spec.ks, popularity)
    after = _with_tail(spec, data, reranked.scores, reranked.after)
    before = _with_tail(spec, data, reranked.model_scores, reranked.before)
    return Ranked(
        reranked.scores, scores,
        query_table(spec, data, reranked.scores, after, max_gain=max_gain),
        query_table(spec, data, reranked.model_scores, before, max_gain=max_gain),
    )


@dataclass
class Scored:
    """What a trained model gives on the evaluated splits (``spec.config.eval.splits``).

    ``lightgbm_values[key][metric]``: LightGBM's value of ``metric`` (``ndcg@10``) at the best
    round; ``key`` is the split, or ``{split}/lightgbm_train_labels`` when the trainer saw other
    labels on that split than evaluation uses (clicks), so the value is not comparable with ours.
    ``extra_summaries[split]``: more summary keys of the split (click estimates).
    """

    result: TrainResult
    tables: dict[str, pd.DataFrame]
    gaps: dict[str, LightgbmGap]
    lightgbm_values: dict[str, dict[str, float]]
    extra_summaries: dict[str, dict[str, float]] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    #: ``lightgbm_curves[key][metric]``: LightGBM's value of ``metric`` after every round trained.
    lightgbm_curves: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    #: ``curves[key][measure key]``: our mean of the measure after every round trained (the
    #: trainer's ``TrainResult.curves``); ``key`` as in ``lightgbm_values``.
    curves: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    #: ``pre_rerank[split]``: the per-query table of the model's own order when the run re-ranks
    #: (``rerank=...``; ``tables`` then describe the final order), else empty.
    pre_rerank: dict[str, pd.DataFrame] = field(default_factory=dict)
    #: ``label_histograms[source][split]``: rows per grade of each label source (click data:
    #: ``relevance``, ``clicks`` and every label recipe), else empty.
    label_histograms: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    #: ``label_sources[role]``: the source of the ``train``, ``valid`` and ``eval`` labels.
    label_sources: dict[str, str] = field(default_factory=dict)
    #: a few rows of features (float32, the model's columns) for the logged model's input
    #: example and signature; None when no rows reach this process
    example_features: NDArray[np.float32] | None = None
    #: where the exposure of a click log ends (:mod:`ltr.metrics.clicks.exposure`); None without positions
    exposure: ExposureReport | None = None
    #: the examination propensities of a click log's positions in use, with their interval
    #: (:mod:`ltr.metrics.clicks.propensity`); None without a click log
    propensity: PropensityEstimate | None = None
    #: a synthetic click log's true examination curve per 0-based position; None otherwise
    true_examination: NDArray[np.float64] | None = None
    #: the library that trained the model (``lightgbm``, ``xgboost``, ``catboost``); for another
    #: than LightGBM, ``lightgbm_values`` are LightGBM's conventions computed on the model's
    #: scores, ``lightgbm_curves`` and ``library_values`` the library's own ``ndcg@k``
    library: str = "lightgbm"
    library_values: dict[str, dict[str, float]] = field(default_factory=dict)
    #: ``library_gaps[split]``: the gap of our NDCG to the library's own (not LightGBM's: ``gaps``)
    library_gaps: dict[str, LibraryGap] = field(default_factory=dict)


def lightgbm_means(data: RankingData, scores: NDArray[np.float64], ks: tuple[int, ...]) -> dict[str, float]:
    """LightGBM's ``ndcg@k`` of ``scores`` on ``data`` (its conventions: exp gain, ties in row
    order, a query with nothing relevant scores 1), the mean over queries, by LightGBM's name."""
    theirs = MetricConventions(gain="exp", ties="stable", zero_idcg="one")
    table = per_query_table(data.labels, scores, data.offsets, data.qids, ks=ks, conventions=theirs, full_ap=False)
    return {f"ndcg@{k}": float(np.mean(table[f"ndcg_at_{k}"].to_numpy(dtype=np.float64))) for k in ks}


def _with_tail(
    spec: ExperimentSpec, data: RankingData, scores: NDArray[np.float64], columns: pd.DataFrame | None
) -> pd.DataFrame | None:
    """``columns`` (or nothing) plus ``tail_at_k`` for every cut-off when the data names a
    popularity feature: the tail's share of the top-k exposure of the order of ``scores``
    (equal scores in row order; :mod:`ltr.metrics.tail`)."""
    column = popularity_column(spec.config.data, data)
    if column is None:
        return columns
    quantile = spec.config.data.tail_quantile
    is_tail = tail_items(data.features[:, column], tail_quantile=0.8 if quantile is None else float(quantile))
    order = score_order(scores, data.offsets)
    tail = pd.DataFrame({f"tail_at_{k}": tail_exposure(order, data.offsets, is_tail, k=k) for k in spec.ks})
    return tail if columns is None else pd.concat([columns.reset_index(drop=True), tail], axis=1)


def part_tags(source: DataSource, spec: ExperimentSpec) -> dict[str, str]:
    """The fingerprints of the evaluated and the training data apart
    (:func:`ltr.data.fingerprint.part_fingerprints`), for data held in this process; {} for
    partitions (their rows never reach it: ``ltr compare`` then checks the whole fingerprint)."""
    if not isinstance(source, InMemorySource):
        return {}
    return part_fingerprints(source.training, source.evaluation, [str(s) for s in spec.config.eval.splits])


class DataSource(Protocol):
    """The data of one experiment."""

    name: str
    fingerprint: dict[str, Any]

    @property
    def training(self) -> Splits | None:
        """The splits the trainer sees, or None when the rows never reach this process."""
        ...

    def log_inputs(self, tracker: Tracker) -> None:
        """Record the splits as the run's dataset inputs."""
        ...

    def train_and_score(self, trainer: Trainer, spec: ExperimentSpec) -> Scored:
        """Train ``trainer`` on this data and score the evaluated splits."""
        ...


@dataclass
class InMemorySource:
    """Splits held in this process. ``evaluation`` holds the labels evaluation uses (the true
    grades); it is ``training`` itself except for click data, whose ``clicks`` view also gives
    the naive and IPS click estimates of every evaluated split."""

    name: str
    training: Splits
    evaluation: Splits
    fingerprint: dict[str, Any]
    clicks: ClickSplits | None = None
    #: a table's label sources (``label`` and each recipe's view of the same splits), or None
    label_views: dict[str, Splits] | None = None
    #: a user's click log (``data.click_column``): its click-log options; None for the simulator's
    #: log (whose true click model also gives ``online/*`` and ``clicks_truth/*``) and other data
    user_log: dict[str, str] | None = None
    #: the propensities of the click log (:meth:`estimate_propensities`), set when it is opened
    propensity: PropensityEstimate | None = None

    def log_inputs(self, tracker: Tracker) -> None:
        """One MLflow dataset input per split, named ``{data}/{split}``, whose digest (the UI's
        Dataset column) is the whole data's fingerprint, the run's ``ltr.data.fingerprint`` tag:
        the runs of one data set show one digest. Per-split digests: ``data/fingerprint.json``."""
        for split, part in self.training.items():
            tracker.log_dataset(
                f"{self.name}/{split}", str(self.fingerprint["sha256"]),
                part.features, part.labels, context=split,
            )

    def train_and_score(self, trainer: Trainer, spec: ExperimentSpec) -> Scored:
        t = time.perf_counter()
        result = trainer.fit(self.training, eval_at=list(spec.ks), seed=spec.seed, data_key=str(self.fingerprint["sha256"]))
        seconds = time.perf_counter() - t
        # the data sets (binned, reused or loaded), boosting, and of boosting our per-round metric
        timings = {"datasets": seconds - result.seconds, "boost": result.seconds, "round_metric": result.metric_seconds}
        splits = list(spec.config.eval.splits)
        t = time.perf_counter()
        scores = {split: self._scores(result, split) for split in splits}
        model_scores = dict(scores)
        timings["scores"] = time.perf_counter() - t
        tables: dict[str, pd.DataFrame] = {}
        gaps: dict[str, LightgbmGap] = {}
        library_gaps: dict[str, LibraryGap] = {}
        pre_rerank: dict[str, pd.DataFrame] = {}
        t = time.perf_counter()
        for split in splits:
            data = self._evaluated(split)
            ranked = rank_split(spec, data, scores[split])
            if ranked.pre_rerank is not None:
                pre_rerank[split] = ranked.pre_rerank
            scores[split], tables[split] = ranked.scores, ranked.table
            gaps[split] = lightgbm_gap(
                data.labels, scores[split], data.offsets, data.qids, max(spec.ks), spec.conventions
            )
            if result.library != "lightgbm":  # and to the library's own conventions
                library_gaps[split] = library_gap(
                    data.labels, scores[split], data.offsets, data.qids, max(spec.ks), spec.conventions,
                    library_of(result.library, result.params),
                )  # fmt: skip
        timings["tables"] = time.perf_counter() - t
        lightgbm_values = {self._lightgbm_key(split): values for split, values in result.values_at_best().items()}
        library_values: dict[str, dict[str, float]] = {}
        if result.library != "lightgbm":  # the library's own values; LightGBM's conventions on the scores
            library_values, lightgbm_values = lightgbm_values, {
                self._lightgbm_key(split): lightgbm_means(self._evaluated(split), model_scores[split], spec.ks)
                for split in splits
            }
        extra: dict[str, dict[str, float]] = {}
        if self.clicks is not None and spec.config.eval.clicks.enabled:
            extra = {split: self._click_summary(spec, split, scores[split], tables[split]) for split in splits}
            if spec.config.eval.clicks.online_sessions > 0 and self.user_log is None:
                for split in splits:
                    extra[split] |= self._online_summary(spec, split, scores[split])
        return Scored(
            result, tables, gaps, lightgbm_values, extra, timings,
            lightgbm_curves={self._lightgbm_key(split): by_name for split, by_name in result.evals_result.items()},
            curves={self._our_key(split): by_key for split, by_key in result.curves.items()},
            pre_rerank=pre_rerank,
            label_histograms=self.label_histograms(),
            label_sources=self._label_sources(spec),
            example_features=self.training.test.features[:INPUT_EXAMPLE_ROWS],
            exposure=self._exposure(spec),
            propensity=self.propensity,
            true_examination=self.clicks.examination if self.clicks is not None and self.clicks.examination_known else None,
            library=result.library,
            library_values=library_values,
            library_gaps=library_gaps,
        )

    def estimate_propensities(self, spec: ExperimentSpec) -> None:
        """Set :attr:`propensity`: the propensities ``eval.clicks.propensity`` names, of positions
        ``1..K`` of the training log (K its deepest position), with a seeded bootstrap interval
        over its queries. Run when the data is opened, so that a log the method cannot use is
        refused (one line) before any run exists."""
        if self.clicks is None:
            return
        click_cfg = spec.config.eval.clicks
        train = self.clicks.clicks.train
        assert train.positions is not None  # a click log always has positions
        n = int(train.positions.max()) + 1
        method = str(click_cfg.propensity)
        options = self.user_log or {}
        try:
            if method == "config":
                curve = self.clicks.examination if click_cfg.propensities is None else list(click_cfg.propensities)
                self.propensity = estimate_propensity(method="given", given=list(curve), n_positions=n)
                return
            inputs = propensity_inputs(method, train, options)
            self.propensity = estimate_propensity(
                train.labels, train.positions, train.offsets, method="ctr" if method == "estimated" else method,
                n_positions=n, n_bootstrap=int(click_cfg.propensity_bootstrap),
                confidence=float(click_cfg.propensity_confidence), seed=spec.seed, **inputs,
            )  # fmt: skip
            self.propensity = check_position_based(self.propensity, train.labels, train.positions, train.offsets)
        except ValueError as exc:
            raise DataError(f"eval.clicks.propensity={method}: {exc}") from None
        note = interval_note(self.propensity)
        log.info(
            "propensities (%s) of positions 1-%d: %s%s", method, min(n, 10),
            ", ".join(f"{v:.3f}" if np.isfinite(v) else "not identified" for v in self.propensity.propensities[:10]),
            f"; {note}" if note else "",
        )

    def _label_sources(self, spec: ExperimentSpec) -> dict[str, str]:
        if self.clicks is None and self.label_views is None:
            return {}
        data = spec.config.data
        return {"train": str(data.train_labels), "valid": str(data.valid_labels), "eval": str(data.eval_labels)}

    def _exposure(self, spec: ExperimentSpec) -> ExposureReport | None:
        """The exposure report of the training click log, under the propensities in use."""
        if self.clicks is None:
            return None
        train = self.clicks.clicks.train
        assert train.positions is not None  # a click log always has positions
        props = self._propensities(spec, int(train.positions.max()) + 1)
        method = str(spec.config.eval.clicks.propensity)
        source = {"config": "configured", "estimated": "estimated"}.get(method, method)
        return exposure_report(train.positions, train.labels, props, propensity_source=source)

    def _propensities(self, spec: ExperimentSpec, n_positions: int) -> NDArray[np.float64]:
        """The propensity model in use (``eval.clicks``): the configured curve, or one estimated
        on the training log."""
        assert self.clicks is not None
        click_cfg = spec.config.eval.clicks
        floor = float(click_cfg.min_propensity)
        if click_cfg.propensity == "config":
            curve = self.clicks.examination if click_cfg.propensities is None else list(click_cfg.propensities)
            return propensity_table(curve, n_positions, min_propensity=floor)
        if click_cfg.propensity == "estimated":
            train = self.clicks.clicks.train
            assert train.positions is not None
            return estimate_propensities(train.labels, train.positions, n_positions=n_positions, min_propensity=floor)
        assert self.propensity is not None  # set when the data was opened
        return self.propensity.table(n_positions, min_propensity=floor)

    def label_histograms(self) -> dict[str, dict[str, list[int]]]:
        """Rows per grade of every label source of click data (relevance, clicks, each recipe)
        or of a table with recipes (label, each recipe) and split:
        ``{source: {split: [n_grade_0, n_grade_1, ...]}}``; {} for other data."""
        if self.label_views is not None:
            sources = self.label_views
        elif self.clicks is not None:
            sources = self.clicks.sources()
        else:
            return {}
        return {
            source: {split: grade_counts(part.labels) for split, part in views.items()}
            for source, views in sources.items()
        }

    def _online_summary(self, spec: ExperimentSpec, split: str, scores: NDArray[np.float64]) -> dict[str, float]:
        """The simulated online click-through rate of the ranking (``online/ctr`` and its 95 % interval),
        under the click model of the log: on the true grades, whatever labels the run judges."""
        assert self.clicks is not None
        data: RankingData = getattr(self.clicks.relevance, split)
        cfg = spec.config.data
        seed = spec.seed + {"train": 0, "valid": 1, "test": 2}[split]  # one stream per split
        online = simulate_online_ctr(
            data.labels, scores, data.offsets, eta=float(cfg.examination_eta),
            click_noise=float(cfg.click_noise), click_max=float(cfg.click_max),
            sessions_per_query=int(spec.config.eval.clicks.online_sessions), seed=seed,
        )  # fmt: skip
        return {
            "online/ctr": online.ctr,
            "online/ctr_ci_low": online.ci_low,
            "online/ctr_ci_high": online.ci_high,
            "online/expected_ctr": online.expected,
            "online/n_sessions": float(online.n_sessions),
        }

    def _scores(self, result: TrainResult, split: str) -> NDArray[np.float64]:
        """The model's scores of an evaluated split: those LightGBM computed at the best round
        while training when it trained on these very rows (no second pass over the trees),
        else a prediction."""
        data = self._evaluated(split)
        kept = result.best_scores.get(split)
        if kept is not None and getattr(self.training, split).features is data.features:
            return kept
        return result.predict(data.features)

    def _evaluated(self, split: str) -> RankingData:
        data: RankingData = getattr(self.evaluation, split)
        return data

    def _same_labels(self, split: str) -> bool:
        return getattr(self.training, split) is getattr(self.evaluation, split)

    def _lightgbm_key(self, split: str) -> str:
        return split if self._same_labels(split) else f"{split}/lightgbm_train_labels"

    def _our_key(self, split: str) -> str:
        """Our curve of a split the trainer saw with other labels (clicks) than evaluation uses
        is not the run's ``{split}/ndcg_at_k``: it is logged as ``{split}/train_labels``."""
        return split if self._same_labels(split) else f"{split}/train_labels"

    def _click_summary(
        self, spec: ExperimentSpec, split: str, scores: NDArray[np.float64], truth: pd.DataFrame
    ) -> dict[str, float]:
        """Naive and IPS click NDCG of one split, and the true NDCG on the queries with clicks."""
        assert self.clicks is not None
        data: RankingData = getattr(self.clicks.clicks, split)
        assert data.positions is not None  # a click log always has positions
        props = self._propensities(spec, int(data.positions.max()) + 1)
        naive, ips = click_tables(
            data.labels, data.positions, scores, data.offsets, data.qids, propensities=props,
            ks=list(spec.ks), conventions=spec.conventions, strata=spec.strata,
        )
        summary = click_summary(naive, ips, truth, strata=spec.strata)
        if self.user_log is not None:  # a user's log: no true grades behind its clicks
            summary = {key: value for key, value in summary.items() if not key.startswith("clicks_truth/")}
        return summary


def shaped_like(dtype: Any, shape: tuple[int, ...]) -> NDArray[Any]:
    """A read-only array of ``dtype`` and ``shape`` that takes no memory (every element is the
    same zero): what MLflow's dataset record reads of an array is its dtype and shape.

    >>> a = shaped_like(np.float32, (1_000_000, 136))
    >>> a.shape, a.dtype, a.strides, a.flags.writeable
    ((1000000, 136), dtype('float32'), (0, 0), False)
    """
    return np.lib.stride_tricks.as_strided(
        np.zeros(1, dtype=dtype), shape=shape, strides=(0,) * len(shape), writeable=False
    )


@dataclass
class PartitionedSource:
    """Splits stored as Parquet partitions of whole queries, read by the Dask workers
    (``data=parquet_partitions``); this process reads only the files' footers."""

    name: str
    fingerprint: dict[str, Any]
    training: None = None

    def log_inputs(self, tracker: Tracker) -> None:
        """One MLflow dataset input per split, as :meth:`InMemorySource.log_inputs` logs them: named
        ``{data}/{split}``, digest the run's fingerprint, the schema and profile of the split's
        float32 features and int32 labels (their shapes from the files' footers). The rows never
        reach this process: MLflow is given arrays of those dtypes and shapes that hold no data
        (:func:`shaped_like`), all its record reads of them; a local run of the same files logs the
        same records (tested)."""
        for split in ("train", "valid", "test"):
            info = self.fingerprint.get(split)
            if not isinstance(info, dict):
                continue
            n_rows, n_features = int(info["n_rows"]), int(info["n_features"])
            tracker.log_dataset(
                f"{self.name}/{split}", str(self.fingerprint["sha256"]),
                shaped_like(np.float32, (n_rows, n_features)), shaped_like(np.int32, (n_rows,)), context=split,
            )  # fmt: skip

    def train_and_score(self, trainer: Trainer, spec: ExperimentSpec) -> Scored:
        from ltr.dask.trainer import DaskTrainer

        if not isinstance(trainer, DaskTrainer):
            raise LtrUserError(f"data={self.name} is read by Dask workers: add trainer=dask")
        result, tables, gaps, timings = trainer.fit_partitioned_tables(
            spec.config, ks=list(spec.ks), table_ks=list(spec.table_ks),
            strata=spec.strata, conventions=spec.conventions,
        )
        from ltr.dask.partitioned import first_rows

        return Scored(
            result, tables, gaps, result.values_at_best(), {}, timings,
            lightgbm_curves=result.evals_result, curves=result.curves,
            example_features=first_rows(spec.config.data, "test", INPUT_EXAMPLE_ROWS),
        )


def _log_sizes(splits: Splits) -> None:
    for name, part in splits.items():
        log.info("%s: %d queries, %d rows, %d features", name, part.n_queries, part.n_rows, part.n_features)


def _in_memory(spec: ExperimentSpec) -> DataSource:
    config = spec.config
    # the cache entries are written while the run bins and trains; ltr.experiment.run waits for them
    splits = load_splits(config.data, config.split, seed=spec.seed, cache_in_background=True)
    _log_sizes(splits)
    return InMemorySource(str(config.data.name), splits, splits, fingerprint(splits, strata=spec.strata))


def _click_log(spec: ExperimentSpec) -> DataSource:
    config = spec.config
    data = config.data
    clicks = load_click_splits(data, config.split, seed=spec.seed)
    training = clicks.training_view(str(data.train_labels), str(data.valid_labels), str(data.eval_labels))
    evaluation = clicks.view(str(data.eval_labels))  # the same split objects as training's where the labels agree
    _log_sizes(training)
    source = InMemorySource(
        str(config.data.name), training, evaluation, fingerprint(training, strata=spec.strata), clicks
    )
    source.estimate_propensities(spec)
    return source


def _table(spec: ExperimentSpec) -> DataSource:
    """A Parquet / CSV table: in memory; with label recipes (``data.label_recipes``) each recipe
    relabels the same splits from ``data.behaviour_columns``, and the run trains, selects and
    judges on the sources ``data.train_labels`` / ``valid_labels`` / ``eval_labels`` name."""
    config = spec.config
    data = config.data
    recipes = dict(getattr(data, "label_recipes", None) or {})
    if not recipes and not is_click_log(data):
        return _in_memory(spec)
    splits = load_splits(data, config.split, seed=spec.seed, cache_in_background=True)
    views = {"label": splits} | {
        str(name): Splits(*(with_recipe(part, recipe, name=str(name)) for _, part in splits.items()))
        for name, recipe in recipes.items()
    }
    train, valid, test = (views[str(getattr(data, f"{role}_labels"))] for role in ("train", "valid", "eval"))
    training = Splits(train=train.train, valid=valid.valid, test=test.test)
    _log_sizes(training)
    for name, view in views.items():
        log.info("labels %s: %s", name, "; ".join(f"{split} {grade_counts(part.labels)}" for split, part in view.items()))
    if not is_click_log(data):
        return InMemorySource(
            str(data.name), training, test, fingerprint(training, strata=spec.strata), label_views=views
        )
    # a user's click log: the click view of the same splits feeds the click estimates, the
    # exposure and the propensities, as the simulator's log's does (no true grades, no online CTR)
    clicks = ClickSplits(test, click_splits(splits, str(data.click_column)), np.ones(1), examination_known=False)
    source = InMemorySource(
        str(data.name), training, test, fingerprint(training, strata=spec.strata), clicks,
        label_views=views, user_log=click_options(data),
    )  # fmt: skip
    source.estimate_propensities(spec)
    return source


def _partitioned(spec: ExperimentSpec) -> DataSource:
    from ltr.dask.partitioned import partitions_fingerprint

    config = spec.config
    return PartitionedSource(str(config.data.name), partitions_fingerprint(config.data, config.trainer))


#: How each data ``kind`` is opened; every other kind is read into memory by ``load_splits``.
OPENERS: dict[str, Callable[[ExperimentSpec], DataSource]] = {
    "synthetic_clicks": _click_log,
    "parquet": _table,
    "parquet_partitions": _partitioned,
}


def binned_store(data_cfg: Any) -> BinnedStore | None:
    """Where LightGBM's binned data sets of this data are kept across processes: beside the parse
    cache (``<cache_dir>/binned``) for file data with ``cache`` and ``binned_cache`` on; else None."""
    if not (getattr(data_cfg, "cache", False) and getattr(data_cfg, "binned_cache", False)):
        return None
    cache_dir = getattr(data_cfg, "cache_dir", None)
    directory = (Path(cache_dir) if cache_dir else default_cache_dir()).expanduser() / "binned"
    max_mb = getattr(data_cfg, "binned_cache_max_mb", None)
    if max_mb is not None and (isinstance(max_mb, bool) or max_mb < 0):
        raise LtrUserError(f"data.binned_cache_max_mb={max_mb!r} must be a non-negative integer (MB) or null")
    return BinnedStore(directory, max_mb)


def open_source(spec: ExperimentSpec) -> DataSource:
    """Read and validate the data of ``spec`` (raises `DataError` naming file, line, query).

    The parse-cache entries of files parsed now are written by a background thread while the
    caller goes on: the caller calls :func:`ltr.data.cache.wait_for_stores` before it ends (as
    :func:`ltr.experiment.run.run` does), which also ends that thread."""
    return OPENERS.get(str(spec.config.data.kind), _in_memory)(spec)

"""Early stopping on our nDCG and the progress line, for the backends whose loop is not LightGBM's.

:class:`RoundDriver` is fed, after every boosting round, each evaluated set's scores; it scores
them with :class:`ltr.training.round_metric.RoundNdcg` (our ``ndcg_at_k`` under the run's
conventions, one kernel call per set and round), adds the library's own values of the round,
and runs LightGBM's path's own callbacks on them (:class:`ltr.training.local.EarlyStopOnMetric`,
:class:`ltr.training.local.ProgressDisplay`): the same stopping rule, the same search pruning
(a round hook), the same progress line, whatever library trained.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import lightgbm as lgb
import numpy as np
from numpy.typing import NDArray

from ltr.config.schema import FitConfig
from ltr.data.splits import Splits
from ltr.metrics import MetricConventions
from ltr.metrics.table import measure_arrays
from ltr.training.local import EarlyStopOnMetric, ProgressDisplay, whose
from ltr.training.round_hook import current_round_hook
from ltr.training.round_metric import RoundNdcg, curve_name
from ltr.training.settings import watched_metric

log = logging.getLogger(__name__)

#: LightGBM's own ``ndcg@k`` (:mod:`ltr.metrics.reports.gap`): exp gain, ties in row order, 1 for a query with nothing relevant.
LIGHTGBM_CONVENTIONS = MetricConventions(gain="exp", ties="stable", zero_idcg="one")
#: The evaluated sets, in the order the curves list them.
EVALUATED = ("valid", "test")


class RoundDriver:
    """Our per-round metric, early stopping on ``metric`` (on valid) and progress.

    ``curves[split][name]``: our values per round; ``library_curves[split][name]``: the
    library's own (``ndcg@10``). ``best_iteration`` (1-based) and ``n_rounds`` once done.
    """

    def __init__(self, fit: FitConfig, metric: str, round_metric: RoundNdcg, what: str, *, library: str = "LightGBM") -> None:
        self.fit = fit
        self.library = library  # whose own ndcg@k the library values are (log lines)
        self.metric = metric
        self.round_metric = round_metric
        self.stopper = EarlyStopOnMetric("valid", metric, fit.early_stopping_rounds, round_metric.mark_best, current_round_hook())
        self.progress = ProgressDisplay(fit.num_boost_round, "valid", metric) if fit.show_progress else None
        self.curves: dict[str, dict[str, list[float]]] = {}
        self._sets: dict[str, tuple[NDArray[np.int64], NDArray[np.int64]]] = {}
        self.library_curves: dict[str, dict[str, list[float]]] = {}
        self.start = time.perf_counter()
        log.info("training %s", what)

    def register(self, split: str, labels: NDArray[np.integer], offsets: NDArray[np.int64]) -> None:
        """The labels and query offsets of an evaluated set (its rows in the trainer's order)."""
        self.round_metric.register(split, labels, offsets)  # type: ignore[arg-type]  # any hashable key
        self._sets[split] = (np.asarray(labels, dtype=np.int64), np.asarray(offsets, dtype=np.int64))

    def _lightgbm_means(self, split: str, preds: NDArray[np.float64]) -> list[tuple[str, float]]:
        """LightGBM's ``ndcg@k`` of ``preds`` (its conventions), as ``lightgbm/ndcg_at_k``: the
        curve a LightGBM run logs as ``iter/{split}/lightgbm/ndcg_at_k``."""
        labels, offsets = self._sets[split]
        if offsets.shape[0] <= 1:
            return [(f"lightgbm/{curve_name(k)}", float("nan")) for k in self.round_metric.ks]
        ks = list(self.round_metric.ks)
        ndcg = measure_arrays(labels, preds, offsets, ks=ks, conventions=LIGHTGBM_CONVENTIONS, full_ap=False).ndcg
        return [(f"lightgbm/{curve_name(k)}", float(np.mean(ndcg[:, j]))) for j, k in enumerate(ks)]

    def after_round(
        self, iteration: int, scores: dict[str, NDArray[Any]], library: dict[str, dict[str, float]] | None = None
    ) -> bool:
        """Record round ``iteration`` (0-based) from each set's ``scores`` and the library's own
        values; True when training should stop (patience spent, the last round, or a pruner)."""
        results: list[Any] = []  # LightGBM's evaluation entries: (set, metric, value, higher is better)
        for split in EVALUATED:
            preds = np.asarray(scores[split], dtype=np.float64)
            for name, value, higher in self.round_metric(preds, split):  # type: ignore[arg-type]
                self.curves.setdefault(split, {}).setdefault(name, []).append(value)
                results.append((split, name, value, higher))
            for name, value in self._lightgbm_means(split, preds):
                self.curves.setdefault(split, {}).setdefault(name, []).append(value)
            for name, value in (library or {}).get(split, {}).items():
                self.library_curves.setdefault(split, {}).setdefault(name, []).append(float(value))
                results.append((split, name, float(value), True))
        no_model: Any = None  # neither callback reads the model
        env = lgb.callback.CallbackEnv(
            model=no_model, params={}, iteration=iteration, begin_iteration=0,
            end_iteration=self.fit.num_boost_round, evaluation_result_list=results,
        )  # fmt: skip
        if self.progress is not None:
            self.progress(env)
        try:
            self.stopper(env)
        except lgb.callback.EarlyStopException:
            return True
        return False

    def all_trained(self) -> None:
        """Every round is trained before the first one is fed: the progress line's time left is
        that of scoring the rest."""
        if self.progress is not None:
            self.progress.restart_clock()

    def close(self) -> float:
        """End the progress line and log where training stopped; returns the seconds it took."""
        if self.progress is not None:
            self.progress.close()
        seconds = time.perf_counter() - self.start
        log.info(
            "stopped after %d rounds; best round %d with valid %s = %.6f (%s)",
            self.n_rounds, self.best_iteration, self.metric, self.stopper.best_value,
            whose(self.metric).replace("LightGBM's", f"{self.library}'s"),
        )  # fmt: skip
        return seconds

    @property
    def best_iteration(self) -> int:
        return self.stopper.best_iteration + 1

    @property
    def n_rounds(self) -> int:
        return self.stopper.last_iteration + 1

    def trimmed(self, curves: dict[str, dict[str, list[float]]]) -> dict[str, dict[str, list[float]]]:
        """``curves`` up to the last round trained (a loop may have evaluated ahead)."""
        n = self.n_rounds
        return {split: {name: values[:n] for name, values in by.items()} for split, by in curves.items()}


ModelT = TypeVar("ModelT")


@dataclass(frozen=True, slots=True)
class RoundTrainer(Generic[ModelT]):
    """What a :class:`ltr.training.trainer.Trainer` whose rounds a :class:`RoundDriver` watches
    holds: its ``model`` config, ``fit_config``, the run's ``conventions``, the cut-offs of its
    per-round tables (``table_ks``; empty: ``eval_at``) and whether the run re-ranks
    (``model_order``: curves of the model's strict order too, :class:`RoundNdcg`)."""

    model: ModelT
    fit_config: FitConfig
    conventions: MetricConventions = field(default_factory=MetricConventions)
    table_ks: tuple[int, ...] = ()
    model_order: bool = False

    def start_rounds(
        self, splits: Splits, eval_at: list[int], what: str, *, library: str, fit: FitConfig | None = None
    ) -> tuple[RoundNdcg, RoundDriver]:
        """Our per-round metric and the driver of early stopping on it (which logs ``what`` is
        trained and starts the clock), with ``valid`` and ``test`` registered. ``fit``: the
        settings the driver runs under (default ``fit_config``; the watched metric is always
        ``fit_config``'s)."""
        round_metric = RoundNdcg(
            ks=eval_at, table_ks=self.table_ks or tuple(eval_at), conventions=self.conventions, model_order=self.model_order
        )
        watched = watched_metric(self.fit_config, eval_at)
        driver = RoundDriver(fit or self.fit_config, watched, round_metric, what, library=library)
        for split in EVALUATED:
            data = getattr(splits, split)
            driver.register(split, data.labels, data.offsets)
        return round_metric, driver

"""Fit a LightGBM ranker with early stopping on one validation metric and a progress display.

Every model trains through ``lgb.train``. Each round, LightGBM evaluates ``valid`` and ``test``
with its own ``ndcg@k`` and with ours (:class:`ltr.training.round_metric.RoundNdcg`:
``ndcg_at_k`` under the run's conventions). :class:`EarlyStopOnMetric` watches exactly the
configured metric on ``valid``, by default ours at the largest cut-off (``ndcg_at_10``), the
value the run reports as ``valid/ndcg_at_10``. (LightGBM's ``first_metric_only`` would watch
its first sorted ``eval_at``.)

``model.position_bias=true`` trains lambdarank with LightGBM's position-bias treatment (unbiased
lambdarank: ``lgb.Dataset(position=...)``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import joblib
import lightgbm as lgb
import numpy as np
from numpy.typing import NDArray

from ltr.config.schema import FitConfig, ModelConfig
from ltr.data.splits import Splits
from ltr.errors import LtrUserError
from ltr.metrics import MetricConventions
from ltr.metrics.clicks.position_bias import LearnedBias, lightgbm_bias
from ltr.runtime.progress import rich_columns, time_left
from ltr.runtime.stops import raise_if_stop_requested
from ltr.runtime.terminal import console as terminal_console
from ltr.training import lightgbm_log  # noqa: F401  LightGBM's lines to the log, not stdout
from ltr.training.binned import binned_datasets, drop_entry, keep_built
from ltr.training.binned_store import BinnedStore
from ltr.training.feature_params import check_feature_params, feature_param_keys
from ltr.training.lightgbm_log import BiasFactorLog, listening
from ltr.training.round_hook import RoundHook, current_round_hook
from ltr.training.round_metric import RoundNdcg, is_our_curve
from ltr.training.settings import check_extra_params, check_model_config, watched_metric

log = logging.getLogger(__name__)

# ModelConfig fields that are not LightGBM parameters.
_NON_LGBM_FIELDS = frozenset({"name", "estimator", "params"})


@dataclass(frozen=True, slots=True)
class TrainResult:
    """A fitted model and what its training recorded.

    ``evals_result`` maps split name -> LightGBM metric name (``ndcg@10``) -> one value per round
    (LightGBM's own conventions); ``curves`` maps split name -> our key (``ndcg_at_10``) -> one
    value per round (the run's conventions); both cover every round trained. ``best_iteration`` is 1-based, as LightGBM's ``best_iteration_``; ``n_rounds`` were trained.
    """

    model: Any  # an lgb.Booster; an LGBMRanker from the Dask trainer; XGBoost's or CatBoost's ScoringModel
    params: dict[str, Any]
    evals_result: dict[str, dict[str, list[float]]]
    best_iteration: int
    n_rounds: int
    seconds: float
    curves: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    metric_seconds: float = 0.0  # of ``seconds``: our per-round metric (RoundNdcg)
    #: split -> the evaluated set's scores at the best round, as LightGBM computed them while
    #: training, equal bit for bit to ``predict(features)`` (empty when they would not be)
    best_scores: dict[str, NDArray[np.float64]] = field(default_factory=dict)
    #: the library that trained the model and whose own metric ``evals_result`` holds
    library: str = "lightgbm"
    #: the position-bias curve the library learned (unbiased lambdarank), None when it learned none
    position_bias: LearnedBias | None = None

    @property
    def booster(self) -> Any:
        """The trained model: LightGBM's ``Booster``, or the backend's
        :class:`ltr.training.backends.ScoringModel` (cut at the best round)."""
        return self.model.booster_ if isinstance(self.model, lgb.LGBMModel) else self.model

    def values_at_best(self) -> dict[str, dict[str, float]]:
        """``evals_result`` at the best round: split -> LightGBM metric name -> value."""
        return {
            split: {name: values[self.best_iteration - 1] for name, values in by_metric.items()}
            for split, by_metric in self.evals_result.items()
        }

    def predict(self, features: NDArray[np.float32]) -> NDArray[np.float64]:
        """Scores of the best iteration, shape (n_rows,)."""
        return np.asarray(
            self.booster.predict(features, num_iteration=self.best_iteration), dtype=np.float64
        )


class EarlyStopOnMetric:
    """Stop when ``metric`` on ``data_name`` has not improved for ``rounds`` rounds.

    At the last round it also stops, so LightGBM records the best iteration either way.
    ``rounds=None`` only records the best iteration.
    """

    def __init__(
        self,
        data_name: str,
        metric: str,
        rounds: int | None,
        on_best: Callable[[], None] | None = None,
        round_hook: RoundHook | None = None,
    ) -> None:
        # An instance attribute: LightGBM overwrites a missing one in the instance __dict__.
        # 30 runs after record_evaluation (20), so the stopping round is recorded too.
        self.order = 30
        self.data_name = data_name
        self.metric = metric
        self.rounds = rounds
        self.on_best = on_best  # called in the round that becomes the best
        self.best_iteration = -1
        self.best_value = -np.inf
        self.best_results: list[Any] = []
        self.last_iteration = -1
        self.round_hook = round_hook  # (round, value) -> stop now? (a search's pruner)
        self.stopped_by_hook_at: int | None = None  # the 1-based round the hook stopped at

    def __call__(self, env: lgb.callback.CallbackEnv) -> None:
        raise_if_stop_requested()  # a stop signal whose exception was swallowed stops here
        self.last_iteration = env.iteration
        value = _find_metric(env.evaluation_result_list, self.data_name, self.metric)
        if value > self.best_value:
            self.best_value = value
            self.best_iteration = env.iteration
            self.best_results = list(env.evaluation_result_list or [])
            if self.on_best is not None:
                self.on_best()
        stalled = self.rounds is not None and env.iteration - self.best_iteration >= self.rounds
        if self.round_hook is not None and not stalled and self.round_hook(env.iteration + 1, value):
            self.stopped_by_hook_at = env.iteration + 1
            stalled = True
        if stalled or env.iteration == env.end_iteration - 1:
            raise lgb.callback.EarlyStopException(self.best_iteration, self.best_results)


class ProgressDisplay:
    """One progress line per boosting round with the watched validation metric.

    On a terminal a rich progress bar; otherwise a log line every ``log_every`` rounds.
    """

    def __init__(self, total: int, data_name: str, metric: str, *, log_every: int = 50) -> None:
        self.order = 25
        self.total = total
        self.data_name = data_name
        self.metric = metric
        self.log_every = log_every
        self._progress: Any = None
        self._task: Any = None
        self._best = -np.inf
        self._start = time.monotonic()
        if sys.stderr.isatty():
            from rich.progress import Progress, TextColumn

            self._progress = Progress(
                *rich_columns("boosting", TextColumn("{task.fields[status]}")),
                transient=False,
                console=terminal_console(stderr=True),
            )
            self._task = self._progress.add_task("boosting", total=total, status="")
            self._progress.start()

    def __call__(self, env: lgb.callback.CallbackEnv) -> None:
        value = _find_metric(env.evaluation_result_list, self.data_name, self.metric)
        self._best = max(self._best, value)
        status = f"{self.data_name} {self.metric} {value:.5f} (best {self._best:.5f})"
        if self._progress is not None:
            self._progress.update(self._task, completed=env.iteration + 1, status=status)
        elif (env.iteration + 1) % self.log_every == 0 or env.iteration == 0:
            left = time_left(time.monotonic() - self._start, env.iteration + 1, self.total)
            log.info("round %d/%d: %s, %s (at most: early stopping may end sooner)", env.iteration + 1, self.total, status, left)

    def restart_clock(self) -> None:
        """Time what is left from now (the rounds so far were trained before their first line)."""
        self._start = time.monotonic()

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()


def _find_metric(results: list[Any] | None, data_name: str, metric: str) -> float:
    for entry in results or []:
        if entry[0] == data_name and entry[1] == metric:
            return float(entry[2])
    available = ", ".join(f"{e[0]}:{e[1]}" for e in results or [])
    raise LtrUserError(
        f"fit.early_stopping_metric={metric!r} is not computed on {data_name!r}; available: {available}"
    )


def check_position_training(model: ModelConfig, splits: Splits) -> None:
    """Refuse ``model.position_bias=true`` on training data without positions (before any run)."""
    if model.position_bias and splits.train.positions is None:
        raise LtrUserError(
            f"model.position_bias=true needs a position per training row, but {splits.train.name!r} "
            "has none; use data=synthetic_clicks, give the data a position column or a .position "
            "file, or set model.position_bias=false"
        )


def check_lightgbm_accepts(
    model: ModelConfig, fit: FitConfig, *, max_label: int, seed: int, n_features: int | None = None
) -> None:
    """Ask LightGBM itself whether it accepts the model's parameters, on a 4-row data set.

    Builds a ``Booster`` (no training) with every parameter ltr would pass and labels up to
    ``max_label``; LightGBM's refusal (a parameter out of range, a ``label_gain`` too short, an
    unknown objective) becomes one :class:`LtrUserError` line without LightGBM's source path, and
    the ``[LightGBM] [Fatal]`` line LightGBM prints itself is held back
    (:func:`native_stderr_held`). The data set has 2 columns, or the data's ``n_features`` when
    ``model.params`` has a per-feature parameter (:mod:`ltr.training.feature_params`, whose
    checks come first); with the count unknown, those parameters are left out of the question.
    """
    params = train_params(lightgbm_params(model, seed=seed, num_threads=fit.num_threads), eval_at=[1])
    if model.estimator != "ranker":
        params.pop("eval_at")
        params["metric"] = "l2"
    width = 2
    per_feature = feature_param_keys(model.params)
    if per_feature and n_features is not None:
        check_feature_params(model.params, n_features)
        width = n_features
    elif per_feature:
        for key in per_feature:
            params.pop(key)
    features = np.arange(4 * width, dtype=np.float64).reshape(4, width)
    labels = np.array([0, max_label, 0, max_label], dtype=np.float64)
    try:
        with native_stderr_held():
            lgb.Booster(params, lgb.Dataset(features, labels, group=[2, 2], params={"verbosity": -1}))
    except lgb.basic.LightGBMError as exc:
        raise LtrUserError(f"LightGBM refuses the model settings: {lightgbm_error_text(exc)}") from exc


#: The line LightGBM's C++ code prints to file descriptor 2 before it raises the same text.
_FATAL_PREFIX = "[LightGBM] [Fatal]"


@contextlib.contextmanager
def native_stderr_held() -> Iterator[None]:
    """Hold what is written to file descriptor 2 inside the block, then write it back without
    LightGBM's ``[LightGBM] [Fatal] ...`` lines (C++ prints them itself, whatever the
    verbosity, before raising the :class:`lightgbm.basic.LightGBMError` that carries the same
    text). Only around a short call: another thread's output to the descriptor is delayed until
    the block ends, never lost."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with tempfile.TemporaryFile() as held:
            os.dup2(held.fileno(), 2)
            try:
                yield
            finally:
                sys.stderr.flush()
                os.dup2(saved, 2)
                held.seek(0)
                text = held.read().decode("utf-8", errors="replace")
                lines = text.splitlines(keepends=True)
                kept = [line for line in lines if not line.startswith(_FATAL_PREFIX)]
                if len(kept) < len(lines):  # and the blank line LightGBM's message ends with
                    kept = [line for line in kept if line.strip()]
                if kept:
                    sys.stderr.write("".join(kept))
                    sys.stderr.flush()
    finally:
        os.close(saved)


def lightgbm_error_text(exc: Exception) -> str:
    """LightGBM's error text without the path of its C++ source (`` at /path/file.cpp, line 12 .``)."""
    return re.sub(r"\s+at \S+, line \d+\s*\.?", "", str(exc)).strip()


def physical_cores() -> int:
    """The machine's physical cores (LightGBM's scikit-learn default thread count)."""
    return int(joblib.cpu_count(only_physical_cores=True))


def lightgbm_params(model: ModelConfig, *, seed: int, num_threads: int) -> dict[str, Any]:
    """LightGBM parameters from the model config: explicit fields, then ``model.params``.

    Always deterministic for a seed: ``deterministic=True``, ``force_col_wise=True``, ``seed``
    for every random source LightGBM has, and an explicit thread count (``num_threads``, or the
    machine's physical cores as LightGBM's scikit-learn API picks them): LightGBM's own metric
    sums its queries over threads, so a thread count left to OpenMP (which a launcher's worker
    may limit) would change its last digits.
    """
    params: dict[str, Any] = {
        "objective": model.objective,
        "learning_rate": model.learning_rate,
        "num_leaves": model.num_leaves,
        "max_depth": model.max_depth,
        "min_child_samples": model.min_child_samples,
        "min_child_weight": model.min_child_weight,
        "subsample": model.subsample,
        "subsample_freq": model.subsample_freq,
        "colsample_bytree": model.colsample_bytree,
        "reg_alpha": model.reg_alpha,
        "reg_lambda": model.reg_lambda,
        "max_bin": model.max_bin,
    }
    if model.lambdarank_truncation_level is not None:
        params["lambdarank_truncation_level"] = model.lambdarank_truncation_level
    if model.lambdarank_norm is not None:
        params["lambdarank_norm"] = model.lambdarank_norm
    if model.label_gain is not None:
        params["label_gain"] = list(model.label_gain)
    extra = {key: _plain(value) for key, value in model.params.items()}
    check_extra_params(extra)
    params.update(extra)
    params.update(
        {
            "random_state": seed,
            "deterministic": True,
            "force_col_wise": True,
            "n_jobs": num_threads if num_threads > 0 else physical_cores(),
            "verbosity": -1,
        }
    )
    return params


def _plain(value: Any) -> Any:
    """``value`` with every sequence as a list: LightGBM takes lists, not the ``ListConfig`` of a
    composed config's ``model.params``."""
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [_plain(item) for item in value]
    return value


@dataclass(frozen=True, slots=True)
class _Boosted:
    model: Any
    stopper: EarlyStopOnMetric
    seconds: float

    @property
    def n_rounds(self) -> int:
        return self.stopper.last_iteration + 1


def whose(metric: str) -> str:
    """Whose conventions a watched metric follows, for log lines."""
    return "the run's conventions" if is_our_curve(metric) else "LightGBM's conventions"


def _boost(
    fit: FitConfig,
    metric: str,
    description: str,
    train: Callable[[list[Any]], Any],
    on_best: Callable[[], None] | None = None,
) -> _Boosted:
    """Run ``train(callbacks)`` with early stopping on valid ``metric``, progress and timing;
    ``on_best`` is called in every round that improves the watched metric."""
    stopper = EarlyStopOnMetric("valid", metric, fit.early_stopping_rounds, on_best, current_round_hook())
    callbacks: list[Any] = [stopper]
    progress = None
    if fit.show_progress:
        progress = ProgressDisplay(fit.num_boost_round, "valid", metric)
        callbacks.append(progress)
    log.info("training %s", description)
    start = time.perf_counter()
    try:
        model = train(callbacks)
    except lgb.basic.LightGBMError as exc:
        raise LtrUserError(f"LightGBM rejected the training setup: {lightgbm_error_text(exc)}") from exc
    finally:
        if progress is not None:
            progress.close()
    boosted = _Boosted(model, stopper, time.perf_counter() - start)
    log.info(
        "stopped after %d rounds; best round %d with valid %s = %.6f (%s)",
        boosted.n_rounds,
        stopper.best_iteration + 1,
        metric,
        stopper.best_value,
        whose(metric),
    )
    return boosted


def _split_curves(evals: Any) -> tuple[dict[str, dict[str, list[float]]], dict[str, dict[str, list[float]]]]:
    """``record_evaluation``'s record as (LightGBM's ``ndcg@k``, our ``ndcg_at_k``) per split."""
    lightgbm_curves: dict[str, dict[str, list[float]]] = {}
    ours: dict[str, dict[str, list[float]]] = {}
    for split, by_metric in evals.items():
        for name, values in by_metric.items():
            target = ours if is_our_curve(name) else lightgbm_curves
            target.setdefault(split, {})[name] = list(values)
    return lightgbm_curves, ours


def fit_ranker(
    splits: Splits,
    model: ModelConfig,
    fit: FitConfig,
    *,
    eval_at: list[int],
    seed: int,
    round_metric: RoundNdcg | None = None,
    data_key: str | None = None,
    binned_store: BinnedStore | None = None,
) -> TrainResult:
    """Train on ``splits.train`` with ``lgb.train``; ``valid`` and ``test`` are evaluated every round.

    LightGBM records its own ``ndcg@k`` (``eval_at``); ``round_metric`` adds ours
    (``ndcg_at_k``, the run's conventions) on the same sets. Early stopping watches
    ``fit.early_stopping_metric`` (either name) on ``valid`` only; ``test`` is recorded for the
    curves, never for a decision. A ranker (lambdarank, rank_xendcg) and a pointwise regressor
    share this path; ``model.position_bias`` adds the training rows' positions to the data set
    (unbiased lambdarank). ``data_key`` (the data's content fingerprint) lets a sweep's next job
    in this process reuse the binned data sets (:mod:`ltr.training.binned`), and a later process
    find them in ``binned_store``: sets binned here are written there in the background once
    trained on (:func:`ltr.data.cache.wait_for_stores` waits for the write).
    """
    check_model_config(model)
    check_feature_params(model.params, splits.train.n_features)
    if model.position_bias:
        check_position_training(model, splits)
    if round_metric is None:  # our default conventions
        round_metric = RoundNdcg(ks=eval_at, table_ks=eval_at, conventions=MetricConventions())
    params = train_params(lightgbm_params(model, seed=seed, num_threads=fit.num_threads), eval_at=eval_at)
    train, valid, test = splits.train, splits.valid, splits.test
    what = f"{model.objective} on {train.n_queries} queries / {train.n_rows} rows, {train.n_features} features"
    if model.position_bias:
        assert train.positions is not None  # checked by check_position_training
        what += f", position bias over {len(np.unique(train.positions))} positions"
    data_key = data_key if fit.reuse_binned_data else None
    # unbiased lambdarank writes its learned bias factors only to its debug log (BiasFactorLog)
    run_params = {**params, "verbosity": 2} if model.position_bias else params
    retried = False
    while True:
        train_set, eval_sets, entry = binned_datasets(
            splits, params, position_bias=model.position_bias, data_key=data_key, store=binned_store
        )
        for dataset, data in zip(eval_sets, (valid, test), strict=True):
            round_metric.register(dataset, data.labels, data.offsets)
        evals: dict[str, Any] = {}

        def run(
            callbacks: list[Any], train_set: lgb.Dataset = train_set, eval_sets: Any = eval_sets, evals: Any = evals
        ) -> lgb.Booster:
            return lgb.train(
                run_params,
                train_set,
                num_boost_round=fit.num_boost_round,
                valid_sets=list(eval_sets),
                valid_names=["valid", "test"],
                feval=round_metric,
                callbacks=[lgb.record_evaluation(evals), *callbacks],
            )

        bias_log = BiasFactorLog()
        try:
            with listening(bias_log) if model.position_bias else contextlib.nullcontext():
                boosted = _boost(fit, watched_metric(fit, eval_at), what, run, on_best=round_metric.mark_best)
        except LtrUserError as exc:
            if entry is None or retried:
                raise
            # LightGBM fails on data read from the binned-data cache (a file altered after its
            # checksums were written): drop the entry and bin the data again, once
            drop_entry(entry, f"LightGBM failed on it: {exc}")
            retried = True
            continue
        break
    keep_built()  # the sets binned here go to the binned-data store, in the background
    booster = boosted.model
    best = int(booster.best_iteration)
    lightgbm_curves, ours = _split_curves(evals)
    best_scores: dict[str, NDArray[np.float64]] = {}
    if training_scores_are_predictions(params):
        for name, dataset in zip(("valid", "test"), eval_sets, strict=True):
            scores = round_metric.best_scores(dataset)
            if scores is not None:
                best_scores[name] = scores
    factors = bias_log.finish()
    return TrainResult(
        booster, params, lightgbm_curves, best, boosted.n_rounds, boosted.seconds, ours,
        round_metric.seconds, best_scores, position_bias=lightgbm_bias(factors) if factors else None,
    )  # fmt: skip


#: LightGBM's names of its ``boosting`` parameter, and the kinds whose training scores of an
#: evaluated set at round i are the doubles ``predict(num_iteration=i)`` returns: each round
#: adds its tree's leaf values. DART re-weights earlier trees and ``rf`` averages them, so their
#: scores at round i differ from the final model's (by ~1e-15): those runs predict.
_BOOSTING_KEYS = ("boosting", "boosting_type", "boost")
_ADDITIVE_BOOSTING = frozenset({"gbdt", "gbrt", "goss"})


def training_scores_are_predictions(params: dict[str, Any]) -> bool:
    """True when the scores LightGBM computed for the evaluated sets during training are, bit
    for bit, what the model predicts at that round (plain gradient boosting; see above)."""
    kinds = {str(params[key]).lower() for key in _BOOSTING_KEYS if params.get(key) is not None}
    return kinds <= _ADDITIVE_BOOSTING


def train_params(params: dict[str, Any], *, eval_at: list[int]) -> dict[str, Any]:
    """The sklearn-style ``params`` of :func:`lightgbm_params` as ``lgb.train`` parameters.

    Every sklearn name ltr uses is a LightGBM alias (``random_state`` -> ``seed``, ``n_jobs`` ->
    ``num_threads``, ...); ``n_jobs=None`` (LightGBM's default) is dropped. LightGBM's own
    ``ndcg@k`` is computed at ``eval_at`` on every evaluated set (for a regressor too: the
    evaluated sets carry their queries).
    """
    out = {k: v for k, v in params.items() if not (k == "n_jobs" and v is None)}
    out["metric"] = "ndcg"
    out["eval_at"] = sorted(set(eval_at))
    return out


@dataclass(frozen=True, slots=True)
class LocalTrainer:
    """:class:`ltr.training.trainer.Trainer` in this process (``trainer=local``)."""

    model: ModelConfig
    fit_config: FitConfig
    conventions: MetricConventions = field(default_factory=MetricConventions)
    table_ks: tuple[int, ...] = ()  # the run's per-query table cut-offs (default: eval_at)
    binned_store: BinnedStore | None = None  # LightGBM's binned data sets kept on disk
    model_order: bool = False  # the run re-ranks: curves of the model's strict order too (RoundNdcg)

    def fit(self, splits: Splits, *, eval_at: list[int], seed: int, data_key: str | None = None) -> TrainResult:
        round_metric = RoundNdcg(
            ks=eval_at, table_ks=self.table_ks or tuple(eval_at), conventions=self.conventions,
            model_order=self.model_order,
        )  # fmt: skip
        return fit_ranker(
            splits, self.model, self.fit_config, eval_at=eval_at, seed=seed, round_metric=round_metric,
            data_key=data_key, binned_store=self.binned_store,
        )

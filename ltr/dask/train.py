"""Fit a LightGBM ranker on a Dask cluster (``trainer=dask``): LightGBM's data-parallel learning
run on the workers by :mod:`ltr.dask.network` (what ``lightgbm.dask.DaskLGBMRanker`` does, with
the machines' ranks and each machine's partitions fixed by the data, so the same config and
seed give the same model and metrics, bit for bit).

What differs from :func:`ltr.training.local.fit_ranker` and why:

- **No early stopping.** All ``fit.num_boost_round`` rounds are trained. When
  ``fit.early_stopping_rounds`` is set we log one warning and go on (we do not raise: the
  default fit config asks for early stopping, and the model is still chosen on validation).
- **Best round.** After training, LightGBM's ``ndcg@k`` and ours (``ndcg_at_k``, the run's
  conventions) are computed on the *whole* ``valid`` and ``test`` splits for every round,
  partition by partition on the workers (:mod:`ltr.dask.evaluate`); ``best_iteration`` is the
  first round with the highest valid ``fit.early_stopping_metric``, the round the local
  trainer would pick without a patience limit. ``evals_result`` and ``curves`` hold these
  curves (LightGBM's own ``evals_result_`` on a worker would cover only that
  worker's share of an eval set). Our curve is summed per partition (in partition order: the
  same bits every run); its point at the best round is then taken as the run's summary takes
  ``{split}/ndcg_at_k`` (the per-query values of the whole split, one
  :func:`ltr.metrics.summary.mean_of_known`: :func:`ltr.dask.evaluate.ndcg_at_round`), so the
  logged curve ends on the run's headline bit for bit, as locally.
- **Data-parallel training.** Each worker builds histograms on its partitions and LightGBM
  merges them over its network; feature bins come from each worker's local sample. Splits and
  scores are therefore close to, not bit-identical with, one-process training on the same rows,
  and depend on the number of machines (``min(workers, partitions)``) and the partitioning.

The cluster is a ``LocalCluster`` (``trainer.n_workers`` processes with
``trainer.threads_per_worker`` threads) unless ``trainer.scheduler_address`` names a running
scheduler. Whatever this module opens it closes; it never shuts down a cluster it connected to.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import lightgbm as lgb
import numpy as np

from ltr.config.schema import FitConfig, ModelConfig, TrainerConfig
from ltr.dask.evaluate import lightgbm_conventions, ndcg_at_round, ndcg_curves
from ltr.dask.lost_workers import worker_loss_as_error
from ltr.dask.network import train_data_parallel
from ltr.dask.partitions import PartitionedSplit, scatter_ranking_data, sorted_workers
from ltr.dask.worker_logs import PRELOAD as WORKER_PRELOAD
from ltr.data.splits import Splits
from ltr.errors import LtrUserError
from ltr.metrics import MetricConventions
from ltr.training.local import (
    TrainResult,
    lightgbm_error_text,
    lightgbm_params,
    whose,
)
from ltr.training.round_metric import curve_name
from ltr.training.settings import watchable_metrics, watched_metric

log = logging.getLogger(__name__)

#: The scheduler of every LocalCluster ``ltr`` starts: no dashboard, and its HTTP routes (health,
#: metrics) on a free loopback port, not 8787 (taken by any other cluster on the machine: Dask
#: warns and moves).
SCHEDULER_KWARGS: dict[str, Any] = {"dashboard": False, "dashboard_address": "127.0.0.1:0"}
# Thread parameters: each worker trains with its Dask threads (ltr.dask.network sets num_threads).
_DASK_OWNED = ("n_jobs", "num_threads", "nthread", "nthreads", "num_thread")


@contextmanager
def dask_client(trainer: TrainerConfig) -> Iterator[Any]:
    """A ``distributed.Client`` for ``trainer``; closes the client and any cluster it started.
    A worker lost while the block runs is one `LtrUserError` (:mod:`ltr.dask.lost_workers`).

    ``trainer.scheduler_address`` set: connect to that scheduler (the cluster stays up).
    Otherwise start a ``LocalCluster`` of ``n_workers`` processes x ``threads_per_worker``
    threads without a dashboard, whose workers log one line per record
    (:mod:`ltr.dask.worker_logs`).
    """
    try:
        from distributed import Client, LocalCluster
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise LtrUserError(
            "trainer=dask needs dask.distributed: pip install 'ltr[dask]'"
        ) from exc
    if trainer.scheduler_address:
        log.info("connecting to the Dask scheduler at %s", trainer.scheduler_address)
        try:
            client = Client(trainer.scheduler_address, timeout="30s")  # type: ignore[no-untyped-call]
        except OSError as exc:
            raise LtrUserError(
                f"cannot reach the Dask scheduler at trainer.scheduler_address="
                f"{trainer.scheduler_address!r}: {exc}"
            ) from exc
        with client, worker_loss_as_error("the job on the cluster"):
            yield client
        return
    if trainer.n_workers < 1 or trainer.threads_per_worker < 1:
        raise LtrUserError(
            f"trainer.n_workers={trainer.n_workers} and trainer.threads_per_worker="
            f"{trainer.threads_per_worker} must both be >= 1"
        )
    start = time.perf_counter()
    with (
        LocalCluster(  # type: ignore[no-untyped-call]
            n_workers=trainer.n_workers,
            threads_per_worker=trainer.threads_per_worker,
            processes=True,
            host="127.0.0.1",  # scheduler, workers and nannies listen on loopback only
            dashboard_address=None,
            scheduler_kwargs=SCHEDULER_KWARGS,
            preload=[WORKER_PRELOAD],  # the workers' log records on one line each
        ) as cluster,
        Client(cluster) as client,  # type: ignore[no-untyped-call]
    ):
        log.info(
            "started a LocalCluster of %d workers x %d threads in %.1f s",
            trainer.n_workers, trainer.threads_per_worker, time.perf_counter() - start,
        )
        with worker_loss_as_error("the job on the cluster"):
            yield client


def warn_open_listener(client: Any, n_partitions: int | None = None) -> None:
    """Log once per fit what LightGBM's network set-up opens when more than one worker trains
    (``min(workers, n_partitions)``: a worker without a partition does not train).

    LightGBM binds its linker socket to ``0.0.0.0`` (hard-coded in ``TcpSocket::Bind``,
    ``src/network/socket_wrapper.hpp``; no parameter changes it) on a random free port of each
    worker, from its network set-up until every worker has connected; then it closes the
    listener and trains over the connected sockets. README: "What listens where".
    """
    n_machines = len(sorted_workers(client))
    if n_partitions is not None:
        n_machines = min(n_machines, n_partitions)
    if n_machines > 1:
        log.warning(
            "trainer=dask: while the %d workers link up, LightGBM listens on 0.0.0.0 (all interfaces) "
            "at a random free port of each worker host; it cannot be bound to 127.0.0.1 (the manual's Scaling out page: "
            "\"What listens where\" says how to firewall it)",
            n_machines,
        )


def warn_no_early_stopping(fit: FitConfig) -> None:
    """Log once per fit that ``trainer=dask`` ignores ``fit.early_stopping_rounds``."""
    if fit.early_stopping_rounds is not None:
        log.warning(
            "trainer=dask has no early stopping; fit.early_stopping_rounds=%d is "
            "ignored and all fit.num_boost_round=%d rounds are trained. The best round on valid %s "
            "is still chosen afterwards. Set fit.num_boost_round lower (or "
            "fit.early_stopping_rounds=null) to train fewer rounds.",
            fit.early_stopping_rounds, fit.num_boost_round, fit.early_stopping_metric or "ndcg_at_<largest k>",
        )


def fit_dask(
    splits: Splits,
    model: ModelConfig,
    fit: FitConfig,
    trainer: TrainerConfig,
    *,
    eval_at: list[int],
    seed: int,
    conventions: MetricConventions | None = None,
) -> TrainResult:
    """Train on ``splits.train`` on a Dask cluster; same result type as the local trainer.

    Each split is sent to the workers as whole-query partitions (``trainer.n_partitions``, by
    default one per worker). Returns a :class:`ltr.training.local.TrainResult` holding the
    model (a ``lightgbm.Booster``, rank 0's), the valid and test NDCG curves of every
    round (computed on the whole splits) and ``best_iteration`` = the best valid round.
    """
    warn_no_early_stopping(fit)
    with dask_client(trainer) as client:
        n_partitions = trainer.n_partitions or len(sorted_workers(client))
        if n_partitions < 1:
            raise LtrUserError(f"trainer.n_partitions={trainer.n_partitions} must be >= 1")
        parts = {
            name: scatter_ranking_data(client, data, n_partitions=n_partitions)
            for name, data in splits.items()
        }
        return fit_partitioned(
            client, parts["train"], {"valid": parts["valid"], "test": parts["test"]},
            model, fit, eval_at=eval_at, seed=seed, conventions=conventions,
        )


def fit_partitioned(
    client: Any,
    train: PartitionedSplit,
    evals: dict[str, PartitionedSplit],
    model: ModelConfig,
    fit: FitConfig,
    *,
    eval_at: Sequence[int],
    seed: int,
    conventions: MetricConventions | None = None,
) -> TrainResult:
    """Train data-parallel (:func:`ltr.dask.network.train_data_parallel`) on partitioned data
    already on the cluster of ``client``.

    Parameters
    ----------
    client : distributed.Client
    train : PartitionedSplit
        Training data, whole queries per partition (e.g. from
        :func:`ltr.dask.partitions.scatter_ranking_data` or
        :func:`ltr.dask.parquet.read_query_partitions`).
    evals : dict
        Split name -> partitioned split whose NDCG curve is recorded; must contain ``"valid"``,
        which picks the best round.
    model, fit : the model and fit configs (``fit.early_stopping_rounds`` is not honoured)
    eval_at : cut-offs of the recorded ``ndcg@k`` and ``ndcg_at_k`` curves
    seed : LightGBM's seed
    conventions : the run's metric conventions, of our ``ndcg_at_k`` curves (None: defaults)

    Returns
    -------
    TrainResult
        ``n_rounds == fit.num_boost_round``; ``best_iteration`` (1-based) maximises valid
        ``fit.early_stopping_metric`` (first of equal values).
    """
    if model.estimator != "ranker":
        raise LtrUserError(f"model.estimator={model.estimator!r} is not supported; use 'ranker'")
    if model.position_bias:
        raise LtrUserError(
            "model.position_bias=true is not supported with trainer=dask (it takes no "
            "positions); use trainer=local"
        )
    if "valid" not in evals:
        raise LtrUserError("fit_partitioned needs a 'valid' split to choose the best round")
    ks = sorted({int(k) for k in eval_at})
    metric = watched_metric(fit, ks)
    names = watchable_metrics(ks)
    if metric not in names:
        raise LtrUserError(
            f"fit.early_stopping_metric={metric!r} is not recorded by trainer=dask; available: {', '.join(names)}"
        )
    params = lightgbm_params(model, seed=seed, num_threads=fit.num_threads)
    for name in _DASK_OWNED:
        params.pop(name, None)
    warn_open_listener(client, train.n_partitions)
    log.info(
        "training %s data-parallel on %d queries / %d rows in %d partitions, %d features",
        model.objective, train.n_queries, train.n_rows, train.n_partitions, train.n_features,
    )
    start = time.perf_counter()
    feature_name: Any = list(train.feature_names) if train.feature_names else "auto"
    try:
        booster = train_data_parallel(client, train, params, n_estimators=fit.num_boost_round, feature_name=feature_name)
    except lgb.basic.LightGBMError as exc:
        raise LtrUserError(f"LightGBM rejected the training setup: {lightgbm_error_text(exc)}") from exc
    fit_seconds = time.perf_counter() - start
    n_rounds = int(booster.current_iteration())
    gains = params.get("label_gain")
    label_gain = None if gains is None else tuple(float(g) for g in gains)
    families = [lightgbm_conventions(label_gain), conventions or MetricConventions()]
    evals_result: dict[str, dict[str, list[float]]] = {}
    ours: dict[str, dict[str, list[float]]] = {}
    for name, split in evals.items():
        theirs, mine = ndcg_curves(client, booster, split, ks=ks, n_rounds=n_rounds, conventions=families)
        evals_result[name] = {f"ndcg@{k}": values for k, values in theirs.items()}
        ours[name] = {curve_name(k): values for k, values in mine.items()}
    seconds = time.perf_counter() - start
    valid_curve = np.asarray((ours if metric in ours["valid"] else evals_result)["valid"][metric])
    # NaN (no query with a value) never wins; all NaN: the last round
    best = int(np.argmax(np.nan_to_num(valid_curve, nan=-np.inf))) + 1
    ended = time.perf_counter()
    for name, split in evals.items():  # the curve's last logged point is the headline's computation
        for k, value in ndcg_at_round(client, booster, split, ks=ks, num_iteration=best, conventions=families[1]).items():
            ours[name][curve_name(k)][best - 1] = value
    seconds += time.perf_counter() - ended
    log.info(
        "trained %d rounds in %.1f s (+ %.1f s for the curves); best round %d with valid %s = %.6f (%s)",
        n_rounds, fit_seconds, seconds - fit_seconds, best, metric, valid_curve[best - 1], whose(metric),
    )
    return TrainResult(booster, params, evals_result, best, n_rounds, seconds, ours)

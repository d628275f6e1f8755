"""``model=xgboost trainer=dask``: XGBoost's ranker trained by ``xgboost.dask.train`` on a Dask cluster.

Each split is cut into whole-query partitions (``trainer.n_partitions``, by default one per
worker) and sent to the workers; every row carries its query's number in the split (0, 1, ...)
as XGBoost's ``qid``, so the rows of a partition, and of the partitions a worker holds, are
sorted by qid as XGBoost requires. ``valid`` and ``test`` are XGBoost's eval sets, partitioned
the same way: their ``ndcg@k`` per round is summed over the workers by XGBoost, so it covers
the whole split. The parameters are the local trainer's (:func:`ltr.training.backends.xgboost.xgboost_params`)
with ``nthread`` = the workers' Dask threads.

What differs from the local trainer (:mod:`ltr.training.backends.xgboost`) and why, as on
LightGBM's Dask path (:mod:`ltr.dask.train`):

- **No early stopping.** All ``fit.num_boost_round`` rounds are trained; when
  ``fit.early_stopping_rounds`` is set one warning says so.
- **Best round.** After training, the valid and test rows are scored on the client for every
  round (:func:`round_scores`: the bits the shipped model cut at that round gives) and
  :class:`ltr.training.backends.rounds.RoundDriver` computes our ``ndcg_at_k`` on them;
  ``best_iteration`` is the first round with the highest valid ``fit.early_stopping_metric``.
- **Distributed histograms.** Each worker sketches and bins its own rows and XGBoost sums the
  histograms over the workers, so the trees are close to, not bit-identical with, one process
  on the same rows, and depend on the number of workers and the partitioning.

Determinism: XGBoost ranks the workers by their Dask names (``[xgboost.dask-<name>]:<address>``,
sorted); partition ``i`` is pinned to the ``i % n``-th worker in that order, so each rank holds
the same rows in the same order on every run of a cluster of the same shape, and the same
config and seed give the same model and metrics, bit for bit. If Dask places a partition elsewhere
(a worker lost and replaced, work stealing) one warning says the bits may differ.
"""

from __future__ import annotations

import itertools
import json
import logging
import operator
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import xgboost as xgb
from numpy.typing import NDArray

from ltr.config.choices import TrainerKind
from ltr.config.groups.backends import XGBoostModelConfig
from ltr.config.schema import TrainerConfig
from ltr.data.query_parts import query_partition_bounds
from ltr.data.ranking_data import RankingData
from ltr.data.splits import Splits
from ltr.errors import LtrUserError
from ltr.training.backends.rounds import EVALUATED, RoundDriver, RoundTrainer
from ltr.training.backends.xgboost import (
    XGBoostModel,
    error_line,
    feature_names,
    learned_bias,
    ranking_dmatrix,
    require_positions,
    rows_by_position,
    xgboost_params,
)
from ltr.training.local import TrainResult, physical_cores, whose

log = logging.getLogger(__name__)


def _worker_name(dask_worker: Any) -> str:
    return str(dask_worker.name)


def rank_order(client: Any) -> list[str]:
    """The cluster's worker addresses in XGBoost's rank order: by the task id
    ``xgboost.dask`` gives each worker (``[xgboost.dask-<name>]:<address>``), sorted as strings."""
    names: dict[str, str] = client.run(_worker_name)
    if not names:
        raise RuntimeError("the Dask cluster has no workers")
    return sorted(names, key=lambda addr: f"[xgboost.dask-{names[addr]}]:{addr}")


@dataclass(frozen=True, slots=True)
class _Scattered:
    """One split on the workers: row-chunked Dask arrays and where each partition was pinned."""

    features: Any
    labels: Any
    qids: Any
    workers: tuple[str, ...]  # partition i was sent to workers[i]


def _scatter(client: Any, data: RankingData, rows: tuple[NDArray[np.float32], NDArray[Any]], n_partitions: int, order: list[str]) -> _Scattered:
    """``rows`` (features, labels of ``data``'s rows, in its query order) as whole-query
    partitions, partition ``i`` on ``order[i % len(order)]``; the qid of a row is its query's
    number in the split."""
    import dask.array as da
    from dask.delayed import delayed

    features, labels = rows
    qid = np.repeat(np.arange(data.n_queries, dtype=np.int64), np.diff(data.offsets))
    getitem = delayed(operator.getitem, pure=True)
    blocks: dict[str, list[Any]] = {"x": [], "y": [], "q": []}
    workers = []
    for i, (q0, q1) in enumerate(itertools.pairwise(query_partition_bounds(data.offsets, n_partitions))):
        r0, r1 = int(data.offsets[q0]), int(data.offsets[q1])
        worker = order[i % len(order)]
        part = (
            np.ascontiguousarray(features[r0:r1], dtype=np.float32),
            np.ascontiguousarray(labels[r0:r1], dtype=np.float32),
            qid[r0:r1].copy(),
        )
        future = client.scatter(part, workers=[worker], hash=False)
        n = r1 - r0
        blocks["x"].append(da.from_delayed(getitem(future, 0), shape=(n, data.n_features), dtype=np.float32))  # type: ignore[no-untyped-call]
        blocks["y"].append(da.from_delayed(getitem(future, 1), shape=(n,), dtype=np.float32))  # type: ignore[no-untyped-call]
        blocks["q"].append(da.from_delayed(getitem(future, 2), shape=(n,), dtype=np.int64))  # type: ignore[no-untyped-call]
        workers.append(worker)
    x, y, q = (da.concatenate(blocks[key], axis=0) for key in ("x", "y", "q"))  # type: ignore[no-untyped-call]
    return _Scattered(x, y, q, tuple(workers))


def _placed_as_pinned(dmatrix: Any, scattered: _Scattered) -> bool:
    """True when every partition of ``dmatrix`` is on the worker it was sent to (in order)."""
    placed = {part.key: addr for addr, parts in dmatrix.worker_map.items() for part in parts}
    order = sorted(dmatrix.partition_order, key=dmatrix.partition_order.__getitem__)
    return [placed.get(key) for key in order] == list(scattered.workers) and all(
        [dmatrix.partition_order[p.key] for p in parts] == sorted(dmatrix.partition_order[p.key] for p in parts)
        for parts in dmatrix.worker_map.values()
    )


#: Rounds whose leaves are read at once by :func:`round_scores` (memory: rows x this x 4 bytes).
LEAF_BLOCK = 64


def round_scores(booster: xgb.Booster, dmatrix: xgb.DMatrix) -> Iterator[NDArray[np.float32]]:
    """The scores of ``dmatrix``'s rows after each round ``i`` (0-based) of ``booster``, equal bit
    for bit to ``booster.predict(dmatrix, iteration_range=(0, i + 1))``, in time linear in the
    rounds: each row's leaf in every tree is read once (``pred_leaf``, ``LEAF_BLOCK`` rounds at a
    time) and the leaf values are added in float32 in tree order onto the base score, as XGBoost's
    CPU predictor adds them. The first and the last round are checked against ``predict``; from a
    round whose sum differs on (or for a booster other than ``gbtree``, e.g. ``dart``), one
    ``predict`` per round.
    """
    n_rounds = int(booster.num_boosted_rounds())
    done = 0
    for acc in _leaf_sums(booster, dmatrix, n_rounds):
        if done in (0, n_rounds - 1) and not np.array_equal(acc, booster.predict(dmatrix, iteration_range=(0, done + 1))):
            log.debug("XGBoost's scores are not the sums of their leaves here: one prediction per round")
            break
        yield acc
        done += 1
    for i in range(done, n_rounds):
        yield np.asarray(booster.predict(dmatrix, iteration_range=(0, i + 1)), dtype=np.float32)


def _leaf_sums(booster: xgb.Booster, dmatrix: xgb.DMatrix, n_rounds: int) -> Iterator[NDArray[np.float32]]:
    """Per round, the base score plus the leaf values of the row's leaves so far (float32, tree
    order); nothing for a booster that is not a ``gbtree`` of whole rounds."""
    learner = json.loads(booster.save_raw("json"))["learner"]
    trees = learner["gradient_booster"].get("model", {}).get("trees", [])
    if learner["gradient_booster"].get("name") != "gbtree" or n_rounds == 0 or len(trees) % n_rounds:
        return
    base = json.loads(str(learner["learner_model_param"]["base_score"]))
    per_round = len(trees) // n_rounds
    values = [np.asarray(tree["split_conditions"], dtype=np.float32) for tree in trees]
    acc = np.full(dmatrix.num_row(), np.float32(base[0] if isinstance(base, list) else base), dtype=np.float32)
    for start in range(0, n_rounds, LEAF_BLOCK):
        stop = min(start + LEAF_BLOCK, n_rounds)
        leaves = np.asarray(booster[start:stop].predict(dmatrix, pred_leaf=True), dtype=np.int64).reshape(dmatrix.num_row(), -1)
        for j in range(leaves.shape[1]):
            acc = acc + values[start * per_round + j][leaves[:, j]]
            if (j + 1) % per_round == 0:
                yield acc


@dataclass(frozen=True, slots=True)
class XGBoostDaskTrainer(RoundTrainer[XGBoostModelConfig]):
    """:class:`ltr.training.trainer.Trainer` of ``model=xgboost trainer=dask`` on ``cluster``."""

    cluster: TrainerConfig = field(default_factory=lambda: TrainerConfig(kind=TrainerKind.dask))

    def fit(self, splits: Splits, *, eval_at: list[int], seed: int, data_key: str | None = None) -> TrainResult:
        """Train on the cluster (``data_key`` is not used); the result's model is cut at the best round."""
        import xgboost.dask as dxgb

        from ltr.dask.train import dask_client, warn_no_early_stopping

        model, fit = self.model, self.fit_config
        train = splits.train
        require_positions(model, train)
        warn_no_early_stopping(fit)
        rows = rows_by_position(train) if model.lambdarank_unbiased else (train.features, train.labels)
        names = feature_names(train)
        with dask_client(self.cluster) as client:
            order = rank_order(client)
            n_partitions = self.cluster.n_partitions or len(order)
            threads = sorted(set(client.nthreads().values()))
            params = xgboost_params(model, seed=seed, num_threads=threads[0], eval_at=eval_at)
            if len(threads) > 1:  # each worker trains with its own thread count
                params.pop("nthread")
            parts = {
                "train": _scatter(client, train, rows, n_partitions, order),
                **{s: _scatter(client, getattr(splits, s), (getattr(splits, s).features, getattr(splits, s).labels), n_partitions, order) for s in EVALUATED},
            }
            matrices = {
                name: dxgb.DaskDMatrix(client, p.features, p.labels, qid=p.qids, feature_names=names)
                for name, p in parts.items()
            }
            if not all(_placed_as_pinned(matrices[name], p) for name, p in parts.items()):
                log.warning(
                    "trainer=dask: Dask placed some partitions on other workers than pinned; "
                    "XGBoost's trees may then differ in the last bits from another run of the same config"
                )
            train_parts = parts["train"].workers
            what = (
                f"XGBoost {model.objective} on {len(set(train_parts))} Dask workers: {train.n_queries} queries / "
                f"{train.n_rows} rows in {len(train_parts)} partitions, {train.n_features} features"
            )
            driver = self._driver(splits, eval_at, what)
            start = time.perf_counter()
            try:
                out = dxgb.train(
                    client, params, matrices["train"], num_boost_round=fit.num_boost_round,
                    evals=[(matrices[s], s) for s in EVALUATED], verbose_eval=False,
                )  # fmt: skip
            except xgb.core.XGBoostError as exc:
                raise LtrUserError(f"XGBoost rejected the training setup: {error_line(exc)}") from None
            fit_seconds = time.perf_counter() - start
        booster: xgb.Booster = out["booster"]
        history: dict[str, dict[str, list[float]]] = out["history"]
        return self._replay(booster, history, splits, params, names, driver, fit_seconds)

    def _driver(self, splits: Splits, eval_at: list[int], what: str) -> RoundDriver:
        """The round driver of the curves (it logs ``training {what}``): every round recorded,
        the first best kept, no patience, no search pruning, no progress bar."""
        replay = replace(self.fit_config, early_stopping_rounds=None, show_progress=False)
        _, driver = self.start_rounds(splits, eval_at, what, library="XGBoost", fit=replay)
        driver.stopper.round_hook = None
        return driver

    def _replay(
        self,
        booster: xgb.Booster,
        history: dict[str, dict[str, list[float]]],
        splits: Splits,
        params: dict[str, Any],
        names: list[str],
        driver: RoundDriver,
        fit_seconds: float,
    ) -> TrainResult:
        """Our curves and the best round, from every round's scores of valid and test."""
        model = self.model
        n_rounds = int(booster.num_boosted_rounds())
        booster.set_param({"nthread": self.fit_config.num_threads if self.fit_config.num_threads > 0 else physical_cores()})
        evaluated = {s: ranking_dmatrix(getattr(splits, s).features, getattr(splits, s).labels, getattr(splits, s).offsets, names) for s in EVALUATED}
        ended = time.perf_counter()
        streams = {s: round_scores(booster, d) for s, d in evaluated.items()}
        for i in range(n_rounds):
            scores = {s: next(stream) for s, stream in streams.items()}
            own = {s: {name: float(values[i]) for name, values in history.get(s, {}).items()} for s in EVALUATED}
            if driver.after_round(i, scores, own):
                break
        curve_seconds = time.perf_counter() - ended
        seconds = fit_seconds + curve_seconds
        metric, best = driver.metric, driver.best_iteration
        log.info(
            "trained %d rounds in %.1f s (+ %.1f s for the curves); best round %d with valid %s = %.6f (%s)",
            n_rounds, fit_seconds, curve_seconds, best, metric, driver.stopper.best_value,
            whose(metric).replace("LightGBM's", "XGBoost's"),
        )  # fmt: skip
        learned = learned_bias(booster) if model.lambdarank_unbiased else None
        return TrainResult(
            XGBoostModel(booster).cut(driver.best_iteration), params, driver.library_curves,
            driver.best_iteration, n_rounds, seconds, driver.curves,
            driver.round_metric.seconds, library="xgboost", position_bias=learned,
        )  # fmt: skip

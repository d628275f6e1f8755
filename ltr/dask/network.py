"""LightGBM's data-parallel training on Dask workers, with ranks fixed by the data.

Why not ``lightgbm.dask.DaskLGBMRanker.fit``: it lists the workers that hold training parts in
the order of ``Client.who_has`` (which iterates a ``set`` of task keys: random keys, and string
hashes that change with every process), and that order decides each worker's LightGBM *rank*
(its place in ``machines``) and the order of its parts. A rank decides which features the
worker bins from its local sample and how histograms are merged, so the same data and seed gave
different models from run to run (test nDCG@10 0.7178 / 0.7332 on one config).

Here the data decides everything that reaches LightGBM:

- ``n_machines = min(n_workers, n_partitions)``; rank ``r`` trains on partitions
  ``r, r + n_machines, r + 2 n_machines, ...``, concatenated in that order (partition ``i`` is
  placed on worker ``i % n_workers`` by :mod:`ltr.dask.partitions` and
  :mod:`ltr.dask.parquet`, so with sorted workers no row moves);
- rank ``r`` runs on the ``r``-th of the sorted worker addresses (with ``machines`` given: the
  first unused sorted worker on that entry's host) and ``machines`` lists the ranks in order;
- which worker holds what, the worker addresses and the order workers registered in change
  only where the rows are read, not the model.

The ports are LightGBM's network, not the model: ``local_listen_port`` and ``machines`` that
``ltr`` chose are removed from the returned model's text (as ``lightgbm.dask`` removes them
from the estimator's parameters), so the same config and seed give the same model text.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

import lightgbm as lgb
import numpy as np
from dask.delayed import delayed

from ltr.dask.partitions import PartitionedSplit, sorted_workers
from ltr.errors import LtrUserError

#: What ``lightgbm.dask`` uses when ``time_out`` (minutes) is not set.
DEFAULT_TIME_OUT = 120

#: LightGBM's tree learners that train over its network (``lightgbm.dask``'s allowed set).
NETWORK_TREE_LEARNERS = frozenset(
    {"data", "data_parallel", "feature", "feature_parallel", "voting", "voting_parallel"}
)


@dataclass(frozen=True, slots=True)
class Machine:
    """One LightGBM machine: its ``rank`` (place in ``machines``), the Dask ``worker`` it runs
    on, its ``host`` and ``port`` (0: a free port is reserved on the worker) and the training
    ``partitions`` it concatenates, in order."""

    rank: int
    worker: str
    host: str
    port: int
    partitions: tuple[int, ...]


class _HeldPort:
    """A socket bound to a free port on a worker (``0.0.0.0``, not listening: connections are
    refused), held from the port's choice until LightGBM binds it; what ``lightgbm.dask`` does."""

    def __init__(self) -> None:
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.socket.bind(("", 0))
        self.port = int(self.socket.getsockname()[1])

    def release(self) -> None:
        self.socket.close()


def _port_of(held: _HeldPort) -> int:
    return held.port


def _aliases(name: str) -> set[str]:
    found: set[str] = lgb.basic._ConfigAliases.get(name)
    return found


def _pop_param(params: dict[str, Any], name: str) -> Any:
    """Remove ``name`` and its aliases from ``params``; the value given, or None."""
    value = None
    for alias in sorted(_aliases(name)):
        if alias in params:
            value = params.pop(alias)
    return value


def _host(worker: str) -> str:
    host = urlparse(worker).hostname
    if not host:
        raise LtrUserError(f"cannot tell the host of the Dask worker {worker!r}")
    return host


def plan_machines(
    workers: Sequence[str], n_partitions: int, *, machines: str | None = None, port: int | None = None
) -> list[Machine]:
    """The LightGBM machines that train ``n_partitions`` partitions on ``workers``.

    Parameters
    ----------
    workers : the Dask worker addresses, sorted (:func:`ltr.dask.partitions.sorted_workers`)
    n_partitions : the training split's partition count
    machines : ``model.params.machines`` (``host:port,host:port``), None: ports reserved by ``ltr``
    port : ``model.params.local_listen_port`` (every machine on its own host), None: reserved

    Returns
    -------
    list of Machine
        ``min(len(workers), n_partitions)`` machines by rank; rank ``r`` holds partitions
        ``r, r + n, ...``. Its worker is ``workers[r]``, or with ``machines`` the first unused
        worker (in ``workers`` order) on the host of entry ``r``.

    Raises
    ------
    LtrUserError
        ``machines`` with a duplicate entry, another count than the machines that train, or a
        host without a free worker; ``port`` with two training workers on one host.
    """
    n = min(len(workers), n_partitions)
    if n < 1:
        raise LtrUserError("nothing to train on: the cluster has no workers or the split no partitions")
    parts = [tuple(range(r, n_partitions, n)) for r in range(n)]
    if machines is not None:
        entries = [e.strip() for e in str(machines).split(",") if e.strip()]
        if len(set(entries)) != len(entries):
            raise LtrUserError(f"model.params.machines={machines!r} names a machine twice")
        if len(entries) != n:
            raise LtrUserError(
                f"model.params.machines names {len(entries)} machines, but {n} train "
                f"(min of {len(workers)} workers and {n_partitions} partitions)"
            )
        free = list(workers)
        plan = []
        for r, entry in enumerate(entries):
            host, _, text = entry.rpartition(":")
            if not host or not text.isdigit():
                raise LtrUserError(f"model.params.machines entry {entry!r} is not host:port")
            worker = next((w for w in free if _host(w) == host), None)
            if worker is None:
                raise LtrUserError(
                    f"model.params.machines entry {entry!r}: no free Dask worker on host {host!r} "
                    f"(workers: {', '.join(workers)})"
                )
            free.remove(worker)
            plan.append(Machine(r, worker, host, int(text), parts[r]))
        return plan
    chosen = list(workers[:n])
    if port is not None:
        hosts = [_host(w) for w in chosen]
        if len(set(hosts)) < len(hosts):
            raise LtrUserError(
                f"model.params.local_listen_port={port} needs one training worker per host, but "
                f"{', '.join(chosen)} share one; drop it or give model.params.machines"
            )
    return [Machine(r, w, _host(w), int(port or 0), parts[r]) for r, w in enumerate(chosen)]


def _train_rank(
    parts: list[tuple[Any, Any, Any]],
    params: dict[str, Any],
    n_estimators: int,
    feature_name: Any,
    held: _HeldPort | None,
    return_model: bool,
) -> str | None:
    """Train one LightGBM machine on its partitions (on its worker); rank 0 returns the model text."""
    features = np.concatenate([p[0] for p in parts], axis=0)
    labels = np.concatenate([p[1] for p in parts])
    group = np.concatenate([p[2] for p in parts])
    model = lgb.LGBMRanker(n_estimators=n_estimators, **params)
    if held is not None:
        held.release()
    try:
        model.fit(features, labels, group=group, feature_name=feature_name)
    finally:
        if getattr(model, "fitted_", False):
            model.booster_.free_network()
    return model.booster_.model_to_string(num_iteration=-1) if return_model else None


def without_network(model_text: str, names: Sequence[str]) -> str:
    """``model_text`` without the ``[name: ...]`` parameter lines of ``names``."""
    for name in names:
        model_text = re.sub(rf"^\[{re.escape(name)}: [^\n]*\]\n", "", model_text, flags=re.MULTILINE)
    return model_text


def train_data_parallel(
    client: Any,
    train: PartitionedSplit,
    params: dict[str, Any],
    *,
    n_estimators: int,
    feature_name: Any = "auto",
) -> lgb.Booster:
    """Train a ranker with LightGBM's network learning on the workers of ``client``.

    Parameters
    ----------
    client : distributed.Client
    train : PartitionedSplit
        Whole-query partitions on the cluster.
    params : LightGBM parameters of ``lgb.LGBMRanker`` without thread counts (each worker
        trains with its Dask threads); ``machines`` / ``local_listen_port`` (or aliases) fix
        the network as in ``lightgbm.dask``; ``tree_learner`` defaults to ``"data"``
    n_estimators : boosting rounds
    feature_name : as ``LGBMRanker.fit``

    Returns
    -------
    lightgbm.Booster
        Rank 0's model (every rank holds the same trees), from model text without the network
        parameters ``ltr`` chose. A function of the partitions, their order and the parameters:
        not of which worker holds which partition, the workers' addresses or their order.
    """
    params = dict(params)
    machines = _pop_param(params, "machines")
    port = _pop_param(params, "local_listen_port")
    _pop_param(params, "num_machines")
    learner = _pop_param(params, "tree_learner") or "data"
    if learner not in NETWORK_TREE_LEARNERS:
        raise LtrUserError(
            f"model.params.tree_learner={learner!r} does not train over a network; trainer=dask "
            f"takes one of {', '.join(sorted(NETWORK_TREE_LEARNERS))}"
        )
    params["tree_learner"] = learner
    params.setdefault("time_out", DEFAULT_TIME_OUT)
    workers = sorted_workers(client)
    plan = plan_machines(workers, train.n_partitions, machines=machines, port=port)
    threads = client.nthreads()
    held: dict[int, Any] = {}
    ports = {m.rank: m.port for m in plan}
    if len(plan) > 1 and machines is None and port is None:
        held = {
            m.rank: client.submit(_HeldPort, workers=[m.worker], allow_other_workers=False, pure=False) for m in plan
        }
        found = client.gather([client.submit(_port_of, f, workers=[plan[r].worker]) for r, f in held.items()])
        ports = dict(zip(held, found, strict=True))
    network = ",".join(f"{m.host}:{ports[m.rank]}" for m in plan)
    blocks = train.partitions()
    tasks = []
    for m in plan:
        rank_params = {**params, "num_threads": int(threads[m.worker]), "num_machines": len(plan)}
        if len(plan) > 1:
            rank_params |= {"machines": network, "local_listen_port": ports[m.rank]}
        parts = [blocks[i][:3] for i in m.partitions]
        task = delayed(_train_rank, pure=False)(
            parts, rank_params, n_estimators, feature_name, held.get(m.rank), m.rank == 0
        )
        tasks.append(client.compute(task, workers=[m.worker], allow_other_workers=False))
    texts = client.gather(tasks)
    chosen = [] if machines is not None else ["machines"]
    chosen += [] if port is not None else ["local_listen_port"]
    return lgb.Booster(model_str=without_network(texts[0], chosen))

"""What listens where during a ``trainer=dask`` fit (README: "What listens where"). Real
processes, real LightGBM, sockets read from the kernel with psutil (a dependency of distributed)."""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import subprocess
import sys
import textwrap
import time
from typing import Any

import pytest

from ltr.config.schema import FitConfig, ModelConfig, TrainerConfig
from ltr.dask.partitions import scatter_ranking_data
from ltr.dask.train import dask_client, fit_partitioned
from tests.dask.conftest import random_ranking_data
from tests.processes import free_ports

psutil = pytest.importorskip("psutil")


def _listeners(pids: list[int]) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket in LISTEN state of the processes ``pids``."""
    found = set()
    for pid in pids:
        conns = psutil.Process(pid).net_connections(kind="tcp")
        found |= {(c.laddr.ip, c.laddr.port) for c in conns if c.status == psutil.CONN_LISTEN}
    return found


@pytest.mark.slow
def test_lightgbm_listens_on_all_interfaces_even_with_loopback_machines() -> None:
    """The fact the README states: ``machines`` of 127.0.0.1 addresses do not change LightGBM's
    bind address. Rank 0 of a 2-machine network whose rank 1 never comes keeps its listener open
    while it retries; we read its address, then stop it."""
    p0, p1 = free_ports(2)
    script = textwrap.dedent(f"""
        import numpy as np, lightgbm as lgb
        X = np.random.default_rng(0).normal(size=(50, 2))
        lgb.train({{"objective": "regression", "machines": "127.0.0.1:{p0},127.0.0.1:{p1}",
                   "local_listen_port": {p0}, "num_machines": 2, "time_out": 1, "verbose": 1}},
                  lgb.Dataset(X, X[:, 0]), num_boost_round=1)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # LightGBM logs "Listening..." once listen() returned
            if "Listening..." in line:
                break
        deadline = time.monotonic() + 10
        while not (seen := {a for a in _listeners([proc.pid]) if a[1] == p0}) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.wait(timeout=20)
    # 0.0.0.0 is hard-coded in LightGBM (TcpSocket::Bind, src/network/socket_wrapper.hpp); if this
    # fails, LightGBM changed and the README's "What listens where" must change with it.
    assert seen == {("0.0.0.0", p0)}


@pytest.mark.slow
def test_our_cluster_listens_on_loopback_not_on_dasks_port_and_a_fit_leaves_no_lightgbm_listener(
    caplog: pytest.LogCaptureFixture, recwarn: pytest.WarningsRecorder
) -> None:
    """One cluster of ours (``dask_client``), with port 8787 taken before it starts, as when two
    clusters run on one machine (two runs, two test processes): it does not ask for 8787 (Dask
    warns "Port 8787 is already in use" and moves), its scheduler (with its HTTP routes on a free
    port, no dashboard), nannies and workers listen on loopback only, and a fit on it opens no
    listener that outlives the workers' linking."""
    data = random_ranking_data(3, n_queries=40)
    with socket.socket() as taken:
        with contextlib.suppress(OSError):  # taken by another process already: the same case
            taken.bind(("127.0.0.1", 8787))
            taken.listen()
        mine = _listeners([os.getpid()])
        with dask_client(TrainerConfig(n_workers=2, threads_per_worker=1)) as client:
            new = _listeners([os.getpid()]) - mine  # the scheduler's and nannies', in this process
            pids: dict[str, int] = client.run(os.getpid)
            processes = [os.getpid(), *pids.values()]
            before = _listeners(processes)
            parts: Any = scatter_ranking_data(client, data, n_partitions=2)
            with caplog.at_level(logging.WARNING, logger="ltr.dask.train"):
                fit_partitioned(
                    client, parts, {"valid": parts}, ModelConfig(num_leaves=3),
                    FitConfig(num_boost_round=2, early_stopping_rounds=None, show_progress=False),
                    eval_at=[5], seed=1,
                )
            after = _listeners(processes)
    # Not Dask's default port: no competing for it, no warning.
    assert new, "the scheduler listens in this process"
    assert {ip for ip, _ in new} == {"127.0.0.1"}, new
    assert 8787 not in {port for _, port in new}
    assert not [w for w in recwarn if "already in use" in str(w.message)]
    # Our LocalCluster: the scheduler (this process), the workers and nannies on loopback only.
    assert before
    assert {ip for ip, _ in before} == {"127.0.0.1"}, before
    # LightGBM's linker listener is closed once the workers are linked: nothing new listens.
    assert after == before, after - before
    warnings = [r.getMessage() for r in caplog.records if "LightGBM listens on 0.0.0.0" in r.getMessage()]
    assert len(warnings) == 1
    assert "the 2 workers link up" in warnings[0]

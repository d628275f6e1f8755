"""Helpers of the tests that start real processes (servers, ``ltr ui``) in their own group, and
:func:`run_ltr`: an ``ltr`` command whose process is not what a test is about."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from ltr.tracking.liveness.proc_files import command_line, processes, read_text, stat_fields
from tests.docs.examples import shared_server


def run_ltr(
    args: Sequence[str | Path], *, cwd: Path | str | None = None, env: Mapping[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``ltr ARGS`` as ``subprocess.run([sys.executable, "-m", "ltr", *args], capture_output=True,
    text=True)`` runs it (its stdout, stderr and exit code; ``cwd``; ``env``, else this process's),
    forked from this test process's shared fork server (:func:`tests.docs.examples.shared_server`)
    after the heavy imports instead of importing them again.

    For a test about what a command says and returns, not about its process: signals, a real
    terminal, servers, concurrency, start-up time and what is imported need a real
    ``python -m ltr`` process.
    """
    _, client_dir = shared_server()
    return subprocess.run(
        [str(client_dir / "ltr"), *map(str, args)], cwd=cwd, env=dict(os.environ if env is None else env),
        capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip


def session_processes(session: int) -> list[str]:
    """``pid state ppid command`` of every process of the session ``session`` (a zombie's state
    is ``Z``, and its command the ``(name)`` it had), from ``/proc``."""
    found = []
    for pid in processes():
        fields = stat_fields(pid)
        if fields is not None and fields[3] == str(session):
            command = command_line(pid)[:200] or f"({read_text(f'/proc/{pid}/comm')})"
            found.append(f"{pid} {fields[0]} {fields[1]} {command}")
    return found


def stop_process_group(proc: subprocess.Popen[Any], *, timeout: float = 20) -> None:
    """SIGTERM the whole group (uvicorn workers, job runners), SIGKILL what is left after ``timeout`` s."""
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=timeout)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    return free_ports(1)[0]


def free_ports(n: int) -> list[int]:
    """``n`` distinct TCP ports on 127.0.0.1 that nothing listens on now.

    Each socket stays bound until all ``n`` are chosen: ports picked one after another, each
    released before the next bind, may repeat (the kernel hands a just-freed port out again).
    """
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for s in sockets:
            s.close()


def wait_for_http(url: str, proc: subprocess.Popen[Any], *, log: Path | None = None, timeout: float = 120) -> None:
    """Poll ``url`` until it answers 200; fail (with the end of ``log``) if ``proc`` exits or
    ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            detail = log.read_text()[-2000:] if log is not None and log.exists() else ""
            pytest.fail(f"nothing answered at {url}: {detail}")
        time.sleep(0.5)


def mlflow_server_command(backend: str, artifacts: Path, port: int) -> list[str]:
    """``mlflow server`` on 127.0.0.1:``port`` over the store ``backend``, serving its artifacts
    from ``artifacts`` (clients up- and download them through the server)."""
    return [
        sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
        "--backend-store-uri", backend, "--serve-artifacts", "--artifacts-destination", str(artifacts),
        "--workers", "1",
    ]


def start_mlflow_server(
    backend: str, artifacts: Path, log: Path, port: int, *, timeout: float = 120, **popen: Any
) -> subprocess.Popen[Any]:
    """A real ``mlflow server`` (:func:`mlflow_server_command`) in a process group of its own,
    once it answers at ``http://127.0.0.1:{port}`` (its output appended to ``log``; ``popen``:
    more arguments of ``subprocess.Popen``). Stop it with :func:`stop_process_group`.

    The server's background job runner is off (``MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false``): the
    runs of the tests need none, and its consumers slow every test beside them on two cores.
    """
    with log.open("a") as out:
        proc = subprocess.Popen(
            mlflow_server_command(backend, artifacts, port),
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            env=dict(os.environ, MLFLOW_SERVER_ENABLE_JOB_EXECUTION="false"), **popen,
        )
    try:
        wait_for_http(f"http://127.0.0.1:{port}/health", proc, log=log, timeout=timeout)
    except BaseException:
        stop_process_group(proc)
        raise
    return proc


@contextlib.contextmanager
def running_mlflow_server(
    backend: str, artifacts: Path, log: Path, *, port: int | None = None, timeout: float = 120
) -> Iterator[tuple[str, subprocess.Popen[Any]]]:
    """:func:`start_mlflow_server` answering at the yielded URL (and its process); its whole
    process group is stopped after."""
    port = free_port() if port is None else port
    proc = start_mlflow_server(backend, artifacts, log, port, timeout=timeout)
    try:
        yield f"http://127.0.0.1:{port}", proc
    finally:
        stop_process_group(proc)


_DASK_CLUSTER = """
import sys
from ltr.config.schema import TrainerConfig
from ltr.dask.train import dask_client
with dask_client(TrainerConfig(n_workers=int(sys.argv[1]), threads_per_worker=1)) as client:
    print(client.scheduler.address, flush=True)
    sys.stdin.read()  # until the test closes it
"""


@contextlib.contextmanager
def dask_cluster(n_workers: int, *, log: Path) -> Iterator[str]:
    """The address of a LocalCluster of ``n_workers`` worker processes of one thread, as
    ``trainer.n_workers=N`` or ``ltr predict --dask --workers N`` start (``ltr``'s own
    :func:`ltr.dask.train.dask_client`), run by a process of its own: its scheduler's and
    nannies' log records go to ``log``, never to the test's stderr. For tests that use a
    cluster but are not about starting one (``trainer.scheduler_address``, ``--scheduler``)."""
    with log.open("w") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-c", _DASK_CLUSTER, str(n_workers)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=sink, text=True, start_new_session=True,
        )  # fmt: skip
        assert proc.stdin is not None
        assert proc.stdout is not None
        try:
            address = proc.stdout.readline().strip()
            assert address.startswith("tcp://"), log.read_text()[-3000:]
            yield address
        finally:
            proc.stdin.close()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                stop_process_group(proc)

"""A fork server for the manual's ``ltr`` commands: each command is a fresh process forked from
one that has already imported ``ltr``'s engines, so a page's commands do not each pay the imports.

What a command runs is what the console script runs (:func:`ltr.cli.main.run`), in a child
process of its own, with the caller's arguments, working folder, environment and standard
input, output and error (the caller's file descriptors, passed over a Unix socket), and the
caller exits with the child's code (128 + N for a child killed by signal N). Only the imports are
shared: the server imports modules and nothing else (no data, no store, no engine thread; numba's
CPU target is readied, no kernel loaded; ``ltr train``'s config is composed once and forgotten,
:func:`_warm_hydra`), and each child is forked from that state, never from another command's.

- :func:`start` runs the server for one page (its environment), returns it and the folder of its
  ``ltr`` client, to put first on ``PATH``; :func:`stop` ends the server and any child left.
- ``python forkserver.py serve SOCKET`` is the server; ``python -I -S forkclient.py ltr ...``
  the client (:mod:`tests.docs.forkclient`: no site packages, only the interpreter's built-in modules).
- ``python -I -S forkclient.py script FILE`` (the :data:`SCRIPT_CLIENT` beside ``ltr``) runs the Python script ``FILE`` as ``python FILE``
  runs it (``__main__``, ``sys.argv``, its folder first on ``sys.path``, exit code 1 and the
  traceback on stderr for an uncaught exception), forked from the server: for a script about what
  it computes and prints, not about its interpreter (start-up, what is imported).
- ``LTR_DOCS_PIDFILE=FILE`` in a client's environment (not passed on to the command): the command
  runs in a session of its own and writes its process id to ``FILE`` before anything else.
- ``LTR_DOCS_INLINE_FIGURES=1`` in a client's environment (not passed on to the command): a run's
  figures are drawn in the command's own process (matplotlib imported once by the server), the
  path a run takes where no figure worker can start, the same files
  (tests/tracking/test_run_contents.py checks both paths), instead of a worker process per run
  (a Python start-up and matplotlib's import). The worker itself is tested by
  tests/experiment/test_figure_worker.py.
- ``LTR_DOCS_PROFILE=FILE`` in the server's environment (the test process's) appends a JSON line
  per command to ``FILE``: its arguments, folder (a page's), CPU seconds and wall seconds, to see
  where a suite's CPU goes.
"""

from __future__ import annotations

import contextlib
import gc
import json
import marshal
import os
import signal
import socket
import stat
import struct
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

#: Imported once by the server: the verbs, and what ``ltr train`` and the readers import lazily.
PRELOAD = (
    "ltr.cli.main", "ltr.cli.train", "ltr.experiment.run", "ltr.api", "mlflow", "mlflow.tracking",
    "lightgbm", "pandas", "pyarrow.parquet", "hydra", "numba",
    # what every command that opens a store or calls a kernel imports on its first use (a second
    # of CPU a command otherwise): MLflow's sqlite store (SQLAlchemy, Alembic) and model flavour,
    # GitPython (a run's source tags), the tracing SDK, ltr's numba kernels (imported, not loaded)
    "mlflow.store.tracking.sqlalchemy_store", "mlflow.pyfunc", "alembic", "git", "IPython",
    "opentelemetry.sdk.metrics", "ltr.metrics._kernel", "ltr.compiled.kernel_signatures", "ltr.compiled.precompiled",
    # what a run draws its figures with in its own process (``LTR_DOCS_INLINE_FIGURES``)
    "matplotlib.backends.backend_agg", "matplotlib.figure", "ltr.experiment.figures.figure_worker",
    # what the manual's other verbs and a run's logging import on their first use (a tenth of a
    # CPU-second a command): the verbs, sqlite's dialect, MLflow's model flavours and Arrow's datasets
    "ltr.cli.compare", "ltr.cli.predict", "ltr.cli.explain", "ltr.cli.evaluate", "ltr.cli.data",
    "ltr.cli.rerun", "ltr.explain", "ltr.compare.render", "sqlalchemy.dialects.sqlite", "alembic.command",
    "mlflow.lightgbm", "mlflow.sklearn", "pyarrow.dataset", "pyarrow.pandas_compat",
)
#: The client that runs a Python script (``SCRIPT_CLIENT FILE ARGS``), beside ``ltr``'s.
SCRIPT_CLIENT = "ltr-docs-python"
#: The client's environment variable that asks for a run's figures in the command's process.
INLINE_FIGURES = "LTR_DOCS_INLINE_FIGURES"
#: The client (:mod:`tests.docs.forkclient`), a file beside this one.
_CLIENT = Path(__file__).with_name("forkclient.py")
_LENGTH = struct.Struct("!Q")


def start(env: dict[str, str], folder: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """Start a server with ``env`` in ``folder`` (its client lives there); return it
    once it listens, and the folder holding its ``ltr`` client."""
    folder.mkdir(parents=True, exist_ok=True)
    path = f"@ltr-docs-{os.getpid()}-{uuid.uuid4().hex}"  # Linux's abstract namespace: no file, no length limit
    proc = subprocess.Popen(
        [sys.executable, __file__, "serve", str(path)], env=env, cwd=folder,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    assert proc.stdout is not None
    if proc.stdout.readline() != b"ready\n":
        stop(proc)
        raise RuntimeError(f"the docs fork server did not start (exit {proc.returncode})")
    bin_dir = folder / "bin"
    bin_dir.mkdir(exist_ok=True)
    client = bin_dir / "ltr"
    client.write_text(f'#!/bin/sh\nLTR_DOCS_FORKSERVER={path} exec {sys.executable} -I -S {_CLIENT} ltr "$@"\n')
    client.chmod(client.stat().st_mode | stat.S_IXUSR)
    script = bin_dir / SCRIPT_CLIENT
    script.write_text(f'#!/bin/sh\nLTR_DOCS_FORKSERVER={path} exec {sys.executable} -I -S {_CLIENT} script "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return proc, bin_dir


def stop(proc: subprocess.Popen[bytes]) -> None:
    """End the server and every process of its group (a command still running)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    if proc.stdout is not None:
        proc.stdout.close()


def _address(name: str) -> str:
    """A socket address from its name in the environment (``@name``: the abstract namespace)."""
    return "\0" + name[1:] if name.startswith("@") else name


def _recv_exactly(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the client went away")
        data += chunk
    return data


def serve(path: str) -> None:
    """Import :data:`PRELOAD`, listen on ``path``, and for each request fork a child that runs
    the ``ltr`` command; answer with its exit code."""
    import importlib

    for module in PRELOAD:
        importlib.import_module(module)
    # numba's CPU target registers its lowering code on its first use (a third of a CPU-second,
    # in every command that loads a kernel): done here, no kernel loaded (loading one that runs
    # in parallel would start numba's threads), so the children only load their kernels
    from numba.core.registry import cpu_target

    cpu_target.target_context.refresh()
    _warm_hydra()
    # the imports' objects out of the collector's sight: a child's collection would otherwise walk
    # (and, touching their reference counts, copy) every page of them
    gc.collect()
    gc.freeze()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(_address(path))
    listener.listen(8)
    # the waiters below are reaped here, not by the kernel (SIG_IGN): a reaped child's CPU time
    # counts as this server's children's, so `time make test` sees the commands' CPU
    signal.signal(signal.SIGCHLD, _reap)
    print("ready", flush=True)
    while True:
        conn, _ = listener.accept()
        _, fds, _, _ = socket.recv_fds(conn, 1, 3)
        (length,) = _LENGTH.unpack(_recv_exactly(conn, _LENGTH.size))
        request = marshal.loads(_recv_exactly(conn, length))  # tests.docs.forkclient's
        if os.fork() == 0:  # a waiter per command: commands of one block may run side by side
            listener.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            pid = os.fork()
            if pid == 0:
                conn.close()
                _run_command(request, fds)  # never returns
            for fd in fds:
                os.close(fd)
            started = time.monotonic()
            _, status, usage = os.wait4(pid, 0)
            code = os.waitstatus_to_exitcode(status)
            if log := os.environ.get("LTR_DOCS_PROFILE"):
                cpu = usage.ru_utime + usage.ru_stime  # the command's and its waited children's
                line = {"argv": request["argv"], "cwd": request["cwd"], "cpu": cpu, "wall": time.monotonic() - started}
                with open(log, "a") as out:
                    out.write(json.dumps(line) + "\n")
            conn.sendall(str(128 - code if code < 0 else code).encode())
            os._exit(0)
        for fd in fds:
            os.close(fd)
        conn.close()


def _warm_hydra() -> None:
    """Compose ``ltr train``'s default config once, then forget it (no Hydra instance, no config,
    no logging set up; Hydra's compose API sets no ``HydraConfig``): what a first composition
    fills (Hydra's plugin list, OmegaConf's and the config classes' caches, a quarter of each
    command's composition) is then filled in every child."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from ltr.config.compose import CONF_DIR

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        compose("train")
    GlobalHydra.instance().clear()


def _reap(signum: int, frame: object) -> None:
    """Reap every waiter that has exited (the server's SIGCHLD handler)."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass


def _run_command(request: dict[str, Any], fds: list[int]) -> None:
    """In the forked child: become the caller's process (its descriptors, folder, environment and
    arguments) and run the console script's entry point, which exits."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    if request.get("pidfile"):  # a session of its own, its id where the caller finds it (forkclient.PIDFILE)
        os.setsid()
        Path(request["pidfile"]).write_text(str(os.getpid()))
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    if request.get("inline_figures"):
        from ltr.experiment import run as pipeline

        pipeline.start_worker = lambda: None  # type: ignore[attr-defined]  # as tests/conftest.py does
    if request.get("script"):
        _run_script(request["argv"])  # never returns
    sys.argv = [str(Path(sys.executable).with_name("ltr")), *request["argv"]]
    from ltr.cli.main import run

    run()


def _run_script(argv: list[str]) -> None:
    """In the forked child: run the script ``argv[0]`` as ``python SCRIPT ARGS`` runs it, and exit."""
    import runpy
    import traceback

    script = os.path.abspath(argv[0])
    sys.argv = [argv[0], *argv[1:]]
    sys.path[0] = os.path.dirname(script)  # the server's own folder was there
    code = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)
    except BaseException as exc:  # its traceback from the script's frames on, as python prints it
        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != script:
            tb = tb.tb_next
        traceback.print_exception(type(exc), exc, tb or exc.__traceback__)
        code = 1
    sys.exit(code)


if __name__ == "__main__":
    serve(sys.argv[2])

"""``ltr ui``: the MLflow UI on 127.0.0.1 for a local store, checked before it starts.

For an MLflow tracking server (``--uri http://host:5000``), which serves its own UI, it starts
nothing: it prints the server's links to each experiment's runs table and exits 0.

A busy port or a missing store is one line and exit 2 (``mlflow ui`` would exit 0, or create an
empty store); the store is checked (rebuilt or refused) under its lock and dead runs are reaped.
The server is the lightest that serves one user: one worker, no job runner (MLflow's GenAI jobs),
no deprecation noise. Once it answers, ``ltr ui`` prints the link to each experiment's runs table
(model-training mode) and how long the UI took to come up.

``ltr ui`` only waits while the UI runs, so it stays light: it never imports MLflow (or numpy);
the store's check and the links are the work of a child process that ends before the server
starts (:mod:`ltr.cli.support.ui_links`).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from types import FrameType

from ltr.cli.support.args import OneLineParser
from ltr.cli.support.verb import run_verb
from ltr.errors import LtrUserError, Terminated
from ltr.tracking import check_tracking_uri, find_tracking_uri
from ltr.tracking.sqlite.lock import sqlite_db_path
from ltr.tracking.uri import UI_PORT

#: How long the server may take to answer ``/health`` before ``ltr ui`` gives up.
START_TIMEOUT_S = 120.0


def server_command(uri: str, port: int) -> list[str]:
    """``mlflow ui`` on 127.0.0.1:``port`` for the store ``uri``, one worker."""
    return [
        sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", uri,
        "--registry-store-uri", uri, "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
        "--uvicorn-opts", "--log-level warning",
    ]


def server_env() -> dict[str, str]:
    """The server's environment: no job runner, no warnings (deprecations of MLflow's own deps)."""
    return os.environ | {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false", "PYTHONWARNINGS": "ignore"}


def store_links(uri: str, base: str) -> list[str]:
    """The store checked and its experiments' links (:mod:`ltr.cli.support.ui_links`), computed in a
    child process so this one never holds MLflow; a refused store is an `LtrUserError`."""
    child = subprocess.run(
        [sys.executable, "-m", "ltr.cli.support.ui_links", uri, base], stdout=subprocess.PIPE, text=True, env=server_env(),
    )  # fmt: skip
    try:
        answer = json.loads(child.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        raise LtrUserError(f"could not open the MLflow store {uri} (exit code {child.returncode}; see above)") from None
    if "error" in answer:
        raise LtrUserError(str(answer["error"]))
    return [str(line) for line in answer["links"]]


def wait_until_up(proc: subprocess.Popen[bytes], base: str, timeout: float) -> None:
    """Return once ``base/health`` answers; raise if the server exits or stays silent."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise LtrUserError(f"the MLflow UI exited with code {proc.returncode} before it served (see above)")
        try:
            with urllib.request.urlopen(f"{base}/health", timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    proc.terminate()
    raise LtrUserError(f"the MLflow UI did not answer at {base} within {timeout:.0f} s")


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise Terminated()


def _server_links(uri: str) -> int:
    """An MLflow tracking server serves its own UI: its experiments' links (dead runs reaped, as
    for a local store), nothing started."""
    links = store_links(uri, uri)
    lines = [f"MLflow UI at {uri} (the tracking server serves it)"] + (["runs tables:", *links] if links else ["no runs yet"])
    print("\n".join(lines), file=sys.stderr, flush=True)
    return 0


def start_server(command: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[bytes], int | None]:
    """The server's process, started with SIGINT and SIGTERM held, and the first of them that
    arrived meanwhile (None: none): a stop signal raised inside ``Popen`` would leave the
    started server running without ``ltr ui``; the caller raises it where it stops the server."""
    held: list[int] = []
    stops = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.signal(sig, lambda signum, frame: held.append(signum)) for sig in stops}
    try:
        proc = subprocess.Popen(command, env=env)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return proc, (held[0] if held else None)


def build_parser() -> OneLineParser:
    parser = OneLineParser(prog="ltr ui", description="MLflow UI on 127.0.0.1 for the local store")
    parser.add_argument("--port", type=int, default=UI_PORT)
    parser.add_argument("--uri", default=None, help="tracking store (default: $LTR_TRACKING_URI, $MLFLOW_TRACKING_URI, ./mlflow.db, the project root's mlflow.db)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """``ltr ui [--port N] [--uri URI]``: check the port and the store, serve, print the links."""
    return run_verb(argv, build_parser(), _run)


def _run(args: argparse.Namespace) -> int:
    if not 1 <= args.port <= 65535:
        raise LtrUserError(f"--port {args.port} is not a TCP port (1-65535)")
    uri = find_tracking_uri(args.uri)
    if uri.startswith(("http://", "https://")):
        return _server_links(check_tracking_uri(uri, writable=False))
    # mlflow ui exits 0 when the port is taken: find out first.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server will
        try:
            probe.bind(("127.0.0.1", args.port))
        except OSError as exc:
            raise LtrUserError(f"port {args.port} is in use ({exc.strerror}); pass --port with a free one") from exc
    db = sqlite_db_path(uri)
    if db is not None and not db.is_file():  # mlflow ui would create an empty store
        raise LtrUserError(f"no MLflow store at {db}; run `ltr train` first or pass --uri")
    uri = check_tracking_uri(uri, writable=False)
    start = time.monotonic()
    base = f"http://127.0.0.1:{args.port}"
    signal.signal(signal.SIGTERM, _terminate)  # `kill` stops the server too, never orphans it
    links = store_links(uri, base)  # checked (rebuilt or refused) under the lock, dead runs reaped
    print(f"starting the MLflow UI for {uri} ...", file=sys.stderr, flush=True)
    proc, stop = start_server(server_command(uri, args.port), server_env())
    try:
        if stop is not None:
            raise KeyboardInterrupt() if stop == signal.SIGINT else Terminated()
        wait_until_up(proc, base, START_TIMEOUT_S)
        print(
            "\n".join(
                [f"MLflow UI at {base} (up in {time.monotonic() - start:.1f} s; Ctrl-C to stop)"]
                + (["runs tables:", *links] if links else ["no runs yet"])
            ),
            file=sys.stderr,
            flush=True,
        )
        return proc.wait()
    finally:
        if proc.poll() is None:  # Ctrl-C / SIGTERM / an error here: stop the server with us
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()

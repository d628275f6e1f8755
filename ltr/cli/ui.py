"""``ltr ui``: the MLflow UI on 127.0.0.1 for a local store, checked before it starts.

A busy port or a missing store is one line and exit 2 (``mlflow ui`` would exit 0, or create an
empty store); the store is checked (rebuilt or refused) under its lock and dead runs are reaped.
"""

from __future__ import annotations

import os
import socket
import sys

from ltr.cli.args import OneLineParser
from ltr.errors import LtrUserError
from ltr.tracking import check_tracking_uri, resolve_tracking_uri
from ltr.tracking.store import open_client
from ltr.tracking.store_lock import sqlite_db_path


def main(argv: list[str]) -> int:
    """``ltr ui [--port N] [--uri URI]``: check the port and the store, then exec ``mlflow ui``."""
    parser = OneLineParser(prog="ltr ui", description="MLflow UI on 127.0.0.1 for the local store")
    parser.add_argument("--port", type=int, default=5000)
    parser.add_argument("--uri", default=None, help="tracking store (default: sqlite:///./mlflow.db)")
    args = parser.parse_args(argv)
    if not 1 <= args.port <= 65535:
        raise LtrUserError(f"--port {args.port} is not a TCP port (1-65535)")
    # mlflow ui exits 0 when the port is taken: find out first.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server will
        try:
            probe.bind(("127.0.0.1", args.port))
        except OSError as exc:
            raise LtrUserError(f"port {args.port} is in use ({exc.strerror}); pass --port with a free one") from exc
    uri = resolve_tracking_uri(args.uri)
    db = sqlite_db_path(uri)
    if db is not None and not db.is_file():  # mlflow ui would create an empty store
        raise LtrUserError(f"no MLflow store at {db}; run `ltr train` first or pass --uri")
    uri = check_tracking_uri(uri, writable=False)
    if uri.startswith(("http://", "https://")):
        raise LtrUserError(f"{uri} is an MLflow server: browse it, it serves its own UI")
    open_client(uri, create=False)  # checked (rebuilt or refused) under the lock, dead runs reaped
    cmd = [sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", uri, "--host", "127.0.0.1", "--port", str(args.port)]
    print(f"MLflow UI for {uri} at http://127.0.0.1:{args.port} (Ctrl-C to stop)", file=sys.stderr)
    sys.stderr.flush()
    os.execv(sys.executable, cmd)
    return 0  # not reached

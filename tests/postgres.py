"""A real PostgreSQL server, and a real ``mlflow server`` on it, for the tests of a team's server.

:func:`running_postgres` runs Debian's ``initdb`` and ``postgres`` (package ``postgresql``,
installed by ``make install`` when it runs as root with apt; :func:`postgres_bindir` finds them)
on 127.0.0.1 at a free port, in a temporary folder of its own, and stops the whole server after.
Run as root, the server runs as the ``postgres`` system user (or ``nobody``): PostgreSQL refuses to
run as root. A developer without the binaries gets one skip reason
(:func:`require_postgres`); under CI (``CI`` set) the missing binaries fail the test instead.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.processes import free_port

#: The database user the tests' server trusts (no password: it listens on 127.0.0.1 only).
DB_USER = "ltr"

#: Why a test of a team's server cannot run here (the one skip reason a developer sees).
MISSING = (
    "PostgreSQL server binaries (initdb, postgres) not found: install Debian's postgresql "
    "package (make install does, as root), or put them on PATH"
)


def postgres_bindir() -> Path | None:
    """The folder holding ``initdb`` and ``postgres``: Debian's newest
    ``/usr/lib/postgresql/<version>/bin``, else the one on ``PATH``; None when neither has them."""

    def version(path: Path) -> tuple[int, ...]:
        return tuple(int(p) for p in path.parent.parent.name.split(".") if p.isdigit())

    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=version)
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    if initdb is not None and shutil.which("postgres") is not None:
        return Path(initdb).parent
    return None


def require_postgres() -> Path:
    """:func:`postgres_bindir`, or skip the test with :data:`MISSING` (fail it under CI: there the
    tests of a team's server must run)."""
    bindir = postgres_bindir()
    if bindir is not None:
        return bindir
    if os.environ.get("CI"):
        pytest.fail(f"{MISSING} (CI is set: these tests must run in CI)")
    pytest.skip(MISSING)


def _server_user() -> tuple[int, int] | None:
    """(uid, gid) the server runs as: None when not root, else ``postgres`` or ``nobody``."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            entry = pwd.getpwnam(name)
            return entry.pw_uid, entry.pw_gid
    pytest.fail("running as root, but neither a postgres nor a nobody user exists to run PostgreSQL as")


def database_url(port: int, database: str, *, driver: str = "postgresql+psycopg") -> str:
    """The SQLAlchemy URL of ``database`` on the tests' server at ``port``."""
    return f"{driver}://{DB_USER}@127.0.0.1:{port}/{database}"


def create_database(port: int, name: str) -> str:
    """Create the database ``name`` on the server at ``port``; its URL."""
    import psycopg

    with psycopg.connect(f"host=127.0.0.1 port={port} user={DB_USER} dbname=postgres", autocommit=True) as con:
        con.execute(f'CREATE DATABASE "{name}"')
    return database_url(port, name)


@contextlib.contextmanager
def running_postgres(*databases: str, port: int | None = None, timeout: float = 60) -> Iterator[int]:
    """A PostgreSQL server on 127.0.0.1 (at ``port``, default a free one) with ``databases``
    created; yields its port. The data folder is a temporary folder of its own (the server's user
    must reach it, and pytest's folders are private to root); the server is stopped (fast shutdown,
    SIGKILL after 20 s) and the folder removed after.

    Durability is off (``fsync``, ``synchronous_commit``): a test's data need not survive a crash.
    """
    bindir = require_postgres()
    user = _server_user()
    root = Path(tempfile.mkdtemp(prefix="ltr-pg-"))
    data = root / "data"
    log = root / "postgres.log"
    port = free_port() if port is None else port
    try:
        if user is not None:
            os.chown(root, *user)
        as_user: dict[str, Any] = {"user": user[0], "group": user[1], "extra_groups": []} if user else {}
        env = dict(os.environ, LC_ALL="C", LANG="C")
        initdb = subprocess.run(
            [str(bindir / "initdb"), "-D", str(data), "-U", DB_USER, "--auth=trust", "--no-sync", "-E", "UTF8", "--no-locale"],
            capture_output=True, text=True, env=env, cwd=root, **as_user,
        )
        if initdb.returncode != 0:
            pytest.fail(f"initdb failed: {initdb.stderr[-2000:]}")
        with log.open("w") as out:
            if user is not None:
                os.chown(log, *user)
            proc = subprocess.Popen(
                [str(bindir / "postgres"), "-D", str(data), "-h", "127.0.0.1", "-p", str(port), "-k", str(root),
                 "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
                 "-c", "max_connections=200"],
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env=env, cwd=root, **as_user,
            )
        try:
            _wait_for_postgres(port, proc, log, timeout)
            for name in databases:
                create_database(port, name)
            yield port
        finally:
            stop_postgres(proc)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _wait_for_postgres(port: int, proc: subprocess.Popen[Any], log: Path, timeout: float) -> None:
    import psycopg

    deadline = time.monotonic() + timeout
    while True:
        try:
            psycopg.connect(f"host=127.0.0.1 port={port} user={DB_USER} dbname=postgres", connect_timeout=2).close()
            return
        except psycopg.OperationalError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"PostgreSQL did not start on port {port}: {log.read_text()[-2000:]}")
        time.sleep(0.2)


def stop_postgres(proc: subprocess.Popen[Any], *, timeout: float = 20) -> None:
    """Stop the server started by :func:`running_postgres` and all its processes: SIGINT (fast
    shutdown: clients are disconnected, SIGTERM would wait for them), SIGKILL after ``timeout`` s."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=timeout)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # a backend left behind, if any
    proc.wait(timeout=timeout)

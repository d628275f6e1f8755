"""The tracking store: which URIs are accepted, how a sqlite store comes to exist, dead runs.

Accepted URIs (:func:`check_tracking_uri`, fast, before any data is read)
    ``sqlite:///path/mlflow.db`` (made absolute; its directory must be writable), ``http(s)://``
    (an MLflow server that answers within seconds) and ``postgresql://`` / ``mysql://`` /
    ``mssql://`` database URLs whose SQLAlchemy driver is installed (and whose server accepts a TCP
    connection). In-memory sqlite (runs would vanish with the process), MLflow file stores
    (``file://``, plain paths) and unknown schemes are refused with one line. A server that does
    not answer (:class:`ltr.errors.ServerFault`, exit 1) is found within :data:`CHECK_TIMEOUT_S`,
    unless it answered a run of this process before (the next job of a sweep): then it is waited
    for as long as that run would (:func:`remember_server`); a PostgreSQL connect after that
    fails within :data:`DB_CONNECT_TIMEOUT_S`.

Creation (:func:`ensure_store`)
    A sqlite store is created, and checked, under the store lock (``<db>.lock``) by whoever comes
    first. The schema is built in a temporary file beside the database and renamed into place, so
    a signal at any moment leaves either no database or a complete one. A database found
    incomplete (an interrupted migration: tables missing, alembic not at head) is rebuilt when it
    holds no runs, and refused with one line saying what to do otherwise. After the first store
    MLflow's migrations build, new stores are copies of an empty one
    (:mod:`ltr.tracking.sqlite.template`: milliseconds instead of 2 s).

Dead runs (:func:`reap_dead_runs`)
    Every run records its process (:func:`process_tags`: one ``ltr.process`` tag with host,
    pid, process start, host and boot ids) and beats a heartbeat (:mod:`ltr.tracking.liveness.heartbeat`).
    A RUNNING run whose process, on this host, is gone (or whose pid now belongs to another
    process), or, on another host, whose heartbeat is silent for longer than the bound it
    carries, is marked KILLED with the ``ltr.error`` tag when a tracker, ``ltr ui`` or
    ``ltr compare`` next opens the store; the Optuna trial it ran is told FAIL
    (:mod:`ltr.tracking.liveness.reaped_trials`). Runs of live processes of this host (also stopped or
    slow ones), runs of other hosts whose heartbeat beats, and runs without ltr's tags are never
    touched. The host is ``/etc/machine-id`` and the pid namespace, or ``$LTR_HOST_ID`` where
    set (machines cloned from one image share a machine id).

Only :func:`ensure_store`, :func:`open_client` and :func:`reap_dead_runs` import mlflow.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import socket
import sqlite3
import ssl
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ltr.errors import LtrUserError, ServerFault, full_device
from ltr.runtime.stops import signals_deferred
from ltr.tracking.liveness.heartbeat import silent_for
from ltr.tracking.liveness.proc_files import proc_stat, read_text
from ltr.tracking.liveness.reaped_trials import fail_trial_of
from ltr.tracking.server_wait import LINE_EVERY_S, PAUSE_S
from ltr.tracking.sqlite import template as store_template
from ltr.tracking.sqlite.lock import (
    SQLITE_PREFIX,
    lock_path,
    sqlite_db_path,
    sqlite_store_lock,
    touch_lock_file,
)
from ltr.tracking.sqlite.migrations import mlflow_revisions
from ltr.tracking.sqlite.moved import follow_moved_artifacts
from ltr.tracking.uri import (
    artifact_root_for,
    find_tracking_uri,
    redacted,
    resolve_tracking_uri,
    uri_from_environment,
)

log = logging.getLogger(__name__)

#: Total time an MLflow server (or a database server) gets to answer :func:`check_tracking_uri`.
CHECK_TIMEOUT_S = 5.0

#: Seconds a PostgreSQL connect (MLflow's store, an Optuna study) may take before it fails
#: (:func:`bound_database_connects`).
DB_CONNECT_TIMEOUT_S = 10

#: MLflow's HTTP client retries 7 times with backoff and waits 120 s per request by default:
#: minutes before a dead server is reported. Ours, unless the user set them: a request is tried
#: again twice within about 2 s (backoff 0, 2 s); a run waits for a server that does not answer
#: for ``tracking.server_wait_s`` itself (:mod:`ltr.tracking.server_wait`: a line every few
#: seconds while it waits), so it lives through a restart of its server; a server down at start
#: is found by :func:`check_tracking_uri` within :data:`CHECK_TIMEOUT_S`.
HTTP_ENV_DEFAULTS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "30",
}

#: Database schemes MLflow supports besides sqlite, with their default ports.
_DB_PORTS = {"postgresql": 5432, "mysql": 3306, "mssql": 1433}
#: pip package of a SQLAlchemy driver module, where the names differ.
_DRIVER_PACKAGES = {
    "psycopg": "'psycopg[binary]'",
    "psycopg2": "psycopg2-binary",
    "MySQLdb": "mysqlclient",
    "pymysql": "PyMySQL",
    "pyodbc": "pyodbc",
    "pymssql": "pymssql",
}
_USE_SQLITE = "use tracking.uri=sqlite:///path/mlflow.db"

#: Tables whose rows are user data: a store holding any is never rebuilt.
_DATA_TABLES = ("runs", "registered_models", "logged_models", "trace_info")

#: Tags identifying the process that owns a run (see :func:`process_tags`).
#: One tag names the process of a run: ``host=... pid=... start=... host_id=... boot_id=...``.
TAG_PROCESS = "ltr.process"
HOST, PID, START, HOST_ID, BOOT_ID = "host", "pid", "start", "host_id", "boot_id"
TAG_ERROR = "ltr.error"


# --- accepted URIs -------------------------------------------------------------------------------


def check_tracking_uri(uri: str | None, *, writable: bool = True) -> str:
    """The normalised tracking URI (``resolve_tracking_uri``), or `LtrUserError` in one line.

    ``None`` or blank (``tracking.uri`` unset) is the store ``ltr train`` writes to,
    ``find_tracking_uri(writing=True)``: ``$LTR_TRACKING_URI``, ``$MLFLOW_TRACKING_URI``, else
    ``./mlflow.db``; an error about a variable's URI names the variable.

    Fast (seconds at most) and free of mlflow imports, so it can run before any data is read.
    ``writable=False`` (reading runs only) skips the test that a sqlite store's directory can be
    written. For ``http(s)`` stores, MLflow's HTTP retry settings are shortened
    (`HTTP_ENV_DEFAULTS`) unless set in the environment.
    """
    raw = (uri or "").strip()
    if raw:
        return _check_uri(raw, writable=writable)
    found = find_tracking_uri(None, writing=True)
    try:
        return _check_uri(found, writable=writable)
    except LtrUserError as exc:
        from_environment = uri_from_environment()
        if from_environment is None:
            raise
        raise LtrUserError(f"{exc} (the URI of ${from_environment[0]}: unset it or set tracking.uri)") from None


def _check_uri(raw: str, *, writable: bool) -> str:
    """:func:`check_tracking_uri` of a non-blank URI."""
    scheme, sep, rest = raw.partition("://")
    scheme = scheme.lower()
    if not sep:
        raise LtrUserError(
            f"tracking URI {raw!r} is a plain path: MLflow file stores are not supported; {_USE_SQLITE}"
        )
    if scheme == "file":
        raise LtrUserError(f"tracking URI {raw!r}: MLflow file stores are not supported; {_USE_SQLITE}")
    if scheme == "sqlite":
        return _check_sqlite(raw, rest, writable=writable)
    if scheme in {"http", "https"}:
        return _check_http(raw)
    if scheme.split("+", 1)[0] in _DB_PORTS:
        return _check_database(raw)
    raise LtrUserError(
        f"tracking URI {_redact(raw)!r} has an unsupported scheme {scheme!r}; use "
        f"sqlite:///path/mlflow.db, http(s)://host:port (an MLflow server) or a "
        f"postgresql/mysql/mssql database URL"
    )


def _check_sqlite(raw: str, rest: str, *, writable: bool) -> str:
    path, _, query = rest.partition("?")
    if not path or path in {"/", "/:memory:"} or path.startswith("/:memory:") or "mode=memory" in query:
        raise LtrUserError(
            f"tracking URI {raw!r} is an in-memory sqlite database: its runs would vanish when the "
            f"process ends; {_USE_SQLITE}"
        )
    if not path.startswith("/"):
        raise LtrUserError(
            f"tracking URI {raw!r}: a sqlite URI is sqlite:/// followed by the database path "
            f"(sqlite:///mlflow.db, sqlite:////abs/path/mlflow.db)"
        )
    resolved = resolve_tracking_uri(raw)
    db = sqlite_db_path(resolved)
    assert db is not None
    if db.is_dir():
        raise LtrUserError(f"the MLflow store {db} is a directory; point tracking.uri at a file in it")
    if writable:
        _check_writable(db)
    return resolved


def _check_writable(db: Path) -> None:
    """The directory of ``db`` can be created and written (the lock file, sqlite's journal)."""
    touch_lock_file(db)  # creates the directory; one-line LtrUserError when it cannot
    parent = db.parent
    problem = None
    if not os.access(parent, os.W_OK | os.X_OK):
        problem = "the directory is not writable"
    elif db.exists() and not os.access(db, os.R_OK | os.W_OK):
        problem = "the database file is read-only"
    else:
        try:  # os.access says yes to root everywhere, also on read-only mounts: really write
            with signals_deferred():  # a Ctrl-C between create and unlink would leave the probe
                fd, probe = tempfile.mkstemp(dir=parent, prefix=f".{db.name}.probe-")
                os.close(fd)
                os.unlink(probe)
        except OSError as exc:
            problem = f"cannot create a file there ({exc.strerror or exc})"
    if problem:
        raise LtrUserError(f"cannot write the MLflow store {db}: {problem}; {_USE_SQLITE} elsewhere")


def _ssl_context() -> ssl.SSLContext | None:
    if os.environ.get("MLFLOW_TRACKING_INSECURE_TLS", "").lower() == "true":
        return ssl._create_unverified_context()
    cafile = os.environ.get("MLFLOW_TRACKING_SERVER_CERT_PATH")
    return ssl.create_default_context(cafile=cafile) if cafile else None


#: Servers that answered a tracker of this process, and how long its run waits for them
#: (:func:`remember_server`).
_ANSWERED: dict[str, float] = {}


def remember_server(uri: str, wait_s: float) -> None:
    """``uri`` answered a tracker of this process, whose run waits ``wait_s`` seconds for it: a
    later :func:`check_tracking_uri` of it (the next job of a sweep) waits as long for a server
    that stopped answering, with a line every few seconds, instead of failing at once (a server
    that never answered this process is refused at once)."""
    _ANSWERED[uri.rstrip("/")] = wait_s


def _check_http(raw: str) -> str:
    """:func:`_probe_http`, waited for when the server answered this process before
    (:func:`remember_server`)."""
    started = time.monotonic()
    shown: float | None = None
    while True:
        try:
            return _probe_http(raw)
        except ServerFault:
            window = _ANSWERED.get(raw.rstrip("/"), 0.0)
            waited = time.monotonic() - started
            if waited >= window:
                raise
            if shown is None or time.monotonic() - shown >= LINE_EVERY_S:
                shown = time.monotonic()
                log.warning("ltr: waiting for the tracking server %s (%.0f s of %g s)", raw.rstrip("/"), waited, window)
            time.sleep(min(PAUSE_S, window - waited))


def _probe_http(raw: str) -> str:
    url = raw.rstrip("/")
    parts = urllib.parse.urlsplit(url)
    if not parts.hostname:
        raise LtrUserError(f"tracking URI {raw!r} names no host; use http(s)://host:port")
    # Credentials go in MLFLOW_TRACKING_USERNAME/PASSWORD; keep any in the URL out of the probe.
    netloc = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    try:
        port = parts.port
    except ValueError as exc:
        raise LtrUserError(f"tracking URI {_redact(raw)!r}: {exc}") from exc
    if port is not None:
        netloc += f":{port}"
    base = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    context = _ssl_context()
    deadline = time.monotonic() + CHECK_TIMEOUT_S
    answers: list[str] = []
    for path in ("/health", "/api/2.0/mlflow/experiments/search?max_results=1"):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        try:
            with urllib.request.urlopen(base + path, timeout=remaining, context=context) as response:
                status = int(response.status)
        except urllib.error.HTTPError as exc:
            status = int(exc.code)
        except (OSError, ValueError) as exc:  # URLError, refused, timed out, TLS, bad URL
            reason = getattr(exc, "reason", None) or exc
            raise ServerFault(
                f"MLflow server at {base} does not answer ({reason}); start it or fix tracking.uri"
            ) from exc
        if 200 <= status < 300 or status in {401, 403}:  # 401/403: there, credentials are MLflow's
            for key, value in HTTP_ENV_DEFAULTS.items():
                os.environ.setdefault(key, value)
            return url
        answers.append(f"{path.split('?')[0]} -> HTTP {status}")
    raise LtrUserError(
        f"MLflow server at {base} does not answer as an MLflow server ({'; '.join(answers) or 'timed out'})"
    )


_redact = redacted


def redact_uri(raw: str) -> str:
    """A database or server URI as it may be shown or logged: its password as ``***``."""
    return _redact(raw)


def bound_database_connects() -> None:
    """Bound every later PostgreSQL connect of this process (and its children) to
    :data:`DB_CONNECT_TIMEOUT_S`: libpq's ``PGCONNECT_TIMEOUT``, unless the user set it (libpq's
    own default waits for as long as the operating system does, minutes for a host that drops
    packets, for ever for a server that accepts and never answers)."""
    os.environ.setdefault("PGCONNECT_TIMEOUT", str(DB_CONNECT_TIMEOUT_S))


def _check_database(raw: str) -> str:
    from sqlalchemy.engine import make_url

    shown = _redact(raw)
    try:
        url = make_url(raw)
        dialect = url.get_dialect()
    except Exception as exc:  # ArgumentError, NoSuchModuleError: a malformed URL or driver name
        raise LtrUserError(f"tracking URI {shown!r} is not a usable database URL ({exc})") from exc
    try:
        dialect.import_dbapi()
    except ImportError as exc:
        module = (exc.name or url.get_driver_name()).split(".")[0]
        package = _DRIVER_PACKAGES.get(module, module)
        raise LtrUserError(
            f"tracking URI {shown!r} needs the database driver {module!r}, which is not installed; "
            f"install {package} (.venv/bin/pip install {package})"
        ) from exc
    bound_database_connects()
    if url.host:
        port = url.port or _DB_PORTS[url.get_backend_name()]
        try:
            socket.create_connection((url.host, port), timeout=CHECK_TIMEOUT_S).close()
        except OSError as exc:
            raise ServerFault(
                f"database server at {url.host}:{port} (tracking URI {shown!r}) does not answer "
                f"({exc.strerror or exc})"
            ) from exc
    return raw


# --- creation -----------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _schema_revisions() -> tuple[str, frozenset[str]]:
    """MLflow's head schema revision and every revision it knows (read from the scripts, or
    from alembic when they are not clear)."""
    revisions = mlflow_revisions()
    return (revisions.head, revisions.known) if revisions is not None else alembic_revisions()


def alembic_revisions() -> tuple[str, frozenset[str]]:
    """:func:`_schema_revisions` as alembic reads them (importing every migration script)."""
    from alembic.script import ScriptDirectory
    from mlflow.store.db import utils

    alembic_config: Any = utils._get_alembic_config
    script = ScriptDirectory.from_config(alembic_config(db_url=""))
    heads = script.get_heads()
    known = frozenset(rev.revision for rev in script.walk_revisions())
    return (heads[0] if len(heads) == 1 else ",".join(sorted(heads))), known


@lru_cache(maxsize=1)
def _expected_tables() -> frozenset[str]:
    """The tables MLflow's models define (importing mlflow.store.db.utils registers them all)."""
    import mlflow.store.db.utils  # noqa: F401
    from mlflow.store.db.base_sql_model import Base

    return frozenset(Base.metadata.tables)


@dataclass
class _Inspection:
    """What is wrong with an existing sqlite store (nothing: `problems` empty)."""

    problems: list[str] = field(default_factory=list)
    data: dict[str, int] = field(default_factory=dict)
    repairable: bool = True


def _inspect(db: Path) -> _Inspection:
    found = _inspect_schema(db)
    if found.problems and found.repairable:
        data = _count_data(db)
        if data is None:
            found.repairable = False
            found.problems.append("its runs cannot be counted")
        else:
            found.data = data
    return found


def _complete(db: Path) -> bool:
    """Whether ``db`` is a complete store of the installed MLflow (no problem found)."""
    return not _inspect(db).problems


def _inspect_schema(db: Path) -> _Inspection:
    found = _Inspection()
    try:
        con = sqlite3.connect(db, timeout=30)
        try:
            tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            revisions = (
                [r[0] for r in con.execute("SELECT version_num FROM alembic_version")]
                if "alembic_version" in tables
                else []
            )
        finally:
            con.close()
    except sqlite3.Error as exc:
        found.repairable = False
        found.problems.append(f"it cannot be read as an SQLite database ({exc})")
        return found
    if not tables:
        found.problems.append("it has no tables")
        return found
    head, known = _schema_revisions()
    missing = sorted(_expected_tables() - tables)
    leftovers = sorted(t for t in tables if t.startswith("_alembic_tmp_"))
    if not revisions:
        found.problems.append("it has no schema version (alembic_version)")
    elif len(revisions) > 1 or revisions[0] != head:
        version = ",".join(revisions)
        if not set(revisions) <= known:
            found.repairable = False
            found.problems.append(
                f"its schema version {version} is unknown to this MLflow (a newer MLflow made it?)"
            )
        else:
            found.problems.append(f"its schema version is {version}, not {head}")
    if missing:
        found.problems.append(
            f"{len(missing)} of {len(_expected_tables())} MLflow tables are missing ({', '.join(missing[:3])}"
            + (", ...)" if len(missing) > 3 else ")")
        )
    if leftovers:
        found.problems.append(f"an interrupted migration left {', '.join(leftovers)}")
    return found


def _count_data(db: Path) -> dict[str, int] | None:
    """Rows of user data (runs, models, traces; also in alembic's temporary copies)."""
    data: dict[str, int] = {}
    try:
        con = sqlite3.connect(db, timeout=30)
        try:
            tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            for table in sorted(tables):
                name = table.removeprefix("_alembic_tmp_")
                if name in _DATA_TABLES:
                    (count,) = con.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()
                    if count:
                        data[name] = data.get(name, 0) + int(count)
        finally:
            con.close()
    except sqlite3.Error as exc:
        log.debug("cannot count the rows of %s: %s", db, exc)
        return None
    return data


def _refusal(db: Path, uri: str, found: _Inspection) -> str:
    what = "; ".join(found.problems)
    held = ", ".join(f"{n} rows in {t}" for t, n in found.data.items())
    if not found.repairable and not found.data:
        return (
            f"the MLflow store {db} cannot be used: {what}; move {db.name} aside (or pass another "
            f"tracking.uri) and ltr creates a new store"
        )
    return (
        f"the MLflow store {db} is incomplete: {what}; it holds data ({held}), so ltr does not "
        f"rebuild it: back it up, then run `mlflow db upgrade {uri}`, or move {db.name} aside "
        f"and ltr creates a new store"
    )


def _creating_prefix(db: Path) -> str:
    return f".{db.name}.creating-"


def _remove_leftovers(db: Path) -> None:
    """Temporary stores of creators that died (the lock is ours: nobody else is creating)."""
    with contextlib.suppress(OSError):
        for stale in db.parent.glob(f"{_creating_prefix(db)}*"):
            stale.unlink(missing_ok=True)


def fsync_path(path: Path, flags: int = os.O_RDONLY) -> None:
    """Flush a file (or, with ``os.O_DIRECTORY``, a directory's entries) to disk."""
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _dispose_engine(uri: str) -> None:
    """Forget a cached SQLAlchemy engine of ``uri`` (its pooled connections name an old file)."""
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    engines: dict[str, Any] = getattr(SqlAlchemyStore, "_engine_map", {})
    engine = engines.pop(uri, None)
    if engine is not None:
        engine.dispose()


def _fast_private_engine(tmp_uri: str) -> None:
    """Give MLflow an engine on the temporary file that does not sync each DDL statement.

    Nobody else sees that file before it is complete, synced and renamed, and one left by a
    crash is discarded: durability during the migration buys nothing and costs seconds.
    """
    from mlflow.store.db import utils
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore
    from sqlalchemy import event

    engines: dict[str, Any] | None = getattr(SqlAlchemyStore, "_engine_map", None)
    if engines is None:  # another MLflow: it builds its own engine
        return
    make_engine: Any = utils.create_sqlalchemy_engine
    engine = make_engine(tmp_uri)

    @event.listens_for(engine, "connect")
    def _no_sync(dbapi_connection: Any, connection_record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA synchronous = OFF")
        cursor.execute("PRAGMA journal_mode = MEMORY")
        cursor.close()

    engines[tmp_uri] = engine


def _create(db: Path, uri: str) -> None:
    """Build a complete store in a temporary file beside ``db`` (a copy of the empty-store
    template when there is one: :mod:`ltr.tracking.sqlite.template`; else MLflow's migrations,
    kept as the template), then rename it to ``db``."""
    from mlflow.exceptions import MlflowException
    from mlflow.store.tracking import sqlalchemy_store

    store_class: Any = sqlalchemy_store.SqlAlchemyStore
    tmp = db.with_name(f"{_creating_prefix(db)}{os.getpid()}-{threading.get_ident()}")
    tmp_uri = f"{SQLITE_PREFIX}{tmp}"
    try:
        tmp.touch(exist_ok=False)  # fails at once where MLflow would retry for minutes
    except OSError as exc:
        raise LtrUserError(
            f"cannot create the MLflow store {db}: {exc.strerror or exc}; {_USE_SQLITE} elsewhere"
        ) from exc
    try:
        root = artifact_root_for(uri)
        copied = root is not None and store_template.copy_template(tmp, root, complete=_complete)
        if not copied:
            _fast_private_engine(tmp_uri)
            try:
                store_class(tmp_uri, root)
            except MlflowException as exc:
                raise LtrUserError(
                    f"cannot create the MLflow store {db}: {str(exc.message).splitlines()[0]}"
                ) from exc
            finally:
                _dispose_engine(tmp_uri)
            found = _inspect(tmp)
            if found.problems:  # MLflow itself failed: never let such a store go live
                raise LtrUserError(f"MLflow built an incomplete store for {db}: {'; '.join(found.problems)}")
            store_template.keep_template(tmp)
        fsync_path(tmp)
        with signals_deferred():
            os.replace(tmp, db)
            fsync_path(db.parent, os.O_RDONLY | os.O_DIRECTORY)
        _dispose_engine(uri)
    finally:
        for leftover in (tmp, tmp.with_name(tmp.name + "-journal")):
            leftover.unlink(missing_ok=True)


def ensure_store(uri: str, *, create: bool = True) -> None:
    """Make sure the sqlite store at ``uri`` exists, complete; a no-op for other stores.

    Under the store lock: a missing database is created (``create=False``: `LtrUserError`, for
    commands that only read), atomically (see the module docstring); an incomplete one is
    rebuilt if it holds no runs, else refused with one line. Re-entrant: callers may hold the lock.
    """
    db = sqlite_db_path(uri)
    if db is None:
        return
    with sqlite_store_lock(uri):
        _remove_leftovers(db)
        if not db.exists():
            if not create:
                raise LtrUserError(f"no MLflow store at {db}; run `ltr train` first or pass --uri")
            _create(db, uri)
            return
        found = _inspect(db)
        if not found.problems:
            follow_moved_artifacts(db)  # a copied store reads and writes its own artifacts
            return
        if found.data or not found.repairable:
            raise LtrUserError(_refusal(db, uri, found))
        _create(db, uri)
        log.warning(
            "ltr: rebuilt the incomplete MLflow store %s (%s; it held no runs)",
            db,
            "; ".join(found.problems),
        )


def _readable_only(db: Path) -> bool:
    """True when the lock file beside ``db`` cannot be created (a store we may only read)."""
    if not db.exists():
        return False
    try:
        touch_lock_file(db)
    except LtrUserError:
        return True
    return sqlite_read_only(db)


def sqlite_read_only(db: Path) -> bool:
    """True when sqlite itself cannot write the store at ``db``: a write transaction that changes
    nothing (``PRAGMA user_version`` set to its value, rolled back) fails with "attempt to write
    a readonly database" (a file of mode 0444 for another user, an immutable file, a read-only
    mount). A store busy with another writer is not read-only."""

    try:
        con = sqlite3.connect(f"file:{db}?mode=rw", uri=True, timeout=0, isolation_level=None)  # busy: not read-only
    except sqlite3.Error:
        return False
    try:
        con.execute("BEGIN IMMEDIATE")
        version = int(con.execute("PRAGMA user_version").fetchone()[0])
        con.execute(f"PRAGMA user_version = {version}")
        con.execute("ROLLBACK")
    except sqlite3.OperationalError as exc:
        return "readonly" in str(exc)
    finally:
        con.close()
    return False


def read_only_store(uri: str) -> Path | None:
    """The database file of the sqlite store ``uri`` when it can only be read; None otherwise
    (a store it can write, a server store)."""
    db = sqlite_db_path(uri)
    return db if db is not None and db.exists() and _readable_only(db) else None


def open_client(uri: str, *, create: bool = False, reap: bool = True) -> Any:
    """An ``MlflowClient`` on a checked store, dead runs of all experiments reaped (``reap``).

    For commands that read the store (``ltr ui``, ``ltr compare``; ``ltr predict`` with
    ``reap=False``: it leaves the store as it is). A sqlite store we cannot write (its directory,
    or the file as sqlite finds it: :func:`sqlite_read_only`) is opened as it is, if complete
    (no lock, no reaping).
    """
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    db = sqlite_db_path(uri)
    try:
        if db is not None and _readable_only(db):
            found = _inspect(db)
            if found.problems:
                raise LtrUserError(_refusal(db, uri, found))
            return MlflowClient(tracking_uri=uri)
        with sqlite_store_lock(uri):
            ensure_store(uri, create=create)
            client = MlflowClient(tracking_uri=uri)
            if reap:
                reap_dead_runs(client, _experiment_ids(client))
            return client
    except MlflowException as exc:
        raise LtrUserError(
            f"cannot open the MLflow store {_redact(uri)}: {str(exc.message).splitlines()[0]}"
        ) from exc


def _experiment_ids(client: Any) -> list[str]:
    ids: list[str] = []
    token = None
    while True:
        page = client.search_experiments(max_results=1000, page_token=token)
        ids += [str(e.experiment_id) for e in page]
        token = page.token
        if not token:
            return ids


# --- dead runs ----------------------------------------------------------------------------------


def _process_start(pid: int) -> str | None:
    """When ``pid`` started, as a stable string (clock ticks since boot, or psutil's time)."""
    stat = proc_stat(pid)
    if stat is not None:
        return stat[1]
    if Path("/proc/self/stat").exists():
        return None  # /proc works: the process is gone
    try:
        import psutil  # type: ignore[import-untyped]

        return repr(psutil.Process(pid).create_time())
    except Exception:  # not installed, no such process, no access
        return None


#: Names this host in runs' ``ltr.process`` tags instead of its machine id and pid namespace.
HOST_ID_VARIABLE = "LTR_HOST_ID"


def _host_id() -> str:
    """This machine and pid namespace (the same hostname may name another machine/container),
    or ``$LTR_HOST_ID``."""
    given = os.environ.get(HOST_ID_VARIABLE, "").strip()
    if given:
        return given.replace(" ", "_")
    machine = read_text("/etc/machine-id") or read_text("/var/lib/dbus/machine-id")
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        namespace = ""
    return f"{machine}/{namespace}"


def process_identity() -> dict[str, str]:
    """This process: host name, pid, start time (clock ticks since boot), host and boot ids."""
    identity = {
        HOST: socket.gethostname(),
        PID: str(os.getpid()),
        START: _process_start(os.getpid()) or "",
        HOST_ID: _host_id(),
        BOOT_ID: read_text("/proc/sys/kernel/random/boot_id"),
    }
    return {k: v for k, v in identity.items() if v}


def process_tags(identity: dict[str, str] | None = None) -> dict[str, str]:
    """The ``ltr.process`` tag of ``identity`` (default: this process), for :func:`reap_dead_runs`."""
    identity = process_identity() if identity is None else identity
    return {TAG_PROCESS: " ".join(f"{k}={v.replace(' ', '_')}" for k, v in identity.items())}


def identity_of(tags: dict[str, str]) -> dict[str, str]:
    """The process identity a run's ``ltr.process`` tag holds ({} without one)."""
    return dict(item.split("=", 1) for item in tags.get(TAG_PROCESS, "").split() if "=" in item)


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, another user's
    stat = proc_stat(pid)
    return stat is None or stat[0] not in {"Z", "X"}  # a zombie has died


def on_this_host(run: dict[str, str], me: dict[str, str]) -> bool:
    """True when the run's process (``run``: its identity) ran on this host (``me``)."""
    return run.get(HOST) == me.get(HOST) and run.get(HOST_ID, "") == me.get(HOST_ID, "")


def process_died(run: dict[str, str], me: dict[str, str]) -> bool:
    """True when the run's process (``run``: its identity, on this host) is known dead."""
    if not on_this_host(run, me):
        return False  # another host (or container): its processes are not ours to see
    try:
        pid = int(run[PID])
    except (KeyError, ValueError):
        return False
    boot = run.get(BOOT_ID)
    if boot and me.get(BOOT_ID) and boot != me[BOOT_ID]:
        return True  # the machine rebooted since
    if not _pid_alive(pid):
        return True
    started = run.get(START)
    now = _process_start(pid)
    return started is not None and now is not None and now != started  # the pid was reused


def _death(run: Any, me: dict[str, str], now: dt.datetime) -> str | None:
    """Why ``run`` (RUNNING) is dead, in the words of its ``ltr.error`` tag; None: not known dead."""
    tags = dict(run.data.tags)
    identity = identity_of(tags)
    when = now.astimezone().isoformat(timespec="seconds")
    if on_this_host(identity, me):
        if not process_died(identity, me):
            return None
        return f"process {identity[PID]} on {identity[HOST]} died without ending the run (found by ltr at {when})"
    silent = silent_for(tags, run.info.start_time, now)
    if silent is None or silent[0] <= silent[1]:
        return None
    process = f"process {identity.get(PID, '?')} on {identity.get(HOST, 'another host')}"
    return (
        f"{process} sent no heartbeat for {silent[0]:.0f} s (more than {silent[1]:g} s): taken for dead "
        f"(found by ltr on {me.get(HOST, 'another host')} as host id {me.get(HOST_ID, '?')} at {when})"
    )


@contextmanager
def _sql_errors_unlogged() -> Iterator[None]:
    """MLflow's log of a failed SQL statement (its traceback, on stderr) held back: the caller
    handles the error it raises."""
    sql_log = logging.getLogger("mlflow.store.db.utils")
    level = sql_log.level
    sql_log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        sql_log.setLevel(level)


def reap_dead_runs(client: Any, experiment_ids: Sequence[str]) -> list[str]:
    """Mark KILLED the RUNNING runs of ``experiment_ids`` whose process died; their ids.

    Runs started by ltr (they carry :func:`process_tags`) are judged: on this host by their
    process, on another by their heartbeat (:mod:`ltr.tracking.liveness.heartbeat`); a run whose process
    is alive here, or whose heartbeat beats, is never touched. The Optuna trial a reaped run ran
    is told FAIL (:func:`ltr.tracking.liveness.reaped_trials.fail_trial_of`). Call it under the store
    lock. Logs one warning when it marks any; a store too full to take the marks is left as it
    is (quietly: reaping is never a command's work).
    """
    from mlflow.entities import ViewType
    from mlflow.exceptions import MlflowException

    if not experiment_ids:
        return []
    me = process_identity()
    running = []
    token = None
    while True:
        page = client.search_runs(
            list(experiment_ids),
            "attributes.status = 'RUNNING'",
            run_view_type=ViewType.ACTIVE_ONLY,
            max_results=1000,
            page_token=token,
        )
        running += list(page)
        token = page.token
        if not token:
            break
    reaped: list[str] = []
    now = dt.datetime.now(dt.UTC)
    for run in running:
        message = _death(run, me, now)
        if message is None:
            continue
        run_id = run.info.run_id
        try:
            with _sql_errors_unlogged():
                client.set_tag(run_id, TAG_ERROR, message)
                client.set_terminated(run_id, status="KILLED")
        except MlflowException as exc:  # deleted meanwhile, ended by its owner after all, or no room
            log.debug("could not mark run %s KILLED: %s", run_id, exc)
            if full_device(exc) is not None:  # a full store: the next command that can write it reaps
                break
            continue
        reaped.append(run_id)
        fail_trial_of(dict(run.data.tags), message)
    if reaped:
        log.warning(
            "ltr: marked %d run%s KILLED whose process died (ids %s)",
            len(reaped),
            "" if len(reaped) == 1 else "s",
            ", ".join(reaped),
        )
    return reaped


__all__ = [
    "CHECK_TIMEOUT_S",
    "DB_CONNECT_TIMEOUT_S",
    "bound_database_connects",
    "check_tracking_uri",
    "ensure_store",
    "identity_of",
    "lock_path",
    "open_client",
    "process_identity",
    "process_tags",
    "read_only_store",
    "reap_dead_runs",
    "remember_server",
    "sqlite_read_only",
]

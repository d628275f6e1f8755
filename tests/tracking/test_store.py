"""The tracking store under concurrency, signals and bad settings (real MLflow, sqlite, processes).

Nothing here is mocked: stores are real sqlite files in tmp dirs, children are real Python
processes, signals are real signals. The children that run a small script (create a store, start
a run) are forked by one Python process that imported MLflow once (:class:`_ForkServer`): each
is a process of its own (its pid, start time, connections, signal handling), without the 2.5 s
of CPU a fresh interpreter spends importing MLflow again.
"""

from __future__ import annotations

import http.server
import json
import logging
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import closing, suppress
from pathlib import Path

import pytest
from mlflow.entities import Run
from mlflow.tracking import MlflowClient

from ltr.cli.main import main as ltr_main
from ltr.errors import LtrUserError, ServerFault
from ltr.tracking import check_tracking_uri, make_tracker
from ltr.tracking.base import RunStatus
from ltr.tracking.mlflow_tracker import MlflowTracker
from ltr.tracking.runs import RunStore
from ltr.tracking.sqlite import template as store_template
from ltr.tracking.store import (
    CHECK_TIMEOUT_S,
    HTTP_ENV_DEFAULTS,
    _inspect,
    ensure_store,
    identity_of,
    process_identity,
    process_tags,
    reap_dead_runs,
)
from tests.processes import free_port, free_ports, stop_process_group

REPO = Path(__file__).resolve().parents[2]

#: Starts, when told to go (a file appears), one tracked run that logs a metric and finishes.
_WORKER = r"""
import sys, time
from pathlib import Path
from ltr.tracking.base import RunStatus
from ltr.tracking.mlflow_tracker import MlflowTracker

uri, go, name = sys.argv[1:4]
print("ready", flush=True)
while not Path(go).exists():
    time.sleep(0.002)
tracker = MlflowTracker(uri, "ltr")
tracker.start_run(name, {})
tracker.log_metrics({"m": 1.0})
tracker.end_run(RunStatus.FINISHED)
"""

#: Creates the store (everything imported first, so the signal lands in the creation itself).
_CREATOR = r"""
import sys
import mlflow.store.tracking.sqlalchemy_store
from ltr.tracking.store import ensure_store

print("ready", flush=True)
ensure_store(sys.argv[1])
print("done", flush=True)
"""

#: Starts a run, prints its id, then dies without ending it (os._exit) or waits to be killed.
_STARTER = r"""
import os, sys, time
from ltr.tracking.mlflow_tracker import MlflowTracker

tracker = MlflowTracker(sys.argv[1], "ltr")
print(tracker.start_run(sys.argv[2], {}), flush=True)
if sys.argv[3] == "exit":
    os._exit(3)
time.sleep(600)
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


#: Imports what the children's scripts use, then forks one child per request read from stdin
#: (a JSON line: the script, its argv, where its stdout and stderr go) and answers its pid; a
#: ``wait`` request answers the child's exit code as ``subprocess`` gives it (negative: killed by
#: that signal), or ``timeout``. A child exits as the interpreter would: 0, ``sys.exit``'s code,
#: 1 after a traceback, or by the SIGINT that ended it unhandled (as Python re-raises it).
_FORK_SERVER = r"""
import json, os, signal, socket, sys, time, traceback
import mlflow.store.tracking.sqlalchemy_store
import ltr.tracking.mlflow_tracker, ltr.tracking.store


def child(request):
    out = socket.socket(socket.AF_UNIX)
    out.connect(request["stdout"])
    os.dup2(out.fileno(), 1)
    os.dup2(os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    sys.argv = ["-c", *request["args"]]
    code = 0
    try:
        exec(compile(request["script"], "<string>", "exec"), {"__name__": "__main__"})
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except KeyboardInterrupt:
        traceback.print_exc()
        code = -signal.SIGINT
    except BaseException:
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    if code == -signal.SIGINT:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code)


for line in sys.stdin:
    request = json.loads(line)
    if "wait" in request:
        deadline = time.monotonic() + request["timeout"]
        while True:
            pid, status = os.waitpid(request["wait"], os.WNOHANG)
            if pid:
                print(os.waitstatus_to_exitcode(status), flush=True)
                break
            if time.monotonic() > deadline:
                print("timeout", flush=True)
                break
            time.sleep(0.002)
        continue
    pid = os.fork()
    if pid == 0:
        try:
            child(request)
        finally:
            os._exit(1)
    print(pid, flush=True)
"""


class _ForkServer:
    """The running :data:`_FORK_SERVER`; :meth:`python` starts a child of it."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _FORK_SERVER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        self.started = 0

    def ask(self, request: dict[str, object]) -> str:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline().strip()
        assert answer, f"the fork server ended (exit {self.proc.poll()})"
        return answer

    def python(self, script: str, *args: str) -> _Forked:
        """``python -c SCRIPT ARGS`` as a child of this server, its stdout read as it writes."""
        self.started += 1
        name = self.directory / f"child{self.started}"
        with closing(socket.socket(socket.AF_UNIX)) as listener:
            listener.bind(str(name.with_suffix(".sock")))
            listener.listen(1)
            listener.settimeout(120)
            pid = int(
                self.ask(
                    {
                        "script": script,
                        "args": list(args),
                        "stdout": str(name.with_suffix(".sock")),
                        "stderr": str(name.with_suffix(".err")),
                    }
                )
            )
            connection, _ = listener.accept()
        return _Forked(self, pid, connection, name.with_suffix(".err"))

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


class _Forked:
    """A child of the fork server, used as a ``subprocess.Popen``: its ``stdout`` lines as it
    writes them, its stderr (a file) once it ended, signals sent to its pid."""

    def __init__(
        self, server: _ForkServer, pid: int, connection: socket.socket, stderr: Path
    ) -> None:
        self.server, self.pid, self.connection, self.stderr = server, pid, connection, stderr
        connection.settimeout(300)
        self.stdout = connection.makefile("r")
        self.returncode: int | None = None

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def wait(self, timeout: float) -> int:
        if self.returncode is None:
            answer = self.server.ask({"wait": self.pid, "timeout": timeout})
            if answer == "timeout":
                raise subprocess.TimeoutExpired(f"child {self.pid}", timeout)
            self.returncode = int(answer)
            self.stdout.close()
            self.connection.close()
        return self.returncode

    def poll(self) -> int | None:
        with suppress(subprocess.TimeoutExpired):
            return self.wait(timeout=0)
        return None

    def communicate(self, timeout: float) -> tuple[str, str]:
        """The rest of its stdout and all its stderr, once it ended."""
        out = self.stdout.read()
        self.wait(timeout)
        return out, self.stderr.read_text()


@pytest.fixture(scope="module")
def forks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_ForkServer]:
    server = _ForkServer(tmp_path_factory.mktemp("forks"))
    try:
        yield server
    finally:
        server.close()


def _uri(directory: Path) -> str:
    return f"sqlite:///{directory / 'mlflow.db'}"


def _runs(uri: str, experiment: str = "ltr") -> list[Run]:
    client = MlflowClient(uri)
    found = client.get_experiment_by_name(experiment)
    return [] if found is None else list(client.search_runs([found.experiment_id], max_results=1000))


def _complete(db: Path) -> bool:
    return not _inspect(db).problems


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if ".creating-" in p.name or ".probe-" in p.name)


# --- (1) concurrent creation ---------------------------------------------------------------------


@pytest.mark.slow
def test_four_processes_creating_a_fresh_store_lose_no_run(tmp_path: Path, forks: _ForkServer) -> None:
    finished = 0
    for attempt in range(2):
        directory = tmp_path / f"attempt{attempt}"
        directory.mkdir()
        go = directory / "go"
        procs = [forks.python(_WORKER, _uri(directory), str(go), f"job{i}") for i in range(4)]
        try:
            for proc in procs:  # all imported and waiting: they start together
                assert proc.stdout is not None
                assert proc.stdout.readline().strip() == "ready"
            go.touch()
            results = [proc.communicate(timeout=300) for proc in procs]
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
        for proc, (_, stderr) in zip(procs, results, strict=True):
            assert proc.returncode == 0, stderr[-3000:]
            assert "Traceback" not in stderr
        runs = _runs(_uri(directory))
        assert sorted(r.info.run_name for r in runs) == ["job0", "job1", "job2", "job3"]
        assert all(r.info.status == "FINISHED" for r in runs)
        assert all(r.data.metrics["m"] == 1.0 for r in runs)
        assert _complete(directory / "mlflow.db")
        assert _leftovers(directory) == []
        finished += len(runs)
    assert finished == 8


# --- (2) signals during creation -----------------------------------------------------------------

#: Seconds after the child is ready (imports done) at which it gets the signal; creation itself
#: takes about 1.5 s here, so early ones land before the rename and late ones after it.
_DELAYS = [0.0, 0.2, 0.5, 1.2, 2.0]


@pytest.mark.slow
def test_a_signal_at_any_moment_of_creation_leaves_no_store_or_a_complete_one(tmp_path: Path, forks: _ForkServer) -> None:
    outcomes = []
    for i, delay in enumerate(_DELAYS):
        directory = tmp_path / f"t{i}"
        directory.mkdir()
        uri = _uri(directory)
        db = directory / "mlflow.db"
        sig = signal.SIGINT if i % 4 == 3 else signal.SIGTERM  # Ctrl-C too (Python unwinds)
        proc = forks.python(_CREATOR, uri)
        try:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "ready"
            time.sleep(delay)
            proc.send_signal(sig)
            proc.communicate(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
        # Either nothing or a complete store: never a half-made one.
        exists = db.exists()
        assert not exists or _complete(db), f"{delay} s: incomplete store {_inspect(db).problems}"
        outcomes.append("complete" if exists else "none")
        # And the next user just works: store (re)used, run started and ended.
        tracker = MlflowTracker(uri, "ltr")
        run_id = tracker.start_run("after", {})
        tracker.log_metrics({"m": 2.0})
        tracker.end_run(RunStatus.FINISHED)
        assert tracker.client.get_run(run_id).info.status == "FINISHED"
        assert _complete(db)
        assert _leftovers(directory) == []  # a killed creator's temporary file is removed
    print("store after the signal, by delay:", dict(zip(_DELAYS, outcomes, strict=True)))
    assert "none" in outcomes, outcomes  # the early signals did land during creation


def _contents(db: Path) -> dict[str, list[tuple[object, ...]]]:
    """Schema and every row of every table of ``db``, the experiments' times left out. A
    table's definition as its set of lines: MLflow's migrations order a table's constraints
    differently from one new store to the next."""
    with closing(sqlite3.connect(db)) as con:
        tables = [name for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        schema = con.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
        out: dict[str, list[tuple[object, ...]]] = {
            "schema": [(kind, name, sorted(line.strip().rstrip(",") for line in (sql or "").splitlines())) for kind, name, sql in schema]
        }
        for table in tables:
            rows = con.execute(f'SELECT * FROM "{table}"').fetchall()
            out[table] = [row[:4] + row[6:] for row in rows] if table == "experiments" else sorted(rows, key=repr)
    return out


def test_a_store_copied_from_the_template_is_the_store_the_migrations_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first store of an empty cache is built by MLflow's migrations and kept as the
    template; the next is a copy: same schema, same rows, its own artifact location, created now."""
    monkeypatch.setenv("LTR_CACHE_DIR", str(tmp_path / "cache"))
    template = store_template.template_path()
    assert template is not None
    assert template.parent == tmp_path / "cache" / "mlflow-stores"
    assert not template.exists()
    built, copied = tmp_path / "built", tmp_path / "copied"
    built.mkdir()
    copied.mkdir()
    ensure_store(_uri(built))
    assert template.is_file()
    before = int(time.time() * 1000)
    ensure_store(_uri(copied))
    after = int(time.time() * 1000)
    want, got = _contents(built / "mlflow.db"), _contents(copied / "mlflow.db")
    assert got == {**want, "experiments": [(r[0], r[1], (copied / "mlartifacts" / "0").as_uri(), *r[3:]) for r in want["experiments"]]}
    assert want["experiments"][0][2] == (built / "mlartifacts" / "0").as_uri()
    with closing(sqlite3.connect(copied / "mlflow.db")) as con:
        ((created, updated),) = con.execute("SELECT creation_time, last_update_time FROM experiments").fetchall()
    assert before <= created == updated <= after
    client = MlflowClient(_uri(copied))  # MLflow uses it as its own
    run = client.create_run("0")
    assert run.info.artifact_uri.startswith((copied / "mlartifacts" / "0").as_uri() + "/")
    client.set_terminated(run.info.run_id)


@pytest.mark.parametrize("damage", ["not a database", "an empty database"])
def test_a_damaged_template_is_replaced_and_the_store_still_complete(
    damage: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LTR_CACHE_DIR", str(tmp_path / "cache"))
    template = store_template.template_path()
    assert template is not None
    template.parent.mkdir(parents=True)
    if damage == "not a database":
        template.write_bytes(b"garbage" * 100)
    else:
        with closing(sqlite3.connect(template)) as con, con:
            con.execute("CREATE TABLE experiments (experiment_id INTEGER, artifact_location TEXT, creation_time INTEGER, last_update_time INTEGER)")
    (tmp_path / "s").mkdir()
    ensure_store(_uri(tmp_path / "s"))
    assert _contents(tmp_path / "s" / "mlflow.db")["alembic_version"]  # built by the migrations
    assert not list((tmp_path / "s").glob(".mlflow.db.creating-*"))
    with closing(sqlite3.connect(template)) as con:  # the template was built again
        assert con.execute("SELECT count(*) FROM alembic_version").fetchone() == (1,)


def test_an_unwritable_cache_only_means_the_migrations_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("LTR_CACHE_DIR", str(tmp_path / "file" / "cache"))  # under a file: no folder
    (tmp_path / "s").mkdir()
    ensure_store(_uri(tmp_path / "s"))
    assert _contents(tmp_path / "s" / "mlflow.db")["experiments"]


# --- (3) incomplete stores -----------------------------------------------------------------------


def _fresh_store(directory: Path) -> tuple[str, Path]:
    uri = _uri(directory)
    ensure_store(uri)
    return uri, directory / "mlflow.db"


def _sql(db: Path, *statements: str) -> None:
    con = sqlite3.connect(db)
    try:
        for statement in statements:
            con.execute(statement)
        con.commit()
    finally:
        con.close()


@pytest.mark.parametrize(
    "damage",
    [
        ["DROP TABLE latest_metrics"],
        ["DROP TABLE alembic_version"],
        # what an interrupted migration leaves: an old version and alembic's temporary table
        ["UPDATE alembic_version SET version_num = '0a8213491aaa'", "CREATE TABLE _alembic_tmp_tags (x)"],
    ],
    ids=["table-missing", "no-alembic-version", "interrupted-migration"],
)
def test_an_incomplete_store_without_runs_is_rebuilt(
    tmp_path: Path, damage: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    uri, db = _fresh_store(tmp_path)
    _sql(db, *damage)
    assert not _complete(db)
    with caplog.at_level(logging.WARNING):
        tracker = MlflowTracker(uri, "ltr")
    assert _complete(db)
    assert any("rebuilt the incomplete MLflow store" in r.getMessage() for r in caplog.records)
    tracker.start_run("after-repair", {})
    tracker.end_run(RunStatus.FINISHED)
    assert [r.info.status for r in _runs(uri)] == ["FINISHED"]


def test_an_empty_file_is_rebuilt(tmp_path: Path) -> None:
    db = tmp_path / "mlflow.db"
    db.touch()  # what sqlite leaves when MLflow is killed before creating a table
    ensure_store(_uri(tmp_path))
    assert _complete(db)


def test_an_incomplete_store_with_runs_is_refused_in_one_line(tmp_path: Path) -> None:
    uri = _uri(tmp_path)
    tracker = MlflowTracker(uri, "ltr")
    run_id = tracker.start_run("precious", {})
    tracker.end_run(RunStatus.FINISHED)
    db = tmp_path / "mlflow.db"
    _sql(db, "DROP TABLE latest_metrics")
    size = db.stat().st_size
    for attempt in (lambda: ensure_store(uri), lambda: MlflowTracker(uri, "ltr"), lambda: RunStore(uri)):
        with pytest.raises(LtrUserError) as err:
            attempt()
        message = str(err.value)
        assert "\n" not in message
        assert "latest_metrics" in message
        assert "1 rows in runs" in message
        assert f"mlflow db upgrade {uri}" in message
    assert db.stat().st_size == size  # untouched
    con = sqlite3.connect(db)
    assert con.execute("SELECT run_uuid FROM runs").fetchall() == [(run_id,)]
    con.close()


def test_a_file_that_is_not_sqlite_is_refused(tmp_path: Path) -> None:
    (tmp_path / "mlflow.db").write_bytes(b"not a database, but someone's file" * 100)
    with pytest.raises(LtrUserError, match="cannot be read as an SQLite database") as err:
        ensure_store(_uri(tmp_path))
    assert "\n" not in str(err.value)


# --- (4) bad tracking URIs -----------------------------------------------------------------------


def _postgres_driver_installed() -> bool:
    from sqlalchemy.engine import make_url

    try:
        make_url("postgresql://u@127.0.0.1/db").get_dialect().import_dbapi()
    except ImportError:
        return False
    return True


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("sqlite://", "in-memory"),
        ("sqlite:///:memory:", "in-memory"),
        ("file:///tmp/x", "MLflow file stores are not supported"),
        ("/tmp/x/mlruns", "MLflow file stores are not supported"),
        ("foo://bar", "unsupported scheme 'foo'"),
        ("sqlite://relative.db", "sqlite:/// followed by the database path"),
        pytest.param(
            "postgresql://u@127.0.0.1/db",
            "needs the database driver",
            marks=pytest.mark.skipif(_postgres_driver_installed(), reason="a postgres driver is installed"),
        ),
        ("http://127.0.0.1:9", "MLflow server at http://127.0.0.1:9 does not answer"),
    ],
)
def test_bad_tracking_uris_fail_fast_in_one_line(
    uri: str, expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    started = time.monotonic()
    with pytest.raises(LtrUserError) as err:
        check_tracking_uri(uri)
    assert time.monotonic() - started < 10
    assert expected in str(err.value)
    assert "\n" not in str(err.value)
    with pytest.raises(LtrUserError, match=expected.split("(")[0][:20]):
        make_tracker(True, uri, "ltr")  # the tracker checks first: no traceback, no retries
    assert list(tmp_path.iterdir()) == []  # nothing created (no ':memory:' file either)


def test_an_unwritable_store_directory_is_refused(tmp_path: Path) -> None:
    # Root may write everywhere os.access looks: a path under a regular file is unwritable for all.
    (tmp_path / "afile").write_text("x")
    for uri in (f"sqlite:///{tmp_path}/afile/mlflow.db", f"sqlite:///{tmp_path}/afile/deeper/mlflow.db"):
        started = time.monotonic()
        with pytest.raises(LtrUserError, match="afile is a file, not a directory") as err:
            make_tracker(True, uri, "ltr")
        assert time.monotonic() - started < 10
        assert "\n" not in str(err.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_directory_is_refused(tmp_path: Path) -> None:
    locked = tmp_path / "ro"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(LtrUserError, match="cannot write"):
            check_tracking_uri(f"sqlite:///{locked}/mlflow.db")
    finally:
        locked.chmod(0o700)


def test_a_server_that_never_answers_fails_within_seconds() -> None:
    with socket.socket() as silent:  # accepts connections (backlog), never replies
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        started = time.monotonic()
        with pytest.raises(LtrUserError, match=r"does not answer \(timed out\)"):
            check_tracking_uri(url)
        assert time.monotonic() - started < 10


class _Handler(http.server.BaseHTTPRequestHandler):
    health = 404

    def do_GET(self) -> None:
        status = self.health if self.path == "/health" else 404
        self.send_response(status)
        self.end_headers()
        self.wfile.write(b"OK" if status == 200 else b"nope")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def http_server() -> Iterator[tuple[str, type[_Handler]]]:
    handler = type("Handler", (_Handler,), {})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()


def test_an_http_server_that_is_not_mlflow_is_refused(http_server: tuple[str, type[_Handler]]) -> None:
    url, _ = http_server
    with pytest.raises(LtrUserError, match="does not answer as an MLflow server") as err:
        check_tracking_uri(url)
    assert "HTTP 404" in str(err.value)


def test_an_answering_server_is_accepted_and_mlflow_retries_are_shortened(
    http_server: tuple[str, type[_Handler]],
) -> None:
    url, handler = http_server
    handler.health = 200
    saved = {key: os.environ.pop(key, None) for key in HTTP_ENV_DEFAULTS}
    os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] = "77"  # the user's setting wins
    try:
        assert check_tracking_uri(url + "/") == url
        assert os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] == HTTP_ENV_DEFAULTS["MLFLOW_HTTP_REQUEST_MAX_RETRIES"]
        assert os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] == "77"
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def test_a_server_that_answered_this_process_is_waited_for_at_the_next_check(
    http_server: tuple[str, type[_Handler]], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A server that never answered this process is refused at once; one that answered a run of
    it (the next job of a sweep checks it again) is waited for, a line every few seconds, for as
    long as that run waits: found when it is back, one line when the wait ends."""
    import ltr.tracking.store as store

    monkeypatch.setattr(store, "_ANSWERED", {})
    url, handler = http_server
    handler.health = 200
    assert check_tracking_uri(url) == url
    never, back = (f"http://127.0.0.1:{port}" for port in free_ports(2))
    started = time.monotonic()
    with pytest.raises(ServerFault, match="does not answer"):
        check_tracking_uri(never)
    assert time.monotonic() - started < 1, "not waited for"

    store.remember_server(never, 1.5)
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="ltr.tracking.store"), pytest.raises(ServerFault, match="does not answer"):
        check_tracking_uri(never)
    assert 1.5 <= time.monotonic() - started < 1.5 + CHECK_TIMEOUT_S
    assert caplog.messages == [f"ltr: waiting for the tracking server {never} (0 s of 1.5 s)"]

    store.remember_server(back, 30)
    late = type("Handler", (_Handler,), {"health": 200})
    port = int(back.rsplit(":", 1)[1])
    servers: list[http.server.ThreadingHTTPServer] = []

    def start_late() -> None:
        servers.append(http.server.ThreadingHTTPServer(("127.0.0.1", port), late))
        servers[0].serve_forever()

    timer = threading.Timer(1.0, start_late)
    timer.start()
    started = time.monotonic()
    try:
        assert check_tracking_uri(back) == back
    finally:
        timer.join(timeout=0)
        while not servers:
            time.sleep(0.05)
        servers[0].shutdown()
        servers[0].server_close()
    assert time.monotonic() - started >= 1


def test_a_relative_sqlite_uri_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert check_tracking_uri("sqlite:///sub/mlflow.db") == f"sqlite:///{tmp_path.resolve()}/sub/mlflow.db"
    assert check_tracking_uri(None) == f"sqlite:///{tmp_path.resolve()}/mlflow.db"


# --- (5) dead runs -------------------------------------------------------------------------------


def _start_and_die(forks: _ForkServer, uri: str, name: str) -> tuple[str, int]:
    """A child process starts run ``name`` and exits without ending it: (run id, its pid)."""
    proc = forks.python(_STARTER, uri, name, "exit")
    try:
        assert proc.stdout is not None
        run_id = proc.stdout.readline().strip()
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert len(run_id) == 32, stderr[-3000:]
    return run_id, proc.pid


@pytest.mark.slow
def test_runs_of_dead_processes_are_reaped_and_live_ones_untouched(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, forks: _ForkServer
) -> None:
    uri = _uri(tmp_path)
    live = MlflowTracker(uri, "ltr")  # this test's own process: alive
    live_id = live.start_run("live", {})
    # The one to be SIGKILLed is alive while the other starts (so that one's tracker, which
    # reaps too, finds nothing yet); then both are dead and the next tracker reaps both.
    sleeper = forks.python(_STARTER, uri, "killed", "sleep")
    try:
        assert sleeper.stdout is not None
        killed_id = sleeper.stdout.readline().strip()
        exited_id, exited_pid = _start_and_die(forks, uri, "exited")
        assert MlflowClient(uri).get_run(killed_id).info.status == "RUNNING"  # alive: untouched
    finally:
        sleeper.kill()  # SIGKILL: no handler, no finally, like the OOM killer
        sleeper.wait(timeout=60)
    client = live.client
    me = process_identity()
    # The same pid (ours, alive) but another process start: the pid was reused.
    reused_id = client.create_run(live.experiment_id, run_name="reused", tags=process_tags({**me, "start": "1"})).info.run_id
    # Another host's dead pid, and a run without ltr's process tags: not ours to judge.
    other_id = client.create_run(
        live.experiment_id, run_name="other-host", tags=process_tags({**me, "host": "elsewhere", "pid": str(exited_pid)})
    ).info.run_id
    foreign_id = client.create_run(live.experiment_id, run_name="plain-mlflow").info.run_id

    with caplog.at_level(logging.WARNING):
        MlflowTracker(uri, "ltr")
    status = {r.info.run_id: r for r in _runs(uri)}
    assert {k for k, r in status.items() if r.info.status == "KILLED"} == {exited_id, killed_id, reused_id}
    assert {k for k, r in status.items() if r.info.status == "RUNNING"} == {live_id, other_id, foreign_id}
    error = status[exited_id].data.tags["ltr.error"]
    assert error.startswith(f"process {exited_pid} on {me['host']} died without ending the run (found by ltr at ")
    warnings = [r.getMessage() for r in caplog.records if "KILLED" in r.getMessage()]
    assert len(warnings) == 1
    assert warnings[0].startswith("ltr: marked 3 runs KILLED whose process died (ids ")
    assert all(run_id in warnings[0] for run_id in (exited_id, killed_id, reused_id))

    # Nothing left to reap; the live run ends as its owner says.
    assert reap_dead_runs(client, [live.experiment_id]) == []
    live.end_run(RunStatus.FINISHED)
    assert client.get_run(live_id).info.status == "FINISHED"

    # Opening the store to read (ltr compare) reaps too.
    late_id, _ = _start_and_die(forks, uri, "late")
    RunStore(uri)
    assert client.get_run(late_id).info.status == "KILLED"


def test_a_run_records_its_process(tmp_path: Path) -> None:
    tracker = MlflowTracker(_uri(tmp_path), "ltr")
    run_id = tracker.start_run("me", {"mine": "yes"})
    tags = tracker.client.get_run(run_id).data.tags
    tracker.end_run(RunStatus.FINISHED)
    identity = identity_of(tags)
    assert identity["host"] == socket.gethostname()
    assert identity["pid"] == str(os.getpid())
    assert identity["start"]
    assert not any(key.startswith(("ltr.host", "ltr.pid")) for key in tags)  # one tag, not five
    assert tags["mine"] == "yes"


# --- (6) ltr ui ----------------------------------------------------------------------------------



def _ltr_ui_refused(*args: str, cwd: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> str:
    """``ltr ui ARGS`` in ``cwd``, in this process (a refusal starts no server: the process
    boundary is not the point): exit 2, what it printed to stderr."""
    monkeypatch.chdir(cwd)
    capsys.readouterr()
    assert ltr_main(["ui", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    return captured.err


def test_ui_refuses_a_busy_port_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        stderr = _ltr_ui_refused("--port", str(port), cwd=tmp_path, capsys=capsys, monkeypatch=monkeypatch)
    assert stderr.strip().splitlines() == [stderr.strip()]
    assert stderr.startswith(f"ltr: error: port {port} is in use")
    assert "--port" in stderr


def test_ui_refuses_a_folder_without_a_store_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    stderr = _ltr_ui_refused("--port", str(free_port()), cwd=tmp_path, capsys=capsys, monkeypatch=monkeypatch)
    assert stderr.strip().splitlines() == [stderr.strip()]
    assert stderr.startswith(f"ltr: error: no MLflow store at {tmp_path.resolve() / 'mlflow.db'}")
    assert "ltr train" in stderr
    assert list(tmp_path.iterdir()) == []  # no empty store, no lock file


@pytest.mark.slow
def test_ui_reaps_dead_runs_before_serving(tmp_path: Path, forks: _ForkServer) -> None:
    uri = _uri(tmp_path)
    dead_id, _ = _start_and_die(forks, uri, "dead")
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "ltr", "ui", "--port", str(port)],
        cwd=tmp_path,
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # mlflow ui starts helpers: stop the whole group
    )
    lines = []
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line:
                break
            lines.append(line)
            if line.startswith("MLflow UI at"):
                break
    finally:
        stop_process_group(proc, timeout=30)
    assert lines, "ltr ui printed nothing"
    assert any(line.startswith(f"starting the MLflow UI for {uri}") for line in lines), lines
    assert lines[-1].startswith(f"MLflow UI at http://127.0.0.1:{port} (up in "), lines
    assert any("marked 1 run KILLED" in line for line in lines), lines
    assert MlflowClient(uri).get_run(dead_id).info.status == "KILLED"

"""The fault matrix of issue 45: every word of ``ltr``'s dispatcher (:data:`ltr.cli.main.VERBS`,
``--version``, ``--help``) under every fault a user meets, each case a real ``ltr`` process in a
session of its own (``python -m ltr``, or forked after the imports from the fork server for the
faults of :data:`FORKED`):

- **closed**: its standard output a pipe whose reader is gone before it starts (``ltr ... | true``):
  exit 141, nothing said;
- **full**: its standard output ``/dev/full``: one line ``ltr: error: cannot write to standard
  output: the device is full (...)``, exit 1;
- **read_only**: its store's file and folder immutable (``chattr +i``: what sqlite meets on a
  read-only mount): a reader answers (exit 0, no traceback), writing nothing and reaping no dead
  run; a writer refuses in one line naming the store (exit 2);
- **full_disk**: its store (or its output folder) on a tmpfs filled to the last byte: one line
  naming the path, exit 1; the store whole (``PRAGMA integrity_check``), the runs before as they
  were, nothing half-written;
- **sigint** / **sigterm**: the signal at seeded moments of its work, landing under two CPU hogs: exit 130
  / 143 and the one signal line (or exit 0 with its work done, when the work ended first), nothing
  written (no new file, no run left RUNNING, the runs before as they were);
- **hostile**: a run named ``b<ESC>]0;PWNED<BEL>`` in its store: printed escaped.

:data:`MATRIX` holds, per word and fault, a cheap valid invocation on the module's shared world
(one small store of two click-log runs and a dead RUNNING run, the click log they came from,
qrels and a TREC run, a table of past A/B tests), or the reason the fault does not apply: a verb
added to the dispatcher without its row fails :func:`test_every_verb_has_a_row_for_every_fault`.
The cases of a fault run as parallel processes in module fixtures; the tests read their outcomes.
"""

from __future__ import annotations

import enum
import errno
import os
import random
import re
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from ltr.cli.main import VERBS, main
from tests.docs.examples import shared_server
from tests.docs.forkclient import PIDFILE
from tests.processes import free_port, session_processes, stop_process_group

pytestmark = pytest.mark.slow

HOSTILE = "b\x1b]0;PWNED\x07"
#: What every verb prints of :data:`HOSTILE` (a rich table may crop the name after it).
ESCAPED = "b\\x1b]0;PWNED"
#: The dispatcher's own words besides its verbs.
OWN_WORDS = ("--version", "--help")


class Fault(enum.Enum):
    CLOSED = "closed"
    FULL = "full"
    READ_ONLY = "read_only"
    FULL_DISK = "full_disk"
    SIGINT = "sigint"
    SIGTERM = "sigterm"
    HOSTILE = "hostile"


@dataclass(frozen=True)
class Run:
    """A case: ``argv`` (``str.format`` fields: ``uri`` the case's store, ``store`` its folder,
    ``out`` a path in that folder that does not exist yet, ``w`` the world's read-only folder,
    ``hostile`` / ``plain`` the ids of its two runs).

    ``writes``: the invocation writes the store or ``out`` (a read-only store refuses it in one
    line). ``reaps``: it may mark the world's dead run KILLED (where it can write the store).
    ``slack_kb``: room left on the full file system (``full_disk``: 0, every write fails).
    ``stop_at``: a server: SIGTERM it once stderr shows this text (then 143 is its success).
    ``names``: the path its one error line names (``read_only``, ``full_disk``), formatted as ``argv``."""

    argv: str
    writes: bool = False
    reaps: bool = False
    slack_kb: int = 0
    stop_at: str | None = None
    names: str = "{store}/mlflow.db"


@dataclass(frozen=True)
class Skip:
    """The fault does not apply; why."""

    reason: str


Entry = Run | Skip

NO_STORE = "reads no store and writes no file"
FAST = "done within its start-up (well under a second of work): no moment of work to aim at"
NO_NAMES = "prints no run name"
#: A reader's run-name check rides on its read-only case (the same output, from a store it can
#: only read): one process fewer per reader.
ON_READ_ONLY = "checked on the output of its read_only case (a reader prints the same there)"
TRAINING = (
    "a training run stopped at its moments: tests/tracking/test_lifecycle.py::test_signals_mid_training_mark_run_killed; "
    "the same run under load: rerun's cases"
)


def row(argv: str, *, writes: bool = False, reaps: bool = False, **faults: str | Entry) -> dict[Fault, Entry]:
    """``argv`` for every fault, but those given (another invocation as a string, a :class:`Run`,
    or a :class:`Skip`); ``writes`` / ``reaps`` for the strings."""
    entries: dict[Fault, Entry] = {fault: Run(argv, writes=writes, reaps=reaps) for fault in Fault}
    for name, entry in faults.items():
        entries[Fault(name)] = Run(entry, writes=writes, reaps=reaps) if isinstance(entry, str) else entry
    return entries


STORE = "--tracking-uri {uri}"
TRAIN = (
    "train data.n_queries=60 fit.num_boost_round=3 fit.early_stopping_rounds=3 fit.show_progress=false "
    "model.num_leaves=7 tracking.log_model=false tracking.uri={uri} tracking.run_name=fault"
)
PREDICT = f"predict {{hostile}} --data {{w}}/log/test.parquet {STORE}"
EXPLAIN = f"explain {{hostile}} --data {{w}}/log/test.parquet {STORE}"
OPE = f"ope {{hostile}} --log {{w}}/log/clicks.parquet --data {{w}}/log/test.parquet --eta 1 --bootstrap 100 {STORE}"
ABTEST = f"abtest {{hostile}} {{plain}} --days 1 --sessions-per-day 1000 {STORE}"
COMPARE = f"compare {{hostile}} {{plain}} --n-resamples 100 {STORE}"
LABELS = "labels {w}/log/test.parquet --columns label click --doc-column doc_id"
LABELS_RUN = f"{LABELS} --run {{hostile}} --data {{w}}/log/test.parquet --doc-id-column doc_id {STORE}"
CALIBRATE = "calibrate {w}/past.csv --offline ndcg_at_10 --online gmv_pct"

MATRIX: dict[str, dict[Fault, Entry]] = {
    "train": row(
        TRAIN, writes=True, reaps=True,
        full_disk=Run(TRAIN, writes=True, reaps=True, slack_kb=96),  # room to start the run: it fills while it logs
        sigint=Skip(TRAINING), sigterm=Skip(TRAINING),
        hostile=Skip(f"{NO_NAMES}: its own run's name comes from its command line, where Hydra's grammar refuses ESC and BEL"),
    ),
    "rerun": row(f"rerun {{hostile}} fit.num_boost_round=2 tracking.log_model=false {STORE}", writes=True, reaps=True),
    "predict": row(
        PREDICT, hostile=Skip(ON_READ_ONLY),
        full_disk=Run(f"{PREDICT} --out {{out}}", writes=True, names="{out}"),
        sigint=Run(f"{PREDICT} --out {{out}}", writes=True),
        sigterm=Run(f"{PREDICT} --out {{out}}", writes=True),
    ),
    "explain": row(
        EXPLAIN, writes=True,  # logs explain/ on the run
        read_only=Run(f"{EXPLAIN} --no-log"), hostile=Skip(ON_READ_ONLY),
        full_disk=Run(f"{EXPLAIN} --no-log --out {{out}}.parquet", writes=True, names="{out}.parquet"),
    ),
    "promote": row(f"promote {{hostile}} --name fault --n-resamples 100 {STORE}", writes=True),
    "evaluate": row(
        "evaluate --qrels {w}/a.qrels --run {w}/a.run --k 2",
        read_only=Skip(NO_STORE),
        full_disk=Run("evaluate --qrels {w}/a.qrels --run {w}/a.run --k 2 --per-query {out}.csv", writes=True, names="{out}.csv"),
        sigint=Skip(FAST), sigterm=Skip(FAST), hostile=Skip(f"{NO_NAMES}: it reads no store"),
    ),
    "compare": row(
        COMPARE, reaps=True, hostile=Skip(ON_READ_ONLY),
        full_disk=Run(f"{COMPARE} --log", writes=True, reaps=True),
    ),
    "abtest": row(
        ABTEST, hostile=Skip(ON_READ_ONLY),
        full_disk=Skip("its --log is compare's (RunStore.log_comparison, in a run of its own): compare's full_disk case"),
    ),
    "ope": row(OPE, writes=True),
    "calibrate": row(
        CALIBRATE,
        read_only=Run(f"{CALIBRATE} --log {STORE}", writes=True, reaps=True),
        full_disk=Run(f"{CALIBRATE} --log {STORE}", writes=True, reaps=True),
        hostile=Skip(f"{NO_NAMES}: it reads a table of past tests"),
    ),
    "exposure": row(
        "exposure {w}/log/clicks.parquet --eta 1",
        read_only=Skip(NO_STORE), full_disk=Skip(NO_STORE), sigint=Skip(FAST), sigterm=Skip(FAST),
        hostile=Skip(f"{NO_NAMES}: it reads a click log"),
    ),
    "labels": row(
        LABELS,  # without a run: no MLflow to import where no store is involved
        read_only=LABELS_RUN, sigint=LABELS_RUN, sigterm=LABELS_RUN,
        full_disk=Skip("writes nothing (it reads the store; its read-only case shows that it writes nothing)"),
        hostile=Skip(f"{NO_NAMES}: its report names the label sets (file and column)"),
    ),
    "cache": row(
        "cache info --dir {store}/cache",
        read_only=Run("cache clear --dir {store}/cache", writes=True, names="{store}/cache"),
        full_disk=Skip("clearing frees room and writes nothing; info only reads"),
        sigint=Skip(FAST), sigterm=Skip(FAST), hostile=Skip(f"{NO_NAMES}: it reads no store"),
    ),
    "partition": row(
        "partition --train {w}/d.txt -o {out}", writes=True,
        read_only=Run("partition --train {w}/d.txt -o {out}", writes=True, names="{out}"),
        full_disk=Run("partition --train {w}/d.txt -o {out}", writes=True, names="{out}"),
        hostile=Skip(f"{NO_NAMES}: it reads no store"),
    ),
    "data": row(
        "data write synthetic --out {out} data.n_queries=30", writes=True,
        read_only=Run("data write synthetic --out {out} data.n_queries=30", writes=True, names="{out}"),
        full_disk=Run("data write synthetic --out {out} data.n_queries=30", writes=True, names="{out}"),
        hostile=Skip(f"{NO_NAMES}: it reads no store"),
    ),
    "ui": row(
        "ui --port {port} --uri {uri}", reaps=True,
        closed=Skip("prints nothing on standard output: its lines go to stderr while it serves"),
        full=Skip("prints nothing on standard output: its lines go to stderr while it serves"),
        read_only=Run("ui --port {port} --uri {uri}", stop_at="starting the MLflow UI"),
        full_disk=Run("ui --port {port} --uri {uri}", reaps=True, stop_at="starting the MLflow UI"),
        sigint=Skip("a server: a stop signal is how it ends (tests/tracking/test_ui.py::test_sigterm_stops_the_ui_and_its_server)"),
        sigterm=Skip("a server: a stop signal is how it ends (tests/tracking/test_ui.py::test_sigterm_stops_the_ui_and_its_server)"),
        hostile=Skip(f"{NO_NAMES}: it prints the links to the experiments' runs tables"),
    ),
    "completion": row(
        "completion bash",
        read_only=Skip(NO_STORE), full_disk=Skip(NO_STORE), sigint=Skip(FAST), sigterm=Skip(FAST),
        hostile=Skip(f"{NO_NAMES}: it prints the script of the shell"),
    ),
    **{
        word: row(
            word,
            read_only=Skip(NO_STORE), full_disk=Skip(NO_STORE), sigint=Skip(FAST), sigterm=Skip(FAST),
            hostile=Skip(f"{NO_NAMES}: it prints ltr's own text"),
        )
        for word in OWN_WORDS
    },
}

#: The seeded moments of each stop signal: ranges of the fraction of the verb's time in its
#: ``closed`` case (without the hogs: under them, its last :data:`HOG_LEAD` s, the signal lands a
#: little earlier in the work) that the signal waits once ltr handles it (its dispatcher, from the
#: process's start), one moment a range.
MOMENTS = {Fault.SIGINT: ((0.05, 0.5),), Fault.SIGTERM: ((0.3, 0.9),)}
STOP_LINES = {Fault.SIGINT: (130, re.compile(r"ltr: interrupted(; .*)?")), Fault.SIGTERM: (143, re.compile(r"ltr: terminated \(SIGTERM\)(; .*)?"))}
#: Never on stderr, whatever the fault.
NEVER = ("Traceback", "Logging error", "Exception ignored", "KeyboardInterrupt", "readonly database")
#: The faults whose cases run forked from the fork server (:func:`tests.processes.run_ltr`'s, the
#: imports done), each in a session of its own: what they test is the verb's handling of its output
#: and its store, not the interpreter's start; so do the ``closed`` cases of the words without a
#: signal case. The other ``closed`` cases (whose times set their signals' moments), the signal
#: cases (a signal may land while Python imports) and the cases that stop a server are
#: ``python -m ltr`` processes.
FORKED = frozenset({Fault.FULL, Fault.READ_ONLY, Fault.FULL_DISK, Fault.HOSTILE})
#: Processes of a fault's cases at once (2 cores; a process waits on I/O part of its time).
PARALLEL = 4


def cases(fault: Fault) -> list[str]:
    return [word for word, entries in MATRIX.items() if isinstance(entries[fault], Run)]


def test_every_verb_has_a_row_for_every_fault() -> None:
    assert set(MATRIX) == {*VERBS, *OWN_WORDS}
    for word, entries in MATRIX.items():
        assert set(entries) == set(Fault), word
        for fault, entry in entries.items():
            assert isinstance(entry, Run) or entry.reason, (word, fault)
            if isinstance(entry, Run):
                assert shlex.split(entry.argv)[0] == word, (word, fault)
        if entries[Fault.HOSTILE] == Skip(ON_READ_ONLY):  # its read-only case reads and prints
            read_only = entries[Fault.READ_ONLY]
            assert isinstance(read_only, Run), word
            assert (read_only.writes, read_only.stop_at) == (False, None), word


# --- the world ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class World:
    folder: Path
    db: Path
    ids: dict[str, str]  # hostile, plain, dead


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    """Two click-log runs of a 100-query log (the first renamed :data:`HOSTILE` as MLflow's tag),
    a RUNNING run whose process is gone (to be reaped only by the verbs that reap), the log's
    files, qrels and a TREC run, a letor file, a table of past A/B tests."""
    import mlflow

    from ltr.tracking.store import process_identity, process_tags

    folder = tmp_path_factory.mktemp("matrix")
    db = folder / "mlflow.db"
    common = ["data=synthetic_clicks", "data.n_queries=100", "fit.num_boost_round=5", "fit.early_stopping_rounds=5",
              "fit.show_progress=false", "model.num_leaves=7", f"tracking.uri=sqlite:///{db}"]  # fmt: skip
    cwd = Path.cwd()
    os.chdir(folder)  # Hydra's outputs/ folder of each run
    try:
        assert main(["data", "write", "synthetic_clicks", "--out", str(folder / "log"), "--format", "parquet", "data.n_queries=100"]) == 0
        assert main(["train", *common, "data.train_labels=clicks", "tracking.run_name=hostile"]) == 0
        assert main(["train", *common, "data.train_labels=relevance", "tracking.log_model=false", "tracking.run_name=plain"]) == 0
    finally:
        os.chdir(cwd)
    client = mlflow.MlflowClient(f"sqlite:///{db}")
    ids = {run.info.run_name: run.info.run_id for run in client.search_runs(["1"])}
    client.set_tag(ids["hostile"], "mlflow.runName", HOSTILE)
    gone = subprocess.Popen(["true"])
    gone.wait()
    identity = {key: str(gone.pid) if key == "pid" else value for key, value in process_identity().items() if key != "start"}
    ids["dead"] = client.create_run("1", tags=process_tags(identity), run_name="dead").info.run_id
    (folder / "a.qrels").write_text("1 0 D1 1\n1 0 D2 0\n2 0 D3 2\n2 0 D4 1\n")
    (folder / "a.run").write_text("1 Q0 D1 1 2.0 s\n1 Q0 D2 2 1.0 s\n2 Q0 D4 1 2.0 s\n2 Q0 D3 2 1.0 s\n")
    (folder / "d.txt").write_text("".join(f"{(q + d) % 3} qid:{q} 1:{d} 2:{q}\n" for q in range(1, 21) for d in range(5)))
    from ltr.data.cache import store_cached
    from ltr.data.ranking_data import RankingData

    entry = RankingData.from_group_sizes(np.ones((10, 2), np.float32), np.zeros(10, np.int32), np.arange(2), np.full(2, 5))
    store_cached(folder / "cache", [folder / "d.txt"], {}, entry, max_mb=None)  # an entry for ltr cache to clear
    (folder / "past.csv").write_text(
        "experiment,ndcg_at_10,gmv_pct\na,0.012,0.41\nb,-0.004,-0.22\nc,0.021,0.35\nd,0.035,1.02\ne,0.008,0.05\n"
    )
    return World(folder, db, ids)


# --- a store, read as it is -----------------------------------------------------------------------


@dataclass(frozen=True)
class StoreState:
    integrity: str
    status: dict[str, str]  # run id -> status
    metrics: dict[str, int]  # run id -> metric rows
    tags: dict[tuple[str, str], str]  # (run id, key) -> value
    versions: int  # registered model versions


def store_state(db: Path) -> StoreState:
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as con:
        (integrity,) = con.execute("PRAGMA integrity_check").fetchone()
        status = dict(con.execute("SELECT run_uuid, status FROM runs").fetchall())
        metrics = dict(con.execute("SELECT run_uuid, count(*) FROM metrics GROUP BY run_uuid").fetchall())
        tags = {(run, key): value for run, key, value in con.execute("SELECT run_uuid, key, value FROM tags")}
        (versions,) = con.execute("SELECT count(*) FROM model_versions").fetchone()
    return StoreState(str(integrity), status, metrics, tags, int(versions))


def listing(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")} if folder.exists() else set()


# --- one case -------------------------------------------------------------------------------------


@dataclass
class Outcome:
    word: str
    fault: Fault
    argv: list[str]
    code: int
    out: str
    err: str
    seconds: float
    db: Path
    out_path: Path
    named: Path  # the path an error line names
    before: StoreState
    after: StoreState
    new_files: set[str] = field(default_factory=set)
    left_running: list[str] = field(default_factory=list)  # the processes of its session it left
    delay: float | None = None

    def describe(self) -> str:
        return f"ltr {shlex.join(self.argv)} -> {self.code} in {self.seconds:.1f} s; stderr:\n{self.err[-3000:]}"


def _chattr(flag: str, *paths: Path) -> None:
    subprocess.run(["chattr", "-R", flag, *map(str, paths)], check=True, capture_output=True)


@contextmanager
def _full_file_system(folder: Path, contents: Path, slack_kb: int) -> Iterator[None]:
    """``folder`` a tmpfs holding a copy of ``contents``' files, filled to ``slack_kb`` of room."""
    size = sum(p.stat().st_size for p in contents.rglob("*") if p.is_file())
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size // 1024 + slack_kb + 256}k", "tmpfs", str(folder)], check=True, capture_output=True)
    try:
        shutil.copytree(contents, folder, dirs_exist_ok=True)
        keep = b"\0" * (slack_kb * 1024)
        with open(folder / ".room", "wb") as room:  # the slack, held until the filler took the rest
            room.write(keep)
        with open(folder / ".filler", "wb", buffering=0) as filler:
            try:
                while True:
                    filler.write(b"\0" * 4096)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
        (folder / ".room").unlink()
        yield
    finally:
        subprocess.run(["umount", "--lazy", str(folder)], check=True)


def _can_mount(tmp: Path) -> bool:
    probe = tmp / "mount-probe"
    probe.mkdir(exist_ok=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe)], capture_output=True, check=False).returncode:
        return False
    subprocess.run(["umount", str(probe)], check=True)
    return True


def _can_chattr(tmp: Path) -> bool:
    probe = tmp / "chattr-probe"
    probe.touch()
    if subprocess.run(["chattr", "+i", str(probe)], capture_output=True, check=False).returncode:
        return False
    _chattr("-i", probe)
    return True


def _env(case: Path) -> dict[str, str]:
    dropped = {"LTR_TRACKING_URI", "MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI"}
    return {k: v for k, v in os.environ.items() if k not in dropped} | {"LTR_CACHE_DIR": str(case / "cache"), "COLUMNS": "120"}


def _wait_for_stop_handlers(pid: int, timeout: float = 120) -> None:
    """Until process ``pid`` catches SIGTERM (``SigCgt`` of ``/proc/PID/status``): ltr handles it
    (a signal before, while Python imports ltr, meets Python's own)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return  # ended already
        caught = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
        if caught & (1 << (signal.SIGTERM - 1)):
            return
        time.sleep(0.01)


def run_case(world: World, root: Path, word: str, fault: Fault, *, delay: float | None = None, tag: str = "", hogs: CpuHogs | None = None) -> Outcome:
    """The case ``MATRIX[word][fault]`` in its own folder under ``root``: its store a copy of the
    world's, the fault set up, the process run, the store read again before the fault is undone."""
    entry = MATRIX[word][fault]
    assert isinstance(entry, Run)
    case = root / f"{word.strip('-')}-{fault.value}{tag}"
    store = case / "store"
    store.mkdir(parents=True)
    (case / "cwd").mkdir()
    seed = case / "seed"
    seed.mkdir()
    shutil.copy(world.db, seed / "mlflow.db")
    shutil.copytree(world.folder / "cache", seed / "cache")
    db, out = store / "mlflow.db", store / "out"
    fields = {"uri": f"sqlite:///{db}", "store": str(store), "out": str(out), "w": str(world.folder), "port": str(free_port()), **world.ids}
    argv = shlex.split(entry.argv.format(**fields))
    before = store_state(seed / "mlflow.db")
    with _fault(fault, store, seed, entry):
        listed = listing(store)
        code, out_text, err, seconds, left = _run(argv, case, fault, entry, delay, hogs, forked=_forked(word, fault, entry, delay))
        after = store_state(db)
        new_files = listing(store) - listed
    named = Path(entry.names.format(**fields))
    return Outcome(word, fault, argv, code, out_text, err, seconds, db, out, named, before, after, new_files, left, delay)


@contextmanager
def _fault(fault: Fault, store: Path, seed: Path, entry: Run) -> Iterator[None]:
    if fault is Fault.FULL_DISK:
        with _full_file_system(store, seed, entry.slack_kb):
            yield
        return
    shutil.copytree(seed, store, dirs_exist_ok=True)
    if fault is not Fault.READ_ONLY:
        yield
        return
    _chattr("+i", store)
    try:
        yield
    finally:
        _chattr("-i", store)


def _forked(word: str, fault: Fault, entry: Run, delay: float | None) -> bool:
    """Whether the case runs forked from the fork server (:data:`FORKED`)."""
    signalled = any(isinstance(MATRIX[word][f], Run) for f in (Fault.SIGINT, Fault.SIGTERM))
    return delay is None and entry.stop_at is None and (fault in FORKED or (fault is Fault.CLOSED and not signalled))


def _run(
    argv: list[str], case: Path, fault: Fault, entry: Run, delay: float | None, hogs: CpuHogs | None = None, *, forked: bool = False
) -> tuple[int, str, str, float, list[str]]:
    """Run ``ltr argv`` under ``fault`` in its own session (``forked``: from the fork server): its
    exit code, stdout, stderr, wall time, and the processes of its session it left
    (:func:`_left_running`; they are killed).
    A stop signal (``delay``) lands with ``hogs`` running, from :data:`HOG_LEAD` s before it
    to the process's end."""
    start = time.monotonic()
    env = _env(case)
    pidfile = case / "pid"
    if forked:  # forked from the fork server, in a session of its own whose id it writes to pidfile
        command = [str(shared_server()[1] / "ltr"), *argv]
        env[PIDFILE] = str(pidfile)
    else:
        command = [sys.executable, "-m", "ltr", *argv]
    kwargs: dict[str, object] = {"cwd": case / "cwd", "env": env, "stdin": subprocess.DEVNULL, "stderr": subprocess.PIPE,
                                 "text": True, "start_new_session": True}  # fmt: skip
    if fault is Fault.CLOSED:
        reader, writer = os.pipe()
        os.close(reader)  # the reader is gone before the command starts
        try:
            proc = subprocess.Popen(command, stdout=writer, **kwargs)  # type: ignore[call-overload]
        finally:
            os.close(writer)
    elif fault is Fault.FULL:
        with open("/dev/full", "w") as full:
            proc = subprocess.Popen(command, stdout=full, **kwargs)  # type: ignore[call-overload]
    else:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, **kwargs)  # type: ignore[call-overload]
    head = ""
    with ExitStack() as load:
        if entry.stop_at is not None:
            head = _read_until(proc, entry.stop_at)
            proc.send_signal(signal.SIGTERM)
        elif delay is not None:
            _wait_for_stop_handlers(proc.pid)
            time.sleep(max(delay - HOG_LEAD, 0))
            if hogs is not None:
                load.enter_context(hogs.running())
            time.sleep(min(delay, HOG_LEAD))
            proc.send_signal(signal.SIGINT if fault is Fault.SIGINT else signal.SIGTERM)
        try:
            out, err = proc.communicate(timeout=600)
        except subprocess.TimeoutExpired:
            if forked and pidfile.exists():
                os.killpg(int(pidfile.read_text()), signal.SIGKILL)
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            err += "\n(no end after 600 s: killed)"
    session = int(pidfile.read_text()) if forked else proc.pid
    left = _left_running(session)
    return proc.returncode, out or "", head + err, time.monotonic() - start, left


def _read_until(proc: subprocess.Popen[str], text: str) -> str:
    """``proc``'s stderr up to the line holding ``text`` (or to its end)."""
    assert proc.stderr is not None
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if text in line:
            break
    return "".join(lines)


def _left_running(session: int) -> list[str]:
    """The processes of the session ``session`` still there (:func:`session_processes`); kills them."""
    left = session_processes(session)
    try:
        os.killpg(session, signal.SIGKILL)
    except ProcessLookupError:
        return left
    return left or ["(a process of the group ended before it was listed)"]


#: The longest cases, started first so that the pool ends with short ones.
LONGEST = ("rerun", "train", "abtest", "compare", "promote", "predict", "ope")


def run_all(jobs: list[Callable[[], Outcome]]) -> list[Outcome]:
    with ThreadPoolExecutor(max_workers=PARALLEL) as pool:
        return list(pool.map(lambda job: job(), jobs))


def _longest_first(word: str) -> int:
    return LONGEST.index(word) if word in LONGEST else len(LONGEST)


# --- the outcomes of every case -------------------------------------------------------------------


@pytest.fixture(scope="module")
def outcomes(world: World, tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, Fault], Outcome]:
    """Every case but the stop signals', run in parallel."""
    root = tmp_path_factory.mktemp("cases")
    faults = [Fault.CLOSED, Fault.FULL, Fault.HOSTILE]
    if _can_chattr(root):
        faults.append(Fault.READ_ONLY)
    if _can_mount(root):
        faults.append(Fault.FULL_DISK)
    todo = sorted(((word, fault) for fault in faults for word in cases(fault)), key=lambda case: _longest_first(case[0]))
    jobs = [lambda w=word, f=fault: run_case(world, root, w, f) for word, fault in todo]
    return {(o.word, o.fault): o for o in run_all(jobs)}


class CpuHogs:
    """Two busy loops, one per core, running only while some signal case is in its window
    (from :data:`HOG_LEAD` s before its signal to the end of its process): stopped
    (``SIGSTOP``) in between, so that they load the machine when a signal lands, and not
    while the cases start up or while nothing is to be stopped."""

    def __init__(self) -> None:
        self.hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True) for _ in range(2)]
        self._lock = threading.Lock()
        self._windows = 0
        self._pause()

    def _pause(self) -> None:
        for hog in self.hogs:
            os.killpg(hog.pid, signal.SIGSTOP)

    @contextmanager
    def running(self) -> Iterator[None]:
        """The hogs run (busy) while this is open in any thread."""
        with self._lock:
            self._windows += 1
            if self._windows == 1:
                for hog in self.hogs:
                    os.killpg(hog.pid, signal.SIGCONT)
        try:
            yield
        finally:
            with self._lock:
                self._windows -= 1
                if self._windows == 0:
                    self._pause()

    def stop(self) -> None:
        for hog in self.hogs:
            os.killpg(hog.pid, signal.SIGCONT)  # a stopped process ends on SIGTERM only once continued
            stop_process_group(hog)


#: Seconds the hogs run before a case's signal: the signal lands on a loaded machine.
HOG_LEAD = 0.5


@pytest.fixture(scope="module")
def cpu_hogs() -> Iterator[CpuHogs]:
    """The signal cases' :class:`CpuHogs`."""
    hogs = CpuHogs()
    try:
        yield hogs
    finally:
        hogs.stop()


@pytest.fixture(scope="module")
def stopped(world: World, outcomes: dict[tuple[str, Fault], Outcome], cpu_hogs: CpuHogs, tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, Fault, int], Outcome]:
    """Every stop-signal case at each of its :data:`MOMENTS`, in parallel, each signal landing
    under the hogs."""
    root = tmp_path_factory.mktemp("stops")
    jobs = []
    for fault, moments in MOMENTS.items():
        for word in sorted(cases(fault), key=_longest_first):
            span = outcomes[(word, Fault.CLOSED)].seconds
            for i, (low, high) in enumerate(moments):
                delay = span * random.Random(f"{word}/{fault.value}/{i}").uniform(low, high)
                jobs.append(lambda w=word, f=fault, d=delay, i=i: run_case(world, root, w, f, delay=d, tag=f"-{i}", hogs=cpu_hogs))
    return {(o.word, o.fault, int(str(o.db.parent.parent.name).rsplit("-", 1)[1])): o for o in run_all(jobs)}


def _params(*faults: Fault) -> list[object]:
    return [pytest.param(word, fault, id=f"{word}-{fault.value}") for fault in faults for word in cases(fault)]


# --- the checks -----------------------------------------------------------------------------------


def _clean(o: Outcome) -> None:
    assert not o.left_running, f"a process of the command outlived it ({'; '.join(o.left_running)}): {o.describe()}"
    for text in NEVER:
        assert text not in o.err, o.describe()
    assert "\x1b" not in o.out + o.err, o.describe()
    assert "\x07" not in o.out + o.err, o.describe()


def _error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("ltr: error:")]


def _one_error_line(o: Outcome) -> str:
    lines = _error_lines(o.err)
    assert len(lines) == 1, o.describe()
    assert o.err.rstrip("\n").splitlines()[-1] == lines[0], o.describe()
    return lines[0]


def _case(outcomes: Mapping[tuple[str, Fault], Outcome], word: str, fault: Fault, unavailable: str) -> tuple[Outcome, Run]:
    """The outcome of a case (skipped when the machine cannot make its fault) and its entry, clean."""
    if (word, fault) not in outcomes:
        pytest.skip(unavailable)
    o, entry = outcomes[(word, fault)], MATRIX[word][fault]
    assert isinstance(entry, Run)
    _clean(o)
    return o, entry


def _stopped_by_sigterm(o: Outcome) -> None:
    assert (o.code, o.err.rstrip("\n").splitlines()[-1]) == (143, "ltr: terminated (SIGTERM)"), o.describe()


def _store_intact(o: Outcome, world: World, *, written: bool) -> None:
    """The store whole, no run left RUNNING but the world's dead one (KILLED by a verb that
    reaps it), the world's runs as they were unless ``written`` (the verb did its work)."""
    entry = MATRIX[o.word][o.fault]
    assert isinstance(entry, Run)
    assert o.after.integrity == "ok", o.describe()
    dead = world.ids["dead"]
    assert o.after.status[dead] in ({"RUNNING", "KILLED"} if entry.reaps and o.fault is not Fault.READ_ONLY else {"RUNNING"}), o.describe()
    for run, status in o.after.status.items():
        if run != dead:
            assert status != "RUNNING", o.describe()
    for name in ("hostile", "plain"):
        run = world.ids[name]
        assert o.after.status[run] == "FINISHED", o.describe()
        if not written:
            assert o.after.metrics.get(run) == o.before.metrics.get(run), o.describe()
    if not written:
        assert o.after.versions == o.before.versions, o.describe()
        assert not o.out_path.exists(), o.describe()
        assert o.new_files <= {"mlflow.db.lock"}, (o.new_files, o.describe())


@pytest.mark.parametrize(("word", "fault"), _params(Fault.CLOSED))
def test_a_closed_standard_output_is_exit_141_and_nothing_said(outcomes: dict[tuple[str, Fault], Outcome], world: World, word: str, fault: Fault) -> None:
    o = outcomes[(word, fault)]
    assert o.code == 141, o.describe()
    assert _error_lines(o.err) == [], o.describe()
    _clean(o)
    _store_intact(o, world, written=True)


@pytest.mark.parametrize(("word", "fault"), _params(Fault.FULL))
def test_a_full_standard_output_is_one_line_exit_1(outcomes: dict[tuple[str, Fault], Outcome], world: World, word: str, fault: Fault) -> None:
    o = outcomes[(word, fault)]
    assert o.code == 1, o.describe()
    assert _one_error_line(o) == "ltr: error: cannot write to standard output: the device is full ([Errno 28] No space left on device)"
    _clean(o)
    _store_intact(o, world, written=True)


@pytest.mark.parametrize(("word", "fault"), _params(Fault.READ_ONLY))
def test_a_read_only_store_is_read_or_refused_in_one_line(outcomes: dict[tuple[str, Fault], Outcome], world: World, word: str, fault: Fault) -> None:
    o, entry = _case(outcomes, word, fault, "chattr +i is not available here (not root, or a file system without it)")
    if entry.stop_at is not None:  # a server: it serves the store as it is, until stopped
        _stopped_by_sigterm(o)
    elif entry.writes:
        assert o.code == 2, o.describe()
        assert str(o.named) in _one_error_line(o), o.describe()
    else:
        assert o.code == 0, o.describe()
        assert _error_lines(o.err) == [], o.describe()
        if MATRIX[word][Fault.HOSTILE] == Skip(ON_READ_ONLY):
            assert ESCAPED in o.out + o.err, o.describe()
    assert o.after == o.before, o.describe()
    assert o.new_files == set(), o.describe()
    assert o.after.status[world.ids["dead"]] == "RUNNING"


@pytest.mark.parametrize(("word", "fault"), _params(Fault.FULL_DISK))
def test_a_full_file_system_is_one_line_naming_the_path_exit_1(outcomes: dict[tuple[str, Fault], Outcome], world: World, word: str, fault: Fault) -> None:
    o, entry = _case(outcomes, word, fault, "cannot mount a tmpfs here (not root, or no mount)")
    if entry.stop_at is not None:  # a server: it serves the store it cannot write, until stopped
        _stopped_by_sigterm(o)
        _store_intact(o, world, written=False)
        return
    assert o.code == 1, o.describe()
    line = _one_error_line(o)
    assert line.startswith(f"ltr: error: {o.named}"), o.describe()
    assert "full" in line or "No space left" in line, o.describe()
    new = set(o.after.status) - set(o.before.status)
    if word == "train":  # its slack lets the run start, fill the disk while it logs, and still end FAILED
        assert line.endswith("is marked FAILED"), o.describe()
    if line.endswith("is marked FAILED"):  # the run started, and the store could still record its end
        (run,) = new
        assert o.after.status[run] == "FAILED"
        assert o.after.tags[(run, "ltr.error")].startswith("DeviceFull: ")
    _store_intact(o, world, written=False)


@pytest.mark.parametrize(("word", "fault"), _params(Fault.HOSTILE))
def test_a_run_name_with_esc_and_bel_is_printed_escaped(outcomes: dict[tuple[str, Fault], Outcome], world: World, word: str, fault: Fault) -> None:
    o = outcomes[(word, fault)]
    assert o.code == 0, o.describe()
    _clean(o)
    assert ESCAPED in o.out + o.err, o.describe()
    _store_intact(o, world, written=True)


@pytest.mark.parametrize(("word", "fault"), _params(Fault.SIGINT, Fault.SIGTERM))
def test_a_stop_signal_under_load_is_one_line_and_nothing_written(stopped: dict[tuple[str, Fault, int], Outcome], world: World, word: str, fault: Fault) -> None:
    code, line = STOP_LINES[fault]
    for i in range(len(MOMENTS[fault])):
        o = stopped[(word, fault, i)]
        _clean(o)
        assert o.code in (0, code), o.describe()
        if o.code == 0:  # the work was done before the signal came
            _store_intact(o, world, written=True)
            continue
        assert _error_lines(o.err) == [], o.describe()
        assert line.fullmatch(o.err.rstrip("\n").splitlines()[-1]), o.describe()
        _store_intact(o, world, written=False)
        for run in set(o.after.status) - set(o.before.status):
            assert o.after.status[run] in {"KILLED", "FAILED"}, o.describe()


def stop_counts(stopped: Mapping[tuple[str, Fault, int], Outcome]) -> dict[str, str]:
    """Per case, how many of its moments stopped the command (the rest came after its work)."""
    counts: dict[str, list[int]] = {}
    for (word, fault, _), o in stopped.items():
        counts.setdefault(f"{word}-{fault.value}", []).append(int(o.code != 0))
    return {case: f"{sum(v)}/{len(v)}" for case, v in counts.items()}

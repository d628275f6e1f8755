"""The same sweeps on a team's server (``mlflow server`` on PostgreSQL, the Optuna study in
PostgreSQL) and on the local SQLite store and study.

Measures the wall time of the ``ltr`` command (fresh processes; the database and the server are
started before the clock runs, as a team's are) for:

- an Optuna search of ``--trials`` trials in one process;
- the same trials as two searches of half as many started at once from two folders (two hosts);
- a grid of 8 jobs in 8 joblib processes (``hydra/launcher=joblib``), every job logging to the store.

Needs Debian's PostgreSQL server binaries (``make install`` as root puts them there; without
them the script says so and exits 0) and psycopg (the ``server`` extra).

    .venv/bin/python benchmarks/bench_server_sweep.py [--trials 6] [--rounds 20]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.postgres: how the suite runs PostgreSQL and the server

from tests.postgres import database_url, postgres_bindir, running_postgres  # noqa: E402
from tests.processes import running_mlflow_server  # noqa: E402


def _ltr(args: Sequence[str], cwd: Path) -> subprocess.Popen[bytes]:
    cwd.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in {"LTR_TRACKING_URI", "MLFLOW_TRACKING_URI"}}
    env |= {"HOME": str(cwd), "LTR_CACHE_DIR": str(cwd / "cache")}
    return subprocess.Popen([sys.executable, "-m", "ltr", "train", *args], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip


def _timed(commands: Sequence[tuple[Sequence[str], Path]]) -> float:
    """Seconds until every command, started at once, has ended (each must exit 0)."""
    start = time.perf_counter()
    procs = [_ltr(args, cwd) for args, cwd in commands]
    for proc in procs:
        _, err = proc.communicate()
        if proc.returncode != 0:
            raise SystemExit(f"ltr failed ({proc.returncode}): {err.decode()[-2000:]}")
    return time.perf_counter() - start


def _cases(tracking: str, storage: str, root: Path, trials: int, rounds: int) -> dict[str, float]:
    small = ["debug=default", f"fit.num_boost_round={rounds}", "fit.show_progress=false", "fit.num_threads=1",
             f"tracking.uri={tracking}"]  # fmt: skip

    def search(n: int, study: str) -> list[str]:
        return ["hparams_search=optuna", f"hydra.sweeper.n_trials={n}", f"hydra.sweeper.storage={storage}",
                f"hydra.sweeper.study_name={study}", *small]  # fmt: skip

    grid = ["-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=8", "seed=1,2,3,4,5,6,7,8", *small]
    _timed([(["tracking.experiment=warm-up", *small], root / "warm")])  # the store exists, caches are warm
    return {
        f"Optuna search, {trials} trials, one host": _timed([(search(trials, "one"), root / "one")]),
        f"two searches of {trials // 2} trials at once, two hosts": _timed(
            [(search(trials // 2, "two"), root / "host-a"), (search(trials // 2, "two"), root / "host-b")]
        ),
        "grid of 8 jobs, 8 joblib processes": _timed([(grid, root / "grid")]),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--trials", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    if postgres_bindir() is None:
        print("bench_server_sweep: no PostgreSQL server binaries (apt-get install postgresql): skipped")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        local = root / "local"
        local.mkdir()
        sqlite = _cases(f"sqlite:///{local / 'mlflow.db'}", f"sqlite:///{local / 'study.db'}", local, args.trials, args.rounds)
        with running_postgres("mlflow", "optuna") as port, running_mlflow_server(
            database_url(port, "mlflow"), root / "artifacts", root / "server.log"
        ) as (url, _):
            server = _cases(url, database_url(port, "optuna"), root / "server", args.trials, args.rounds)
    print(f"debug data (200 queries), {args.rounds} rounds, 1 thread per job; wall seconds of the ltr command")
    print("| sweep | SQLite store and study | mlflow server + PostgreSQL | ratio |\n|---|---:|---:|---:|")
    for case, seconds in sqlite.items():
        print(f"| {case} | {seconds:.1f} | {server[case]:.1f} | {server[case] / seconds:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

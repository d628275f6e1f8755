"""What a user waits for around the work of ``make train`` (issue 31): a warm run, the same with
``tracking=none``, and a fresh install's first run against its second.

Rows (each a fresh ``ltr train`` process on the default experiment; wall time and the CPU time
of the process and its threads, best of ``--repeats``, except the one-off first runs):

- ``warm``: the store exists, numba's cache and ltr's data caches are warm (``make train``
  after the first).
- ``tracking=none``: the same work without MLflow: ``warm`` minus this is what tracking costs.
- ``warm-up``: ``python -m ltr.warmup`` on an empty numba cache (what ``make install`` adds).
- ``first after install``: a fresh clone's first ``make train`` after ``make install``: empty
  data caches, no store yet (the run creates it), numba's cache filled by the warm-up only.
  Target (issue 31): at most 1.5x ``second after install``.
- ``first without warm-up``: the same first run on an empty numba cache (what the warm-up saves).

A fresh install is simulated by an empty ``NUMBA_CACHE_DIR``, an empty ``LTR_CACHE_DIR`` and an
empty working directory (the store and Hydra's outputs are written there). The machine's load
average is printed before and after: on a shared machine, compare rows of one run only.

    .venv/bin/python benchmarks/bench_run_costs.py [--repeats 5] [--skip-first]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TRAIN = [sys.executable, "-m", "ltr", "train", "fit.show_progress=false"]


def timed(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds (user + system of the child and its threads) of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def best(args: list[str], cwd: Path, env: dict[str, str], repeats: int) -> tuple[float, float]:
    runs = [timed(args, cwd, env) for _ in range(repeats)]
    return min(w for w, _ in runs), min(c for _, c in runs)


def fresh_env(root: Path) -> dict[str, str]:
    """An environment whose numba and ltr data caches are empty folders under ``root``."""
    (root / "numba").mkdir(parents=True)
    (root / "ltr-cache").mkdir()
    return {**os.environ, "NUMBA_CACHE_DIR": str(root / "numba"), "LTR_CACHE_DIR": str(root / "ltr-cache")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--skip-first", action="store_true", help="only the warm rows (the first runs compile)")
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    rows: list[tuple[str, float, float]] = []
    with tempfile.TemporaryDirectory(prefix="ltr-bench-") as tmp_dir:
        tmp = Path(tmp_dir)
        env = dict(os.environ)
        warm = tmp / "warm"
        warm.mkdir()
        timed(TRAIN, warm, env)  # the store, numba's and the data caches: warm from here on
        rows.append(("`ltr train` warm", *best(TRAIN, warm, env, args.repeats)))
        rows.append(("`ltr train tracking=none` warm", *best([*TRAIN, "tracking=none"], warm, env, args.repeats)))
        if not args.skip_first:
            installed = tmp / "installed"
            env_i = fresh_env(installed)
            (installed / "work").mkdir()
            rows.append(("`python -m ltr.warmup`, empty numba cache", *timed([sys.executable, "-m", "ltr.warmup"], installed, env_i)))
            rows.append(("`python -m ltr.warmup` again (warm)", *timed([sys.executable, "-m", "ltr.warmup"], installed, env_i)))
            rows.append(("first `ltr train` after install", *timed(TRAIN, installed / "work", env_i)))
            rows.append(("second `ltr train` after install", *timed(TRAIN, installed / "work", env_i)))
            bare = tmp / "bare"
            env_b = fresh_env(bare)
            (bare / "work").mkdir()
            rows.append(("first `ltr train` without the warm-up", *timed(TRAIN, bare / "work", env_b)))
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print("\n| what | wall s | cpu s |\n|---|---:|---:|")
    for what, wall, cpu in rows:
        print(f"| {what} | {wall:.2f} | {cpu:.2f} |")
    named = {what: wall for what, wall, _ in rows}
    warm_wall, none_wall = named["`ltr train` warm"], named["`ltr train tracking=none` warm"]
    print(f"\ntracking costs {warm_wall - none_wall:.2f} s wall (warm - tracking=none)")
    if not args.skip_first:
        first, second = named["first `ltr train` after install"], named["second `ltr train` after install"]
        print(f"first / second run after install: {first / second:.2f}x (target <= 1.5x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

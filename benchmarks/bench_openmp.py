"""OpenMP's spin count against boosting time, idle and with a core busy elsewhere (ltr.runtime.openmp).

Runs ``ltr train tracking=none`` (the default experiment, 220 boosting rounds on 2 threads)
``--repeats`` times per setting of libgomp's waiting (``GOMP_SPINCOUNT`` 300,000 (libgomp's
default), 1,000 (ltr's), 300, and ``OMP_WAIT_POLICY=PASSIVE``), first on an idle machine, then
with one core kept busy by another process (a Python busy loop: what a second test worker, a
background thread or a busy CI machine does). Reports the boosting time ``ltr train`` logs
(``boost``, seconds): best, median and worst, per setting. Spinning changes no result: each
row checks that every run gave the same valid nDCG@10.

::

    .venv/bin/python benchmarks/bench_openmp.py [--repeats 5] [--skip-busy]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

TRAIN = [sys.executable, "-m", "ltr", "train", "tracking=none", "fit.show_progress=false"]

#: label -> the variables set for the run (every other OpenMP variable removed)
SETTINGS: dict[str, dict[str, str]] = {
    "GOMP_SPINCOUNT=300000 (libgomp's default)": {"GOMP_SPINCOUNT": "300000"},
    "GOMP_SPINCOUNT=1000 (ltr's)": {"GOMP_SPINCOUNT": "1000"},
    "GOMP_SPINCOUNT=300": {"GOMP_SPINCOUNT": "300"},
    "OMP_WAIT_POLICY=PASSIVE": {"OMP_WAIT_POLICY": "PASSIVE"},
}

BUSY_LOOP = "while True: pass"


def boost_seconds(settings: dict[str, str], cwd: Path) -> tuple[float, str]:
    """One run's boosting seconds and its valid nDCG@10 (as printed)."""
    env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")} | settings
    done = subprocess.run(TRAIN, capture_output=True, text=True, env=env, cwd=cwd)
    if done.returncode != 0:
        raise SystemExit(f"ltr train failed:\n{done.stderr[-2000:]}")
    log = done.stdout + done.stderr  # Hydra's job log goes to stdout
    boost = re.search(r"boost ([0-9.]+) s", log)
    ndcg = re.search(r"valid nDCG@10: ours ([0-9.]+)", log)
    if boost is None or ndcg is None:
        raise SystemExit(f"no timing or nDCG in ltr train's log:\n{log[-2000:]}")
    return float(boost.group(1)), ndcg.group(1)


def measure(repeats: int, cwd: Path) -> dict[str, list[float]]:
    """Boosting seconds per setting; the settings interleaved, so a drift hits them alike."""
    times: dict[str, list[float]] = {label: [] for label in SETTINGS}
    values: set[str] = set()
    for _ in range(repeats):
        for label, settings in SETTINGS.items():
            seconds, ndcg = boost_seconds(settings, cwd)
            times[label].append(seconds)
            values.add(ndcg)
    if len(values) != 1:
        raise SystemExit(f"the spin count changed a result: valid nDCG@10 {sorted(values)}")
    return times


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--skip-busy", action="store_true", help="only the idle machine")
    args = p.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        boost_seconds({}, Path(tmp))  # caches (parsed data, binned data) warm before any row
        tables = {"idle": measure(args.repeats, Path(tmp))}
        if not args.skip_busy:
            busy = subprocess.Popen([sys.executable, "-c", BUSY_LOOP])
            try:
                tables["one core busy"] = measure(args.repeats, Path(tmp))
            finally:
                busy.kill()
                busy.wait()
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print(f"\n| setting | machine | boost s: best | median | worst (of {args.repeats}) |")
    print("|---|---|---:|---:|---:|")
    for machine, times in tables.items():
        for label, seconds in times.items():
            print(f"| {label} | {machine} | {min(seconds):.2f} | {statistics.median(seconds):.2f} | {max(seconds):.2f} |")


if __name__ == "__main__":
    main()

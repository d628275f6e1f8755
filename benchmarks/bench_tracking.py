"""Logging overhead of the default experiment: MLflow (sqlite store) vs ``tracking=none``.

Runs the default experiment in-process ``--repeats`` times each way and prints wall times. The
import of mlflow is done before timing (it is paid once per process, not per run). The overhead
is the time of the tracking calls themselves (params, dataset inputs, metrics, curves,
artifacts, the MLflow model), measured around them by the pipeline.

    .venv/bin/python benchmarks/bench_tracking.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import mlflow  # noqa: F401  (imported before timing on purpose)
from hydra import compose, initialize_config_dir

from ltr import pipeline
from ltr.app import CONF_DIR


def _run(overrides: list[str]) -> tuple[float, dict[str, float]]:
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose(config_name="train", overrides=["fit.show_progress=false", *overrides])
    start = time.perf_counter()
    outcome = pipeline.run(cfg)
    return time.perf_counter() - start, outcome.timings


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        uri = f"sqlite:///{Path(tmp) / 'mlflow.db'}"
        _run([f"tracking.uri={uri}"])  # warm-up: numba cache, sqlite schema creation
        rows = []
        for label, overrides in (
            ("tracking=none", ["tracking=none"]),
            ("sqlite store", [f"tracking.uri={uri}"]),
            ("sqlite, no MLflow model", [f"tracking.uri={uri}", "tracking.log_model=false"]),
        ):
            walls, logs = [], []
            for _ in range(args.repeats):
                wall, timings = _run(overrides)
                walls.append(wall)
                logs.append(timings.get("log_start", 0.0) + timings.get("log", 0.0))
            rows.append((label, statistics.median(walls), statistics.median(logs)))
    print(f"\n{'setting':<26} {'wall s (median)':>16} {'tracking s':>11} {'share':>7}", file=sys.stderr)
    for label, wall, log in rows:
        print(f"{label:<26} {wall:>16.2f} {log:>11.2f} {log / wall:>7.1%}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

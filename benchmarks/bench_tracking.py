"""Logging overhead of the default experiment: MLflow (sqlite store) vs ``tracking=none``.

Measures, on the default experiment (3,000 synthetic queries):

- the wall time of the command ``ltr train`` with the default sqlite store and with
  ``tracking=none`` (fresh processes, median of ``--repeats``);
- the import of MLflow with its sqlite store and LightGBM flavour (paid once per process;
  the issue's goal leaves it out);
- the time of the tracking calls themselves (params, dataset inputs, metrics, curves, figures,
  per-query tables, the MLflow model), measured by the pipeline in a process whose imports are
  warm, with and without the MLflow model.

    .venv/bin/python benchmarks/bench_tracking.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

IMPORT_MLFLOW = (
    "import mlflow, mlflow.lightgbm, matplotlib.figure; "
    "from mlflow.store.tracking import sqlalchemy_store"
)


def _wall(args: list[str], cwd: str) -> float:
    start = time.perf_counter()
    subprocess.run(args, cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - start


def _in_process(uri: str, extra: list[str], repeats: int) -> float:
    from hydra import compose, initialize_config_dir

    from ltr.cli.train import CONF_DIR
    from ltr.experiment import run as pipeline

    times = []
    for i in range(repeats + 1):  # the first run warms imports and caches
        with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
            cfg = compose(config_name="train", overrides=["fit.show_progress=false", f"tracking.uri={uri}", *extra])
        timings = pipeline.run(cfg).timings
        if i:
            times.append(timings.get("log_start", 0.0) + timings.get("log", 0.0))
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    ltr = [sys.executable, "-m", "ltr", "train", "fit.show_progress=false"]
    with tempfile.TemporaryDirectory() as tmp:
        _wall([*ltr], tmp)  # creates the store; numba's cache is warm after this
        wall_sqlite = statistics.median(_wall(ltr, tmp) for _ in range(args.repeats))
        wall_none = statistics.median(_wall([*ltr, "tracking=none"], tmp) for _ in range(args.repeats))
        imports = statistics.median(_wall([sys.executable, "-c", IMPORT_MLFLOW], tmp) for _ in range(args.repeats))
        uri = f"sqlite:///{Path(tmp) / 'mlflow.db'}"
        calls = _in_process(uri, [], args.repeats)
        calls_no_model = _in_process(uri, ["tracking.log_model=false"], args.repeats)
    rows = [
        ("ltr train (sqlite store), wall", wall_sqlite),
        ("ltr train tracking=none, wall", wall_none),
        ("import mlflow + sqlite store + flavour", imports),
        ("tracking calls (warm imports)", calls),
        ("tracking calls, tracking.log_model=false", calls_no_model),
    ]
    print(f"\n{'what':<44} {'seconds (median)':>16}")
    for label, value in rows:
        print(f"{label:<44} {value:>16.2f}")
    print(f"\ntracking calls / wall of `ltr train`: {calls / wall_sqlite:.1%} "
          f"({calls_no_model / wall_sqlite:.1%} without the MLflow model)")
    print(f"wall difference minus the MLflow import: {wall_sqlite - wall_none - imports:.2f} s "
          f"= {(wall_sqlite - wall_none - imports) / wall_sqlite:.1%} of the wall time")
    return 0


if __name__ == "__main__":
    sys.exit(main())

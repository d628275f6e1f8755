"""``ltr explain`` against ``booster.predict(X, pred_contrib=True)`` called directly: time per
million documents at 136 features.

Generates (in a temp dir) a training set and a scoring file of ``--rows`` rows x 136 float32
features in queries of 60-180 rows with graded labels (``bench_predict.write_data``); trains one
``ltr train`` run (``--rounds`` trees of 31 leaves, no early stopping); then times, each in a
fresh process, with CPU time (user + system), peak RSS (``os.wait4``) and the load average at its
start (the machine is shared):

- the bare script: ``pd.read_parquet`` + ``booster.predict(X, pred_contrib=True)`` on the whole
  float32 matrix (nothing written);
- ``ltr explain RUN --data FILE --no-log``: the contributions in batches, centred per query,
  importance overall and per stratum (labels present: ``ltr predict``'s table too);
- the same with ``--out contributions.parquet`` (every row's contributions written).

The bare script and ``ltr explain`` run ``--repeat`` times back to back. The file's feature
columns + ``expected_value`` are checked against ``ltr predict``'s scores.

    .venv/bin/python benchmarks/bench_explain.py [--rows 200000] [--rounds 100] [--repeat 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_predict import N_FEATURES, timed, write_data  # the sibling benchmark's data and timer

BARE = """
import sys, lightgbm as lgb, numpy as np, pandas as pd
booster = lgb.Booster(model_file=sys.argv[1])
frame = pd.read_parquet(sys.argv[2], columns=booster.feature_name())
contributions = booster.predict(frame.to_numpy(dtype=np.float32), pred_contrib=True)
print(contributions.shape)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--train-rows", type=int, default=40_000)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name, rows, seed in (("train", args.train_rows, 1), ("valid", args.train_rows // 4, 2), ("test", args.train_rows // 4, 3)):
            write_data(root / f"{name}.parquet", rows, seed)
        big = root / "score.parquet"
        write_data(big, args.rows, 4)
        uri = f"sqlite:///{root / 'mlflow.db'}"
        subprocess.run(
            [py, "-m", "ltr", "train", "data=parquet", f"data.train={root / 'train.parquet'}",
             f"data.valid={root / 'valid.parquet'}", f"data.test={root / 'test.parquet'}", "data.cache=false",
             f"fit.num_boost_round={args.rounds}", "fit.early_stopping_rounds=null", "fit.show_progress=false",
             "model.num_leaves=31", f"tracking.uri={uri}", "tracking.run_name=bench"],
            cwd=root, check=True, capture_output=True,
        )  # fmt: skip
        model = next(root.glob("mlartifacts/*/artifacts/model_text/model.txt"))
        explain = [py, "-m", "ltr", "explain", "bench", "--data", str(big), "--no-log", "--batch-rows", "100000", "--tracking-uri", uri]
        rows: list[tuple[str, float, float, float, float]] = []

        def run(what: str, cmd: list[str]) -> float:
            load = os.getloadavg()[0]
            s, cpu, mb = timed(cmd, root)
            rows.append((what, s, cpu, mb, load))
            print(f"{what}: {s:.2f} s wall, {cpu:.2f} s CPU, {mb:.0f} MB (load {load:.1f})", flush=True)
            return s

        bare = []
        for _ in range(args.repeat):
            bare.append(run("bare: read_parquet + booster.predict(pred_contrib=True)", [py, "-c", BARE, str(model), str(big)]))
            run("ltr explain --no-log (importance per stratum)", explain)
        run("ltr explain --no-log --out contributions.parquet", [*explain, "--out", str(root / "c.parquet")])
        subprocess.run([py, "-m", "ltr", "predict", "bench", "--data", str(big), "--out", str(root / "s.txt"), "--tracking-uri", uri],
                       cwd=root, check=True, capture_output=True)  # fmt: skip
        table = pd.read_parquet(root / "c.parquet")
        features = [c for c in table.columns if c not in ("qid", "label", "score", "expected_value")]
        gap = np.abs(table[features].to_numpy().sum(axis=1) + table["expected_value"].to_numpy() - np.loadtxt(root / "s.txt")).max()
        print(f"largest |contributions + expected_value - ltr predict's score|: {gap:.1e}")
        per_million = 1e6 / args.rows
        print(f"\n| what ({args.rows} rows x {N_FEATURES}, {args.rounds} trees of 31 leaves) | wall s | s per 1M docs | x bare (fastest) | CPU s | peak RSS MB | load |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for what, s, cpu, mb, load in rows:
            print(f"| {what} | {s:.2f} | {s * per_million:.1f} | {s / min(bare):.2f} | {cpu:.2f} | {mb:.0f} | {load:.1f} |")


if __name__ == "__main__":
    main()

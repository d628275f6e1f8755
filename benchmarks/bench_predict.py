"""``ltr predict`` on a large Parquet file against the bare ``booster.predict`` a user would write.

Generates (in a temp dir) a training set of ``--train-rows`` rows and a scoring file of ``--rows``
rows x 136 float32 features in queries of ~120 rows, with graded labels; trains one ``ltr train``
run on the small file (``--rounds`` rounds, 31 leaves, no early stopping); then times, each in a
fresh process, with its CPU time and peak memory (``ru_utime + ru_stime``, ``ru_maxrss`` of the
child) and the load average when it started (the machine is shared):

- the bare script: ``pd.read_parquet`` + ``booster.predict`` on the float32 matrix + writing the
  scores (one per line), the model read from the run's ``model_text/model.txt``;
- ``ltr predict RUN --data FILE --out scores.txt`` at two batch sizes (labels present: it also
  builds the per-query table and prints the stratified table);
- ``ltr predict`` on a file a quarter the size (memory should not follow the file).

The bare script and ``ltr predict --batch-rows 50000`` run ``--repeat`` times, back to back (and
``--baseline-tree``'s ``ltr predict``, another checkout, beside them); the ratio is to the
fastest bare run.

Both write the same scores (checked). Goal (#24): ``ltr predict`` <= 1.2x the bare script's time;
memory bounded by the batch size, not the file.

    .venv/bin/python benchmarks/bench_predict.py [--rows 1200000] [--rounds 100]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

N_FEATURES = 136


def write_data(path: Path, n_rows: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(60, 181, n_rows // 60 + 1)
    sizes = sizes[np.cumsum(sizes) <= n_rows]
    sizes = np.append(sizes, n_rows - sizes.sum()) if sizes.sum() < n_rows else sizes
    qids = np.repeat(np.arange(sizes.shape[0], dtype=np.int64), sizes)
    columns: dict[str, pa.Array] = {"qid": pa.array(qids)}
    signal = np.zeros(n_rows, dtype=np.float64)
    features = {}
    for j in range(N_FEATURES):
        col = rng.normal(size=n_rows).astype(np.float32)
        if j < 8:
            signal += col * (8 - j)
        features[f"f{j + 1}"] = pa.array(col)
    labels = np.clip(np.round(signal / 12 + rng.normal(size=n_rows) + 1), 0, 4).astype(np.int32)
    columns["label"] = pa.array(labels)
    columns.update(features)
    pq.write_table(pa.table(columns), path, row_group_size=100_000)


def timed(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system) and peak RSS (MB) of this one child
    (``os.wait4``'s own rusage)."""
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            raise SystemExit(f"{' '.join(cmd)} failed:\n{err.read().decode()[-3000:]}")
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


BARE = """
import sys, lightgbm as lgb, numpy as np, pandas as pd
booster = lgb.Booster(model_file=sys.argv[1])
names = booster.feature_name()
frame = pd.read_parquet(sys.argv[2], columns=names)
scores = booster.predict(frame.to_numpy(dtype=np.float32))
with open(sys.argv[3], "w") as f:
    f.write("".join(f"{s!r}\\n" for s in scores.tolist()))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_200_000)
    parser.add_argument("--train-rows", type=int, default=60_000)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=2, help="bare / ltr pairs, back to back (default 2)")
    parser.add_argument("--baseline-tree", default=None, help="also time ltr predict of another source tree (PYTHONPATH), beside each pair")
    args = parser.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name, rows, seed in (("train", args.train_rows, 1), ("valid", args.train_rows // 4, 2), ("test", args.train_rows // 4, 3)):
            write_data(root / f"{name}.parquet", rows, seed)
        big, small = root / "score.parquet", root / "score_quarter.parquet"
        t0 = time.perf_counter()
        write_data(big, args.rows, 4)
        write_data(small, args.rows // 4, 5)
        print(f"data written in {time.perf_counter() - t0:.1f} s: {big.stat().st_size / 2**20:.0f} MB ({args.rows} rows x {N_FEATURES})")
        uri = f"sqlite:///{root / 'mlflow.db'}"
        subprocess.run(
            [py, "-m", "ltr", "train", "data=parquet", f"data.train={root / 'train.parquet'}",
             f"data.valid={root / 'valid.parquet'}", f"data.test={root / 'test.parquet'}", "data.cache=false",
             f"fit.num_boost_round={args.rounds}", "fit.early_stopping_rounds=null", "fit.show_progress=false",
             "model.num_leaves=31", f"tracking.uri={uri}", "tracking.run_name=bench"],
            cwd=root, check=True, capture_output=True,
        )
        model = root / "model.txt"
        subprocess.run(
            [py, "-c", f"import mlflow; mlflow.set_tracking_uri({uri!r}); r = mlflow.search_runs(experiment_names=['ltr']).run_id[0]; "
             f"import shutil; shutil.copy(mlflow.artifacts.download_artifacts(run_id=r, artifact_path='model_text/model.txt', tracking_uri={uri!r}), {str(model)!r})"],
            cwd=root, check=True, capture_output=True,
        )
        rows: list[tuple[str, float, float, float, float]] = []
        bare_cmd = [py, "-c", BARE, str(model), str(big), str(root / "bare.txt")]

        def ltr_cmd(data: Path, out: Path, batch: int) -> list[str]:
            return [py, "-m", "ltr", "predict", "bench", "--data", str(data), "--out", str(out),
                    "--batch-rows", str(batch), "--tracking-uri", uri]

        def run(what: str, cmd: list[str], env: dict[str, str] | None = None) -> float:
            load = os.getloadavg()[0]
            s, cpu, mb = timed(cmd, root, env)
            rows.append((what, s, cpu, mb, load))
            print(f"{what}: {s:.2f} s wall, {cpu:.2f} s CPU, {mb:.0f} MB (load {load:.1f})", flush=True)
            return s

        bare = []
        for _ in range(args.repeat):  # bare and ltr back to back, so both meet the same load
            bare.append(run("bare script: read_parquet + booster.predict + write", bare_cmd))
            out = root / "ltr_50000.txt"
            run("ltr predict, --batch-rows 50000", ltr_cmd(big, out, 50_000))
            print(f"ltr predict scores == bare scores: {out.read_text() == (root / 'bare.txt').read_text()}")
            if args.baseline_tree:
                env = {**os.environ, "PYTHONPATH": args.baseline_tree}
                run(f"ltr predict of {args.baseline_tree}, --batch-rows 50000", ltr_cmd(big, root / "base.txt", 50_000), env)
        out = root / "ltr_200000.txt"
        run("ltr predict, --batch-rows 200000", ltr_cmd(big, out, 200_000))
        print(f"ltr predict (200000) scores == bare scores: {out.read_text() == (root / 'bare.txt').read_text()}")
        run(f"ltr predict, a quarter of the rows ({args.rows // 4}), --batch-rows 50000", ltr_cmd(small, root / "q.txt", 50_000))
        bare_s = min(bare)
        print(f"\n| what ({args.rows} rows x {N_FEATURES}, {args.rounds} trees) | wall s | x bare (fastest) | CPU s | peak RSS MB | load |")
        print("|---|---:|---:|---:|---:|---:|")
        for what, s, cpu, mb, load in rows:
            print(f"| {what} | {s:.2f} | {s / bare_s:.2f} | {cpu:.2f} | {mb:.0f} | {load:.1f} |")

if __name__ == "__main__":
    main()

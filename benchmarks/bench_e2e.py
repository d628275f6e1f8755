"""``ltr train`` end to end at MSLR-WEB10K size, beside the LightGBM script a user would write.

Generates MSLR-WEB10K-shaped data (``--queries`` queries, about 120 documents each, 136
features, graded labels 0-4 that depend on a few features; Parquet train / valid / test split
60 / 20 / 20 by query), then measures, each in its own process (wall time, time to the first
boosting round, peak resident memory of the process and its children):

1. ``bare``: pandas + ``lgb.Dataset`` + ``lgb.train`` (``--rounds`` rounds, no early stopping,
   valid and test ``ndcg@5,10`` every round), the script a user would write;
2. ``bare + autolog``: the same under ``mlflow.lightgbm.autolog()`` (a local sqlite store);
3. ``ltr train`` on cold caches (a new ``$LTR_CACHE_DIR`` holding only what ``make install``'s
   ``python -m ltr.warmup`` puts there, the empty MLflow store new stores are copied from: no
   parsed data, no binned data sets), then again on warm caches (the parsed data and LightGBM's
   binned data sets kept by the first run);
4. a 5-job sweep ``ltr train -m model.num_leaves=...`` on warm caches against five bare runs.

Same model settings everywhere (lambdarank, 31 leaves, learning rate 0.05, 2 threads,
``force_col_wise``, seed 42). The goals of issue 16 are printed beside the numbers.

::

    .venv/bin/python benchmarks/bench_e2e.py                  # 10,000 queries (1.2M rows), ~15 min
    .venv/bin/python benchmarks/bench_e2e.py --queries 2000   # a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import numpy as np

N_FEATURES = 136

BARE = r"""
import sys, time, json
t0 = time.time()
import numpy as np, pandas as pd, lightgbm as lgb
folder, rounds, leaves, autolog = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
if autolog:
    import mlflow, mlflow.lightgbm
    mlflow.set_tracking_uri(sys.argv[5])
    mlflow.lightgbm.autolog()
def load(split):
    df = pd.read_parquet(f"{folder}/{split}.parquet")
    q = df["qid"].to_numpy()
    sizes = np.diff(np.flatnonzero(np.r_[True, q[1:] != q[:-1], True]))
    return df.drop(columns=["qid", "label"]).to_numpy(np.float32), df["label"].to_numpy(), sizes
(X, y, g), (Xv, yv, gv), (Xt, yt, gt) = load("train"), load("valid"), load("test")
train = lgb.Dataset(X, y, group=g)
sets = [lgb.Dataset(Xv, yv, group=gv, reference=train), lgb.Dataset(Xt, yt, group=gt, reference=train)]
params = dict(objective="lambdarank", num_leaves=leaves, learning_rate=0.05, seed=42, num_threads=2,
              metric="ndcg", eval_at=[5, 10], verbosity=-1, force_col_wise=True, deterministic=True)
first = []
def mark(env):
    if not first:
        first.append(time.time())
if autolog:
    mlflow.start_run()
booster = lgb.train(params, train, rounds, valid_sets=sets, valid_names=["valid", "test"], callbacks=[mark])
if autolog:
    mlflow.end_run()
print(json.dumps({"first_round": first[0] - t0, "start": t0}))
"""


def generate(folder: Path, n_queries: int, seed: int = 0) -> dict[str, int]:
    """Write ``train/valid/test.parquet`` (qid, label, f0..f135); returns rows per split."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    sizes = rng.integers(40, 200, n_queries)
    n = int(sizes.sum())
    qid = np.repeat(np.arange(n_queries, dtype=np.int64), sizes)
    x = rng.normal(size=(n, N_FEATURES)).astype(np.float32)
    x[:, 100:] = np.round(x[:, 100:] * 4)  # some coarse features, as MSLR's counts
    signal = x[:, 0] + 0.7 * x[:, 1] - 0.5 * x[:, 2] + 0.3 * x[:, 3] * x[:, 4] + rng.normal(scale=1.0, size=n)
    label = np.digitize(signal, [0.8, 1.6, 2.4, 3.2]).astype(np.int32)
    cut = np.cumsum([0, int(0.6 * n_queries), int(0.2 * n_queries)])
    bounds = np.r_[0, np.cumsum(sizes)]
    rows = {}
    for split, (q0, q1) in zip(("train", "valid", "test"), [(cut[0], cut[1]), (cut[1], cut[2]), (cut[2], n_queries)], strict=True):
        r0, r1 = bounds[q0], bounds[q1]
        cols = {"qid": qid[r0:r1], "label": label[r0:r1]} | {f"f{j}": x[r0:r1, j] for j in range(N_FEATURES)}
        pq.write_table(pa.table(cols), folder / f"{split}.parquet")
        rows[split] = int(r1 - r0)
    return rows


WRAPPER = (
    "import resource, subprocess, sys, time, json, os\n"
    "t0 = time.time()\n"
    "p = subprocess.run(sys.argv[1:], capture_output=True, env=dict(os.environ))\n"
    "wall = time.time() - t0\n"
    "print(json.dumps({'wall': wall, 'start': t0, 'rss_mb': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, "
    "'rc': p.returncode, 'out': p.stdout.decode(), 'err': p.stderr.decode()[-20000:]}))\n"
)

_JOB_TIME = re.compile(r"\[ltr\.experiment\.run\]\[INFO\] - time: (.*)$", re.M)
_LOG_TIME = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]\[ltr\.training\.local\]\[INFO\] - training ", re.M)


def measured(cmd: list[str], env: dict[str, str]) -> dict[str, float | str]:
    """Run ``cmd`` in a wrapper process: wall s, peak RSS MB (largest child), stdout, stderr."""
    res = subprocess.run([sys.executable, "-c", WRAPPER, *cmd], capture_output=True, check=True, env=env)
    info = json.loads(res.stdout)
    if info["rc"]:
        raise RuntimeError(f"{' '.join(cmd[:4])} failed: {info['err'][-3000:]}")
    return info  # type: ignore[no-any-return]


def first_round_ltr(info: dict[str, float | str]) -> float:
    """Seconds from the process start to ``ltr``'s "training ... on" log line (just before round 1)."""
    stamp = _LOG_TIME.search(str(info["out"]) + str(info["err"]))
    if stamp is None:
        return float("nan")
    t = datetime.strptime(stamp.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
    return t - float(info["start"])


def job_times(info: dict[str, float | str]) -> list[dict[str, float]]:
    """Each job's ``time:`` line (``ltr.experiment.run``): phase -> seconds, in job order."""
    jobs = []
    for line in _JOB_TIME.findall(str(info["out"]) + str(info["err"])):
        parts = (part.rsplit(" ", 2) for part in line.split(", "))
        jobs.append({name: float(value) for name, value, _unit in parts})
    return jobs


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--queries", type=int, default=10_000)
    p.add_argument("--rounds", type=int, default=100)
    p.add_argument("--dir", type=Path, help="keep the generated data here (default: a temp dir)")
    p.add_argument("--skip-sweep", action="store_true")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.dir or Path(tmp) / "data"
        folder.mkdir(parents=True, exist_ok=True)
        if not (folder / "test.parquet").exists():
            t = time.perf_counter()
            rows = generate(folder, args.queries)
            print(f"generated {sum(rows.values()):,} rows x {N_FEATURES} features in {time.perf_counter() - t:.1f} s: {rows}")
        work = Path(tmp)
        env = dict(os.environ, LTR_CACHE_DIR=str(work / "cache"), PYTHONWARNINGS="ignore")
        results: list[tuple[str, float, float, float]] = []

        def bare(leaves: int = 31, autolog: bool = False) -> tuple[float, float, float]:
            uri = f"sqlite:///{work / 'autolog.db'}"
            info = measured([sys.executable, "-c", BARE, str(folder), str(args.rounds), str(leaves), "1" if autolog else "0", uri], env)
            out = json.loads(str(info["out"]).strip().splitlines()[-1])
            return float(info["wall"]), float(out["first_round"]), float(info["rss_mb"])

        ltr_cmd = [sys.executable, "-m", "ltr", "train"]
        ltr = ["data=parquet", f"data.train={folder / 'train.parquet'}",
               f"data.valid={folder / 'valid.parquet'}", f"data.test={folder / 'test.parquet'}",
               f"fit.num_boost_round={args.rounds}", "fit.early_stopping_rounds=null", "fit.num_threads=2",
               f"tracking.uri=sqlite:///{work / 'mlflow.db'}", "hydra.run.dir=" + str(work / "outputs"),
               "hydra.sweep.dir=" + str(work / "multirun")]  # fmt: skip

        def add(row: tuple[str, float, float, float]) -> None:
            results.append(row)
            print(f"{row[0]}: wall {row[1]:.1f} s, first round {row[2]:.1f} s, peak {row[3]:.0f} MB", flush=True)

        # what `make install` leaves in the cache on a user's machine (the store template)
        subprocess.run([sys.executable, "-m", "ltr.warmup"], env=env, check=True, capture_output=True)
        add(("bare LightGBM script", *bare()))
        add(("bare + mlflow.lightgbm.autolog()", *bare(autolog=True)))
        for label in ("ltr train, cold caches", "ltr train, warm caches"):
            info = measured([*ltr_cmd, *ltr], env)
            add((label, float(info["wall"]), first_round_ltr(info), float(info["rss_mb"])))
        if not args.skip_sweep:
            leaves = [15, 31, 47, 63, 79]
            info = measured([*ltr_cmd, "-m", *ltr, "model.num_leaves=" + ",".join(map(str, leaves))], env)
            add(("ltr train -m, 5 jobs (num_leaves), warm", float(info["wall"]), float("nan"), float(info["rss_mb"])))
            jobs = job_times(info)
            if len(jobs) > 1:  # jobs 2..5: what a job costs besides boosting
                later = jobs[1:]
                mean = {key: sum(job.get(key, 0.0) for job in later) / len(later) for key in later[0]}
                print("sweep jobs 2-5, mean s: " + ", ".join(f"{k} {v:.2f}" for k, v in mean.items()), flush=True)
            five = [bare(leaves=n) for n in leaves]
            add(("5 bare runs (same num_leaves)", sum(w for w, _, _ in five), float("nan"), max(r for _, _, r in five)))

        print(f"\n| {args.queries:,} queries, {args.rounds} rounds | wall s | first round s | peak MB |")
        print("|---|---:|---:|---:|")
        for name, w, f, r in results:
            print(f"| {name} | {w:.1f} | {'' if f != f else f'{f:.1f}'} | {r:.0f} |")
        by = {name: (w, f, r) for name, w, f, r in results}
        bare_wall, bare_first, bare_rss = by["bare LightGBM script"]
        warm = by["ltr train, warm caches"]
        print(f"\nltr (warm) / bare wall: {warm[0] / bare_wall:.2f} (goal <= 1.05); peak memory ratio "
              f"{warm[2] / bare_rss:.2f} (goal <= 1.0); cold: {by['ltr train, cold caches'][0] / bare_wall:.2f}")
        print(f"time to the first round: bare {bare_first:.1f} s (reading + binning), ltr warm {warm[1]:.1f} s")
        if not args.skip_sweep:
            sweep = by["ltr train -m, 5 jobs (num_leaves), warm"][0]
            binning = bare_first
            five_bare = by["5 bare runs (same num_leaves)"][0]
            print(f"sweep: {sweep:.1f} s vs goal <= 5 x bare - 4 x binning = {5 * bare_wall - 4 * binning:.1f} s; "
                  f"5 bare runs {five_bare:.1f} s; with the sweep's own num_leaves the goal is "
                  f"5 bare runs - 4 x binning = {five_bare - 4 * binning:.1f} s")


if __name__ == "__main__":
    main()

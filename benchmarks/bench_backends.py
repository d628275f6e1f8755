"""The three backends side by side: ``ltr train model=<backend>`` beside each library's bare script.

Generates MSLR-WEB10K-shaped Parquet train / valid / test (``bench_e2e.generate``: ``--queries``
queries of 40-200 rows, 136 features; 10,000 queries = 1.2M rows), then, per backend
(``lambdarank``: LightGBM, ``xgboost``, ``catboost``), each in its own process with wall time and
peak resident memory (``getrusage`` of the children, ``bench_e2e.measured``):

- ``ltr train``: ``data=parquet``, ``--rounds`` rounds, no early stopping, 2 threads, warm
  caches (a first run fills the parsed-data and binned-data caches and is not counted);
- the bare script a user would write: pandas ``read_parquet``, the library's own data structure,
  its training with its own ``ndcg@10`` on valid and test every round, the test scores. It gets
  exactly the parameters the ``ltr`` run logged (``model_text/<library>_params.json``), so
  both train the same model.

The table: wall time and memory of both, ``ltr``'s ratio to the bare script, and test nDCG@10
under ``ltr``'s convention (the run's logged ``test/ndcg_at_10``; the bare script's test scores
scored with ``ltr.metrics`` beside it, a check that both trained a comparable model; the bare
script's OpenMP spins at libgomp's default, ``ltr``'s does not: ``ltr.runtime.openmp``). The runs
of a backend are interleaved ``--repeat`` times; medians are shown.

::

    .venv/bin/python benchmarks/bench_backends.py                  # 1,000 queries (~120k rows), a few minutes
    .venv/bin/python benchmarks/bench_backends.py --full           # 10,000 queries (1.2M rows), ~1 h on 2 cores
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from bench_e2e import N_FEATURES, generate, measured

BACKENDS = {"lambdarank": "lightgbm", "xgboost": "xgboost", "catboost": "catboost"}

_LOAD = r"""
import sys, json
import numpy as np, pandas as pd
folder, params, out = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
def load(split):
    df = pd.read_parquet(f"{folder}/{split}.parquet")
    q = df["qid"].to_numpy()
    sizes = np.diff(np.flatnonzero(np.r_[True, q[1:] != q[:-1], True]))
    return df.drop(columns=["qid", "label"]).to_numpy(np.float32), df["label"].to_numpy(), sizes, q
(X, y, g, q), (Xv, yv, gv, qv), (Xt, yt, gt, qt) = load("train"), load("valid"), load("test")
"""

#: One bare script per library: argv = folder, the run's parameters (JSON), rounds, scores file.
BARE = {
    "lightgbm": _LOAD + r"""
import lightgbm as lgb
rounds = int(sys.argv[4])
train = lgb.Dataset(X, y, group=g)
sets = [lgb.Dataset(Xv, yv, group=gv, reference=train), lgb.Dataset(Xt, yt, group=gt, reference=train)]
booster = lgb.train(params, train, rounds, valid_sets=sets, valid_names=["valid", "test"])
np.save(out, booster.predict(Xt))
""",
    "xgboost": _LOAD + r"""
import xgboost as xgb
rounds = int(sys.argv[4])
def dm(X, y, g):
    d = xgb.DMatrix(X, label=y.astype(np.float32)); d.set_group(g); return d
train, valid, test = dm(X, y, g), dm(Xv, yv, gv), dm(Xt, yt, gt)
booster = xgb.train(params, train, rounds, evals=[(valid, "valid"), (test, "test")], verbose_eval=False)
np.save(out, booster.predict(test))
""",
    "catboost": _LOAD + r"""
import catboost as cb
params["iterations"] = int(sys.argv[4])
train, valid, test = cb.Pool(X, y, group_id=q), cb.Pool(Xv, yv, group_id=qv), cb.Pool(Xt, yt, group_id=qt)
model = cb.CatBoost(params)
model.fit(train, eval_set=[valid, test])
np.save(out, model.predict(test))
""",
}


def _median(values: list[float]) -> float:
    return statistics.median(values)


def _logged(uri: str, backend: str) -> tuple[dict[str, object], float]:
    """The latest ``ltr`` run of ``backend``: its library parameters and test nDCG@10."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("ltr")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id], order_by=["attributes.start_time DESC"])
    run = next(r for r in runs if r.data.tags.get("ltr.model") == backend)
    library = BACKENDS[backend]
    with tempfile.TemporaryDirectory() as tmp:
        path = client.download_artifacts(run.info.run_id, f"model_text/{library}_params.json", tmp)
        params = json.loads(Path(path).read_text())
    return params, float(run.data.metrics["test/ndcg_at_10"])


def _ours(folder: Path, scores_file: Path) -> float:
    """Test nDCG@10 of the bare script's scores under ltr's default conventions."""
    from ltr.metrics import per_query_table

    df = pd.read_parquet(folder / "test.parquet", columns=["qid", "label"])
    q = df["qid"].to_numpy()
    offsets = np.flatnonzero(np.r_[True, q[1:] != q[:-1], True]).astype(np.int64)
    table = per_query_table(df["label"].to_numpy(), np.load(scores_file), offsets, q[offsets[:-1]], ks=(10,))
    return float(table["ndcg_at_10"].mean())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--queries", type=int, default=1000)
    p.add_argument("--full", action="store_true", help="10,000 queries (1.2M rows)")
    p.add_argument("--rounds", type=int, default=50)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--backends", default=",".join(BACKENDS))
    p.add_argument("--dir", type=Path, default=None, help="keep the data and store here")
    args = p.parse_args()
    queries = 10_000 if args.full else args.queries
    work = args.dir or Path(tempfile.mkdtemp(prefix="bench_backends_"))
    data = work / f"tables_{queries}"
    data.mkdir(parents=True, exist_ok=True)
    if not (data / "test.parquet").exists():
        sizes = generate(data, queries)
        print(f"generated {sum(sizes.values()):,} rows x {N_FEATURES} features in {queries:,} queries")
    n_rows = sum(len(pd.read_parquet(data / f"{s}.parquet", columns=["qid"])) for s in ("train", "valid", "test"))
    uri = f"sqlite:///{work / 'mlflow.db'}"
    env = dict(os.environ, LTR_CACHE_DIR=str(work / "cache"))
    load_before = " ".join(f"{x:.1f}" for x in os.getloadavg())
    rows = []
    for backend in args.backends.split(","):
        cmd = [sys.executable, "-m", "ltr", "train", f"model={backend}", "data=parquet",
               f"data.train={data / 'train.parquet'}", f"data.valid={data / 'valid.parquet'}",
               f"data.test={data / 'test.parquet'}", f"fit.num_boost_round={args.rounds}",
               "fit.early_stopping_rounds=null", "fit.num_threads=2", "tracking.log_model=false",
               f"tracking.uri={uri}", f"hydra.run.dir={work / 'outputs'}"]  # fmt: skip
        measured(cmd, env)  # warms the caches; gives the parameters the bare script uses
        params, _ = _logged(uri, backend)
        library = BACKENDS[backend]
        scores_file = work / f"{backend}_scores.npy"
        bare = [sys.executable, "-c", BARE[library], str(data), json.dumps(params), str(scores_file), str(args.rounds)]
        times: dict[str, list[float]] = {"ltr": [], "ltr_mb": [], "bare": [], "bare_mb": []}
        for _ in range(args.repeat):
            info = measured(bare, env)
            times["bare"].append(float(info["wall"]))
            times["bare_mb"].append(float(info["rss_mb"]))
            info = measured(cmd, env)
            times["ltr"].append(float(info["wall"]))
            times["ltr_mb"].append(float(info["rss_mb"]))
        _, ndcg = _logged(uri, backend)
        row = {k: _median(v) for k, v in times.items()} | {"backend": backend, "ndcg": ndcg, "bare_ndcg": _ours(data, scores_file)}
        print(json.dumps(row), flush=True)
        rows.append(row)
    load_after = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\n{n_rows:,} rows x {N_FEATURES} features, {queries:,} queries, {args.rounds} rounds, 2 threads, "
          f"median of {args.repeat}; load average {load_before} before, {load_after} after\n")  # fmt: skip
    print("| backend | `ltr train` (warm) | bare script | ratio (time, memory) | test nDCG@10, ltr | same, bare script's scores |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['backend']} | {r['ltr']:.1f} s, {r['ltr_mb']:,.0f} MB | {r['bare']:.1f} s, {r['bare_mb']:,.0f} MB "
            f"| {r['ltr'] / r['bare']:.2f}x, {r['ltr_mb'] / r['bare_mb']:.2f}x | {r['ndcg']:.4f} | {r['bare_ndcg']:.4f} |"
        )


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"\n({time.perf_counter() - t0:.0f} s in all)")

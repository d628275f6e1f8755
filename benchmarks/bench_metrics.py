"""Benchmark: `ltr.metrics` against LightGBM, pytrec_eval, sklearn, ranx and a numpy loop.

MSLR-WEB30K-sized synthetic data (31,531 queries, about 3.7M docs, list lengths 1 to 1,250,
labels 0-4 with MSLR's label shares, random float scores), generated here with a fixed seed.

Measured in one run, each including its own input conversion from the flat arrays:

- ours: `per_query_table` with ks=(5, 10) (NDCG@5, NDCG@10, ERR@5/10, P, RR, R@k, AP@k, IDCG
  per query; ``full_ap=False``: without AP over the whole list) plus `summarize` (overall and
  per stratum); and the same with full AP (the one measure that looks past the top 10 of every
  list), on its own row;
- LightGBM: its built-in ``ndcg@10`` of the same scores (a Booster whose train set carries the
  scores as ``init_score``; ``eval_train`` only runs the metric), same thread count; the setup
  (Dataset + Booster, where LightGBM also computes and caches its IDCGs) is timed separately;
- pytrec_eval (ndcg_cut.5,10), sklearn ``ndcg_score`` per query (k=10), ranx (ndcg@5, ndcg@10),
  and a plain per-query numpy loop (NDCG@10).

Numba's one-time compile is measured in a fresh process with an empty cache dir, and the load
from cache in a second fresh process; neither is part of the timed runs. Peak extra memory of
ours is measured in a fresh process (peak RSS during the call, VmHWM after a reset, minus the
RSS before it).

Usage::

    .venv/bin/python benchmarks/bench_metrics.py [--threads 2] [--repeat 5] [--skip-slow]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

REPO = Path(__file__).resolve().parents[1]
N_QUERIES = 31_531
MSLR_LABEL_SHARES = (0.516, 0.325, 0.134, 0.018, 0.007)

Arrays = tuple[NDArray[np.int32], NDArray[np.float64], NDArray[np.int64]]


def make_data(seed: int = 0) -> Arrays:
    """Labels (int32), scores (float64) and offsets of the synthetic MSLR-sized set."""
    rng = np.random.default_rng(seed)
    lens = np.clip(np.round(rng.lognormal(4.37, 0.9, N_QUERIES)), 1, 1250).astype(np.int64)
    lens[0], lens[1] = 1, 1250
    offsets = np.zeros(N_QUERIES + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    n = int(offsets[-1])
    labels = rng.choice(5, size=n, p=MSLR_LABEL_SHARES).astype(np.int32)
    scores = rng.random(n)
    return labels, scores, offsets


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Best wall time of ``repeat`` calls, and the last result."""
    best = float("inf")
    out = None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def run_ours(
    labels: NDArray[np.int32], scores: NDArray[np.float64], offsets: NDArray[np.int64], full_ap: bool = False
) -> dict[str, float]:
    from ltr.metrics import per_query_table, summarize

    table = per_query_table(labels, scores, offsets, np.arange(offsets.shape[0] - 1), ks=(5, 10), full_ap=full_ap)
    return summarize(table)


def bench_lightgbm(data: Arrays, threads: int, repeat: int) -> tuple[float, float, float]:
    import lightgbm as lgb

    labels, scores, offsets = data
    t = time.perf_counter()
    ds = lgb.Dataset(
        np.zeros((labels.shape[0], 1), dtype=np.float32),
        label=labels,
        group=np.diff(offsets),
        init_score=scores,
        params={"verbosity": -1, "max_bin": 2},
        free_raw_data=True,
    )
    params = {
        "objective": "lambdarank",
        "metric": "ndcg",
        "eval_at": [10],
        "num_threads": threads,
        "verbosity": -1,
    }
    booster = lgb.Booster(params=params, train_set=ds)
    setup = time.perf_counter() - t
    best, res = timed(booster.eval_train, repeat)
    return best, setup, float(res[0][2])


def bench_pytrec_eval(data: Arrays) -> float:
    import pytrec_eval

    labels, scores, offsets = data
    t = time.perf_counter()
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    lab_l, sc_l = labels.tolist(), scores.tolist()
    for q in range(offsets.shape[0] - 1):
        lo, hi = int(offsets[q]), int(offsets[q + 1])
        docs = [f"d{i}" for i in range(hi - lo)]
        qrels[str(q)] = dict(zip(docs, lab_l[lo:hi], strict=True))
        run[str(q)] = dict(zip(docs, sc_l[lo:hi], strict=True))
    ev = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.5,10"})
    res = ev.evaluate(run)
    _ = np.mean([r["ndcg_cut_10"] for r in res.values()])
    return time.perf_counter() - t


def bench_sklearn(data: Arrays) -> float:
    from sklearn.metrics import ndcg_score

    labels, scores, offsets = data
    t = time.perf_counter()
    vals = []
    for q in range(offsets.shape[0] - 1):
        lo, hi = offsets[q], offsets[q + 1]
        if hi - lo < 2:  # sklearn raises on single-doc lists
            continue
        vals.append(ndcg_score(labels[None, lo:hi], scores[None, lo:hi], k=10))
    _ = np.mean(vals)
    return time.perf_counter() - t


def bench_ranx(data: Arrays) -> float:
    import pandas as pd
    from ranx import Qrels, Run, evaluate

    labels, scores, offsets = data
    lens = np.diff(offsets)
    # warm up ranx's own numba functions on a tiny input (not timed)
    tiny_q = Qrels.from_dict({"q": {"a": 1, "b": 0}})
    tiny_r = Run.from_dict({"q": {"a": 0.5, "b": 0.1}})
    evaluate(tiny_q, tiny_r, ["ndcg@5", "ndcg@10"])
    t = time.perf_counter()
    # ranx wants object (str) id columns
    qid = pd.Series(np.repeat(np.arange(lens.shape[0]), lens).astype(str), dtype=object)
    doc = pd.Series(
        (np.arange(labels.shape[0]) - np.repeat(offsets[:-1], lens)).astype(str), dtype=object
    )
    qrels = Qrels.from_df(
        pd.DataFrame({"q_id": qid, "doc_id": doc, "score": labels.astype(np.int64)}),
        q_id_col="q_id", doc_id_col="doc_id", score_col="score",
    )  # fmt: skip
    run = Run.from_df(
        pd.DataFrame({"q_id": qid, "doc_id": doc, "score": scores}),
        q_id_col="q_id", doc_id_col="doc_id", score_col="score",
    )  # fmt: skip
    evaluate(qrels, run, ["ndcg@5", "ndcg@10"])
    return time.perf_counter() - t


def numpy_loop(data: Arrays) -> float:
    """NDCG@10 (exp gain) with a per-query Python loop over numpy slices."""
    labels, scores, offsets = data
    disc = 1.0 / np.log2(np.arange(2, 12))
    vals = np.empty(offsets.shape[0] - 1)
    for q in range(offsets.shape[0] - 1):
        lo, hi = offsets[q], offsets[q + 1]
        g = np.exp2(labels[lo:hi]) - 1.0
        top = g[np.argsort(-scores[lo:hi], kind="stable")[:10]]
        ideal = -np.sort(-g)[:10]
        idcg = ideal @ disc[: ideal.shape[0]]
        vals[q] = (top @ disc[: top.shape[0]]) / idcg if idcg > 0 else 0.0
    return float(vals.mean())


def bench_numpy_loop(data: Arrays) -> float:
    t = time.perf_counter()
    numpy_loop(data)
    return time.perf_counter() - t


_CHILD_COMPILE = """
import time, numpy as np
t = time.perf_counter()
from ltr.metrics import per_query_table
per_query_table(np.array([1, 0, 2]), np.array([0.1, 0.2, 0.3]), np.array([0, 3]), np.array([1]))
print(time.perf_counter() - t)
"""

_CHILD_MEMORY = """
import sys, numpy as np
from ltr.metrics import per_query_table, summarize
d = sys.argv[1]
labels, scores, offsets = np.load(d + "/labels.npy"), np.load(d + "/scores.npy"), np.load(d + "/offsets.npy")
per_query_table(labels[:10], scores[:10], np.array([0, 10]), np.array([0]))  # load the cache
def status(key):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key))
before = status("VmRSS:")
with open("/proc/self/clear_refs", "w") as f:  # reset VmHWM (peak RSS) to the current RSS
    f.write("5")
t = per_query_table(labels, scores, offsets, np.arange(offsets.shape[0] - 1), ks=(5, 10))
summarize(t)
print(status("VmHWM:") - before)
"""


def child(code: str, *args: str, env: dict[str, str] | None = None) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=REPO,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip().splitlines()[-1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--skip-slow", action="store_true", help="skip pytrec_eval, sklearn, ranx")
    ap.add_argument("--json", type=Path, help="also write the numbers to this JSON file")
    args = ap.parse_args()

    os.environ["NUMBA_NUM_THREADS"] = str(args.threads)
    import numba

    numba.set_num_threads(args.threads)
    data = make_data()
    labels, scores, offsets = data
    input_bytes = labels.nbytes + scores.nbytes + offsets.nbytes
    print(
        f"data: {offsets.shape[0] - 1} queries, {labels.shape[0]} docs, list lengths "
        f"{np.diff(offsets).min()}..{np.diff(offsets).max()}, input {input_bytes / 2**20:.1f} MiB; "
        f"threads {args.threads}"
    )
    rows: dict[str, float | None] = {}
    notes: dict[str, str] = {}

    with tempfile.TemporaryDirectory() as cache:
        env = {"NUMBA_CACHE_DIR": cache, "NUMBA_NUM_THREADS": str(args.threads)}
        compile_s = float(child(_CHILD_COMPILE, env=env))
        cached_s = float(child(_CHILD_COMPILE, env=env))
    run_ours(labels[:100], scores[:100], np.array([0, 100]))  # load this process's cache

    t_ours, summary = timed(lambda: run_ours(*data), args.repeat)
    rows["ltr.metrics (ndcg@5,@10, err@10, strata)"] = t_ours
    rows["ltr.metrics, the same + full AP"], _ = timed(lambda: run_ours(*data, full_ap=True), args.repeat)
    try:
        t_lgb, lgb_setup, lgb_ndcg = bench_lightgbm(data, args.threads, args.repeat)
        rows["LightGBM built-in ndcg@10 (eval only)"] = t_lgb
        notes["LightGBM built-in ndcg@10 (eval only)"] = (
            f"setup (Dataset+Booster, caches IDCG) {lgb_setup:.2f} s"
        )
        # same number as the lightgbm preset: a check that both measured the same thing
        from ltr.metrics import PRESETS, per_query_table

        check = per_query_table(
            labels, scores, offsets, np.arange(offsets.shape[0] - 1), ks=(10,),
            conventions=PRESETS["lightgbm"],
        )["ndcg_at_10"].mean()  # fmt: skip
        notes["ltr.metrics (ndcg@5,@10, err@10, strata)"] = (
            f"lightgbm preset ndcg@10 {check:.9f} vs LightGBM {lgb_ndcg:.9f}"
        )
    except ImportError as exc:
        rows["LightGBM built-in ndcg@10 (eval only)"] = None
        notes["LightGBM built-in ndcg@10 (eval only)"] = f"not installed: {exc}"
    rows["per-query numpy loop (ndcg@10)"] = bench_numpy_loop(data)
    slow = {
        "pytrec_eval (ndcg_cut.5,10)": bench_pytrec_eval,
        "sklearn ndcg_score per query (k=10)": bench_sklearn,
        "ranx (ndcg@5, ndcg@10)": bench_ranx,
    }
    for name, fn in slow.items():
        if args.skip_slow:
            rows[name] = None
            notes[name] = "skipped (--skip-slow)"
            continue
        try:
            rows[name] = fn(data)
        except ImportError as exc:
            rows[name] = None
            notes[name] = f"not installed: {exc.name}"
        except Exception as exc:  # a peer that breaks must not hide the others' numbers
            rows[name] = None
            notes[name] = f"failed: {type(exc).__name__}: {exc}"

    with tempfile.TemporaryDirectory() as d:
        np.save(f"{d}/labels.npy", labels)
        np.save(f"{d}/scores.npy", scores)
        np.save(f"{d}/offsets.npy", offsets)
        peak = int(child(_CHILD_MEMORY, d, env={"NUMBA_NUM_THREADS": str(args.threads)}))

    print(f"\n{'method':<44} {'time (s)':>9} {'vs ours':>8}  note")
    for name, t in rows.items():
        if t is None:
            print(f"{name:<44} {'-':>9} {'-':>8}  {notes.get(name, '')}")
        else:
            print(f"{name:<44} {t:>9.3f} {t / t_ours:>7.1f}x  {notes.get(name, '')}")
    lgb_t = rows.get("LightGBM built-in ndcg@10 (eval only)")
    if lgb_t:
        print(f"\nours / LightGBM time ratio: {t_ours / lgb_t:.2f} (target <= 1.0)")
    print(f"numba compile (cold cache, fresh process, incl. import): {compile_s:.1f} s; "
          f"load from cache: {cached_s:.2f} s")  # fmt: skip
    print(
        f"peak extra memory of ours: {peak / 2**20:.1f} MiB = {peak / input_bytes:.2f}x the input "
        f"arrays (target <= 3x)"
    )
    print(f"ndcg_at_10 = {summary['ndcg_at_10']:.6f}, err_at_10 = {summary['err_at_10']:.6f}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "times_s": rows,
                    "notes": notes,
                    "compile_s": compile_s,
                    "cache_load_s": cached_s,
                    "peak_extra_bytes": peak,
                    "input_bytes": input_bytes,
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

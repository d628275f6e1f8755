"""The headline table in one command: ``ltr train`` beside the bare LightGBM script (warm caches,
first run on the files, first run after an install) and ``ltr evaluate`` beside trec_eval.

Generates its data (nothing is downloaded): MSLR-WEB10K-shaped Parquet train / valid / test
(``--queries`` queries of 40-200 rows, 136 features, as ``bench_e2e.py``) and two TREC shapes
(``--trec-shapes``, default 2,000 topics x 1,000 docs and 70,000 topics x 100 docs, 60 judgments
per topic, as ``bench_trec.py``). Each command runs in its own process; wall time and peak
resident memory (``getrusage`` of the children) are measured around it. Rows:

- ``bare LightGBM script``: pandas + ``lgb.Dataset`` + ``lgb.train``, the script a user would
  write (``bench_e2e.BARE``), and the same script with ``NUMPY_MADVISE_HUGEPAGE=0``, the numpy
  setting ``ltr`` takes (:mod:`ltr.runtime.hugepages`): the anchor, and what that setting alone gives it;
- ``ltr train, warm``: the parsed data and binned data sets of an earlier run in the cache;
- ``ltr train, first run on the files``: a new ``LTR_CACHE_DIR`` holding only what ``make
  install``'s warm-up puts there (no parsed data, no binned data);
- ``ltr train, first run after install``: the same, plus a new ``NUMBA_CACHE_DIR`` seeded by
  ``python -m ltr.warmup`` (its ``round_metric`` is set beside the warm run's);
- ``ltr evaluate --measure ndcg`` and ``trec_eval -m ndcg_cut.5,10`` on each TREC shape (the
  script checks that both print the same nDCG@5 and nDCG@10 to trec_eval's 4 decimals).

The runs being compared are interleaved (bare, first run, warm, ... ``--repeat`` times; evaluate
and trec_eval alternately) and the table shows medians, with every run's figure after it and
the load average before and after: on a shared machine, compare within one table only.

trec_eval: ``--trec-eval BIN``, or ``--trec-eval-src DIR`` (a checkout of usnistgov/trec_eval,
built with ``make``), or ``trec_eval`` on ``PATH``; without it those rows are left out.

::

    .venv/bin/python benchmarks/bench_headline.py --trec-eval-src ~/src/trec_eval   # ~1 h on 2 cores
    .venv/bin/python benchmarks/bench_headline.py --small --trec-eval BIN             # a quick look
    .venv/bin/python benchmarks/bench_headline.py --skip-train --trec-eval BIN        # evaluate only
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench_e2e import BARE, N_FEATURES, job_times, measured
from bench_e2e import generate as generate_tables
from bench_trec import build_trec_eval
from bench_trec import generate as generate_trec

Row = dict[str, list[float]]


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def _seeded_cache(root: Path, name: str, env: dict[str, str], numba: bool) -> dict[str, str]:
    """A new ``LTR_CACHE_DIR`` (and with ``numba``, a new ``NUMBA_CACHE_DIR``) seeded by
    ``python -m ltr.warmup``, as ``make install`` leaves them; returns the environment."""
    folder = root / name
    shutil.rmtree(folder, ignore_errors=True)
    out = dict(env, LTR_CACHE_DIR=str(folder / "ltr"))
    if numba:
        out["NUMBA_CACHE_DIR"] = str(folder / "numba")
    subprocess.run([sys.executable, "-m", "ltr.warmup"], env=out, check=True, capture_output=True)
    return out


def _record(rows: dict[str, Row], name: str, info: dict[str, float | str], **extra: float) -> None:
    row = rows.setdefault(name, {})
    for key, value in {"wall": float(info["wall"]), "rss": float(info["rss_mb"]), **extra}.items():
        row.setdefault(key, []).append(value)
    print(f"  {name}: {float(info['wall']):.1f} s, {float(info['rss_mb']):.0f} MB", flush=True)


def _median(row: Row, key: str) -> float:
    return statistics.median(row[key]) if row.get(key) else float("nan")


def _cell(row: Row) -> str:
    each = "/".join(f"{w:.1f}" for w in row["wall"])
    mem = "/".join(f"{r:.0f}" for r in row["rss"])
    return f"{_median(row, 'wall'):.2f} s ({each}), {_median(row, 'rss'):.0f} MB ({mem})"


#: The bare script with numpy's huge pages off, as ``ltr`` runs (``ltr.runtime.hugepages``).
BARE_SMALL_PAGES = "bare LightGBM script, NUMPY_MADVISE_HUGEPAGE=0"


def train_rows(args: argparse.Namespace, work: Path, env: dict[str, str]) -> dict[str, Row]:
    """Bare script, first run on the files, warm, first run after install: interleaved."""
    data = work / "tables"
    data.mkdir(parents=True, exist_ok=True)
    if not (data / "test.parquet").exists():
        t = time.perf_counter()
        sizes = generate_tables(data, args.queries)
        print(f"generated {sum(sizes.values()):,} rows x {N_FEATURES} features in {time.perf_counter() - t:.0f} s")
    cmd = [sys.executable, "-m", "ltr", "train", "data=parquet", f"data.train={data / 'train.parquet'}",
           f"data.valid={data / 'valid.parquet'}", f"data.test={data / 'test.parquet'}",
           f"fit.num_boost_round={args.rounds}", "fit.early_stopping_rounds=null", "fit.num_threads=2",
           f"tracking.uri=sqlite:///{work / 'mlflow.db'}", f"hydra.run.dir={work / 'outputs'}"]  # fmt: skip
    bare = [sys.executable, "-c", BARE, str(data), str(args.rounds), "31", "0", ""]
    rows: dict[str, Row] = {}
    warm_env = _seeded_cache(work, "warm", env, numba=False)
    measured(cmd, warm_env)  # fills the warm cache
    for i in range(args.repeat):
        print(f"train, repetition {i + 1}/{args.repeat} (load {_load()})", flush=True)
        _record(rows, "bare LightGBM script", measured(bare, env))
        _record(rows, BARE_SMALL_PAGES, measured(bare, dict(env, NUMPY_MADVISE_HUGEPAGE="0")))
        cold_env = _seeded_cache(work, "cold", env, numba=False)
        info = measured(cmd, cold_env)
        _record(rows, "ltr train, first run on the files", info, **_phases(info))
        info = measured(cmd, warm_env)
        _record(rows, "ltr train, warm caches", info, **_phases(info))
        if not args.skip_install:
            fresh_env = _seeded_cache(work, "fresh", env, numba=True)
            info = measured(cmd, fresh_env)
            _record(rows, "ltr train, first run after install", info, **_phases(info))
    return rows


#: The phases of ``ltr train``'s ``time:`` line shown per run kind (``round_metric``: the row of issue 47).
PHASES = ("load", "datasets", "boost", "round_metric", "log", "total")


def _phases(info: dict[str, float | str]) -> dict[str, float]:
    """The run's seconds per phase of :data:`PHASES` (its ``time:`` line; NaN where absent), and
    ``outside``: the process's wall time beyond the run's ``total`` (start-up and shutdown)."""
    jobs = job_times(info)
    phases = {name: jobs[0].get(name, float("nan")) if jobs else float("nan") for name in PHASES}
    return phases | {"outside": float(info["wall"]) - phases["total"]}


def evaluate_rows(args: argparse.Namespace, work: Path, env: dict[str, str], trec_eval: Path | None) -> dict[str, Row]:
    """``ltr evaluate --measure ndcg`` and trec_eval ``-m ndcg_cut.5,10`` on each shape, alternately."""
    rows: dict[str, Row] = {}
    for shape in args.trec_shapes:
        topics, docs = (int(x) for x in shape.lower().split("x"))
        folder = work / f"trec_{topics}x{docs}"
        folder.mkdir(parents=True, exist_ok=True)
        qrels, run = folder / "qrels.txt", folder / "run.txt"
        if not run.exists():
            qrels.unlink(missing_ok=True)
            generate_trec(folder, topics, docs, args.judged)
        ltr = [sys.executable, "-m", "ltr", "evaluate", "--qrels", str(qrels), "--run", str(run),
               "--preset", "trec_eval", "--measure", "ndcg", "--k", "5", "--k", "10", "--json"]  # fmt: skip
        lines = f"{topics * docs:,} lines ({topics:,} topics x {docs:,})"
        measured(ltr, env)  # the file in the page cache, for both
        for i in range(args.repeat):
            print(f"evaluate {lines}, repetition {i + 1}/{args.repeat} (load {_load()})", flush=True)
            info = measured(ltr, env)
            ours = json.loads(str(info["out"]))
            _record(rows, f"ltr evaluate {lines}", info)
            if trec_eval is None:
                continue
            info = measured([str(trec_eval), "-m", "ndcg_cut.5,10", str(qrels), str(run)], env)
            _record(rows, f"trec_eval {lines}", info)
            theirs = _trec_ndcg(str(info["out"]))
            for k in (5, 10):
                if f"{ours[f'ndcg_at_{k}']:.4f}" != theirs[k]:
                    raise SystemExit(f"nDCG@{k} differs: ltr {ours[f'ndcg_at_{k}']!r}, trec_eval {theirs[k]}")
    return rows


def _trec_ndcg(out: str) -> dict[int, str]:
    vals = {f[0]: f[2] for f in (line.split() for line in out.splitlines()) if len(f) == 3 and f[1] == "all"}
    return {5: vals["ndcg_cut_5"], 10: vals["ndcg_cut_10"]}


def print_table(rows: dict[str, Row], args: argparse.Namespace, load: tuple[str, str]) -> None:
    print(f"\nload average (1, 5, 15 min): {load[0]} before, {load[1]} after; medians of {args.repeat} "
          "interleaved runs, each run's figure in parentheses\n")  # fmt: skip
    print("| what | `ltr` | anchor, same runs | ratio (time, memory) |")
    print("|---|---|---|---|")
    bare = rows.get("bare LightGBM script")
    ratio: Callable[[Row, Row], str] = lambda a, b: (  # noqa: E731
        f"{_median(a, 'wall') / _median(b, 'wall'):.2f}x, {_median(a, 'rss') / _median(b, 'rss'):.2f}x"
    )
    if bare is not None:
        size = f"{args.queries:,} queries x {N_FEATURES}, {args.rounds} rounds, Parquet"
        for name in ("ltr train, warm caches", "ltr train, first run on the files", "ltr train, first run after install"):
            if name in rows:
                print(f"| {name} ({size}) | {_cell(rows[name])} | bare LightGBM script {_cell(bare)} | {ratio(rows[name], bare)} |")
        small = rows.get(BARE_SMALL_PAGES)
        if small is not None:
            print(f"| bare LightGBM script, `NUMPY_MADVISE_HUGEPAGE=0` | {_cell(small)} | bare LightGBM script | {ratio(small, bare)} |")
            for name in ("ltr train, warm caches", "ltr train, first run on the files"):
                if name in rows:
                    print(f"| {name}, against the bare script with `NUMPY_MADVISE_HUGEPAGE=0` | | | {ratio(rows[name], small)} |")
        warm, fresh = rows.get("ltr train, warm caches"), rows.get("ltr train, first run after install")
        if warm is not None and fresh is not None:
            print(f"| `round_metric`, first run after install vs warm | {_median(fresh, 'round_metric'):.2f} s | "
                  f"{_median(warm, 'round_metric'):.2f} s | "
                  f"{_median(fresh, 'round_metric') / _median(warm, 'round_metric'):.2f}x |")  # fmt: skip
    kinds = [name for name in rows if name.startswith("ltr train")]
    if kinds:
        print("\n| `ltr train` phase (median s) | " + " | ".join(k.removeprefix("ltr train, ") for k in kinds) + " |")
        print("|---|" + "---:|" * len(kinds))
        for phase in (*PHASES, "outside"):
            print(f"| {phase} | " + " | ".join(f"{_median(rows[k], phase):.2f}" for k in kinds) + " |")
        print()
    for name, row in rows.items():
        if name.startswith("ltr evaluate"):
            peer = rows.get(name.replace("ltr evaluate", "trec_eval"))
            anchor = f"trec_eval `-m ndcg_cut.5,10` {_cell(peer)}" if peer else "(no trec_eval)"
            print(f"| {name}, `--measure ndcg` | {_cell(row)} | {anchor} | {ratio(row, peer) if peer else ''} |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--queries", type=int, default=10_000, help="queries of the Parquet data (10,000: 1.2M rows)")
    p.add_argument("--rounds", type=int, default=100)
    p.add_argument("--trec-shapes", nargs="+", default=["2000x1000", "70000x100"], metavar="TOPICSxDOCS")
    p.add_argument("--judged", type=int, default=60, help="judgments per topic")
    p.add_argument("--repeat", type=int, default=3, help="interleaved runs of each command")
    p.add_argument("--small", action="store_true", help="a quick check: 500 queries, 20 rounds, 200x500 and 2000x50 TREC")
    p.add_argument("--skip-train", action="store_true")
    p.add_argument("--skip-evaluate", action="store_true")
    p.add_argument("--skip-install", action="store_true", help="leave out the first run after install (a compile)")
    p.add_argument("--trec-eval", type=Path, help="a trec_eval binary")
    p.add_argument("--trec-eval-src", type=Path, help="a trec_eval source checkout to build with make")
    p.add_argument("--dir", type=Path, help="keep the generated data here (default: a temp dir)")
    args = p.parse_args()
    if args.small:
        args.queries, args.rounds, args.trec_shapes = 500, 20, ["200x500", "2000x50"]
    trec_eval = args.trec_eval or (build_trec_eval(args.trec_eval_src) if args.trec_eval_src else None)
    if trec_eval is None and shutil.which("trec_eval"):
        trec_eval = Path(str(shutil.which("trec_eval")))
    with tempfile.TemporaryDirectory() as tmp:
        work = args.dir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, PYTHONWARNINGS="ignore")
        before = _load()
        rows: dict[str, Row] = {}
        if not args.skip_train:
            rows |= train_rows(args, work, env)
        if not args.skip_evaluate:
            rows |= evaluate_rows(args, work, env, trec_eval)
        print_table(rows, args, (before, _load()))


if __name__ == "__main__":
    main()

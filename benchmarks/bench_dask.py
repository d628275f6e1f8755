"""Local vs Dask training: wall time and peak memory on MSLR-WEB10K-sized synthetic data.

Generates about 10,000 queries / 1.2M rows / 136 float32 features (1-240 rows per query, labels
0-4 from a noisy linear score) with numpy, splits them by query 60/20/20, saves the splits as
``.npy`` (for the in-memory modes) and as Parquet partitions of whole queries (for the
``dask-parquet`` mode), then runs each mode in a fresh subprocess, ``--repeats`` times:

- ``local``: ``ltr.training.local.fit_ranker`` in one process, ``fit.num_threads=2``;
- ``dask``: ``ltr.dask.train.fit_dask``: the client loads the ``.npy`` splits and scatters
  whole-query partitions to a 2-worker x 1-thread ``LocalCluster``;
- ``dask-parquet``: the workers read the Parquet partitions themselves
  (``ltr.dask.parquet.read_query_partitions``); the client never holds the rows.

All modes train ``--rounds`` rounds without early stopping (``DaskLGBMRanker`` has none) and
record valid and test NDCG@10 every round. Peak memory: the client's ``VmHWM`` (exact) and,
sampled every 0.1 s with psutil, the summed RSS of the client and all its child processes (the
Dask scheduler runs in the client; nannies and workers are children). Sampling can miss a
short peak, so the sampled total can be below the client's exact peak.

Usage::

    python benchmarks/bench_dask.py                        # 50 rounds, 1 repeat: ~6 min on 2 cores
    python benchmarks/bench_dask.py --repeats 2            # the numbers in benchmarks/README.md
    python benchmarks/bench_dask.py --queries 2000 --rounds 20 --repeats 1   # quick look
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger("bench_dask")
MODES = ("local", "dask", "dask-parquet")


def make_data(n_queries: int, n_features: int, seed: int) -> Any:
    """MSLR-like synthetic ranking data (~120 rows per query) as a ``RankingData``."""
    from ltr.data.ranking_data import RankingData

    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 240, size=n_queries)
    n_rows = int(sizes.sum())
    features = rng.standard_normal((n_rows, n_features), dtype=np.float32)
    weights = np.zeros(n_features, dtype=np.float32)
    weights[:20] = rng.normal(size=20).astype(np.float32)
    latent = features @ weights + rng.normal(scale=2.0, size=n_rows).astype(np.float32)
    labels = np.digitize(latent, np.quantile(latent, [0.5, 0.8, 0.93, 0.98])).astype(np.int32)
    return RankingData.from_group_sizes(
        features, labels, np.arange(1, n_queries + 1), sizes,
        feature_names=tuple(f"f{j}" for j in range(n_features)), name="bench",
    )


def prepare(workdir: Path, args: argparse.Namespace) -> None:
    from ltr.dask.parquet import write_query_partitions
    from ltr.data.splits import split_queries

    data = make_data(args.queries, args.features, args.seed)
    splits = split_queries(data, valid_fraction=0.2, test_fraction=0.2, seed=args.seed)
    logger.info("data: %d queries, %d rows, %d features", data.n_queries, data.n_rows, data.n_features)
    for name, part in splits.items():
        np.save(workdir / f"{name}_features.npy", part.features)
        np.save(workdir / f"{name}_labels.npy", part.labels)
        np.save(workdir / f"{name}_qids.npy", part.qids)
        np.save(workdir / f"{name}_offsets.npy", part.offsets)
        write_query_partitions(part, workdir / name, n_partitions=2)


class MemorySampler:
    """Peak of the summed RSS of this process and all its descendants, sampled in a thread."""

    def __init__(self, interval: float = 0.1) -> None:
        import psutil

        self._proc = psutil.Process()
        self.interval = interval
        self.peak_total = 0
        self.peak_children = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import psutil

        while not self._stop.is_set():
            children = 0
            for child in self._proc.children(recursive=True):
                with contextlib.suppress(psutil.Error):  # a child may exit between listing and reading
                    children += child.memory_info().rss
            total = children + self._proc.memory_info().rss
            self.peak_total = max(self.peak_total, total)
            self.peak_children = max(self.peak_children, children)
            self._stop.wait(self.interval)

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def vm_hwm_kib() -> int:
    """This process's peak RSS (``VmHWM``, Linux). Not ``ru_maxrss``: Linux carries that over
    from the parent across fork + exec, so a child would report the parent's peak."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status (Linux only)")


def load_split(workdir: Path, name: str) -> Any:
    from ltr.data.ranking_data import RankingData

    return RankingData(
        features=np.load(workdir / f"{name}_features.npy"),
        labels=np.load(workdir / f"{name}_labels.npy"),
        qids=np.load(workdir / f"{name}_qids.npy"),
        offsets=np.load(workdir / f"{name}_offsets.npy"),
        name=name,
    )


def run_mode(mode: str, workdir: Path, rounds: int, seed: int) -> dict[str, Any]:
    """Train once in this process; returns timings (s), peaks (MiB) and test NDCG@10."""
    from ltr.config.schema import FitConfig, ModelConfig, TrainerConfig
    from ltr.data.splits import Splits

    model = ModelConfig()
    fit = FitConfig(num_boost_round=rounds, early_stopping_rounds=None, num_threads=2, show_progress=False)
    trainer = TrainerConfig(kind="dask", n_workers=2, threads_per_worker=1)
    start = time.perf_counter()
    with MemorySampler() as memory:
        if mode == "local":
            from ltr.training.local import fit_ranker

            splits = Splits(*(load_split(workdir, n) for n in ("train", "valid", "test")))
            result = fit_ranker(splits, model, fit, eval_at=[5, 10], seed=seed)
        elif mode == "dask":
            from ltr.dask.train import fit_dask

            splits = Splits(*(load_split(workdir, n) for n in ("train", "valid", "test")))
            result = fit_dask(splits, model, fit, trainer, eval_at=[5, 10], seed=seed)
        else:
            from ltr.dask.parquet import read_query_partitions
            from ltr.dask.train import dask_client, fit_partitioned

            with dask_client(trainer) as client:
                parts = {n: read_query_partitions(client, workdir / n) for n in ("train", "valid", "test")}
                result = fit_partitioned(
                    client, parts["train"], {"valid": parts["valid"], "test": parts["test"]},
                    model, fit, eval_at=[5, 10], seed=seed,
                )
    wall = time.perf_counter() - start
    mib = 1024 * 1024
    return {
        "mode": mode,
        "wall_s": wall,
        "train_s": result.seconds,
        "client_peak_mib": vm_hwm_kib() / 1024,
        "children_peak_mib": memory.peak_children / mib,
        "total_peak_mib": memory.peak_total / mib,
        "best_iteration": result.best_iteration,
        "test_ndcg10": result.evals_result["test"]["ndcg@10"][result.best_iteration - 1],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--features", type=int, default=136)
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--child", nargs=2, metavar=("MODE", "WORKDIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING if args.child else logging.INFO, format="%(message)s")
    if args.child:
        mode, workdir = args.child
        print(json.dumps(run_mode(mode, Path(workdir), args.rounds, args.seed)))
        return
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        t = time.perf_counter()
        prepare(workdir, args)
        logger.info("prepared .npy and Parquet splits in %.1f s", time.perf_counter() - t)
        for repeat in range(args.repeats):
            for mode in args.modes.split(","):
                cmd = [sys.executable, __file__, "--child", mode, str(workdir), "--rounds", str(args.rounds), "--seed", str(args.seed)]
                out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
                row = json.loads(out.strip().splitlines()[-1])
                row["repeat"] = repeat + 1
                logger.info("%s", row)
                results.append(row)
    header = "| mode | repeat | wall s | train s | client peak MiB | workers+children peak MiB | total peak MiB | best round | test ndcg@10 |"
    lines = [header, "|" + "---|" * 9]
    for r in results:
        lines.append(
            f"| {r['mode']} | {r['repeat']} | {r['wall_s']:.1f} | {r['train_s']:.1f} | {r['client_peak_mib']:.0f} | "
            f"{r['children_peak_mib']:.0f} | {r['total_peak_mib']:.0f} | {r['best_iteration']} | {r['test_ndcg10']:.4f} |"
        )
    print("\n".join(lines))


if __name__ == "__main__":
    main()

"""Benchmark the LETOR text reader against pandas, pyarrow and scikit-learn, and the cache.

Generates an MSLR-WEB10K-sized table (default 1.2M rows x 136 features, ~120 rows per query,
labels 0-4, a mix of integer counts and 6-digit decimals like MSLR's) in a temp dir, writes it
as LETOR text (``<label> qid:<q> 1:<v> ... 136:<v>``) and as CSV (same numbers, with a header),
then times, side by side (wall time, best of ``--repeat`` runs for the fast readers, and the
CPU time of all threads, which a busy machine distorts less):

- ``ltr`` parse of the LETOR text (numba kernel, a thread per core; JIT warm-up timed
  separately), no cache;
- ``ltr`` cached load of the same file (second read, same path / size / mtime);
- ``pandas.read_csv`` of the CSV (the C engine, one thread) and ``pyarrow.csv.read_csv``;
- ``sklearn.datasets.load_svmlight_file(query_id=True)`` of the LETOR text (to CSR), and the
  dense conversion it needs to match ``ltr``'s output.

Usage::

    python benchmarks/bench_readers.py                 # 1.2M rows, about 3-4 minutes on 2 cores
    python benchmarks/bench_readers.py --rows 200000   # quick look
    python benchmarks/bench_readers.py --skip-sklearn  # sklearn alone takes about as long as all else
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from ltr.data.formats.readers import read_ranking_file

logger = logging.getLogger("bench_readers")


def make_table(n_rows: int, n_features: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Labels, qids (contiguous, ~120 rows per query) and float64 features with MSLR-like values."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 240, size=n_rows // 60 + 1)
    qids = np.repeat(np.arange(1, sizes.shape[0] + 1), sizes)[:n_rows]
    labels = np.minimum(rng.geometric(0.55, n_rows) - 1, 4)
    features = np.empty((n_rows, n_features), dtype=np.float64)
    half = n_features // 2
    # integer counts (a third of them 0) and decimals rounded to 6 places
    counts = rng.poisson(8.0, size=(n_rows, half)).astype(np.float64)
    counts[rng.random((n_rows, half)) < 0.33] = 0
    features[:, :half] = counts
    features[:, half:] = np.round(rng.lognormal(0.0, 1.5, size=(n_rows, n_features - half)), 6)
    return labels, qids, features


def write_letor(
    path: Path, labels: np.ndarray, qids: np.ndarray, features: np.ndarray, *, docids: bool = False
) -> None:
    """``<label> qid:<q> 1:<v> ...`` lines, written in batches with pyarrow's string kernels; with
    ``docids``, each ends in MQ2008's comment ``#docid = GX<row> inc = 1 prob = 0.0212``."""
    n_rows, n_features = features.shape
    with path.open("wb") as out:
        for start in range(0, n_rows, 100_000):
            stop = min(start + 100_000, n_rows)
            cols: list[Any] = [
                pc.cast(pa.array(labels[start:stop]), pa.string()),
                pc.binary_join_element_wise("qid", pc.cast(pa.array(qids[start:stop]), pa.string()), ":"),
            ]
            for j in range(n_features):
                values = pc.cast(pa.array(features[start:stop, j]), pa.string())
                cols.append(pc.binary_join_element_wise(str(j + 1), values, ":"))
            if docids:
                ids = pc.cast(pa.array(np.arange(start, stop)), pa.string())
                cols.append(pc.binary_join_element_wise("#docid = GX", ids, " inc = 1 prob = 0.0212", ""))
            lines = pc.binary_join_element_wise(*cols, " ")
            out.write(("\n".join(lines.to_pylist()) + "\n").encode())


def write_csv(path: Path, labels: np.ndarray, qids: np.ndarray, features: np.ndarray) -> None:
    columns = {"label": labels, "qid": qids} | {f"f{j + 1}": features[:, j] for j in range(features.shape[1])}
    pcsv.write_csv(pa.table(columns), path)


def timed(
    label: str, fn: Callable[[], Any], results: dict[str, float], cpu: dict[str, float], repeat: int = 1
) -> Any:
    """Run ``fn`` ``repeat`` times; record the best wall time in ``results`` and that run's CPU time
    (all threads) in ``cpu``."""
    out = None
    for _ in range(repeat):
        out = None  # free the previous result before the next run
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        wall, used = time.perf_counter() - t0, time.process_time() - c0
        if label not in results or wall < results[label]:
            results[label], cpu[label] = wall, used
    logger.info("%-48s %8.2f s wall %8.2f s cpu", label, results[label], cpu[label])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_200_000)
    parser.add_argument("--features", type=int, default=136)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-sklearn", action="store_true")
    parser.add_argument("--repeat", type=int, default=2, help="runs of the fast readers; the best counts")
    parser.add_argument("--dir", type=Path, default=None, help="work dir (default: a temp dir)")
    parser.add_argument(
        "--docids", action="store_true",
        help="also time a copy of the LETOR file with MQ2008's '#docid = ...' comment on every line",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")

    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        work = Path(tmp)
        letor, csv, cache = work / "train.txt", work / "train.csv", work / "cache"
        t0 = time.perf_counter()
        labels, qids, features = make_table(args.rows, args.features, args.seed)
        write_letor(letor, labels, qids, features)
        write_csv(csv, labels, qids, features)
        logger.info(
            "generated %d rows x %d features: LETOR %.0f MB, CSV %.0f MB in %.0f s",
            args.rows, args.features, letor.stat().st_size / 1e6, csv.stat().st_size / 1e6,
            time.perf_counter() - t0,
        )
        results: dict[str, float] = {}
        cpu: dict[str, float] = {}
        tiny = work / "tiny.txt"
        tiny.write_text("1 qid:1 1:0.5\n")
        timed("ltr: JIT warm-up (once per install, cached)", lambda: read_ranking_file(tiny), results, cpu)

        import pandas as pd

        frame = timed("pandas.read_csv (CSV)", lambda: pd.read_csv(csv), results, cpu, args.repeat)
        del frame
        timed("pyarrow.csv.read_csv (CSV, multithreaded)", lambda: pcsv.read_csv(csv), results, cpu, args.repeat)
        data = timed("ltr: parse LETOR text (no cache)", lambda: read_ranking_file(letor), results, cpu, args.repeat)
        assert np.array_equal(data.features, features.astype(np.float32))
        assert np.array_equal(data.labels, labels)
        del data
        if args.docids:
            commented = work / "train_docids.txt"
            write_letor(commented, labels, qids, features, docids=True)
            with_ids = timed("ltr: parse LETOR text + #docid (no cache)", lambda: read_ranking_file(commented), results, cpu, args.repeat)
            assert with_ids.doc_ids is not None
            assert with_ids.doc_ids[-1] == f"GX{args.rows - 1}"
            del with_ids
            commented.unlink()
        timed("ltr: parse + write cache (first read)", lambda: read_ranking_file(letor, cache_dir=cache), results, cpu)
        cached = timed("ltr: cached load (same path, size, mtime)", lambda: read_ranking_file(letor, cache_dir=cache), results, cpu, args.repeat)
        assert np.array_equal(cached.features, features.astype(np.float32))
        del cached
        if not args.skip_sklearn:
            from sklearn.datasets import load_svmlight_file

            x, _, _ = timed(
                "sklearn load_svmlight_file(query_id=True) (CSR)",
                lambda: load_svmlight_file(str(letor), query_id=True, dtype=np.float32),
                results,
                cpu,
            )
            timed("sklearn: CSR -> dense float32", lambda: x.toarray(), results, cpu)
            del x

    parse = results["ltr: parse LETOR text (no cache)"]
    print(f"\nrows={args.rows} features={args.features}")
    print(f"{'reader':<50} {'wall s':>8} {'cpu s':>8} {'wall vs ltr parse':>18}")
    for label, seconds in results.items():
        print(f"{label:<50} {seconds:8.2f} {cpu[label]:8.2f} {seconds / parse:17.2f}x")
    pandas_t = results["pandas.read_csv (CSV)"]
    cached_t = results["ltr: cached load (same path, size, mtime)"]
    print(f"\nltr parse / pandas.read_csv = {parse / pandas_t:.2f} (target <= 2)")
    print(f"ltr parse / cached load     = {parse / cached_t:.1f}x (target >= 10)")
    if "sklearn load_svmlight_file(query_id=True) (CSR)" in results:
        sk = results["sklearn load_svmlight_file(query_id=True) (CSR)"] + results["sklearn: CSR -> dense float32"]
        print(f"sklearn (to dense) / ltr    = {sk / parse:.1f}x (target >= 5)")


if __name__ == "__main__":
    main()

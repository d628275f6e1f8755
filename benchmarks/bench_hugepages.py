"""numpy's huge pages against the first write of new memory (ltr.runtime.hugepages).

Each measurement runs in a fresh process, alternating ``NUMPY_MADVISE_HUGEPAGE=1`` (numpy's
default on Linux: large arrays advised for transparent huge pages) and ``=0`` (ltr's):

- ``first write``: ``np.ones`` of a new ``--mb`` MiB float32 array (its pages written once);
- ``parse``: ``ltr``'s read of a Parquet train file (``--queries`` queries of 40-200 rows x 136
  features, as ``bench_e2e.py`` generates it; no cache), the first large allocation of the process;
- each of them again just after ``--written-mb`` MiB of new files were written (and the previous
  ones deleted): what a first run on new files does, whose cache entries fill the page cache
  while it allocates (820 MB at 1.2M rows); the kernel then finds fewer free 2 MiB blocks.

Prints, per setting and measurement, the median and every run's wall time and the process's
system CPU time (where a stall of the kernel's compaction shows), and the machine's THP settings.
Every run of the parse checks that both settings give the same features, bit for bit.

::

    .venv/bin/python benchmarks/bench_hugepages.py [--repeats 6] [--mb 400] [--queries 6000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_e2e import generate as generate_tables

SETTINGS = {"huge pages (numpy's default)": "1", "small pages (ltr's)": "0"}

FIRST_WRITE = """
import json, resource, sys, time
import numpy as np
t = time.perf_counter()
a = np.ones(int(sys.argv[1]) * 2**20 // 4, dtype=np.float32)
wall = time.perf_counter() - t
print(json.dumps({"wall": wall, "sys": resource.getrusage(resource.RUSAGE_SELF).ru_stime}))
"""

PARSE = """
import hashlib, json, resource, sys, time
import ltr
from ltr.data.formats.readers import read_ranking_file
t = time.perf_counter()
data = read_ranking_file(sys.argv[1], cache_dir=None)
wall = time.perf_counter() - t
digest = hashlib.sha256(data.features.tobytes()).hexdigest()
print(json.dumps({"wall": wall, "sys": resource.getrusage(resource.RUSAGE_SELF).ru_stime, "digest": digest}))
"""


def _thp() -> str:
    parts = []
    for name in ("enabled", "defrag"):
        try:
            parts.append(f"{name}: {Path('/sys/kernel/mm/transparent_hugepage', name).read_text().strip()}")
        except OSError:
            parts.append(f"{name}: unknown")
    return "; ".join(parts)


def _write(folder: Path, mb: int) -> None:
    """``mb`` MiB of new files in ``folder`` (the previous ones removed), written through the page cache."""
    for old in folder.glob("written-*"):
        old.unlink()
    block = os.urandom(2**20)
    for i in range(max(1, mb // 64)):
        with open(folder / f"written-{i}", "wb") as f:
            for _ in range(min(64, mb)):
                f.write(block)


def _run(code: str, arg: str, value: str) -> dict[str, float | str]:
    env = dict(os.environ, NUMPY_MADVISE_HUGEPAGE=value)
    out = subprocess.run([sys.executable, "-c", code, arg], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=6)
    parser.add_argument("--mb", type=int, default=400, help="MiB of the first-write array")
    parser.add_argument("--queries", type=int, default=6000, help="queries of the Parquet train file")
    parser.add_argument("--written-mb", type=int, default=820, help="MiB of files written before the second variant")
    args = parser.parse_args()
    print(f"THP: {_thp()}; load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
    results: dict[tuple[str, str], list[dict[str, float | str]]] = {}  # (measurement, setting) -> runs
    with tempfile.TemporaryDirectory() as tmp:
        generate_tables(Path(tmp), args.queries)
        train = str(Path(tmp) / "train.parquet")
        written = Path(tmp) / "written"
        written.mkdir()
        for i in range(args.repeats):
            for label, value in SETTINGS.items():
                for after in ("", f", after writing {args.written_mb} MiB"):
                    if after:
                        _write(written, args.written_mb)
                    results.setdefault((f"first write of {args.mb} MiB{after}", label), []).append(
                        _run(FIRST_WRITE, str(args.mb), value)
                    )
                    if after:
                        _write(written, args.written_mb)
                    results.setdefault((f"parse of the Parquet train file{after}", label), []).append(
                        _run(PARSE, train, value)
                    )
            print(f"repetition {i + 1}/{args.repeats} done", flush=True)
    digests = {r["digest"] for (what, _), runs in results.items() if what.startswith("parse") for r in runs}
    assert len(digests) == 1, "the settings gave different features"
    print("\n| measurement | setting | wall s, median (each) | system CPU s, median (each) |\n|---|---|---|---|")
    for (what, label), runs in results.items():
        wall = [float(r["wall"]) for r in runs]
        cpu = [float(r["sys"]) for r in runs]
        print(
            f"| {what} | {label} | {statistics.median(wall):.2f} ({' / '.join(f'{w:.2f}' for w in wall)}) | "
            f"{statistics.median(cpu):.2f} ({' / '.join(f'{c:.2f}' for c in cpu)}) |"
        )
    print(f"\nload average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()

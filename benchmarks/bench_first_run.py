"""The wheel's first ``ltr train`` against its second (issue 44: the first <= 1.5x the second).

Builds the wheel of this tree (``python -m build --no-isolation --wheel``, as
``tests/test_package.py`` builds it), or takes the wheels given with ``--wheel`` (e.g. one built
from an older commit, to compare). Then, ``--pairs`` times, for each wheel in turn (interleaved,
so a busy machine's load falls on all of them alike): a fresh venv with the wheel
(``tests/test_package.make_venv``: the wheel alone, its dependencies through a ``.pth`` to this
interpreter's site-packages, whose bytecode exists as ``pip install`` would have written it), an
empty folder and an empty ``LTR_CACHE_DIR``, no numba cache (numba writes it beside the venv's
kernels, new with each venv), and the user's ``ltr train`` twice in that folder (the default
experiment; the second run finds the store, numba's cache and the data cache the first left).

Each run's wall and CPU seconds (the process and its children), the load average before it and
whether it printed the compile line; then per wheel the medians, and the medians of the
per-pair ratios first/second (wall, and CPU: the steadier one on a busy machine).

    .venv/bin/python benchmarks/bench_first_run.py [--pairs 3] [--wheel W --wheel W2] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from bench_run_costs import timed

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ltr.compiled.kernel_signatures import MESSAGE  # noqa: E402
from tests.test_package import _NOT_SOURCE, make_venv  # noqa: E402

#: Variables of this shell a user's first run would not have (the repo's code, its stores, caches).
DROPPED = ("PYTHONPATH", "LTR_TRACKING_URI", "MLFLOW_TRACKING_URI", "NUMBA_CACHE_DIR", "NUMBA_DISABLE_JIT",
           "PYTHONDONTWRITEBYTECODE", "LTR_CACHE_DIR")  # fmt: skip


@dataclass
class Pair:
    """One fresh install's first and second run: (wall s, cpu s, load average before, compiled)."""

    runs: list[tuple[float, float, float, bool]] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        return self.runs[0][0] / self.runs[1][0]

    @property
    def cpu_ratio(self) -> float:
        return self.runs[0][1] / self.runs[1][1]


def build_wheel(out: Path) -> Path:
    """The wheel of this tree, built from a copy of it (the tree stays clean of build/)."""
    src = out / "src"
    shutil.copytree(REPO, src, ignore=_NOT_SOURCE)
    subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--wheel", "-o", str(out), str(src)],
                   check=True, capture_output=True, timeout=1800)  # fmt: skip
    (wheel,) = out.glob("*.whl")
    return wheel


def one_pair(wheel: Path, root: Path) -> Pair:
    """A fresh venv with ``wheel`` under ``root`` and its first and second ``ltr train``."""
    venv = make_venv(root, wheel)
    folder = root / "empty"
    folder.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in DROPPED}
    env["LTR_CACHE_DIR"] = str(root / "ltr-cache")
    pair = Pair()
    for run in (1, 2):
        load = os.getloadavg()[0]
        log = root / f"stderr-{run}.txt"
        wall, cpu = timed(["bash", "-c", f'exec "$0" train 2> "{log}"', str(venv / "bin" / "ltr")], folder, env)
        pair.runs.append((wall, cpu, load, MESSAGE in log.read_text()))
    return pair


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=3, help="fresh installs per wheel (default 3)")
    p.add_argument("--wheel", type=Path, action="append", help="a built wheel (repeatable; default: build this tree's)")
    p.add_argument("--keep", type=Path, help="work here and keep it (venvs, logs), else a temp dir")
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ltr-first-run-")) if args.keep is None else args.keep
    work.mkdir(parents=True, exist_ok=True)
    try:
        wheels = [w.resolve() for w in args.wheel] if args.wheel else [build_wheel(work / "wheel")]
        results: dict[Path, list[Pair]] = {w: [] for w in wheels}
        for i in range(args.pairs):
            for j, wheel in enumerate(wheels):
                pair = one_pair(wheel, work / f"pair-{i}-{j}")
                results[wheel].append(pair)
                cells = "; ".join(f"run {n + 1} {w:.2f} s wall, {c:.2f} s cpu, load {ld:.1f}{', compiled' if comp else ''}"
                                  for n, (w, c, ld, comp) in enumerate(pair.runs))  # fmt: skip
                print(f"{wheel} #{i + 1}: {cells}; first/second {pair.ratio:.2f}x", flush=True)
        print("\n| wheel | pairs | first wall s | second wall s | first cpu s | second cpu s | first/second wall | cpu |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for wheel, pairs in results.items():
            med = [statistics.median(pr.runs[r][k] for pr in pairs) for r, k in ((0, 0), (1, 0), (0, 1), (1, 1))]
            ratio, cpu = statistics.median(pr.ratio for pr in pairs), statistics.median(pr.cpu_ratio for pr in pairs)
            print(f"| {wheel} | {len(pairs)} | {med[0]:.2f} | {med[1]:.2f} | {med[2]:.2f} | {med[3]:.2f} | {ratio:.2f}x | {cpu:.2f}x |")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

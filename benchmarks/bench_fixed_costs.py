"""The fixed costs of ``ltr`` (issue 31): what a command costs around the work it does.

Each row runs its command in a fresh process ``--repeat`` times (default 5) and reports the best
wall time, the best CPU time (user + system, all threads) and the peak resident memory of the
process (``getrusage(RUSAGE_CHILDREN)`` of a wrapper that starts only that command). On a busy
machine the CPU time is the steadier figure; the floors (``python -c pass``, ``import hydra``)
tell what a machine's start-up costs at all.

Rows: the floors (``python -c pass``, ``import numpy``, ``import hydra``, numba ready to load a
kernel); ``ltr --help``; ``ltr train --help``; two config errors; ``ltr evaluate`` on a
2-line TREC run (JSON and terminal output) and on runs just under and over the size its kernels
run interpreted up to (:mod:`ltr.compiled.kernels`); ``ltr evaluate`` on a generated 2M-line run (2,000 topics x 1,000 docs,
:func:`bench_trec.generate`, never downloaded) asked for nDCG@5,10 only, beside trec_eval asked
for ``ndcg_cut.5,10`` (``--trec-eval BIN``, ``--trec-eval-src DIR`` to build a checkout with
``make``, or ``trec_eval`` on the PATH; skipped without one). Each command's exit code is checked
(a config error must exit 2), and ltr's nDCG@10 must equal trec_eval's.

To add a row (e.g. ``make train``), add a function to :data:`ROWS`: it gets the options and the
work folder and returns :class:`Row` values (a label, the command, the expected exit code).

::

    .venv/bin/python benchmarks/bench_fixed_costs.py                 # every row, best of 5
    .venv/bin/python benchmarks/bench_fixed_costs.py --skip-large    # start-up rows only
    .venv/bin/python benchmarks/bench_fixed_costs.py --trec-eval-src ~/src/trec_eval --dir /tmp/fixed
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench_trec import build_trec_eval, generate

PY = sys.executable
LTR = [PY, "-m", "ltr"]


@dataclass(frozen=True)
class Row:
    """One measured command: ``label`` in the table, ``cmd`` run as is, ``code`` its exit code."""

    label: str
    cmd: list[str]
    code: int = 0
    target: str = ""
    cwd: Path | None = None


@dataclass
class Result:
    row: Row
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    peak_mb: float = 0.0
    out: str = ""


WRAPPER = """
import json, resource, subprocess, sys, time
t0 = time.perf_counter()
p = subprocess.run(sys.argv[1:], capture_output=True)
wall = time.perf_counter() - t0
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"wall": wall, "cpu": r.ru_utime + r.ru_stime, "rss_mb": r.ru_maxrss / 1024,
                  "rc": p.returncode, "out": p.stdout.decode(), "err": p.stderr.decode()[-2000:]}))
"""


def measure(row: Row, repeat: int) -> Result:
    """Run ``row.cmd`` ``repeat`` times, each in a fresh process under its own wrapper."""
    result = Result(row)
    for _ in range(repeat):
        done = subprocess.run([PY, "-c", WRAPPER, *row.cmd], capture_output=True, check=True, cwd=row.cwd)
        info = json.loads(done.stdout)
        if info["rc"] != row.code:
            raise RuntimeError(f"{row.label}: exit {info['rc']}, expected {row.code}: {info['err']}")
        result.walls.append(float(info["wall"]))
        result.cpus.append(float(info["cpu"]))
        result.peak_mb = max(result.peak_mb, float(info["rss_mb"]))
        result.out = str(info["out"])
    return result


#: numba imported and its CPU target's typing and lowering registries loaded: what the first call
#: of any cached kernel pays before loading the kernel itself (the registries import scipy.linalg
#: for numba's BLAS check).
NUMBA_READY = "import numba.core.registry as r; r.cpu_target.target_context.refresh()"


def floors(args: argparse.Namespace, work: Path) -> list[Row]:
    """What any Python start-up costs here (no ``ltr`` command can be faster)."""
    return [Row("floor: `python -c pass`", [PY, "-c", "pass"]),
            Row("floor: `python -c 'import numpy'`", [PY, "-c", "import numpy"]),
            Row("floor: `python -c 'import hydra'`", [PY, "-c", "import hydra"]),
            Row("floor: numba imported, its CPU target ready (what a first kernel call loads)", [PY, "-c", NUMBA_READY])]  # fmt: skip


def startup(args: argparse.Namespace, work: Path) -> list[Row]:
    """``--help`` and config errors: start-up and config composition only."""
    return [
        Row("`ltr --help`", [*LTR, "--help"], target="<= 0.5 s"),
        Row("`ltr train --help`", [*LTR, "train", "--help"], target="<= 0.5 s", cwd=work),
        Row("config error `ltr train model.num_leafs=3`", [*LTR, "train", "model.num_leafs=3"], 2, "<= 0.5 s", work),
        Row("config error `ltr train 'eval.k=[0]'`", [*LTR, "train", "eval.k=[0]"], 2, "<= 0.5 s", work),
    ]


def _trec_pair(work: Path, name: str, topics: int, docs: int) -> tuple[Path, Path]:
    """A run of ``topics`` x ``docs`` lines (distinct scores) and qrels judging every other doc."""
    qrels, run = work / f"qrels-{name}.txt", work / f"run-{name}.txt"
    run.write_text("".join(f"{t} Q0 d{t}-{d} {d + 1} {1.0 - d / docs:.6f} x\n" for t in range(topics) for d in range(docs)))
    qrels.write_text("".join(f"{t} 0 d{t}-{d} {d % 3}\n" for t in range(topics) for d in range(0, docs, 2)))
    return qrels, run


def evaluate_small(args: argparse.Namespace, work: Path) -> list[Row]:
    """``ltr evaluate`` on a 2-line run (its start-up), as JSON and as the terminal table; and on
    runs just under and over the size up to which its kernels run interpreted
    (``ltr.data.formats.trec.INTERPRET_MAX_BYTES``: 64 KiB of qrels and run together)."""
    qrels, run = work / "qrels2.txt", work / "run2.txt"
    qrels.write_text("1 0 d1 1\n1 0 d2 0\n")
    run.write_text("1 Q0 d1 1 2.0 x\n1 Q0 d2 2 1.0 x\n")
    cmd = [*LTR, "evaluate", "--qrels", str(qrels), "--run", str(run)]
    rows = [Row("`ltr evaluate` 2-line run (--json)", [*cmd, "--json"], target="<= 0.35 s, <= 120 MB"),
            Row("`ltr evaluate` 2-line run (terminal table)", cmd, target="<= 0.35 s, <= 120 MB")]  # fmt: skip
    for name, topics in (("under", 30), ("over", 60)):
        q, r = _trec_pair(work, name, topics, 50)
        size = (q.stat().st_size + r.stat().st_size) / 1024
        way = "interpreted" if name == "under" else "compiled"
        rows.append(Row(f"`ltr evaluate` {topics * 50:,}-line run ({size:.0f} KiB with its qrels: {way})",
                        [*LTR, "evaluate", "--qrels", str(q), "--run", str(r), "--json"]))  # fmt: skip
    return rows


def evaluate_large(args: argparse.Namespace, work: Path) -> list[Row]:
    """``ltr evaluate`` and trec_eval on the same 2M-line run, nDCG@5,10 asked for."""
    if args.skip_large:
        return []
    folder = args.dir or work
    folder.mkdir(parents=True, exist_ok=True)
    qrels, run = folder / "qrels.txt", folder / "run.txt"
    if not run.exists():
        qrels.unlink(missing_ok=True)
        generate(folder, args.topics, args.docs, 60)
    lines = f"{args.topics * args.docs / 1e6:g}M-line run"
    ltr = [*LTR, "evaluate", "--qrels", str(qrels), "--run", str(run), "--preset", "trec_eval",
           "--measure", "ndcg", "--k", "5", "--k", "10", "--json"]  # fmt: skip
    rows = [Row(f"`ltr evaluate --preset trec_eval --measure ndcg --k 5 --k 10`, {lines}", ltr,
                target="<= trec_eval's time, <= 2x its memory")]  # fmt: skip
    trec_eval = args.trec_eval or (build_trec_eval(args.trec_eval_src) if args.trec_eval_src else None)
    if trec_eval is None and shutil.which("trec_eval"):
        trec_eval = Path(str(shutil.which("trec_eval")))
    if trec_eval is not None:
        cmd = [str(trec_eval), "-m", "ndcg_cut.5,10", str(qrels), str(run)]
        rows.append(Row(f"`trec_eval -m ndcg_cut.5,10`, {lines}", cmd))
    return rows


#: The row groups, in table order: add a function here for a new row (it gets the parsed options
#: and a work folder, and returns its rows).
ROWS: list[Callable[[argparse.Namespace, Path], list[Row]]] = [floors, startup, evaluate_small, evaluate_large]


def check_large(results: list[Result]) -> str:
    """ltr's nDCG@10 against trec_eval's (4 decimals, as trec_eval prints), when both ran."""
    ours = next((r for r in results if r.row.label.startswith("`ltr evaluate --preset")), None)
    theirs = next((r for r in results if r.row.label.startswith("`trec_eval")), None)
    if ours is None or theirs is None:
        return ""
    ndcg = json.loads(ours.out)["ndcg_at_10"]
    peer = next(float(f[2]) for f in (line.split() for line in theirs.out.splitlines()) if f[:2] == ["ndcg_cut_10", "all"])
    if f"{ndcg:.4f}" != f"{peer:.4f}":
        raise RuntimeError(f"nDCG@10 differs: ltr {ndcg} vs trec_eval {peer}")
    return f"nDCG@10: ltr {ndcg:.6f}, trec_eval {peer:.4f} (equal to trec_eval's 4 decimals)"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=5, help="runs per row (best wall and CPU time shown)")
    p.add_argument("--topics", type=int, default=2000)
    p.add_argument("--docs", type=int, default=1000)
    p.add_argument("--skip-large", action="store_true", help="leave out the 2M-line rows")
    p.add_argument("--trec-eval", type=Path, help="a trec_eval binary")
    p.add_argument("--trec-eval-src", type=Path, help="a trec_eval source checkout to build with make")
    p.add_argument("--dir", type=Path, help="keep the generated run and qrels here (default: a temp dir)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        rows = [row for group in ROWS for row in group(args, work)]
        results = [measure(row, args.repeat) for row in rows]
        check = check_large(results)
    print(f"\n| what (best of {args.repeat}) | wall s | cpu s | peak MB | target |")
    print("|---|---:|---:|---:|---|")
    for r in results:
        print(f"| {r.row.label} | {min(r.walls):.2f} | {min(r.cpus):.2f} | {r.peak_mb:.0f} | {r.row.target} |")
    if check:
        print(f"\n{check}")


if __name__ == "__main__":
    main()

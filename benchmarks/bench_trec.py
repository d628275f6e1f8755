"""``ltr evaluate --qrels --run`` on a TREC-size run: wall time and peak memory beside its peers.

Generates a run of ``--topics`` x ``--docs`` lines (``topic Q0 docno rank score tag``, docnos
like MS MARCO's ``msmarco_doc_NN_NNNNNNNN``) and a qrels file with ``--judged`` graded judgments
per topic (half of them on ranked docnos), then times each evaluator in its own process
(``/usr/bin/time``-style: wall seconds and peak resident memory from ``wait4``) and checks that
they print the same nDCG@10, P@10 and RR.

Peers: trec_eval itself (``--trec-eval BIN``, or ``--trec-eval-src DIR``: a checkout of
usnistgov/trec_eval that the script builds with ``make``; nothing is downloaded), pytrec_eval,
ranx and ir_measures (each skipped when not installed: ``pip install -e '.[bench]'``). The
Python peers parse the files the way their documentation shows.

::

    .venv/bin/python benchmarks/bench_trec.py                      # 7,000 topics x 1,000 docs
    .venv/bin/python benchmarks/bench_trec.py --topics 1000        # a quick look
    .venv/bin/python benchmarks/bench_trec.py --trec-eval-src ~/src/trec_eval --dir /tmp/trec
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

PYTREC = """
import json, sys
import pytrec_eval
qrels, run = {}, {}
with open(sys.argv[1]) as f:
    for line in f:
        t, _, d, r = line.split()
        qrels.setdefault(t, {})[d] = int(r)
with open(sys.argv[2]) as f:
    for line in f:
        t, _, d, _, s, _ = line.split()
        run.setdefault(t, {})[d] = float(s)
res = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "P.10", "recip_rank"}).evaluate(run)
n = len(res)
print(json.dumps({k: sum(v[k] for v in res.values()) / n for k in ("ndcg_cut_10", "P_10", "recip_rank")}))
"""


RANX = """
import json, sys
from ranx import Qrels, Run, evaluate
qrels = Qrels.from_file(sys.argv[1], kind="trec")
run = Run.from_file(sys.argv[2], kind="trec")
res = evaluate(qrels, run, ["ndcg@10", "precision@10", "mrr"], make_comparable=True)
print(json.dumps({"ndcg": res["ndcg@10"], "p": res["precision@10"], "rr": res["mrr"]}))
"""

IR_MEASURES = """
import json, sys
import ir_measures
from ir_measures import nDCG, P, RR
qrels = ir_measures.read_trec_qrels(sys.argv[1])
run = ir_measures.read_trec_run(sys.argv[2])
res = ir_measures.calc_aggregate([nDCG @ 10, P @ 10, RR], qrels, run)
print(json.dumps({"ndcg": res[nDCG @ 10], "p": res[P @ 10], "rr": res[RR]}))
"""


def build_trec_eval(src: Path) -> Path:
    """``make`` in a trec_eval checkout; returns the binary."""
    subprocess.run(["make", "-C", str(src)], check=True, capture_output=True)
    return src / "trec_eval"


def trec_eval_values(out: str) -> tuple[float, float, float]:
    vals = {f[0]: float(f[2]) for f in (line.split() for line in out.splitlines()) if len(f) == 3 and f[1] == "all"}
    return vals["ndcg_cut_10"], vals["P_10"], vals["recip_rank"]


def generate(folder: Path, topics: int, docs: int, judged: int, seed: int = 0) -> tuple[Path, Path]:
    """Write ``run.txt`` and ``qrels.txt`` with numpy (a few seconds for 7M lines)."""
    rng = np.random.default_rng(seed)
    run, qrels = folder / "run.txt", folder / "qrels.txt"
    with run.open("w") as f:
        for t in range(topics):
            ids = rng.choice(50_000_000, size=docs, replace=False)
            scores = np.sort(rng.random(docs))[::-1] * 20
            lines = [
                f"{1000 + t} Q0 msmarco_doc_{i % 60:02d}_{i:08d} {r + 1} {s:.6f} bench\n"
                for r, (i, s) in enumerate(zip(ids.tolist(), scores.tolist(), strict=True))
            ]
            f.writelines(lines)
            # judgments: half on ranked docs, half elsewhere
            ranked = rng.choice(ids, size=judged // 2, replace=False)
            other = rng.choice(50_000_000, size=judged - judged // 2, replace=False) + 50_000_000
            labels = rng.choice(4, size=judged, p=[0.5, 0.3, 0.15, 0.05])
            with qrels.open("a") as g:
                g.writelines(
                    f"{1000 + t} 0 msmarco_doc_{i % 60:02d}_{i:08d} {lab}\n"
                    for i, lab in zip(
                        np.concatenate([ranked, other]).tolist(), labels.tolist(), strict=True
                    )
                )
    return qrels, run


def run_measured(cmd: list[str]) -> tuple[float, float, str]:
    # peak RSS of one child: a wrapper process reports getrusage(RUSAGE_CHILDREN) after it
    wrapper = (
        "import resource, subprocess, sys, time, json\n"
        "t0 = time.perf_counter()\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True)\n"
        "wall = time.perf_counter() - t0\n"
        "sys.stderr.write(p.stderr.decode())\n"
        "print(json.dumps({'wall': wall, 'rss_mb': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, "
        "'rc': p.returncode, 'out': p.stdout.decode()}))\n"
    )
    res = subprocess.run([sys.executable, "-c", wrapper, *cmd], capture_output=True, check=True)
    info = json.loads(res.stdout)
    if info["rc"]:
        raise RuntimeError(f"{cmd[:3]} failed: {res.stderr.decode()[-2000:]}")
    return float(info["wall"]), float(info["rss_mb"]), str(info["out"])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--topics", type=int, default=7000)
    p.add_argument("--docs", type=int, default=1000)
    p.add_argument("--judged", type=int, default=60)
    p.add_argument("--skip-pytrec", action="store_true")
    p.add_argument("--skip-python-peers", action="store_true", help="skip ranx and ir_measures")
    p.add_argument("--trec-eval", type=Path, help="a trec_eval binary to time")
    p.add_argument("--trec-eval-src", type=Path, help="a trec_eval source checkout to build and time")
    p.add_argument("--dir", type=Path, help="keep the generated files here (default: a temp dir)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.dir or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        qrels, run = folder / "qrels.txt", folder / "run.txt"
        if not run.exists():
            t0 = time.perf_counter()
            qrels.unlink(missing_ok=True)
            generate(folder, args.topics, args.docs, args.judged)
            print(
                f"generated {args.topics * args.docs:,} run lines ({run.stat().st_size / 1e6:.0f} MB) "
                f"in {time.perf_counter() - t0:.1f} s"
            )
        ltr = [sys.executable, "-m", "ltr.cli.main", "evaluate", "--qrels", str(qrels), "--run",
               str(run), "--preset", "trec_eval", "--k", "5", "--k", "10", "--json"]  # fmt: skip
        rows = []
        wall, rss, out = run_measured(ltr)
        ours = json.loads(out)
        rows.append(("ltr evaluate --preset trec_eval --k 5 --k 10", wall, rss))
        values = {"ltr": (ours["ndcg_at_10"], ours["p_at_10"], ours["rr"])}
        trec_eval = args.trec_eval or (build_trec_eval(args.trec_eval_src) if args.trec_eval_src else None)
        if trec_eval is None and shutil.which("trec_eval"):
            trec_eval = Path(str(shutil.which("trec_eval")))
        if trec_eval is not None:
            cmd = [str(trec_eval), "-m", "ndcg_cut.5,10", "-m", "P.5,10", "-m", "recip_rank", str(qrels), str(run)]
            wall, rss, out = run_measured(cmd)
            rows.append(("trec_eval 10.0 (-m ndcg_cut.5,10 -m P.5,10 -m recip_rank)", wall, rss))
            values["trec_eval"] = trec_eval_values(out)
        if not args.skip_pytrec and importlib.util.find_spec("pytrec_eval"):
            wall, rss, out = run_measured([sys.executable, "-c", PYTREC, str(qrels), str(run)])
            theirs = json.loads(out)
            rows.append(("pytrec_eval (parse in Python + evaluate)", wall, rss))
            values["pytrec_eval"] = (theirs["ndcg_cut_10"], theirs["P_10"], theirs["recip_rank"])
        peers = [("ranx", RANX, "ranx (Qrels/Run.from_file, evaluate)"),
                 ("ir_measures", IR_MEASURES, "ir_measures (read_trec_*, calc_aggregate)")]  # fmt: skip
        for module, script, label in peers:
            if args.skip_python_peers or not importlib.util.find_spec(module):
                continue
            wall, rss, out = run_measured([sys.executable, "-c", script, str(qrels), str(run)])
            theirs = json.loads(out)
            rows.append((label, wall, rss))
            values[module] = (theirs["ndcg"], theirs["p"], theirs["rr"])
        print(f"\n| evaluator ({args.topics:,} topics x {args.docs:,} docs) | wall s | peak MB |")
        print("|---|---:|---:|")
        for name, w, r in rows:
            print(f"| {name} | {w:.2f} | {r:.0f} |")
        print()
        for name, (n10, p10, rr) in values.items():
            print(f"{name}: nDCG@10 {n10:.6f}  P@10 {p10:.6f}  RR {rr:.6f}")


if __name__ == "__main__":
    main()

"""Pruning's saving: one Optuna search with the median pruner, one without, on the same data.

Runs ``ltr train hparams_search=optuna hydra.sweeper.n_trials=N`` twice in temp dirs (the same
seed, so TPE proposes the same first trials), then reads each sweep's children from its MLflow
store: the boosting rounds every trial ran (the steps of ``iter/valid/ndcg_at_10``), the pruned
trials, and the sweep's best value (``sweep/best/valid/ndcg_at_10``, pruned trials never count).

    .venv/bin/python benchmarks/bench_pruning.py                   # 10 trials, the default data
    .venv/bin/python benchmarks/bench_pruning.py --trials 6 debug=default
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mlflow.tracking import MlflowClient


def search(workdir: Path, trials: int, extra: list[str], pruner: list[str]) -> dict[str, float]:
    db = workdir / "mlflow.db"
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "ltr", "train", "hparams_search=optuna", f"hydra.sweeper.n_trials={trials}",
         "fit.show_progress=false", f"tracking.uri=sqlite:///{db}", *pruner, *extra],
        cwd=workdir, check=True, capture_output=True, text=True,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    client = MlflowClient(f"sqlite:///{db}")
    experiment = client.get_experiment_by_name("ltr")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id], max_results=1000)
    (parent,) = [r for r in runs if r.data.tags.get("ltr.role") == "sweep"]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    rounds = [len(client.get_metric_history(c.info.run_id, "iter/valid/ndcg_at_10")) for c in children]
    return {
        "trials": len(children),
        "rounds": sum(rounds),
        "pruned": sum(c.data.tags.get("ltr.optuna.state") == "PRUNED" for c in children),
        "best": parent.data.metrics.get("sweep/best/valid/ndcg_at_10", float("nan")),
        "seconds": seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("overrides", nargs="*", help="extra ltr train overrides (e.g. debug=default)")
    args = parser.parse_args()
    results = {}
    for name, pruner in (("median pruner", []), ("no pruning", ["hydra.sweeper.pruner=null"])):
        with tempfile.TemporaryDirectory() as tmp:
            results[name] = search(Path(tmp), args.trials, args.overrides, pruner)
        print(name, results[name], flush=True)
    on, off = results["median pruner"], results["no pruning"]
    print("| search | trials | pruned | boosting rounds | best valid nDCG@10 | wall s |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, r in results.items():
        print(f"| {name} | {r['trials']} | {r['pruned']} | {r['rounds']} | {r['best']:.4f} | {r['seconds']:.0f} |")
    print(f"rounds saved: {1 - on['rounds'] / off['rounds']:.1%}; best value difference: {on['best'] - off['best']:+.4f}")


if __name__ == "__main__":
    main()

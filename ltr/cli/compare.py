"""``ltr compare RUN [RUN ...]``: per-query, per-stratum comparison of runs with significance.

Loads the runs' per-query tables from the tracking store (:mod:`ltr.tracking.runs`), refuses
runs evaluated on different data or with different metric conventions unless ``--force``,
compares them (:mod:`ltr.compare`) and prints a rich table (or ``--markdown`` / ``--json``);
``--log`` records the comparison as its own MLflow run (in ``<experiment> (comparisons)``); ``--explain`` adds, per stratum, the
features whose importance differs most from the baseline's (:mod:`ltr.explain.difference`).
`load_comparison` is the same thing as a function, for notebooks.

The work (pandas, scipy, MLflow) is imported after the arguments are parsed: ``--help`` and an
argument error pay for argparse only.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import TYPE_CHECKING

from ltr.cli.support.args import OneLineParser
from ltr.cli.support.verb import run_verb
from ltr.runtime.terminal import console as terminal_console

if TYPE_CHECKING:
    from ltr.compare.comparison import Comparison
    from ltr.compare.loading import LoadedComparison
    from ltr.explain import ImportanceDifference

log = logging.getLogger(__name__)

def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="ltr compare",
        description=(
            "Compare runs per query against a baseline, overall and per list-length stratum: means, "
            "deltas with paired-bootstrap CIs, paired t-test and sign-flip p-values (Holm-corrected), "
            "wins/ties/losses."
        ),
    )
    parser.add_argument("runs", nargs="+", metavar="RUN", help="run id, run name (in --experiment) or run-id prefix")
    parser.add_argument("--baseline", metavar="RUN", help="the run the others are compared with (default: the first RUN)")
    parser.add_argument("--split", default="test", help="split whose per-query table is compared (default: test)")
    parser.add_argument(
        "--metric", dest="metrics", action="append", metavar="NAME",
        help="per-query metric column, repeatable (default: ndcg_at_10)",
    )
    parser.add_argument(
        "--composite", action="append", metavar="NAME=W*MEASURE+...",
        help="compare a weighted sum of per-query measures, e.g. blend=0.4*ndcg_at_3+0.6*ndcg_at_10 "
        "(repeatable; the syntax of ltr evaluate --composite; its parts must be columns of the runs' tables)",
    )
    parser.add_argument("--experiment", default="ltr", help="experiment of run names (default: ltr); --log logs into '<experiment> (comparisons)'")
    parser.add_argument("--tracking-uri", default=None, help="tracking store (default: $LTR_TRACKING_URI, $MLFLOW_TRACKING_URI, ./mlflow.db, the project root's mlflow.db)")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--markdown", action="store_true", help="print markdown instead of a terminal table")
    output.add_argument("--json", action="store_true", help="print JSON instead of a terminal table")
    parser.add_argument("--log", action="store_true", help="log the comparison as an MLflow run linked to the compared runs")
    parser.add_argument(
        "--explain", action="store_true",
        help="add, per stratum, the features whose importance (mean |centred TreeSHAP contribution|) differs most from the baseline's",
    )
    parser.add_argument("--force", action="store_true", help="compare even runs on different data or metric conventions")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and randomisation draws (default: 0)")
    parser.add_argument("--n-resamples", type=int, default=10_000, help="bootstrap resamples and randomisation draws (default: 10000)")
    return parser


def print_terminal(comparison: Comparison) -> None:
    """Print ``comparison``'s tables and legend to the terminal (160 columns when not a terminal)."""

    from ltr.compare.render import legend, rich_tables

    console = terminal_console(width=160)
    for table in rich_tables(comparison):
        console.print(table)
    for line in legend(comparison):
        console.print(line, style="dim", highlight=False, markup=False)


def importance_differences(loaded: LoadedComparison) -> list[ImportanceDifference]:
    """``--explain``: each run's feature importance on the compared split (logged by ``ltr
    explain``, else computed from its model), against the baseline's, per stratum."""
    from ltr.explain import importance_difference, run_importance
    from ltr.models.logged import load_run

    labels = loaded.comparison.labels
    importance = [run_importance(load_run(r.run_id, tracking_uri=loaded.store.uri), loaded.split) for r in loaded.runs]
    return [
        importance_difference(importance[0], other, baseline_label=labels[0], other_label=label)
        for other, label in zip(importance[1:], labels[1:], strict=True)
    ]


def _log(loaded: LoadedComparison, *, experiment: str, markdown: str, explained: list[ImportanceDifference]) -> str:
    comparison = loaded.comparison
    others = ", ".join(comparison.labels[1:])
    name = f"compare {loaded.split}: {others} vs {comparison.baseline}"
    return loaded.store.log_comparison(
        experiment=experiment,
        run_name=name if len(name) <= 250 else name[:247] + "...",
        runs=loaded.runs,
        baseline=loaded.runs[0],
        split=loaded.split,
        metrics=comparison.metrics,
        markdown=markdown,
        data=comparison.to_dict() | ({"explain": [d.to_dict() for d in explained]} if explained else {}),
        params={"seed": comparison.seed, "n_resamples": comparison.n_resamples, "confidence": comparison.confidence},
    )


def print_differences(difference: ImportanceDifference) -> None:
    """Print one run's importance differences from the baseline's, per stratum."""
    from ltr.experiment.report import print_table

    rows = [[r.group, r.feature, f"{r.baseline:.4f}", f"{r.other:.4f}", f"{r.delta:+.4f}"] for r in difference.rows]
    print_table(
        ["stratum", "feature", difference.baseline, difference.other, "delta"], rows,
        title=f"feature importance, {difference.other} vs {difference.baseline}: mean |centred contribution| per query",
    )


def main(argv: list[str] | None = None) -> int:
    """``ltr compare``; returns the exit code. User errors raise `LtrUserError` (``ltr`` prints
    them as one line and exits 2)."""
    return run_verb(argv, build_parser(), _run)


def _run(args: argparse.Namespace) -> int:
    from ltr.compare.loading import load_comparison
    from ltr.compare.render import to_json, to_markdown
    from ltr.tracking.runs import comparisons_experiment

    loaded = load_comparison(
        args.runs,
        baseline=args.baseline,
        tracking_uri=args.tracking_uri,
        experiment=args.experiment,
        split=args.split,
        metrics=args.metrics or ([] if args.composite else ["ndcg_at_10"]),
        composites=args.composite or [],
        force=args.force,
        seed=args.seed,
        n_resamples=args.n_resamples,
    )
    for note in loaded.notes:
        print(f"ltr compare: note: {note}", file=sys.stderr)
    explained = importance_differences(loaded) if args.explain else []
    markdown = to_markdown(loaded.comparison) + "".join("\n" + d.to_markdown() for d in explained)
    if args.json:
        text = to_json(loaded.comparison)
        print(json.dumps(json.loads(text) | {"explain": [d.to_dict() for d in explained]}, indent=2) if explained else text)
    elif args.markdown:
        print(markdown, end="")
    else:
        print_terminal(loaded.comparison)
        for difference in explained:
            print_differences(difference)
    if args.log:
        run_id = _log(loaded, experiment=args.experiment, markdown=markdown, explained=explained)
        print(f"logged the comparison as MLflow run {run_id} in {comparisons_experiment(args.experiment)!r}", file=sys.stderr)
    return 0

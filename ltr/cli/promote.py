"""``ltr promote RUN_OR_SWEEP --name NAME [--alias champion]``: register a run's model in the MLflow Model Registry.

A sweep's parent promotes its best job (the parent's ``ltr.sweep.best_run_id``). When the alias
already points to a model evaluated on the same data, the two runs are compared per query and per
stratum first (as ``ltr compare`` does), and a candidate worse on the sweep's metric (on
``--split``, default valid: the split models are chosen on; test is for the report) is refused
unless ``--force``. Promoting the run the alias already points to does nothing (exit 0); a run
whose model already has a version of ``--name`` gets the alias moved there, nothing registered.
Names and aliases MLflow would refuse, unfinished, failed or killed runs and runs without a logged
model are refused before anything is written. The work is :mod:`ltr.models.promote`, imported
after the arguments are parsed (``--help`` and an argument error import no MLflow).
"""

from __future__ import annotations

import argparse
import logging

from ltr.cli.support.args import OneLineParser
from ltr.cli.support.verb import run_verb


def build_parser() -> OneLineParser:
    parser = OneLineParser(prog="ltr promote", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("run", metavar="RUN_OR_SWEEP", help="run id, id prefix or run name; a sweep's parent promotes its best job")
    parser.add_argument("--name", required=True, help="the registered model's name")
    parser.add_argument("--alias", default="champion", help="the alias to point at the new version (default: champion)")
    parser.add_argument(
        "--split", default="valid", choices=["valid", "test"],
        help="split of the comparison and the decision (default: valid, as models are chosen; test is for the report)",
    )
    parser.add_argument("--force", action="store_true", help="promote even if worse than the alias's current model")
    parser.add_argument("--n-resamples", type=int, default=10_000, help="bootstrap resamples of the comparison (default 10000)")
    parser.add_argument("--experiment", default="ltr", help="experiment of a run name (default: ltr)")
    parser.add_argument("--tracking-uri", default=None, help="the store (default: $LTR_TRACKING_URI, $MLFLOW_TRACKING_URI, ./mlflow.db, the project root's mlflow.db)")
    return parser


def main(argv: list[str] | None = None) -> int:
    return run_verb(argv, build_parser(), _run, log_level=logging.WARNING)


def _run(args: argparse.Namespace) -> int:
    from ltr.cli.compare import print_terminal
    from ltr.models.promote import apply_promotion, plan_promotion

    plan = plan_promotion(
        args.run, name=args.name, alias=args.alias, split=args.split, tracking_uri=args.tracking_uri,
        experiment=args.experiment, n_resamples=args.n_resamples,
    )
    if plan.current:
        for note in plan.store.notes:
            print(f"ltr: {note}")
        print(
            f"ltr: models:/{args.name}@{args.alias} already points to version {plan.existing}, "
            f"the model of run {plan.run.short_id} ({plan.run.run_name}): nothing to do"
        )
        return 0
    for note in (*plan.store.notes, *plan.notes):
        print(f"ltr: {note}")
    if plan.comparison is not None:
        print(f"ltr: {args.name}@{args.alias} (version {plan.holder.version if plan.holder else '?'}) against run {plan.run.short_id}:")
        print_terminal(plan.comparison.comparison)
    done = apply_promotion(plan, force=args.force)
    was = f"; it was version {done.replaced.version} (run {done.replaced.run_id[:8]})" if done.replaced else ""
    value = "n/a" if plan.value is None else f"{plan.value:.4f}"
    run = f"run {done.run.short_id} ({done.run.run_name})"
    what = f"registered {run} as" if done.registered else f"{run} is already"  # already: nothing registered
    print(f"ltr: {what} {done.name} version {done.version}, {plan.metric} = {value}; models:/{done.name}@{done.alias} points to it{was}")
    return 0

"""``ltr abtest A B``: what a traffic experiment of two runs would show, simulated before any traffic.

Resolves the two runs as ``ltr compare`` does, re-makes their rankings from their logged config
and model, and simulates an A/B test and team-draft interleaving under the click log's click
model (:mod:`ltr.compare.abtest`, :mod:`ltr.models.abtest_run`); prints the report (or ``--markdown`` / ``--json``), ``--figure PATH``
saves the power curves, ``--log`` records it as an MLflow run linked to both runs (in ``<experiment> (comparisons)``). The work is
imported after the arguments are parsed (``--help`` and an argument error import none of it).
"""

from __future__ import annotations

import argparse
import json
import sys

from ltr.cli.support.args import OneLineParser
from ltr.cli.support.verb import run_verb
from ltr.errors import LtrUserError
from ltr.runtime.progress import ProgressLine


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="ltr abtest",
        description=(
            "Simulate an A/B test of two runs' rankings (A the control, B the treatment) under the click model of "
            "their click log: per-arm CTR and purchase rate with 95 % intervals, the difference, its p-value, the "
            "days for 80 % power; and team-draft interleaving on the same sessions. Seeded: a rerun prints the same."
        ),
    )
    parser.add_argument("a", metavar="A", help="control run: run id, run name (in --experiment) or run-id prefix")
    parser.add_argument("b", metavar="B", help="treatment run, as A")
    parser.add_argument("--split", default="test", help="split whose queries the sessions draw (default: test)")
    parser.add_argument("--sessions-per-day", type=float, default=100_000.0, help="all sessions a day (default: 100000)")
    parser.add_argument("--traffic-share", type=float, default=0.05, help="share of them in the experiment (default: 0.05)")
    parser.add_argument("--days", type=float, default=14.0, help="days the simulated experiment runs (default: 14)")
    parser.add_argument("--seed", type=int, default=0, help="seed of every draw (default: 0)")
    parser.add_argument(
        "--refits", type=int, default=0,
        help="a user's click log: refits of its click model on resampled queries, to report the spread of the model's own "
        "B - A (default: 0)",
    )  # fmt: skip
    parser.add_argument(
        "--randomized-column", metavar="COL", default=None,
        help="a user's click log: its column that is 1 on the sessions shown in random order (constant within a query; "
        "default: the run's data.randomized_column); the CTR intervals are anchored on the log with the examination "
        "those sessions give, and withheld without them",
    )  # fmt: skip
    parser.add_argument("--experiment", default="ltr", help="experiment of run names (default: ltr); --log logs into '<experiment> (comparisons)'")
    parser.add_argument("--tracking-uri", default=None, help="tracking store (default: the one ltr train uses)")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--markdown", action="store_true", help="print markdown (the default prints it too, as plain text)")
    output.add_argument("--json", action="store_true", help="print every number as JSON")
    parser.add_argument("--figure", metavar="PATH", help="save the power curves (A/B vs interleaving) as a PNG")
    parser.add_argument("--log", action="store_true", help="log the simulation as an MLflow run linked to A and B")
    return parser


def main(argv: list[str] | None = None) -> int:
    """``ltr abtest``; returns the exit code (user errors raise `LtrUserError`: one line, exit 2)."""
    return run_verb(argv, build_parser(), _run)


def _run(args: argparse.Namespace) -> int:
    if args.seed < 0:
        raise LtrUserError(f"--seed={args.seed} must be an integer >= 0")
    if args.refits < 0:
        raise LtrUserError(f"--refits={args.refits} must be an integer >= 0")
    if args.randomized_column is not None and not args.randomized_column.strip():
        raise LtrUserError("--randomized-column needs a column name")
    from ltr.cli.support.output_guard import check_outputs

    figure_path = check_outputs({"--figure": args.figure}, tracking_uri=args.tracking_uri).get("--figure") if args.figure else None
    from ltr.compare.abtest_render import power_figure, to_markdown
    from ltr.models.abtest_run import load_abtest, log_abtest
    from ltr.tracking.runs import comparisons_experiment

    loaded = load_abtest(
        args.a, args.b, tracking_uri=args.tracking_uri, experiment=args.experiment, split=args.split,
        sessions_per_day=args.sessions_per_day, traffic_share=args.traffic_share, days=args.days, seed=args.seed,
        refits=args.refits, progress=ProgressLine("ltr abtest: refitting the click model on resampled queries"), randomized_column=args.randomized_column,
    )  # fmt: skip
    for note in loaded.store.notes:
        print(f"ltr abtest: note: {note}", file=sys.stderr)
    if loaded.model_note:  # a user's log: what the simulation rests on (stderr under --json)
        print(f"ltr abtest: {loaded.model_note}", file=sys.stderr if args.json else sys.stdout)
    anchoring = loaded.result.anchoring
    if args.json and anchoring is not None and not anchoring.anchored:  # the report's verdict line, on stderr
        from ltr.compare.abtest import verdict

        print(f"ltr abtest: {verdict(loaded.result)}", file=sys.stderr)
    markdown = to_markdown(loaded.result, loaded.a.label, loaded.b.label, split=loaded.split)
    print(json.dumps(loaded.result.to_dict(), indent=2) if args.json else markdown, end="\n" if args.json else "")
    figure = power_figure(loaded.result, loaded.a.label, loaded.b.label) if args.figure or args.log else None
    if figure_path is not None and figure is not None:
        figure.savefig(figure_path, dpi=110)
        print(f"saved the power curves to {args.figure}", file=sys.stderr)
    if args.log:
        run_id = log_abtest(loaded, experiment=args.experiment, markdown=markdown, figure=figure)
        print(f"logged the simulation as MLflow run {run_id} in {comparisons_experiment(args.experiment)!r}", file=sys.stderr)
    return 0

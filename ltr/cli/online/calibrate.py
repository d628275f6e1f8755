"""``ltr calibrate TABLE --offline COL --online COL``: what +0.1 of an offline metric has been
worth online, from a table of past A/B tests (the line, its 95 % interval and p-value).

Prints ``each +0.1 <offline> ≈ +x <unit> [lo, hi] (p = ...)`` (:mod:`ltr.online.calibrate`);
``--figure PATH`` saves the scatter and line; ``--log`` records it as its own MLflow run (metrics,
figure, the table as an artifact). The work is imported after the arguments are parsed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ltr.cli.support.args import OneLineParser
from ltr.cli.support.verb import run_verb


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="ltr calibrate",
        description=(
            "Fit the line of past A/B tests' online delta on their offline delta (weighted by --n when given): "
            "slope, 95 % interval, p-value, as 'each +0.1 <offline> = x <unit> [lo, hi] (p = ...)'."
        ),
    )
    parser.add_argument("table", metavar="TABLE", type=Path, help="past experiments, one a row (CSV, TSV or Parquet)")
    parser.add_argument("--offline", required=True, metavar="COL", help="column of the offline delta (e.g. ndcg_at_10)")
    parser.add_argument("--online", required=True, metavar="COL", help="column of the online delta (e.g. gmv_pct)")
    parser.add_argument("--n", metavar="COL", default=None, help="column of each test's sample size: weighted least squares")
    parser.add_argument("--unit", default=None, help="how the online delta reads (e.g. '%% GMV'; default: its column name)")
    parser.add_argument("--json", action="store_true", help="print every number as JSON")
    parser.add_argument("--figure", metavar="PATH", help="save the experiments and the line as a PNG")
    parser.add_argument("--log", action="store_true", help="log the calibration as its own MLflow run")
    parser.add_argument("--experiment", default="ltr-calibration", help="experiment of --log (default: ltr-calibration)")
    parser.add_argument("--tracking-uri", default=None, help="tracking store (default: the one ltr train uses)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """``ltr calibrate``; returns the exit code (user errors raise `LtrUserError`: one line, exit 2)."""
    return run_verb(argv, build_parser(), _run)


def _run(args: argparse.Namespace) -> int:
    from ltr.cli.support.output_guard import check_outputs
    from ltr.online.calibrate import calibrate, calibration_figure, check_columns, log_calibration

    check_columns(args.offline, args.online)
    figure_path = check_outputs({"--figure": args.figure}, inputs=[args.table], tracking_uri=args.tracking_uri).get("--figure")
    from ltr.tracking import find_tracking_uri

    cal = calibrate(args.table, args.offline, args.online, weights=args.n, unit=args.unit)
    print(json.dumps(cal.to_dict(), indent=2) if args.json else cal.sentence())
    figure = calibration_figure(cal) if figure_path is not None or args.log else None
    if figure_path is not None and figure is not None:
        figure.savefig(figure_path, dpi=110)
        print(f"saved the figure to {args.figure}", file=sys.stderr)
    if args.log:
        uri = find_tracking_uri(args.tracking_uri, writing=True)
        run_id = log_calibration(cal, uri=uri, experiment=args.experiment, source=args.table, figure=figure)
        print(f"logged the calibration as MLflow run {run_id} in {args.experiment!r}", file=sys.stderr)
    return 0

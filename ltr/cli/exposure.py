"""``ltr exposure LOG``: where a click log's exposure ends, and the cut-off K it suggests.

Reads a click log file (:mod:`ltr.data.click_file`: columns query, position, click), builds the
exposure report (:mod:`ltr.metrics.exposure`) under the chosen propensity model and prints the
share of clicks and of estimated examinations at positions <= k, the 50 / 80 / 95 % points and,
with ``--k``, the advice on that cut-off. The work is imported after the arguments are parsed
(``--help`` and an argument error import none of it).

Examples
--------
::

    ltr exposure clicks.csv
    ltr exposure clicks.parquet --eta 1.0 --k 10 --json
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ltr.cli.args import OneLineParser
from ltr.cli.json_out import dumps
from ltr.errors import LtrUserError
from ltr.terminal import console as terminal_console

if TYPE_CHECKING:
    from ltr.metrics.exposure import ExposureReport


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="ltr exposure",
        description="Share of clicks and of estimated examinations at positions <= k in a click log, "
        "the smallest k covering 50/80/95 %, and advice on the cut-off of NDCG@k.",
    )
    p.add_argument("log", type=Path, metavar="LOG", help="click log: .csv, .tsv or .parquet with query, position, click columns")
    p.add_argument("--query-column", default="query")
    p.add_argument("--position-column", default="position")
    p.add_argument("--click-column", default="click")
    p.add_argument(
        "--first-position", type=int, choices=(0, 1), default=0,
        help="the position of the top result in the file: 0 (default, as LightGBM) or 1",
    )
    model = p.add_mutually_exclusive_group()
    model.add_argument(
        "--eta", type=float,
        help="propensities of a position-based model: (1 / rank) ** eta (the synthetic click log's)",
    )
    model.add_argument(
        "--propensities",
        help="propensity per position from the top, comma-separated (the last extends), e.g. 1,0.6,0.45",
    )
    p.add_argument(
        "--min-propensity", type=float, default=0.01,
        help="lower clip of estimated propensities (default 0.01). Without --eta or --propensities "
        "the propensities are estimated from the log itself (click-through rate by position "
        "relative to the top: biased upwards at the top when the logged ranking put relevant "
        "documents there; a randomized log or a known curve is better)",
    )
    p.add_argument("--k", type=int, help="the cut-off you evaluate with (e.g. 10): prints advice on it")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run ``ltr exposure``; returns the exit code. User errors raise `LtrUserError`."""
    args = build_parser().parse_args(argv)
    if args.k is not None and args.k < 1:
        raise LtrUserError(f"--k {args.k}: give a cut-off >= 1")
    if not 0 < args.min_propensity <= 1:
        raise LtrUserError(f"--min-propensity {args.min_propensity} must be in (0, 1]")
    if args.eta is not None and not (math.isfinite(args.eta) and args.eta >= 0):
        raise LtrUserError(f"--eta {args.eta} must be a finite number >= 0")
    curve = None
    if args.propensities is not None:
        try:
            curve = [float(v) for v in args.propensities.split(",")]
        except ValueError:
            raise LtrUserError(f"--propensities {args.propensities!r} is not a comma-separated list of numbers") from None
        if not all(math.isfinite(v) and 0 < v <= 1 for v in curve):
            raise LtrUserError(f"--propensities {args.propensities!r}: every propensity must be in (0, 1]")
    import numpy as np

    from ltr.data.click_file import read_click_file
    from ltr.data.clicks import examination_curve
    from ltr.metrics.exposure import exposure_report
    from ltr.metrics.ips import estimate_propensities

    log = read_click_file(
        args.log, query_column=args.query_column, position_column=args.position_column,
        click_column=args.click_column, first_position=args.first_position,
    )  # fmt: skip
    n_positions = int(log.positions.max()) + 1
    if curve is not None:
        props, source = np.asarray(curve), "given"
    elif args.eta is not None:
        props, source = examination_curve(n_positions, eta=float(args.eta)), f"eta={args.eta:g}"
    else:
        try:
            props = estimate_propensities(
                np.minimum(log.clicks, 1), log.positions, n_positions=n_positions, min_propensity=args.min_propensity
            )
        except ValueError as exc:
            raise LtrUserError(f"{args.log}: {exc}; give --eta or --propensities") from None
        source = "estimated"
    report = exposure_report(log.positions, log.clicks, props, propensity_source=source)
    advice = report.advice(args.k) if args.k is not None else None
    if args.json:
        out = report.metrics() | {"rows": [list(r) for r in report.rows()], "advice": advice}
        print(dumps(out, lambda key: key.startswith(("exposure_k", "click_k")), allow_nan=True))  # the cut-offs k as integers
    else:
        _print(report, args.log, advice)
    return 0


def _print(report: ExposureReport, path: Path, advice: str | None) -> None:
    from rich.table import Table

    from ltr.metrics.exposure import COVERAGES

    table = Table(title=f"ltr exposure {path} ({report.propensity_source} propensities)", title_justify="left")
    table.add_column("k", justify="right")
    table.add_column("clicks at <= k", justify="right")
    table.add_column("examinations at <= k", justify="right")
    for k, click, exam in report.rows():
        table.add_row(str(k), f"{click:.1%}", f"{exam:.1%}")
    console = terminal_console()
    console.print(table)
    points = ", ".join(f"{pct} % at k={report.k_for('exam', pct)}" for pct in COVERAGES)
    clicks = ", ".join(f"{pct} % at k={report.k_for('click', pct)}" for pct in COVERAGES)
    console.print(f"examinations: {points}\nclicks: {clicks}")
    if advice:
        console.print(f"advice: {advice}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

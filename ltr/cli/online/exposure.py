"""``ltr exposure LOG``: where a click log's exposure ends, and the cut-off K it suggests.

Reads a click log file (:mod:`ltr.data.feedback.click_file`: columns query, position, click), builds the
exposure report (:mod:`ltr.metrics.clicks.exposure`) under the chosen propensity model and prints the
share of clicks and of estimated examinations at positions <= k, the 50 / 80 / 95 % points,
with ``--k`` the advice on that cut-off, and the propensity curve in use (estimated: with its
bootstrap interval where one can be earned, else one line saying why not and what would give
one; "not identified" where the log holds too few clicks). The work is imported after the arguments are parsed
(``--help`` and an argument error import none of it).

Examples
--------
::

    ltr exposure clicks.csv
    ltr exposure clicks.parquet --eta 1.0 --k 10 --json
    ltr exposure clicks.parquet --propensity em --features f1,f2,f3
    ltr exposure clicks.parquet --propensity randomized --randomized-column randomized
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ltr.cli.support.args import OneLineParser
from ltr.cli.support.json_out import dumps
from ltr.cli.support.verb import run_verb
from ltr.errors import LtrUserError
from ltr.runtime.terminal import console as terminal_console

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from ltr.metrics.clicks.exposure import ExposureReport
    from ltr.metrics.clicks.propensity import PropensityEstimate


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
    model.add_argument(
        "--propensity", choices=("ctr", "em", "randomized"),
        help="estimate the propensities from the log itself (the default, without --eta or --propensities): "
        "ctr (click-through rate by position relative to the top: biased towards the top when the logged "
        "ranking put relevant documents there; a randomized log or a known curve is better), em "
        "(regression EM: needs --features) or randomized (click-through rate by position on the sessions "
        "shown in random order only: needs --randomized-column)",
    )
    p.add_argument(
        "--randomized-column", metavar="COL",
        help="column of LOG: 1 on the rows of a session shown in a uniformly random order, else 0 (constant "
        "within a query); --propensity randomized estimates on those sessions only",
    )
    p.add_argument(
        "--features", metavar="COL,COL,...",
        help="columns of LOG holding the rows' features (numbers; empty cells are missing): the inputs of "
        "--propensity em's attractiveness model",
    )
    p.add_argument(
        "--min-propensity", type=float, default=0.01,
        help="lower clip of estimated propensities (default 0.01)",
    )
    p.add_argument("--bootstrap", type=int, default=50, help="resamples of the queries behind the estimated curve's 95 %% interval (default 50; 0: none)")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default 0)")
    p.add_argument("--k", type=int, help="the cut-off you evaluate with (e.g. 10): prints advice on it")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run ``ltr exposure``; returns the exit code. User errors raise `LtrUserError`."""
    return run_verb(argv, build_parser(), _run)


def _run(args: argparse.Namespace) -> int:
    if args.k is not None and args.k < 1:
        raise LtrUserError(f"--k {args.k}: give a cut-off >= 1")
    curve = parse_propensities(args.propensities) if args.propensities is not None else None
    features = [c.strip() for c in args.features.split(",") if c.strip()] if args.features else []
    if args.features is not None and not features:
        raise LtrUserError(f"--features {args.features!r}: give column names, comma-separated")
    from ltr.online.exposure_log import ExposureOptions, exposure_of_log

    options = ExposureOptions(
        log=args.log, query_column=args.query_column, position_column=args.position_column, click_column=args.click_column,
        first_position=args.first_position, eta=args.eta, curve=curve, method=args.propensity or "ctr", features=tuple(features),
        randomized_column=args.randomized_column, min_propensity=args.min_propensity, bootstrap=args.bootstrap, seed=args.seed,
    )  # fmt: skip
    found = exposure_of_log(options)
    report, estimate, props, note = found.report, found.estimate, found.used, found.note
    advice = report.advice(args.k) if args.k is not None else None
    if args.json:
        out = report.metrics() | {"rows": [list(r) for r in report.rows()], "advice": advice, "propensities": estimate.to_dict(), "propensities_used": [float(v) for v in props]}
        if note:
            out["no_interval"] = note
        print(dumps(out, lambda key: key.startswith(("exposure_k", "click_k")), allow_nan=True))  # the cut-offs k as integers
    else:
        _print(report, args.log, advice)
        _print_curve(estimate, props, args.k)
        if note:
            terminal_console().print(note, highlight=False, soft_wrap=True)  # one line, however wide
    return 0


#: The click count below which an estimated position is not identified (:data:`ltr.metrics.clicks.propensity.MIN_POSITION_CLICKS`).
MIN_CLICKS = 5


def parse_propensities(text: str) -> list[float]:
    """``--propensities 1,0.6,0.45``: :func:`ltr.metrics.clicks.propensity.parse_propensity_list` (the
    last value extends to every deeper position)."""
    from ltr.metrics.clicks.propensity import parse_propensity_list

    try:
        return parse_propensity_list(text)
    except ValueError as exc:
        raise LtrUserError(f"--propensities {exc}") from None


def _print_curve(estimate: PropensityEstimate, used: NDArray[np.float64], k: int | None) -> None:
    console = terminal_console()
    level = f", {estimate.confidence:.0%} bootstrap interval of {estimate.n_bootstrap} resamples" if estimate.n_bootstrap else ", no interval"
    if estimate.n_bootstrap and (estimate.fit or {}).get("checked"):
        level = (
            f", {estimate.confidence:.0%} interval: the randomized sessions' ({estimate.n_bootstrap} resamples) where EM lies inside it"
        )
    if estimate.method == "given":
        level = ""
    console.print(f"propensities by position ({estimate.method}{level}; not identified: fewer than {MIN_CLICKS} clicks):")
    from ltr.online.exposure_log import curve_lines

    for line in curve_lines(estimate, used, k):
        console.print(line, highlight=False)


def _print(report: ExposureReport, path: Path, advice: str | None) -> None:
    from rich.table import Table

    from ltr.metrics.clicks.exposure import COVERAGES

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

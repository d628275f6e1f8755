"""``ltr ope RUN [RUN_B] --log FILE --data FILE...``: off-policy estimates of a run's ranking's
online metrics from a logged click log, before any traffic; with two runs, the paired difference.

The run's model scores ``--data`` (the feature tables of the logged documents), the log's
impressions are joined to the scores by (query, doc_id), the queries the run trained on are left
out (``--include-training-queries`` keeps them), and the estimators asked for (``--estimators``,
default IPS, self-normalised IPS, doubly robust and the direct method; ``rips`` and
``cascade_dr`` under the cascade model) estimate CTR, clicks@k and (when the log has it) the
purchase rate, each with a 95 % bootstrap interval (except the direct method, a model's guess:
no interval, no verdict), effective sample size, largest weight and support coverage
(:mod:`ltr.online.ope`). One run: the estimates are logged on it as
``ope/<estimator>/<metric>`` unless ``--no-log``. Two runs A B: each run's estimates and B - A
on the same queries, with a verdict; nothing is logged (each run's numbers there are on the
queries neither trained on, not its own). The work is imported after the arguments are parsed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ltr.cli.support.args import OneLineParser
from ltr.cli.support.verb import run_verb
from ltr.errors import LtrUserError


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="ltr ope",
        description=(
            "Estimate a run's online metrics (CTR, clicks@k, purchase rate) from a logged click log, on the queries it "
            "did not train on: IPS, SNIPS, doubly robust, direct method (and cascade RIPS, cascade DR), each with a "
            "seeded 95 % bootstrap interval over queries (the direct method, a model's guess, with none), its "
            "effective sample size, largest weight and support coverage; logged on the run as ope/<estimator>/<metric>. With two runs A B: the paired difference B - A."
        ),
    )
    parser.add_argument("runs", nargs="+", metavar="RUN", help="run id, id prefix or run name (as ltr predict takes it); two runs: A B")
    parser.add_argument("--log", required=True, type=Path, metavar="FILE",
                        help="click log (CSV/TSV/Parquet): query, doc_id, position, click[, purchase]")  # fmt: skip
    parser.add_argument("--data", required=True, nargs="+", type=Path, metavar="FILE",
                        help="feature tables of the logged documents (with a doc_id column), scored by the run's model")  # fmt: skip
    props = parser.add_mutually_exclusive_group()
    props.add_argument("--propensities", metavar="P1,P2,...",
                       help="examination of positions 1, 2, ... (position 1 first, e.g. 1,0.6,0.4; the last value extends)")  # fmt: skip
    props.add_argument("--eta", type=float, help="examination (1/rank)^ETA (the synthetic log's curve)")
    props.add_argument("--propensities-from", metavar="RUN",
                       help="the examination curve RUN estimated (its propensity/pos_k; a position not identified takes the last identified value)")  # fmt: skip
    parser.add_argument("--estimators", metavar="E1,E2,...",
                        help="of ips,snips,dr,dm,rips,cascade_dr (default: ips,snips,dr,dm)")  # fmt: skip
    parser.add_argument("--include-training-queries", action="store_true",
                        help="keep the queries the run trained on (its estimates there are biased upward)")  # fmt: skip
    parser.add_argument("--assume-position-based", action="store_true",
                        help="print the intervals of ips, snips and dr even on a log whose clicks look like a cascade "
                             "(they then may miss the truth)")  # fmt: skip
    parser.add_argument("--clip", type=float, default=None, help="cap of the weights (default: none)")
    parser.add_argument("--k", type=int, default=10, help="the candidate shows its top K (default: 10)")
    parser.add_argument("--first-position", type=int, choices=[0, 1], default=0, help="the log's top position (default: 0)")
    parser.add_argument("--doc-id-column", default="doc_id", help="document id column of --data (default: doc_id)")
    parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples of the queries (default: 1000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and the model's halves (default: 0)")
    parser.add_argument("--json", action="store_true", help="print every number as JSON")
    parser.add_argument("--no-log", action="store_true", help="print only; log nothing on the run")
    parser.add_argument("--experiment", default="ltr", help="experiment of a run name (default: ltr)")
    parser.add_argument("--tracking-uri", default=None, help="tracking store (default: the one ltr train uses)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """``ltr ope``; returns the exit code (user errors raise `LtrUserError`: one line, exit 2)."""
    return run_verb(argv, build_parser(), _run)


def _run(args: argparse.Namespace) -> int:
    from ltr.cli.support.json_out import dumps
    from ltr.models.ope_run import (
        OpeOptions,
        log_ope,
        parse_estimators,
        parse_propensities,
        run_ope,
        run_paired,
    )
    from ltr.online.ope_render import estimates_json, estimates_lines, paired_json, paired_lines

    if len(args.runs) > 2:
        raise LtrUserError(f"ltr ope takes one run, or two (A B) for their difference; got {len(args.runs)}: {' '.join(args.runs)}")
    estimators = parse_estimators(args.estimators)
    propensities, eta = parse_propensities(args.propensities, args.eta, args.propensities_from)
    options = OpeOptions(
        propensities, eta, args.k, args.clip, n_bootstrap=args.bootstrap, seed=args.seed,
        first_position=args.first_position, doc_id_column=args.doc_id_column, tracking_uri=args.tracking_uri,
        experiment=args.experiment, propensities_from=args.propensities_from, estimators=estimators,
        include_training_queries=args.include_training_queries, assume_position_based=args.assume_position_based,
    )  # fmt: skip
    if len(args.runs) == 2:  # both runs on the same queries and B - A; nothing logged
        paired = run_paired(args.runs[0], args.runs[1], args.log, args.data, options)
        first = paired.training.line([paired.run_a.label, paired.run_b.label])
        print(first, file=sys.stderr if args.json else sys.stdout)
        print(dumps(paired_json(paired, first)) if args.json else "\n".join(paired_lines(paired)))
        return 0
    ope = run_ope(args.runs[0], args.log, args.data, options, logs=not args.no_log)
    assert ope.training is not None
    first = ope.training.line([ope.run.label])
    print(first, file=sys.stderr if args.json else sys.stdout)
    print(dumps(estimates_json(ope, first)) if args.json else "\n".join(estimates_lines(ope)))
    if not args.no_log:
        log_ope(ope)
        print(f"logged as ope/<estimator>/<metric> on run {ope.run.label}", file=sys.stderr)
    return 0

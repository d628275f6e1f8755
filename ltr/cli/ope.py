"""``ltr ope RUN --log FILE --data FILE...``: off-policy estimates of a run's ranking's online
metrics from a logged click log, before any traffic.

The run's model scores ``--data`` (the feature tables of the logged documents), the log's
impressions are joined to the scores by (query, doc_id), and IPS, self-normalised IPS, the
direct method and doubly robust estimates of CTR, clicks@k and (when the log has it) the
purchase rate are printed with 95 % bootstrap intervals and effective sample sizes
(:mod:`ltr.online.ope`); ``--log-to-run`` (default on) records them on the run as
``ope/<estimator>/<metric>``. The work is imported after the arguments are parsed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ltr.cli.args import OneLineParser


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="ltr ope",
        description=(
            "Estimate a run's online metrics (CTR, clicks@k, purchase rate) from a logged click log: IPS, SNIPS, "
            "direct method and doubly robust, each with a seeded 95 %% bootstrap interval over queries and its "
            "effective sample size; logged on the run as ope/<estimator>/<metric>."
        ),
    )
    parser.add_argument("run", metavar="RUN", help="run id, id prefix or run name (as ltr predict takes it)")
    parser.add_argument("--log", required=True, type=Path, metavar="FILE",
                        help="click log (CSV/TSV/Parquet): query, doc_id, position, click[, purchase]")  # fmt: skip
    parser.add_argument("--data", required=True, nargs="+", type=Path, metavar="FILE",
                        help="feature tables of the logged documents (with a doc_id column), scored by the run's model")  # fmt: skip
    props = parser.add_mutually_exclusive_group()
    props.add_argument("--propensities", metavar="P1,P2,...", help="examination of positions 1, 2, ... (position 1 first, e.g. 1,0.6,0.4)")
    props.add_argument("--eta", type=float, help="examination (1/rank)^ETA (the synthetic log's curve)")
    parser.add_argument("--clip", type=float, default=None, help="cap of the weights e(new)/e(logged) (default: none)")
    parser.add_argument("--k", type=int, default=10, help="the candidate shows its top K (default: 10)")
    parser.add_argument("--first-position", type=int, choices=[0, 1], default=0, help="the log's top position (default: 0)")
    parser.add_argument("--doc-id-column", default="doc_id", help="document id column of --data (default: doc_id)")
    parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples of the queries (default: 1000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and the model's halves (default: 0)")
    parser.add_argument("--no-log", action="store_true", help="print only; log nothing on the run")
    parser.add_argument("--experiment", default="ltr", help="experiment of a run name (default: ltr)")
    parser.add_argument("--tracking-uri", default=None, help="tracking store (default: the one ltr train uses)")
    return parser


#: The printed order of the metrics (by their first letters): CTR, clicks@k, purchase rate.
_ORDER = ("ctr", "clic", "purc")


def _rank(metric: str) -> int:
    return _ORDER.index(metric[:4]) if metric[:4] in _ORDER else len(_ORDER)


def main(argv: list[str] | None = None) -> int:
    """``ltr ope``; returns the exit code (user errors raise `LtrUserError`: one line, exit 2)."""
    parser = build_parser()
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    from ltr.models.ope_run import log_ope, parse_propensities, run_ope

    propensities, eta = parse_propensities(args.propensities, args.eta)
    ope = run_ope(
        args.run, args.log, args.data, propensities=propensities, eta=eta, k=args.k, clip=args.clip,
        n_bootstrap=args.bootstrap, seed=args.seed, first_position=args.first_position,
        doc_id_column=args.doc_id_column, tracking_uri=args.tracking_uri, experiment=args.experiment, logs=not args.no_log,
    )  # fmt: skip
    r = ope.result
    clip = "none" if r.clip is None else f"{r.clip:g} ({r.n_clipped} weights clipped)"
    print(
        f"off-policy estimates of run {ope.run.label} on {ope.log_path}: {r.n_queries} queries, "
        f"{ope.matched_rows} of {ope.log_rows} impressions scored ({ope.unlogged_scored_rows} scored documents never logged); "
        f"propensities {ope.propensities}, top k={r.k}, clip {clip}, largest weight {r.max_weight:.3g}"
    )
    print(f"{'estimator':<9} {'metric':<16} {'value':>9} {'95 % interval':>22} {'ESS':>9}")
    for (estimator, metric), e in sorted(r.estimates.items(), key=lambda item: _rank(item[0][1])):
        print(f"{estimator:<9} {metric:<16} {e.value:>9.4f} {f'[{e.low:.4f}, {e.high:.4f}]':>22} {e.ess:>9.1f}")
    if not args.no_log:
        log_ope(ope)
        print(f"logged as ope/<estimator>/<metric> on run {ope.run.label}", file=sys.stderr)
    return 0

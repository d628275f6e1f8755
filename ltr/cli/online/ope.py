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
from typing import Any

from ltr.cli.support.args import OneLineParser
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


#: The printed order of the metrics (by their first letters): CTR, clicks@k, purchase rate.
_ORDER = ("ctr", "clic", "purc")


def _rank(metric: str) -> int:
    return _ORDER.index(metric[:4]) if metric[:4] in _ORDER else len(_ORDER)


#: The interval column of an estimate without one: a model's guess (dm, rips, cascade_dr), or a
#: position-based estimator's on a log whose clicks look like a cascade.
NO_INTERVAL_CELL = "(model, no interval)"
WITHHELD_CELL = "(not PBM, no interval)"


def _interval(e: Any, signed: bool = False) -> str:
    from ltr.online.ope import NOT_POSITION_BASED_REASON

    if not e.has_interval:
        return WITHHELD_CELL if e.reason == NOT_POSITION_BASED_REASON else NO_INTERVAL_CELL
    return f"[{e.low:+.4f}, {e.high:+.4f}]" if signed else f"[{e.low:.4f}, {e.high:.4f}]"


def _bounds_json(e: Any) -> dict[str, Any]:
    """``low`` and ``high`` (``null`` with ``no_interval``, the reason, when the estimate has none)."""
    from ltr.online.ope import NO_INTERVAL_REASON

    if e.has_interval:
        return {"low": e.low, "high": e.high}
    return {"low": None, "high": None, "no_interval": e.reason or NO_INTERVAL_REASON}


def _estimates_json(result: Any) -> dict[str, Any]:
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for (estimator, metric), e in result.estimates.items():
        out.setdefault(estimator, {})[metric] = {"value": e.value, **_bounds_json(e), "ess": e.ess}
    return {
        "estimates": out, "max_weight": result.max_weights, "coverage": result.coverage, "n_queries": result.n_queries,
        "n_rows": result.n_rows, "n_clipped": result.n_clipped, "notes": result.notes,
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """``ltr ope``; returns the exit code (user errors raise `LtrUserError`: one line, exit 2)."""
    parser = build_parser()
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    from ltr.cli.support.json_out import dumps
    from ltr.models.ope_run import (
        log_ope,
        parse_estimators,
        parse_propensities,
        run_ope,
        run_paired,
    )

    if len(args.runs) > 2:
        raise LtrUserError(f"ltr ope takes one run, or two (A B) for their difference; got {len(args.runs)}: {' '.join(args.runs)}")
    estimators = parse_estimators(args.estimators)
    propensities, eta = parse_propensities(args.propensities, args.eta, args.propensities_from)
    common: dict[str, Any] = {
        "propensities": propensities, "eta": eta, "propensities_from": args.propensities_from, "k": args.k,
        "clip": args.clip, "n_bootstrap": args.bootstrap, "seed": args.seed, "first_position": args.first_position,
        "doc_id_column": args.doc_id_column, "tracking_uri": args.tracking_uri, "experiment": args.experiment,
        "estimators": estimators, "include_training_queries": args.include_training_queries,
        "assume_position_based": args.assume_position_based,
    }  # fmt: skip
    if len(args.runs) == 2:
        return _paired(args, common, dumps, run_paired)
    ope = run_ope(args.runs[0], args.log, args.data, logs=not args.no_log, **common)
    r = ope.result
    assert ope.training is not None
    first = ope.training.line([ope.run.label])
    if args.json:
        print(first, file=sys.stderr)
        print(dumps({"run": ope.run.label, "training_queries": _training_json(ope.training, first), **_estimates_json(r)}))
    else:
        clip = "none" if r.clip is None else f"{r.clip:g} ({r.n_clipped} weights clipped)"
        print(first)
        print(
            f"off-policy estimates of run {ope.run.label} on {ope.log_path}: {r.n_queries} queries, "
            f"{ope.matched_rows} of {ope.log_rows} impressions scored ({ope.unlogged_scored_rows} scored documents never logged); "
            f"propensities {ope.propensities}, top k={r.k}, clip {clip}, support coverage {r.coverage:.3f}"
        )
        print(f"{'estimator':<10} {'metric':<16} {'value':>9} {'95 % interval':>22} {'ESS':>9} {'max weight':>11}")
        for (estimator, metric), e in sorted(r.estimates.items(), key=lambda item: _rank(item[0][1])):
            weight = f"{r.max_weights[estimator]:.3g}" if estimator in r.max_weights else ""
            print(f"{estimator:<10} {metric:<16} {e.value:>9.4f} {_interval(e):>22} {e.ess:>9.1f} {weight:>11}")
        for note in r.notes:
            print(f"note: {note}")
    if not args.no_log:
        log_ope(ope)
        print(f"logged as ope/<estimator>/<metric> on run {ope.run.label}", file=sys.stderr)
    return 0


def _training_json(training: Any, line: str) -> dict[str, Any]:
    return {"n_left_out": training.n_left_out, "n_logged": training.n_logged, "included": training.included, "line": line}


def _paired(args: argparse.Namespace, common: dict[str, Any], dumps: Any, run_paired: Any) -> int:
    """``ltr ope A B``: both runs on the same queries and B - A; nothing logged."""
    from ltr.online.ope import NO_INTERVAL_VERDICT, WITHHELD_VERDICT

    ope = run_paired(args.runs[0], args.runs[1], args.log, args.data, **common)
    r = ope.result
    first = ope.training.line([ope.run_a.label, ope.run_b.label])
    keys = sorted(r.difference, key=lambda key: _rank(key[1]))
    # the verdict line: DR's CTR (the steadiest CTR), else the CTR of the first estimator with an
    # interval (never a model's guess, nor an interval withheld)
    judged = [key for key in keys if r.difference[key].has_interval]
    main_key = ("dr", "ctr") if ("dr", "ctr") in judged else next((key for key in judged if key[1] == "ctr"), judged[0] if judged else None)
    withheld = any(r.verdict(key) == WITHHELD_VERDICT for key in keys)
    verdict = r.verdict(main_key) if main_key is not None else WITHHELD_VERDICT if withheld else NO_INTERVAL_VERDICT
    if args.json:
        print(first, file=sys.stderr)
        difference: dict[str, dict[str, dict[str, Any]]] = {}
        for (estimator, metric), d in r.difference.items():
            difference.setdefault(estimator, {})[metric] = {"value": d.value, **_bounds_json(d), "verdict": r.verdict((estimator, metric))}
        print(dumps({
            "difference": difference,
            "runs": {"A": {"run": ope.run_a.label, **_estimates_json(r.a)}, "B": {"run": ope.run_b.label, **_estimates_json(r.b)}},
            "verdict": {"estimator": None if main_key is None else main_key[0],
                        "metric": None if main_key is None else main_key[1], "verdict": verdict},
            "training_queries": _training_json(ope.training, first), "propensities": ope.propensities,
        }))  # fmt: skip
        return 0
    clip = "none" if r.a.clip is None else f"{r.a.clip:g}"
    print(first)
    print(
        f"paired off-policy estimates, A = run {ope.run_a.label}, B = run {ope.run_b.label}, on {ope.log_path}: "
        f"{r.a.n_queries} queries, {ope.matched_rows} of {ope.log_rows} impressions scored by both; propensities "
        f"{ope.propensities}, top k={r.a.k}, clip {clip}, support coverage A {r.a.coverage:.3f}, B {r.b.coverage:.3f}"
    )
    print(f"{'estimator':<10} {'metric':<16} {'A':>9} {'B':>9} {'B - A':>9} {'95 % interval':>22}  verdict")
    for key in keys:
        d = r.difference[key]
        print(f"{key[0]:<10} {key[1]:<16} {r.a.estimates[key].value:>9.4f} {r.b.estimates[key].value:>9.4f} "
              f"{d.value:>+9.4f} {_interval(d, signed=True):>22}  {r.verdict(key)}")  # fmt: skip
    if main_key is None:
        guesses = list(dict.fromkeys(key[0] for key in keys))
        print("verdict: none, the intervals of ips, snips and dr are withheld: the clicks are not position-based (the note)"
              if withheld else f"verdict: none, {', '.join(guesses)} {'has' if len(guesses) == 1 else 'have'} no interval "
              "(a model's guess; ask for ips, snips or dr too)")  # fmt: skip
    else:
        print(f"verdict at 95 % ({main_key[0]} {main_key[1]}): {verdict}")
    for note in dict.fromkeys([*r.a.notes, *r.b.notes]):  # a note of the log, not of a run, once
        tag = "" if note in r.a.notes and note in r.b.notes else " (A)" if note in r.a.notes else " (B)"
        print(f"note{tag}: {note}")
    return 0

"""``ltr evaluate``: the metrics of ``ltr`` for rankings made elsewhere.

Inputs: a TREC qrels file and a TREC run (``--qrels Q --run R``), or a data file in any format
``ltr`` reads plus a scores file with one score per row (``--data D --scores S``, as LightGBM's
``predict`` writes). Prints the overall and per-stratum table (``--json``: the same numbers as
JSON, keyed like the MLflow keys); ``--per-query FILE`` writes the per-query table (``-``: as
CSV on standard output, the summary on stderr), checked before any input is read
(:func:`ltr.cli.support.output_guard.check_outputs`).

Examples
--------
::

    ltr evaluate --qrels qrels.txt --run run.txt --preset trec_eval --k 10 --k 100
    ltr evaluate --data test.txt --scores preds.txt --ties average --json
    ltr evaluate --qrels qrels.txt --run run.txt --preset trec_eval --measure ndcg --json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ltr.cli.support.args import OneLineParser
from ltr.cli.support.json_out import dumps
from ltr.cli.support.output_guard import check_outputs
from ltr.cli.support.verb import run_verb
from ltr.errors import LtrUserError
from ltr.experiment.evaluate_table import print_evaluation_table
from ltr.experiment.external import MAX_K, MEASURE_NAMES, evaluate_rankings
from ltr.metrics import PRESETS
from ltr.metrics.conventions import DISCOUNTS, GAINS, TIES, ZERO_IDCG


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="ltr evaluate",
        description="Evaluate rankings made elsewhere: nDCG/ERR/P/R/AP/RR@k, RR (reciprocal rank) and AP (average precision), overall and per list-length stratum.",
    )
    src = p.add_argument_group("input (either --qrels and --run, or --data and --scores)")
    src.add_argument(
        "--qrels",
        type=Path,
        help="TREC qrels: topic iter docno relevance (lines starting with # are skipped; topics "
        "and docnos are compared as bytes, as trec_eval)",
    )
    src.add_argument("--run", type=Path, help="TREC run: topic Q0 docno rank score tag")
    src.add_argument("--data", type=Path, help="a ranking data file in any format ltr reads")
    src.add_argument("--scores", type=Path, help="one score per row of --data")
    src.add_argument(
        "--qid-column", default="qid", metavar="NAME",
        help="--data as a Parquet / CSV table: its query id column (default qid); only it and the "
        "label column are read",
    )  # fmt: skip
    src.add_argument("--label-column", default="label", metavar="NAME", help="the table's label column (default label)")
    src.add_argument(
        "--n-features", type=int, metavar="N",
        help="--data as a text file: its width, for feature indices beyond 1,000,000 (hashed features)",
    )  # fmt: skip
    src.add_argument(
        "--missing-topics",
        choices=("empty", "skip", "error"),
        default="empty",
        help="judged topics with no run line: 'empty' (score 0 on every measure, counted in "
        "no_result_rate; trec_eval -c), 'skip' (left out: trec_eval 9.x's default and "
        "pytrec_eval) or 'error' (trec_eval 10.0 without -c stops). Default: empty. Run topics "
        "without judgments are always ignored, as trec_eval does, and counted "
        "(n_run_topics_unjudged); ranked docnos without a judgment have gain 0 and are never "
        "relevant, whatever --label-gain or --rel-threshold say (trec_eval)",
    )
    src.add_argument(
        "--max-docs", type=int, metavar="N",
        help="use only the first N documents of each topic, in trec_eval's order (score "
        "descending, then docno descending): trec_eval -M N",
    )
    conv = p.add_argument_group("conventions (a --preset first, then these override it)")
    conv.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        help="reproduce a peer tool: trec_eval (linear gain, ties by docno descending, IDCG from "
        "all judged docs); lightgbm and xgboost (ndcg@k: exp gain, ties in input order, 1 for a "
        "query with nothing relevant), xgboost_minus (ndcg@k-: 0 for it), catboost (NDCG:top=k: "
        "linear gain, the lower label first among ties, 1 for it). With --qrels/--run, IDCG always comes from all judged documents, "
        "ranked or not, so lightgbm and sklearn there differ from LightGBM and sklearn, whose "
        "IDCG uses only the rows they rank; they equal them with --data/--scores",
    )
    conv.add_argument("--k", type=int, action="append", help=f"cut-off 1..{MAX_K:,}, repeatable (default 5 and 10)")
    conv.add_argument(
        "--measure",
        action="append",
        metavar="NAME",
        help=f"a measure to compute and show, repeatable or comma-separated: {', '.join(MEASURE_NAMES)} "
        "(each at every --k; rr and ap also over the whole list). Default: all. Values are the "
        "same as in the full table; without ap, AP over the whole list (the one measure that may "
        "sort a whole list) is not computed. trec_eval -m ndcg_cut.5,10 is --measure ndcg --k 5 --k 10",
    )
    conv.add_argument(
        "--gain",
        choices=GAINS,
        help="exp: 2**label - 1, for labels 0..1023 (LightGBM's training default covers 0..30; "
        "evaluation needs no label_gain above 30); linear: the label (trec_eval, sklearn); "
        "value: the label is a real value >= 0 (revenue, margin) and the gain itself, in qrels, "
        "table label columns and text labels alike",
    )
    conv.add_argument(
        "--label-gain",
        help="explicit gain per label 0,1,2,...: comma-separated (trec_eval -m ndcg.1=3,2=9: "
        "0,3,9; a level it leaves out has gain = level)",
    )
    conv.add_argument("--ties", choices=TIES)
    conv.add_argument("--zero-idcg", choices=ZERO_IDCG)
    conv.add_argument(
        "--rel-threshold",
        type=int,
        help="binary relevance: label >= this, an integer >= 0 (default 1; 0: every judged "
        "document, as trec_eval's relevance_level 0)",
    )
    conv.add_argument(
        "--err-max-grade", type=int, metavar="G",
        help="ERR's largest grade: stop probability gain(label) / (gain(G) + 1), e.g. "
        "(2**label - 1) / 2**4 with G=4 as gdeval. Default: the largest label in the data",
    )
    conv.add_argument("--strata", default="1,11,51", help="lower edges of the list-length strata: increasing integers from 1 (default 1,11,51)")
    conv.add_argument(
        "--discount",
        metavar="NAME|WEIGHTS|FILE",
        help=f"position discount of DCG and IDCG: {DISCOUNTS[0]} (default: 1/log2(rank+1)), "
        f"{DISCOUNTS[1]} (Järvelin and Kekäläinen's classic DCG: rank 1 undiscounted, then "
        "1/log_b(rank); b = --discount-base), or an explicit weight per position: 1,0.7,0.5 or "
        "a file of weights (one per position); positions beyond the weights weigh 0",
    )
    conv.add_argument(
        "--discount-base",
        type=float,
        metavar="B",
        help="the base b of --discount jarvelin, a number > 1 (default 2): ranks below b are "
        "not discounted",
    )
    conv.add_argument(
        "--composite",
        action="append",
        metavar="NAME=W*MEASURE+...",
        help="a weighted sum of per-query measures, e.g. blend=0.4*ndcg_at_3+0.6*ndcg_at_10 "
        "(repeatable): overall and per stratum, and a column of --per-query, as ltr train's "
        "eval.composite",
    )
    out = p.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print the summary as JSON (counts as integers)")
    out.add_argument(
        "--per-query", type=Path,
        help="write the per-query table (.csv or .parquet; '-': CSV on standard output, the summary on stderr)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    """Run ``ltr evaluate``; returns the exit code. User errors raise `LtrUserError`."""
    return run_verb(argv, build_parser(), _run)


def _run(args: argparse.Namespace) -> int:
    discount_file = [Path(args.discount)] if args.discount and Path(args.discount).is_file() else []
    checked = check_outputs(
        {"--per-query": args.per_query}, inputs=[args.qrels, args.run, args.data, args.scores, *discount_file],
        stdout={"--per-query"}, make_folders=True,
    )  # fmt: skip
    table_to_stdout = args.per_query is not None and checked["--per-query"] is None
    if table_to_stdout and args.json:
        raise LtrUserError("--per-query - and --json both write to standard output: give --per-query a file name")
    result = evaluate_rankings(
        qrels=args.qrels, run=args.run, data=args.data, scores=args.scores, k=args.k or [5, 10], preset=args.preset,
        gain=args.gain, label_gain=args.label_gain, ties=args.ties, zero_idcg=args.zero_idcg,
        rel_threshold=args.rel_threshold, discount=args.discount, discount_base=args.discount_base,
        err_max_grade=args.err_max_grade, strata=args.strata, missing_topics=args.missing_topics,
        max_docs=args.max_docs, per_query=None if table_to_stdout else args.per_query, measures=args.measure,
        qid_column=args.qid_column, label_column=args.label_column, n_features=args.n_features,
        composite=args.composite,
    )  # fmt: skip
    if args.json:
        print(dumps(result.summary))
    else:
        report = sys.stderr if table_to_stdout else sys.stdout  # the table on standard output: the report beside it
        print_evaluation_table(
            result.summary, result.table_measures(), result.strata, result.conventions.describe(), args.preset,
            list(result.composites), stderr=table_to_stdout,
        )
        if result.counts:
            print(", ".join(f"{k} {v}" for k, v in result.counts.items()), file=report)
        if result.low_idcg_note:
            print(result.low_idcg_note, file=report)
    if table_to_stdout:
        result.table.to_csv(sys.stdout, index=False)
    for line in result.k_notes:  # a note, not an error: on stderr, so --json stays JSON
        print(f"ltr: note: {line}", file=sys.stderr)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

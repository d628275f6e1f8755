"""``ltr labels A B``: audit two label sets of the same (query, document) pairs.

Two files (TREC qrels, or CSV / TSV / Parquet tables with qid, docno, label columns), or one
table with two label columns (``ltr labels T --columns old new``). Prints the exact agreement,
Cohen's kappa with quadratic weights, the confusion matrix and the shift per grade; with
``--scores`` (a TREC run or a table with qid, docno, score for the same pairs) or ``--run RUN
--data FILE`` (FILE scored with the run's model as ``ltr predict`` scores it, joined by its
document ids) the NDCG of that one ranking under each label set, overall and per list-length
stratum, and the difference. The work is in :mod:`ltr.data.label_sets`,
:mod:`ltr.metrics.reports.label_audit` and, for ``--run``, :func:`ltr.api.scored_pairs`, imported after
the arguments are parsed (``--help`` and an argument error import none of it).

Examples
--------
::

    ltr labels qrels.vendor1 qrels.vendor2 --scores run.txt --k 10
    ltr labels qrels.vendor1 qrels.vendor2 --run my-run --data test.txt   # LETOR with #docid
    ltr labels judgments.parquet --columns label_2023 label_2024 --sample 200 --seed 7 --json
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from ltr.cli.support.args import OneLineParser
from ltr.cli.support.json_out import dumps
from ltr.cli.support.verb import run_verb
from ltr.config.choices import Gain
from ltr.errors import LtrUserError


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="ltr labels",
        description="Audit two label sets of the same (query, document) pairs: exact agreement, "
        "quadratic-weighted Cohen's kappa, confusion matrix, shift per grade; with --scores "
        "(or --run RUN --data FILE), the NDCG of one ranking under each label set and the difference.",
    )
    p.add_argument("a", type=Path, metavar="A", help="label set A: TREC qrels, or .csv/.tsv/.parquet with qid, docno, label")
    p.add_argument("b", type=Path, nargs="?", metavar="B", help="label set B (same format); leave out with --columns")
    p.add_argument(
        "--columns", nargs=2, metavar=("COL_A", "COL_B"),
        help="two label columns of the one table A (instead of a file B)",
    )
    p.add_argument("--label-column", default="label", help="label column of table files (default: label)")
    p.add_argument("--qid-column", default="qid")
    p.add_argument("--doc-column", default="docno")
    p.add_argument("--sample", type=int, metavar="N", help="audit a random sample of N queries")
    p.add_argument("--seed", type=int, default=0, help="seed of --sample (default 0)")
    p.add_argument(
        "--scores", type=Path, metavar="FILE",
        help="scores of the same pairs (TREC run, or a table with qid, docno, score): NDCG under each label set",
    )
    p.add_argument(
        "--run", metavar="RUN",
        help="instead of --scores: score --data with this run's model, ranked as the run ranks "
        "(run id, id prefix or name, as ltr predict takes it)",
    )
    p.add_argument(
        "--data", nargs="+", type=Path, metavar="FILE",
        help="with --run: features with document ids (LETOR/SVMlight with '#docid = X', or Parquet "
        "with a document id column), as ltr predict reads them",
    )
    p.add_argument(
        "--doc-id-column", default=None,
        help="with --run: document id column of a Parquet --data (default: the run's data.doc_id_column)",
    )
    p.add_argument("--experiment", default="ltr", help="with --run: experiment of a run name (default: ltr)")
    p.add_argument(
        "--tracking-uri", default=None,
        help="with --run: the store (default: $LTR_TRACKING_URI, $MLFLOW_TRACKING_URI, ./mlflow.db, the project root's mlflow.db)",
    )
    p.add_argument("--k", type=int, action="append", help="NDCG cut-off, repeatable (default 10)")
    p.add_argument("--gain", choices=[g.value for g in Gain], default="exp", help="gain of NDCG (default exp)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run ``ltr labels``; returns the exit code. User errors raise `LtrUserError`."""
    return run_verb(argv, build_parser(), _run)


def _run(args: argparse.Namespace) -> int:
    if (args.b is None) == (args.columns is None):
        raise LtrUserError("give two label files A B, or one table A with --columns COL_A COL_B")
    if args.sample is not None and args.sample < 1:
        raise LtrUserError(f"--sample {args.sample}: give a number of queries >= 1")
    ks = args.k or [10]
    if min(ks) < 1 or len(set(ks)) != len(ks):
        raise LtrUserError(f"--k values must be distinct integers >= 1, got {ks}")
    if args.run is not None and args.scores is not None:
        raise LtrUserError("give --scores FILE or --run RUN --data FILE, not both")
    if (args.run is None) != (args.data is None):
        raise LtrUserError("--run RUN and --data FILE go together: the run's model scores FILE")
    if args.run is None and args.doc_id_column is not None:
        raise LtrUserError("--doc-id-column goes with --run RUN --data FILE")
    missing = [str(path) for path in args.data or () if not path.exists()]
    if missing:  # here, worded for the command line (ltr.api.scored_pairs would name its argument, data)
        raise LtrUserError(f"--data {missing[0]}: no such file or folder")
    from ltr.data.label_sets import align, join_scores, read_label_columns, read_score_set
    from ltr.metrics import Strata
    from ltr.metrics.conventions import MetricConventions
    from ltr.metrics.reports.label_audit import label_agreement, ndcg_under_both, sample_queries
    from ltr.metrics.reports.label_audit_table import print_label_audit

    ids = {"qid_column": args.qid_column, "doc_column": args.doc_column}
    if args.columns is not None:
        col_a, col_b = args.columns
        if col_a == col_b:
            raise LtrUserError(f"--columns {col_a} {col_b}: give two different columns")
        pairs = read_label_columns(args.a, [col_a, col_b], **ids).rename(columns={col_a: "label_a", col_b: "label_b"})
        name_a, name_b = f"{args.a}:{col_a}", f"{args.a}:{col_b}"
    else:
        a = read_label_columns(args.a, [args.label_column], **ids).rename(columns={args.label_column: "label_a"})
        b = read_label_columns(args.b, [args.label_column], **ids).rename(columns={args.label_column: "label_b"})
        name_a, name_b = str(args.a), str(args.b)
        pairs = align(a, b, what_a=name_a, what_b=name_b)
    if args.scores is not None:
        advice = (
            "a TREC run usually ranks only some of the judged documents (and others that are not judged): "
            "score every judged document with your system, or give --run RUN --data FILE"
        )
        pairs = join_scores(pairs, read_score_set(args.scores, **ids), what=f"--scores {args.scores}", advice=advice)
    elif args.run is not None:
        from ltr.api import scored_pairs

        scores = scored_pairs(
            args.run, args.data, tracking_uri=args.tracking_uri, experiment=args.experiment,
            doc_id_column=args.doc_id_column,
        )  # fmt: skip
        what = f"--data {' '.join(str(p) for p in args.data)} (scored by run {args.run})"
        pairs = join_scores(pairs, scores, what=what, advice="give --data files that hold every judged document")
    if args.sample is not None:
        pairs = pairs[sample_queries(pairs["qid"].to_numpy(), args.sample, seed=args.seed)].reset_index(drop=True)
    agreement = label_agreement(pairs["label_a"].to_numpy(), pairs["label_b"].to_numpy())
    ndcg = None
    if "score" in pairs:
        try:
            ndcg = ndcg_under_both(
                pairs["qid"].to_numpy(), pairs["label_a"].to_numpy(), pairs["label_b"].to_numpy(),
                pairs["score"].to_numpy(), ks=ks, conventions=MetricConventions(gain=args.gain), strata=Strata(),
            )  # fmt: skip
        except ValueError as exc:
            raise LtrUserError(str(exc)) from None
    n_queries = int(pairs["qid"].nunique())
    if args.json:
        out: dict[str, Any] = {"a": name_a, "b": name_b, "n_queries": n_queries, **agreement.to_dict()}
        if ndcg is not None:
            out["ndcg"] = {side: {k: _finite(v) for k, v in vals.items()} for side, vals in ndcg.items()}
        print(dumps(out))
    else:
        print_label_audit(agreement, ndcg, ks, name_a, name_b, n_queries)
    return 0


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""``ltr predict RUN (--data FILE... | --split test)``: score data with a run's model, ranked as the run ranked.

RUN is a run id, id prefix or run name (as ``ltr compare`` takes it). The model is the run's (the
trees up to its best round); the data is read with the readers and checks of ``ltr train``
(Parquet streamed in batches of whole queries); the run's ranking step (re-ranking) is applied;
with labels in the data the run's stratified table is printed. Outputs are written whole or not
at all. The work is :mod:`ltr.models`; this module parses and prints.
"""

from __future__ import annotations

import argparse
import logging
import re
from pathlib import Path

from ltr.cli.args import OneLineParser
from ltr.cli.console_log import console_logging
from ltr.errors import LtrUserError
from ltr.experiment.report import print_table, summary_rows
from ltr.models.inputs import DEFAULT_BATCH_ROWS, open_input, split_input
from ltr.models.logged import load_run
from ltr.models.outputs import PredictionFiles, check_target
from ltr.models.predict import predict_input


def build_parser() -> OneLineParser:
    parser = OneLineParser(prog="ltr predict", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("run", metavar="RUN", help="run id, id prefix or run name")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--data", nargs="+", type=Path, metavar="FILE",
        help="data files (LETOR/SVMlight, LightGBM text, CSV, Parquet, or a folder of Parquet partitions)",
    )
    source.add_argument("--split", choices=["train", "valid", "test"], help="the run's own split, made again from its config")
    parser.add_argument(
        "--format", default="auto", choices=["auto", "letor", "svmlight", "lightgbm", "parquet", "csv"],
        help="format of --data (default: by extension and content)",
    )
    parser.add_argument("--out", type=Path, help="write one model score per row, in input order")
    parser.add_argument("--trec-run", type=Path, help="write a TREC run (qid Q0 docno rank score tag), the run's order")
    parser.add_argument("--per-query", type=Path, help="write the per-query table (Parquet; needs labels)")
    parser.add_argument("--batch-rows", type=int, default=None, help="rows per batch of a Parquet input (default 100000)")
    parser.add_argument("--qid-column", default=None, help="Parquet/CSV query id column (default: the run's, else qid)")
    parser.add_argument("--label-column", default=None, help="Parquet/CSV label column (default: the run's, else label)")
    parser.add_argument("--doc-id-column", default=None, help="Parquet/CSV document id column, for the TREC run's docnos")
    parser.add_argument("--experiment", default="ltr", help="experiment of a run name (default: ltr)")
    parser.add_argument("--tracking-uri", default=None, help="the store (default: $LTR_TRACKING_URI, $MLFLOW_TRACKING_URI, ./mlflow.db, the project root's mlflow.db)")
    return parser


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    with console_logging(logging.INFO):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    targets = {
        "scores": None if args.out is None else check_target(args.out, "--out"),
        "trec_run": None if args.trec_run is None else check_target(args.trec_run, "--trec-run"),
        "per_query": None if args.per_query is None else check_target(args.per_query, "--per-query"),
    }
    if len({p.resolve() for p in targets.values() if p is not None}) < len([p for p in targets.values() if p is not None]):
        raise LtrUserError("--out, --trec-run and --per-query must name different files")
    run = load_run(args.run, tracking_uri=args.tracking_uri, experiment=args.experiment)
    for note in run.store.notes:
        print(f"ltr: {note}")
    if args.split is not None:
        source = split_input(run, args.split)
    else:
        source = open_input(
            run, args.data, fmt=args.format, batch_rows=args.batch_rows or DEFAULT_BATCH_ROWS,
            qid_column=args.qid_column, label_column=args.label_column, doc_id_column=args.doc_id_column,
        )
    if targets["per_query"] is not None and not source.labelled:
        raise LtrUserError("--per-query needs labels in the data (a label column): there is nothing to evaluate")
    tag = re.sub(r"\s+", "_", f"ltr-{run.record.short_id}")
    with PredictionFiles(**targets, tag=tag) as files:
        prediction = predict_input(run, source, sink=files)
        written = files.finish(prediction)
    spec = run.spec
    if prediction.summary:
        header, rows = summary_rows({"data": prediction.summary}, ks=spec.ks, strata=spec.strata)
        conventions = spec.conventions
        print_table(
            header, rows,
            title=f"run {run.label} on {source.description}: our nDCG ({conventions.gain} gain, "
            f"ties={conventions.ties}, zero_idcg={conventions.zero_idcg})",
        )
    reranked = "" if str(spec.config.rerank.kind) == "none" else f", re-ranked ({spec.config.rerank.kind})"
    print(
        f"ltr: scored {prediction.n_rows} rows of {prediction.n_queries} queries with the model of run {run.label} "
        f"(best round {run.booster.current_iteration()}{reranked}) in {prediction.seconds:.2f} s"
        + "".join(f"; wrote {p}" for p in written)
    )
    return 0

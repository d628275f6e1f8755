"""``ltr predict RUN (--data FILE... | --split test)``: score data with a run's model, ranked as the run ranked.

RUN is a run id, id prefix or run name (as ``ltr compare`` takes it), or a registered model
(``models:/NAME@ALIAS``, ``models:/NAME/VERSION``: the run that logged it). The model is the run's (the
trees up to its best round); the data is read with the readers and checks of ``ltr train``
(Parquet streamed in batches of whole queries, or with ``--dask`` one task per file on Dask workers); the run's ranking step (re-ranking) is applied;
with labels in the data the run's stratified table is printed. Outputs are written whole or not
at all (``-``: one of them on standard output, the report on stderr); an output that cannot be
written, that names an input, the tracking store or a file in its artifact folders is refused
before anything is read (:func:`ltr.cli.support.output_guard.check_outputs`). The work is :mod:`ltr.models`, imported after the arguments are parsed (``--help`` and an
argument error import none of it); this module parses and prints.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ltr.cli.support.args import OneLineParser
from ltr.cli.support.verb import run_verb
from ltr.config.choices import FileFormat
from ltr.data.formats.file_names import table_format_by_name
from ltr.errors import LtrUserError

if TYPE_CHECKING:
    from ltr.config.schema import TrainerConfig
    from ltr.models.logged import LoggedRun


def build_parser() -> OneLineParser:
    parser = OneLineParser(prog="ltr predict", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "run", metavar="RUN",
        help="run id, id prefix or run name, or a model ltr promote registered (models:/NAME@ALIAS, models:/NAME/VERSION, or NAME for its champion)",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--data", nargs="+", type=Path, metavar="FILE",
        help="data files (LETOR/SVMlight, LightGBM text, CSV, Parquet, or a folder of Parquet partitions)",
    )
    source.add_argument("--split", choices=["train", "valid", "test"], help="the run's own split, made again from its config")
    parser.add_argument(
        "--format", default=str(FileFormat.auto), choices=[str(f) for f in FileFormat],
        help="format of --data (default: by extension and content)",
    )
    parser.add_argument("--out", type=Path, help="write one model score per row, in input order ('-': standard output)")
    parser.add_argument("--trec-run", type=Path, help="write a TREC run (qid Q0 docno rank score tag), the run's order ('-': standard output)")
    parser.add_argument("--per-query", type=Path, help="write the per-query table (needs labels): CSV for a .csv name or '-' (standard output), else Parquet")
    parser.add_argument("--batch-rows", type=int, default=None, help="rows per batch of a Parquet input (default 100000)")
    parser.add_argument("--qid-column", default=None, help="Parquet/CSV query id column (default: the run's, else qid)")
    parser.add_argument("--label-column", default=None, help="Parquet/CSV label column (default: the run's, else label)")
    parser.add_argument(
        "--doc-id-column", default=None,
        help="Parquet/CSV document id column, for the TREC run's docnos; every file must have it "
        "(default: the run's data.doc_id_column, read when every file has it, else no doc ids); "
        "refused for LETOR/SVMlight text, whose '#docid = X' comments are read without it",
    )
    parser.add_argument(
        "--dask", action="store_true",
        help="score the Parquet files of --data on Dask workers, one task per file (a folder of whole-query partitions)",
    )
    parser.add_argument("--workers", type=int, default=None, help="with --dask: workers of the LocalCluster (default: the run's trainer.n_workers, else 2)")
    parser.add_argument("--threads-per-worker", type=int, default=None, help="with --dask: threads per worker (default: the run's, else 1)")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS", help="with --dask: a running scheduler (tcp://host:8786) instead of a LocalCluster")
    parser.add_argument("--experiment", default="ltr", help="experiment of a run name (default: ltr)")
    parser.add_argument("--tracking-uri", default=None, help="the store (default: $LTR_TRACKING_URI, $MLFLOW_TRACKING_URI, ./mlflow.db, the project root's mlflow.db)")
    return parser


def main(argv: list[str] | None = None) -> int:
    return run_verb(argv, build_parser(), _run, log_level=logging.INFO)


def _run(args: argparse.Namespace) -> int:
    from ltr.cli.support.output_guard import check_not_inputs, check_outputs
    from ltr.experiment.report import print_table, summary_rows
    from ltr.models.logged import load_run
    from ltr.models.on_workers import dask_input
    from ltr.models.outputs import PredictionFiles
    from ltr.models.own_split import data_paths
    from ltr.models.predict import predict_input
    from ltr.models.run_source import check_batch_rows, run_source

    check_batch_rows(args.batch_rows)
    named = {"--out": args.out, "--trec-run": args.trec_run, "--per-query": args.per_query}
    checked = check_outputs(named, inputs=args.data or (), tracking_uri=args.tracking_uri, stdout=named)
    files_given = {option: path for option, path in checked.items() if path is not None}
    to_stdout = next((option for option, path in checked.items() if path is None), None)
    targets = {name: checked.get(option) for name, option in (("scores", "--out"), ("trec_run", "--trec-run"), ("per_query", "--per-query"))}
    if not args.dask and (args.workers is not None or args.threads_per_worker is not None or args.scheduler is not None):
        raise LtrUserError("--workers, --threads-per-worker and --scheduler go with --dask")
    if args.dask and args.split is not None:
        raise LtrUserError("--dask scores --data files (Parquet partitions); --split is scored in this process")
    for option, value in (("--workers", args.workers), ("--threads-per-worker", args.threads_per_worker)):
        if value is not None and value < 1:
            raise LtrUserError(f"{option}={value} must be >= 1")
    if args.out is not None and to_stdout != "--out" and table_format_by_name(args.out) is not None:  # after: naming the input says so first
        raise LtrUserError(
            f"--out={args.out} is named as a table, but --out writes text, one score per line; "
            "name it e.g. scores.txt (--per-query writes a table)"
        )
    run = load_run(args.run, tracking_uri=args.tracking_uri, experiment=args.experiment)
    report = sys.stderr if to_stdout else sys.stdout  # an output on standard output: the report beside it
    for note in run.notes:
        print(f"ltr: {note}", file=report)
    if args.split is not None:
        check_not_inputs(files_given, data_paths(run))  # the files the split is made from
    workers = None
    columns = {"qid_column": args.qid_column, "label_column": args.label_column, "doc_id_column": args.doc_id_column}
    if args.dask:
        workers = dask_input(run, args.data, _trainer(run, args), **columns)
        source = workers.source
    else:
        source = run_source(run, split=args.split, data=args.data, fmt=args.format, batch_rows=args.batch_rows, **columns)
    if args.per_query is not None and not source.labelled:
        raise LtrUserError("--per-query needs labels in the data (a label column): there is nothing to evaluate")
    tag = re.sub(r"\s+", "_", f"ltr-{run.record.short_id}")
    stdout_name = {"--out": "scores", "--trec-run": "trec_run", "--per-query": "per_query"}.get(to_stdout or "")
    with PredictionFiles(**targets, tag=tag, to_stdout=stdout_name) as files:
        prediction = workers.predict(sink=files) if workers is not None else predict_input(run, source, sink=files)
        written = files.finish(prediction)
    spec = run.spec
    if prediction.summary:
        header, rows = summary_rows({"data": prediction.summary}, ks=spec.ks, strata=spec.strata)
        conventions = spec.conventions
        with contextlib.redirect_stdout(report):
            print_table(
                header, rows,
                title=f"run {run.label} on {source.description}: our nDCG ({conventions.gain} gain, "
                f"ties={conventions.ties}, zero_idcg={conventions.zero_idcg})",
            )
    reranked = "" if str(spec.config.rerank.kind) == "none" else f", re-ranked ({spec.config.rerank.kind})"
    print(
        f"ltr: scored {prediction.n_rows} rows of {prediction.n_queries} queries with the model of run {run.label} "
        f"(best round {run.booster.current_iteration()}{reranked}) in {prediction.seconds:.2f} s"
        + "".join(f"; wrote {p}" for p in written),
        file=report,
    )
    return 0


def _trainer(run: LoggedRun, args: argparse.Namespace) -> TrainerConfig:
    """The cluster of ``--dask``: the options given, else the run's Dask settings, else 2 x 1."""
    from ltr.config.choices import TrainerKind
    from ltr.config.schema import TrainerConfig

    logged = run.spec.config.trainer
    dask_run = str(logged.kind) == "dask"
    return TrainerConfig(
        kind=TrainerKind.dask,
        scheduler_address=args.scheduler,
        n_workers=args.workers or (int(logged.n_workers) if dask_run else 2),
        threads_per_worker=args.threads_per_worker or (int(logged.threads_per_worker) if dask_run else 1),
    )

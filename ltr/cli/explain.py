"""``ltr explain RUN (--split test | --data FILE...)``: why a run's model ranks as it does.

RUN is what ``ltr predict`` takes (a run id, prefix or name, or ``models:/NAME@ALIAS``). Every
document's exact TreeSHAP contributions (LightGBM's ``pred_contrib``), with ``--out`` written
as Parquet (feature columns + ``expected_value`` = the score; ``--centred``: relative to the
query's mean document); feature importance overall and per list-length stratum, printed and
logged on the run (``explain/``; ``--no-log`` leaves the run as it is); ``--query Q`` one
query's documents in the run's order with their top features, ``--pair D1 D2`` why D1 is above
D2. The work is :mod:`ltr.explain`, imported after the arguments are parsed; this module
parses and prints.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from ltr.cli.support.args import OneLineParser
from ltr.cli.support.verb import run_verb
from ltr.config.choices import FileFormat
from ltr.errors import LtrUserError

if TYPE_CHECKING:
    from ltr.explain import Importance, PairView, QueryRows


def build_parser() -> OneLineParser:
    parser = OneLineParser(prog="ltr explain", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("run", metavar="RUN", help="run id, id prefix or run name, or a registered model (models:/NAME@ALIAS)")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--split", choices=["train", "valid", "test"], help="the run's own split, made again from its config")
    source.add_argument("--data", nargs="+", type=Path, metavar="FILE", help="data files, read as ltr predict --data reads them")
    parser.add_argument("--format", default=str(FileFormat.auto), choices=[str(f) for f in FileFormat], help="format of --data")
    parser.add_argument("--out", type=Path, metavar="FILE", help="write every document's contributions as Parquet (qid, doc_id, label, score, expected_value, one column per feature)")
    parser.add_argument("--centred", action="store_true", help="with --out: contributions minus the query's mean (rows sum to score - the query's mean score)")
    parser.add_argument("--query", metavar="Q", help="print query Q's documents in the run's order, with labels and top features")
    parser.add_argument("--pair", nargs=2, metavar=("D1", "D2"), help="with --query: why D1 is ranked against D2, feature by feature")
    parser.add_argument("--top", type=int, default=5, metavar="N", help="features shown per document, pair and stratum (default 5)")
    parser.add_argument(
        "--log", action=argparse.BooleanOptionalAction, default=None,
        help="log explain/importance.json and its figure on the run (default: yes, but not with --query)",
    )
    parser.add_argument("--batch-rows", type=int, default=None, help="rows per batch of a Parquet input (default 100000)")
    parser.add_argument("--qid-column", default=None, help="Parquet/CSV query id column (default: the run's, else qid)")
    parser.add_argument("--label-column", default=None, help="Parquet/CSV label column (default: the run's, else label)")
    parser.add_argument("--doc-id-column", default=None, help="Parquet/CSV document id column (default: the run's data.doc_id_column)")
    parser.add_argument("--experiment", default="ltr", help="experiment of a run name (default: ltr)")
    parser.add_argument("--tracking-uri", default=None, help="the store (default: $LTR_TRACKING_URI, $MLFLOW_TRACKING_URI, ./mlflow.db, the project root's mlflow.db)")
    return parser


def main(argv: list[str] | None = None) -> int:
    return run_verb(argv, build_parser(), _run, log_level=logging.INFO)


def _run(args: argparse.Namespace) -> int:
    from ltr.cli.support.output_guard import check_not_inputs, check_outputs
    from ltr.explain.files import ContributionsFile, check_feature_names, check_out_name
    from ltr.explain.logged import check_writable, commit, pending_log
    from ltr.explain.runner import explain_input, split_meta
    from ltr.explain.views import pair_view
    from ltr.models.logged import load_run
    from ltr.models.own_split import data_paths
    from ltr.models.run_source import check_batch_rows, run_source
    from ltr.tracking import find_tracking_uri

    check_batch_rows(args.batch_rows)
    if args.top < 1:
        raise LtrUserError(f"--top={args.top} must be >= 1")
    if args.pair is not None and args.query is None:
        raise LtrUserError("--pair D1 D2 names two documents of one query: give the query with --query Q")
    if args.centred and args.out is None:
        raise LtrUserError("--centred is a form of the --out file: give --out FILE.parquet")
    log = args.query is None if args.log is None else args.log
    out = check_outputs({"--out": args.out}, inputs=args.data or (), tracking_uri=args.tracking_uri).get("--out")
    if out is not None:
        check_out_name(out)
    uri = find_tracking_uri(args.tracking_uri)
    if log:
        check_writable(uri)
    run = load_run(args.run, tracking_uri=uri, experiment=args.experiment)
    for note in run.notes:
        print(f"ltr: {note}")
    check_feature_names(run.feature_names)
    if args.split is not None and out is not None:
        check_not_inputs({"--out": out}, data_paths(run))
    source = run_source(
        run, split=args.split, data=args.data, fmt=args.format, batch_rows=args.batch_rows, qid_column=args.qid_column,
        label_column=args.label_column, doc_id_column=args.doc_id_column,
    )  # fmt: skip
    if args.split is not None:
        meta = split_meta(run, args.split)
    else:
        meta = {"run_id": run.run_id, "data": [str(p) for p in args.data], "rerank": str(run.spec.config.rerank.kind)}
    with contextlib.ExitStack() as stack:
        file = None if out is None else stack.enter_context(ContributionsFile(out, run.feature_names, centred=args.centred))
        explained = explain_input(run, source, out=file, centred=args.centred, query=args.query, meta=meta)
        if args.query is not None and explained.query is None:  # before the file is in place
            raise LtrUserError(f"--query {args.query}: no query {args.query!r} in {source.description} (its first: {', '.join(explained.first_qids)}, ...)")
        pair = None if explained.query is None or args.pair is None else pair_view(explained.query, *args.pair)
        written, logged = commit(file, pending_log(run, explained.importance) if log else None)
    if explained.reranked is not None:
        print(f"ltr: run {run.label} re-ranks (rerank={explained.reranked}): the contributions explain the model's scores, before re-ranking")
    if explained.query is not None and pair is not None:
        _print_pair(pair, args.top, explained.query.qid)
    elif explained.query is not None:
        _print_query(explained.query, args.top)
    else:
        _print_importance(explained.importance, args.top, f"feature importance of run {run.label} on {source.description}")
    print(
        f"ltr: explained {explained.n_rows} rows of {explained.n_queries} queries with the model of run {run.label} "
        f"(exact TreeSHAP, best round {run.booster.current_iteration()}) in {explained.seconds:.2f} s; contributions + "
        f"expected_value equal the scores to {explained.largest_gap:.1e}"
        + "".join(f"; wrote {p}" for p in written) + (f"; logged {', '.join(logged)} on the run" if logged else "")
    )
    return 0


def _print_importance(importance: Importance, top: int, title: str) -> None:
    from ltr.experiment.report import print_table

    header = ["feature", *(f"{g.label} (n={g.n_queries})" for g in importance.groups)]
    names = importance.ranked()[:top]
    rows = [[n, *(f"{g.values[importance.feature_names.index(n)]:.4f}" for g in importance.groups)] for n in names]
    print_table(header, rows, title=f"{title}: mean |centred contribution| per query, top {len(names)} overall")


def _print_query(rows: QueryRows, top: int) -> None:
    header = ["rank", "doc", *(["label"] if rows.labels is not None else []), "score", "top features (centred contribution)"]
    table = []
    for rank, i in enumerate(rows.order.tolist(), start=1):
        label = [str(int(rows.labels[i]))] if rows.labels is not None else []
        features = ", ".join(f"{name} {value:+.3f}" for name, value in rows.top_features(i, top))
        table.append([str(rank), rows.docs[i], *label, f"{rows.scores[i]:.4f}", features])
    _table(header, table, title=f"query {rows.qid}: {len(rows.docs)} documents in the run's order", left=(1, len(header) - 1))


def _table(header: list[str], rows: list[list[str]], *, title: str, left: tuple[int, ...]) -> None:
    """A rich table on standard output; the columns ``left`` justified left (names, lists), the others right."""
    from rich.table import Table

    from ltr.runtime.terminal import console

    table = Table(title=title)
    for i, name in enumerate(header):
        table.add_column(name, justify="left" if i in left else "right")
    for row in rows:
        table.add_row(*row)
    console().print(table)


def _print_pair(pair: PairView, top: int, qid: str) -> None:
    from ltr.experiment.report import print_table

    shown, rest = pair.top(top)
    table = [[name, f"{value:+.4f}"] for name, value in shown]
    if len(shown) < pair.differences.size:
        table.append([f"the other {pair.differences.size - len(shown)} features", f"{rest:+.4f}"])
    table.append(["score difference", f"{pair.score_difference:+.4f}"])
    where = "above" if pair.first_rank < pair.second_rank else "below"  # in the run's order
    print(
        f"query {qid}: {pair.first} (rank {pair.first_rank}, score {pair.first_score:.4f}) is {where} {pair.second} "
        f"(rank {pair.second_rank}, score {pair.second_score:.4f}); the model's score difference, feature by feature:"
    )
    print_table(["feature", f"{pair.first} - {pair.second}"], table, title=f"query {qid}: {pair.first} vs {pair.second}")

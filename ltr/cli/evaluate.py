"""``ltr evaluate``: the metrics of ``ltr`` for rankings made elsewhere.

Inputs: a TREC qrels file and a TREC run (``--qrels Q --run R``), or a data file in any format
``ltr`` reads plus a scores file with one score per row (``--data D --scores S``, as LightGBM's
``predict`` writes). Prints the overall and per-stratum table (``--json``: the same numbers as
JSON, keyed like the MLflow keys); ``--per-query FILE`` writes the per-query table.

Examples
--------
::

    ltr evaluate --qrels qrels.txt --run run.txt --preset trec_eval --k 10 --k 100
    ltr evaluate --data test.txt --scores preds.txt --ties average --json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ltr.cli.args import OneLineParser
from ltr.data.readers import read_ranking_file
from ltr.data.trec import read_trec
from ltr.errors import DataError, LtrUserError
from ltr.metrics import PRESETS, Strata, per_query_table, resolve_conventions, summarize
from ltr.metrics.conventions import DISCOUNTS, GAINS, TIES, ZERO_IDCG
from ltr.metrics.idcg_report import low_idcg_note
from ltr.metrics.measures import table_measures, trec_eval_name

#: The largest cut-off: a list is never cut deeper than its length, but the discount table is
#: ``max(--k)`` long (8 bytes each).
MAX_K = 1_000_000


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
        "--max-docs",
        type=int,
        metavar="N",
        help="use only the first N documents of each topic, in trec_eval's order (score "
        "descending, then docno descending): trec_eval -M N",
    )
    conv = p.add_argument_group("conventions (a --preset first, then these override it)")
    conv.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        help="reproduce a peer tool: trec_eval (linear gain, ties by docno descending, IDCG from "
        "all judged docs). With --qrels/--run, IDCG always comes from all judged documents, "
        "ranked or not, so lightgbm and sklearn there differ from LightGBM and sklearn, whose "
        "IDCG uses only the rows they rank; they equal them with --data/--scores",
    )
    conv.add_argument(
        "--k",
        type=int,
        action="append",
        help=f"cut-off 1..{MAX_K:,}, repeatable (default 5 and 10)",
    )
    conv.add_argument(
        "--gain",
        choices=GAINS,
        help="exp: 2**label - 1, for labels 0..1023 (LightGBM's training default covers 0..30; "
        "evaluation needs no label_gain above 30); linear: the label (trec_eval, sklearn)",
    )
    conv.add_argument(
        "--label-gain",
        help="explicit gain per label 0,1,2,...: comma-separated (trec_eval -m ndcg.1=3,2=9: "
        "0,3,9; a level it leaves out has gain = level)",
    )
    conv.add_argument(
        "--discount",
        choices=DISCOUNTS,
        help="position discount of DCG and IDCG: log2_rank_plus_1 (default: 1/log2(rank+1)) or "
        "jarvelin (Järvelin and Kekäläinen's classic DCG: rank 1 undiscounted, then "
        "1/log_b(rank); b = --discount-base)",
    )
    conv.add_argument(
        "--discount-base",
        type=float,
        metavar="B",
        help="the base b of --discount jarvelin, a number > 1 (default 2): ranks below b are "
        "not discounted",
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
        "--err-max-grade",
        type=int,
        metavar="G",
        help="ERR's largest grade: stop probability gain(label) / (gain(G) + 1), e.g. "
        "(2**label - 1) / 2**4 with G=4 as gdeval. Default: the largest label in the data",
    )
    conv.add_argument(
        "--strata",
        default="1,11,51",
        help="lower edges of the list-length strata: increasing integers from 1 (default 1,11,51)",
    )
    out = p.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print the summary as JSON")
    out.add_argument("--per-query", type=Path, help="write the per-query table (.csv or .parquet)")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run ``ltr evaluate``; returns the exit code. User errors raise `LtrUserError`."""
    args = build_parser().parse_args(argv)
    ks = args.k or [5, 10]
    if len(set(ks)) != len(ks) or min(ks) < 1 or max(ks) > MAX_K:
        raise LtrUserError(f"--k values must be distinct integers from 1 to {MAX_K:,}, got {ks}")
    if args.rel_threshold is not None and args.rel_threshold < 0:
        raise LtrUserError(
            f"--rel-threshold {args.rel_threshold} is negative; give an integer >= 0 (a label >= "
            "it is relevant; 0 counts every judged document, as trec_eval's relevance_level 0)"
        )
    if args.max_docs is not None and args.max_docs < 1:
        raise LtrUserError(f"--max-docs {args.max_docs}: give an integer >= 1")
    if args.err_max_grade is not None and args.err_max_grade < 0:
        raise LtrUserError(f"--err-max-grade {args.err_max_grade}: give a label >= 0")
    strata = _parse_strata(args.strata)
    label_gain = None
    if args.label_gain is not None:
        try:
            label_gain = tuple(float(g) for g in args.label_gain.split(","))
        except ValueError:
            raise LtrUserError(
                f"--label-gain {args.label_gain!r} is not a comma-separated list of numbers"
            ) from None
        bad = [g for g in label_gain if not (math.isfinite(g) and g >= 0)]
        if bad:
            raise LtrUserError(
                f"--label-gain {args.label_gain!r} has gain {bad[0]}; every gain must be a finite "
                "number >= 0 (one per label 0, 1, 2, ...)"
            )
    try:
        conventions = resolve_conventions(
            args.preset,
            gain=args.gain,
            label_gain=label_gain,
            ties=args.ties,
            zero_idcg=args.zero_idcg,
            rel_threshold=args.rel_threshold,
            discount=args.discount,
            discount_base=args.discount_base,
        )
    except ValueError as exc:
        raise LtrUserError(str(exc)) from None

    trec = args.qrels is not None or args.run is not None
    table_input = args.data is not None or args.scores is not None
    if (
        trec == table_input
        or (trec and (args.qrels is None or args.run is None))
        or (table_input and (args.data is None or args.scores is None))
    ):
        raise LtrUserError("give either --qrels and --run, or --data and --scores")
    if args.per_query is not None and args.per_query.suffix.lower() not in (
        ".csv",
        ".parquet",
        ".pq",
    ):
        raise LtrUserError(f"--per-query {args.per_query}: the name must end in .csv or .parquet")

    counts: dict[str, int] = {}
    try:
        if trec:
            table, counts = _evaluate_trec(args, ks, conventions, strata)
        else:
            table = _evaluate_data(args, ks, conventions, strata)
    except ValueError as exc:  # a convention that does not fit the data (e.g. label_gain)
        raise LtrUserError(str(exc)) from None
    summary = _complete(summarize(table, strata=strata), table, ks, strata)
    summary.update({k: float(v) for k, v in counts.items()})

    if args.per_query is not None:
        _write_table(table, args.per_query)
    if args.json:
        print(json.dumps(summary, indent=2, allow_nan=False))
    else:
        _print_table(summary, ks, strata, conventions.describe(), args.preset)
        if counts:
            print(", ".join(f"{k} {v}" for k, v in counts.items()))
        note = low_idcg_note(table, max(ks))
        if note:
            print(note)
    return 0


def _complete(
    summary: dict[str, float], table: pd.DataFrame, ks: list[int], strata: Strata
) -> dict[str, float | None]:
    """Every key of the summary, always: a mean over no values (or not finite) is None."""
    suffixes = [*strata.keys]
    if "n_queries/len_empty" in summary:
        suffixes.append("len_empty")
    keys = [m.key for m in table_measures(ks)]
    out: dict[str, float | None] = {}
    for key, value in summary.items():
        out[key] = value if math.isfinite(value) else None
    for key in keys:
        for full in (key, *(f"{key}/{sfx}" for sfx in suffixes)):
            out.setdefault(full, None)
    return out


def _parse_strata(text: str) -> Strata:
    example = "give increasing list lengths starting at 1, e.g. --strata 1,11,51"
    edges = []
    for item in text.split(","):
        try:
            edges.append(int(item))
        except ValueError:
            raise LtrUserError(
                f"--strata {text!r}: {item.strip()!r} is not an integer; {example}"
            ) from None
    try:
        return Strata(tuple(edges))
    except ValueError as exc:
        raise LtrUserError(f"--strata {text!r}: {exc}; {example}") from None


def _evaluate_trec(
    args: argparse.Namespace, ks: list[int], conventions: Any, strata: Strata
) -> tuple[pd.DataFrame, dict[str, int]]:
    inp = read_trec(args.run, args.qrels, missing_topics=args.missing_topics, max_docs=args.max_docs)
    max_gain = _max_gain(args, conventions, inp.labels, inp.ideal_labels)
    table = per_query_table(
        inp.labels, inp.scores, inp.offsets, inp.qids, ks=ks, conventions=conventions,
        strata=strata, ideal_labels=inp.ideal_labels, ideal_offsets=inp.ideal_offsets,
        tie_keys=inp.tie_keys, max_gain=max_gain,
    )  # fmt: skip
    return table, inp.counts()


def _max_gain(
    args: argparse.Namespace, conventions: Any, *labels: np.ndarray[Any, Any]
) -> float | None:
    """ERR's largest gain from ``--err-max-grade`` (None: the data's largest gain)."""
    if args.err_max_grade is None:
        return None
    grade = int(args.err_max_grade)
    top = max((int(a.max()) for a in labels if a.size), default=0)
    if top > grade:
        raise LtrUserError(
            f"--err-max-grade {grade}: the data has label {top}; give a grade >= {top} (ERR's "
            "stop probability gain / (gain(G) + 1) must stay below 1)"
        )
    return float(conventions.gains_of(np.array([grade], dtype=np.int64))[0])


def _evaluate_data(
    args: argparse.Namespace, ks: list[int], conventions: Any, strata: Strata
) -> pd.DataFrame:
    if conventions.ties == "docno_desc":
        raise LtrUserError("--ties docno_desc needs docnos: use it with --qrels and --run")
    data = read_ranking_file(args.data, max_label=None)
    scores = read_scores(args.scores)
    if scores.shape[0] != data.n_rows:
        raise DataError(
            f"scores file {args.scores} has {scores.shape[0]} scores; data file {args.data} has "
            f"{data.n_rows} rows (one score per row, in row order)"
        )
    max_gain = _max_gain(args, conventions, np.asarray(data.labels))
    return per_query_table(
        data.labels, scores, data.offsets, data.qids, ks=ks, conventions=conventions,
        strata=strata, max_gain=max_gain,
    )  # fmt: skip


def read_scores(path: Path) -> np.ndarray[Any, np.dtype[np.float64]]:
    """One finite float per line (LightGBM's predict output).

    Raises
    ------
    DataError
        Unreadable file, a line that is not exactly one number, NaN or infinite scores; the
        message names the file and line.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DataError(f"cannot read scores file {path}: {exc.strerror or exc}") from None
    lines = text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        raise DataError(f"scores file {path} is empty")
    col = pd.Series(lines, dtype=object).str.strip()
    values = pd.to_numeric(col, errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        what = (
            "is not a finite number"
            if not math.isnan(values[i]) or col[i].lower() == "nan"
            else "is not a number"
        )
        raise DataError(f"line {i + 1} of {path}: score {col[i]!r} {what}")
    return values


def _write_table(table: pd.DataFrame, path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix.lower() == ".csv":
            table.to_csv(path, index=False)
        else:
            table.to_parquet(path, index=False)
    except OSError as exc:
        raise LtrUserError(f"cannot write --per-query {path}: {exc.strerror or exc}") from None


def _print_table(
    summary: dict[str, float | None],
    ks: list[int],
    strata: Strata,
    conv: dict[str, Any],
    preset: str | None,
) -> None:
    from rich.console import Console
    from rich.table import Table

    keys = [*strata.keys]
    labels = [*strata.labels]
    if "n_queries/len_empty" in summary:
        keys.append("len_empty")
        labels.append("empty")
    if conv.get("discount") == "log2_rank_plus_1":
        conv = {k: v for k, v in conv.items() if k != "discount_base"}  # the base is jarvelin's only
    conv_text = ", ".join(f"{k}={v}" for k, v in conv.items() if v is not None)
    title = f"ltr evaluate ({'preset ' + preset + ': ' if preset else ''}{conv_text})"
    table = Table(title=title, title_justify="left")
    table.add_column("measure")
    table.add_column("all", justify="right")
    for lab in labels:
        table.add_column(f"len {lab}", justify="right")
    table.add_row(
        "queries",
        f"{summary['n_queries']:.0f}",
        *(f"{summary[f'n_queries/{k}']:.0f}" for k in keys),
    )
    for m in table_measures(ks):
        cells = [_fmt(summary.get(m.key))] + [_fmt(summary.get(f"{m.key}/{k}")) for k in keys]
        peer = trec_eval_name(m) if preset == "trec_eval" else None
        table.add_row(m.display if peer is None else f"{m.display} ({peer})", *cells)
    console = Console()
    console.print(table)
    console.print(
        f"no-result rate {summary['no_result_rate']:.4f}; "
        f"queries skipped for IDCG = 0: {summary['n_skipped_zero_idcg']:.0f}"
    )


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""``ltr partition``: turn ranking files into the whole-query Parquet partitions the Dask path reads.

Synopsis
--------
::

    ltr partition --train F [F ...] [--valid F [F ...]] [--test F [F ...]] --out DIR
                  [--partitions N | --rows-per-partition N] [--force]
                  [--format FMT] [--qid-column C] [--label-column C] [--feature-columns A,B,...] [--doc-id-column C]
                  [--delimiter D] [--n-features N]
                  [--valid-fraction X] [--test-fraction X] [--seed S]

The command's contract (input, output, fingerprint, partitions, atomic write, refusals, output
text, errors and interrupts) is :mod:`ltr.dask.partition_writer.options`'s.

This module parses the arguments and prints; the work (the checks of ``OUT`` and of the inputs,
reading and cutting the splits, the atomic write and rename, the ``ltr train`` line) is
:mod:`ltr.dask.partition_writer.options` and :mod:`ltr.dask.partition_writer.files`, imported once the arguments are parsed: ``--help`` and an
argument error import neither numpy nor pyarrow. It needs no Dask: the partitions are cut and
written with pyarrow, with the same cuts and the same table as
:func:`ltr.dask.parquet.write_query_partitions` (a test holds the files equal, byte for byte).

Examples
--------
::

    ltr partition --train train.txt --valid vali.txt --test test.txt --out /shared/big --partitions 64
    ltr partition --train S1.txt.gz S2.txt.gz S3.txt.gz --valid S4.txt.gz --test S5.txt.gz --out mq2008_fold1
    ltr partition --train all.parquet --qid-column query_id --label-column grade --out parts --force
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path

from ltr.cli.support.args import OneLineParser
from ltr.cli.support.console_log import echo_logs
from ltr.cli.support.verb import run_verb
from ltr.config.choices import FileFormat
from ltr.config.groups.data import DEFAULT_SEED, SplitConfig

#: Default of ``--rows-per-partition``: about 0.5 GB of float32 features per partition at 136
#: features (MSLR-WEB30K), a few seconds of reading for a worker.
DEFAULT_ROWS_PER_PARTITION = 1_000_000


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="ltr partition",
        description=(
            "Turn ranking files into OUT/train, OUT/valid, OUT/test directories of whole-query "
            "Parquet partitions, what `ltr train data=parquet_partitions data.root=OUT trainer=dask` "
            "reads. Written into a temporary sibling and renamed at the end: an error or interrupt "
            "leaves no partial output."
        ),
    )
    src = p.add_argument_group("input (any format ltr train reads; several files of a split are concatenated)")
    src.add_argument("--train", type=Path, nargs="+", required=True, metavar="FILE", help="the training file(s)")
    src.add_argument(
        "--valid", type=Path, nargs="+", metavar="FILE",
        help="the validation file(s); absent: cut from train by query (--valid-fraction, --seed)",
    )
    src.add_argument(
        "--test", type=Path, nargs="+", metavar="FILE",
        help="the test file(s); absent: cut from train by query (--test-fraction, --seed)",
    )
    src.add_argument(
        "--format", choices=[str(f) for f in FileFormat], default=str(FileFormat.auto),
        help="the files' format (default auto: by extension and content), as data.format",
    )
    src.add_argument("--qid-column", default="qid", metavar="COLUMN", help="Parquet / CSV: the qid column (default qid)")
    src.add_argument("--label-column", default="label", metavar="COLUMN", help="Parquet / CSV: the label column (default label)")
    src.add_argument(
        "--feature-columns", metavar="A,B,...",
        help="Parquet / CSV: the feature columns, comma-separated (default: every other column)",
    )
    src.add_argument("--delimiter", metavar="CHAR", help="CSV: the delimiter (default: tab for .tsv, else comma)")
    src.add_argument(
        "--doc-id-column", metavar="COLUMN",
        help="Parquet / CSV: a column of document ids, written as doc_id (text files: #docid = X comments)",
    )
    src.add_argument(
        "--n-features", type=_positive, metavar="N",
        help="fixed feature width, as data.n_features (default: the largest index in any file)",
    )
    split = p.add_argument_group("split rule (only for splits without files; the defaults are ltr train's)")
    split.add_argument("--valid-fraction", type=float, default=SplitConfig.valid_fraction, metavar="X",
                       help=f"share of train's queries cut for valid (default {SplitConfig.valid_fraction})")
    split.add_argument("--test-fraction", type=float, default=SplitConfig.test_fraction, metavar="X",
                       help=f"share of train's queries cut for test (default {SplitConfig.test_fraction})")
    split.add_argument("--seed", type=int, default=DEFAULT_SEED,
                       help=f"seed of the cut (default {DEFAULT_SEED}, the experiment's seed)")
    out = p.add_argument_group("output")
    out.add_argument("-o", "--out", type=Path, required=True, metavar="DIR",
                     help="the directory to create, holding train/, valid/ and test/")
    size = out.add_mutually_exclusive_group()
    size.add_argument("--partitions", type=_positive, metavar="N",
                      help="partitions per split (fewer if a split has fewer queries); "
                           "a multiple of the Dask workers balances best")
    size.add_argument("--rows-per-partition", type=_positive, metavar="N",
                      help=f"about N rows per partition: ceil(rows / N) per split (default {DEFAULT_ROWS_PER_PARTITION:,})")
    out.add_argument("--force", action="store_true",
                     help="replace OUT if it holds an earlier output (only train/, valid/, test/ of part-*.parquet, "
                          "fingerprint.json)")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run ``ltr partition``; returns the exit code (0). User errors raise `LtrUserError`."""
    return run_verb(argv, build_parser(), _run)


def _run(args: argparse.Namespace) -> int:
    # the work, once the arguments are parsed: --help and an argument error import none of it
    from ltr.cli.support.output_guard import check_outputs
    from ltr.dask.partition_writer import files as work
    from ltr.dask.partition_writer.options import partition_inputs
    from ltr.dask.partition_writer.progress import WriteProgress
    from ltr.runtime.stops import stop_signals_recorded

    out = Path(os.path.abspath(args.out.expanduser()))
    check_outputs({"--out": out}, inputs=[*args.train, *(args.valid or ()), *(args.test or ())], folders={"--out"})
    files, cfg = partition_inputs(
        out, {"train": args.train, "valid": args.valid, "test": args.test}, force=args.force, fmt=args.format,
        qid_column=args.qid_column, label_column=args.label_column, feature_columns=args.feature_columns,
        delimiter=args.delimiter, n_features=args.n_features, doc_id_column=args.doc_id_column,
        valid_fraction=args.valid_fraction, test_fraction=args.test_fraction,
    )  # fmt: skip
    with stop_signals_recorded(), echo_logs(logging.getLogger("ltr.data"), work.log):
        t0 = time.perf_counter()
        for split, paths in files.items():
            _say(f"reading {split}: {' + '.join(str(p) for p in paths)}")
        splits = work.read_splits(
            files, cfg, valid_fraction=args.valid_fraction, test_fraction=args.test_fraction, seed=args.seed,
        )
        _say(f"read {sum(d.n_rows for d in splits.values()):,} rows in {time.perf_counter() - t0:.1f} s")
        for split, data in splits.items():
            if data.positions is not None:
                _say(f"note: the {split} split's positions are not written (data=parquet_partitions does not use them)")
        counts = work.partition_counts(
            splits, partitions=args.partitions, rows_per_partition=args.rows_per_partition or DEFAULT_ROWS_PER_PARTITION,
        )
        with WriteProgress(splits, counts) as progress:
            written = work.write_partitioned_splits(splits, out, counts, force=args.force, on_partition=progress.advance)
        for w in written:
            n_parts = len(w.files)
            print(
                f"{w.split + ':':<6} {w.n_queries:,} queries, {w.n_rows:,} rows, {w.n_features:,} features, "
                f"{n_parts:,} partition{'s' if n_parts != 1 else ''}, {w.n_bytes:,} bytes -> {out / w.split}"
            )
        print(f"train on it: {work.train_command(out)}")
    return 0


# -- helpers -------------------------------------------------------------------------------------


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a positive integer")
    return value


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)

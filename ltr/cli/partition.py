"""``ltr partition``: turn ranking files into the whole-query Parquet partitions the Dask path reads.

Synopsis
--------
::

    ltr partition --train F [F ...] [--valid F [F ...]] [--test F [F ...]] --out DIR
                  [--partitions N | --rows-per-partition N] [--force]
                  [--format FMT] [--qid-column C] [--label-column C] [--feature-columns A,B,...] [--doc-id-column C]
                  [--delimiter D] [--n-features N]
                  [--valid-fraction X] [--test-fraction X] [--seed S]

Contract
--------
- **Input**: the files of each split in any format ``ltr train`` reads (LETOR / SVMlight text,
  LightGBM text + ``.query``, Parquet, CSV; ``.gz`` allowed), read by the same readers with the
  same options and validation as ``ltr train data=parquet`` (:func:`ltr.data.readers.read_split_files`
  via :func:`ltr.data.load.reader_options`; no parse cache). Several files for a split are
  concatenated (MQ2008 fold 1: ``--train S1 S2 S3 --valid S4 --test S5``); all splits share one
  feature width. A missing ``--valid`` / ``--test`` is cut from train by query exactly as
  ``ltr train`` does (:func:`ltr.data.splits.split_queries` / ``holdout_queries`` with the
  ``split`` group's fractions and the experiment's seed, 0.2 / 0.2 / 42 by default).
- **Output**: ``OUT/train/``, ``OUT/valid/``, ``OUT/test/``, each holding ``part-00000.parquet``,
  ... of whole queries, balanced by rows: the layout, cuts, columns and types of
  :func:`ltr.dask.parquet.write_query_partitions` (``qid`` int64, or the qids as written, a
  string column, when the input's qids are strings; ``label`` int32; features float32 named by
  the table's columns or ``f1``, ``f2``, ...), so that
  ``ltr train data=parquet_partitions data.root=OUT trainer=dask`` trains on it with no further
  step. Positions (a ``.position`` file, a position column) are not written: that path does not
  use them. Doc ids (``#docid = X`` comments, ``--doc-id-column``) are, as a ``doc_id`` column.
- **Fingerprint**: last, ``OUT/fingerprint.json``: the content fingerprint of the splits read
  (what a local ``ltr train`` of the same files with the same options logs as
  ``ltr.data.fingerprint``, per split too), and every partition file's relative path, bytes and
  rows; a partitions run logs that fingerprint while the files are still those
  (:mod:`ltr.dask.partition_manifest`). The hash is logged on stderr.
- **Partitions**: ``--partitions N`` per split, or ``--rows-per-partition N`` (default 1,000,000):
  ``ceil(rows / N)`` per split; never more partitions than queries.
- **Atomic**: everything is written into a hidden temporary sibling ``.OUT.partial-*`` and
  renamed to ``OUT`` at the end (files fsynced first). An error, Ctrl-C or SIGTERM removes the
  temporary directory and leaves ``OUT`` as it was; only SIGKILL can leave the hidden sibling
  behind, never a partial ``OUT``.
- **Refusals**: a non-empty ``OUT`` without ``--force``; with ``--force``, anything but an
  earlier output (only ``train/``, ``valid/``, ``test/`` of ``part-*.parquet`` and
  ``fingerprint.json``); a file or symbolic link at ``OUT``.
- **Output text**: progress on stderr (read lines per file; per partition a rich bar on a terminal,
  else a line), then on stdout one line per split (queries, rows, features, partitions, bytes,
  directory) and the ``ltr train`` command line that uses the result.
- **Errors**: a missing or unreadable file, a bad value (one line naming the file and the line or
  qid, from the readers), bad options or a refused ``OUT`` raise :class:`ltr.errors.LtrUserError`
  (``ltr: error: ...``, exit 2), before ``OUT`` or any directory is created, or with everything
  created removed again. Interrupts follow the dispatcher: 130 (Ctrl-C), 143 (SIGTERM), with no
  ``OUT``, at any moment before ``OUT`` is renamed into place: every stop signal is recorded
  (:func:`ltr.stops.stop_signals_recorded`), so one whose exception Python swallowed (it landed
  in a ``__del__`` or garbage-collection callback: "Exception ignored ... KeyboardInterrupt")
  still stops the command before the rename. Once ``OUT`` is in place the work is done
  (:func:`ltr.stops.committing`): a stop signal then stops nothing, and the command ends with
  exit 0 and its whole output, as every verb whose work is done.

This module parses the arguments and prints; the work (the checks of ``OUT`` and of the inputs,
reading and cutting the splits, the atomic write and rename, the ``ltr train`` line) is
:mod:`ltr.dask.partition_files`, imported once the arguments are parsed: ``--help`` and an
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
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ltr.cli.args import OneLineParser
from ltr.cli.verb import run_verb
from ltr.config.choices import FileFormat
from ltr.config.data import DEFAULT_SEED, ParquetDataConfig, SplitConfig
from ltr.errors import DataError, LtrUserError
from ltr.terminal import console as terminal_console

if TYPE_CHECKING:
    from ltr.dask.partition_files import PartitionWritten
    from ltr.data.ranking_data import RankingData

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
    from ltr.cli.output_guard import check_outputs
    from ltr.dask import partition_files as work
    from ltr.dask.partition_manifest import SPLITS
    from ltr.data.splits import check_fractions
    from ltr.stops import stop_signals_recorded

    out = Path(os.path.abspath(args.out.expanduser()))
    check_outputs({"--out": out}, inputs=[*args.train, *(args.valid or ()), *(args.test or ())], folders={"--out"})
    work.check_target(out, force=args.force)
    # before parsing: a bad fraction never costs a read of the whole input
    for flag, value in (("--valid-fraction", args.valid_fraction), ("--test-fraction", args.test_fraction)):
        if not 0.0 < value < 1.0:
            raise LtrUserError(f"{flag} {value} must lie in (0, 1)")
    if not args.valid and not args.test:
        try:
            check_fractions(args.valid_fraction, args.test_fraction)
        except DataError as exc:
            raise LtrUserError(f"--valid-fraction + --test-fraction: {exc}") from None
    files: dict[str, list[Path]] = {
        split: [Path(f).expanduser() for f in getattr(args, split)]
        for split in SPLITS
        if getattr(args, split)
    }
    cfg = _table_options(args)
    work.check_inputs(files, cfg.format, doc_id_column=args.doc_id_column)
    with stop_signals_recorded(), _echo_logs(logging.getLogger("ltr.data"), work.log):
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
        with _WriteProgress(splits, counts) as progress:
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


def _table_options(args: argparse.Namespace) -> ParquetDataConfig:
    """The table options of the arguments as ``ltr train data=parquet``'s config (no parse cache)."""
    return ParquetDataConfig(
        format=FileFormat(args.format), qid_column=args.qid_column, label_column=args.label_column,
        feature_columns=None if args.feature_columns is None else [
            c.strip() for c in args.feature_columns.split(",") if c.strip()
        ],
        delimiter=args.delimiter, n_features=args.n_features, cache=False, doc_id_column=args.doc_id_column,
    )


class _WriteProgress:
    """Per-partition progress on stderr: a rich bar per split on a terminal, else a line each."""

    def __init__(self, splits: Mapping[str, RankingData], n_partitions: Mapping[str, int]) -> None:
        self._bar: Any = None
        self._tasks: dict[str, Any] = {}
        if sys.stderr.isatty():
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self._bar = Progress(
                TextColumn("writing {task.description:<5}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("partitions"), TimeElapsedColumn(),
                console=terminal_console(stderr=True), transient=True,
            )
            for split, data in splits.items():
                self._tasks[split] = self._bar.add_task(split, total=min(n_partitions[split], data.n_queries))

    def __enter__(self) -> _WriteProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None and self._bar.live.is_started:
            self._bar.stop()

    def advance(self, part: PartitionWritten) -> None:
        """After each partition file: the bar (shown from the first file on, so that a refusal
        before any write prints nothing but its error) or a line."""
        if self._bar is not None:
            if not self._bar.live.is_started:
                self._bar.start()
            self._bar.advance(self._tasks[part.split])
        else:
            _say(f"{part.split}: {part.path.name} ({part.index + 1}/{part.count}): {part.n_queries:,} queries, "
                 f"{part.n_rows:,} rows, {part.n_bytes:,} bytes")  # fmt: skip


class _EchoHandler(logging.Handler):
    """The library's log lines (``parsed FILE: rows, queries, features``, warnings) on stderr."""

    def emit(self, record: logging.LogRecord) -> None:
        prefix = "" if record.levelno < logging.WARNING else f"{record.levelname.lower()}: "
        _say(prefix + record.getMessage())


@contextmanager
def _echo_logs(*loggers: logging.Logger) -> Iterator[None]:
    """Show the INFO lines and warnings of ``loggers`` (``ltr.data``'s: the reading progress;
    the work's: the splits it cut) on stderr in the block, and only there."""
    handler = _EchoHandler()
    saved = [(logger, logger.level, logger.propagate) for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
    try:
        yield
    finally:
        for logger, level, propagate in saved:
            logger.removeHandler(handler)
            logger.setLevel(level)
            logger.propagate = propagate

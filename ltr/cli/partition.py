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
  :func:`ltr.dask.parquet.write_query_partitions` (``qid`` int64, ``label`` int32, features
  float32 named by the table's columns or ``f0``, ``f1``, ...), so that
  ``ltr train data=parquet_partitions data.root=OUT trainer=dask`` trains on it with no further
  step. Positions (a ``.position`` file, a position column) are not written: that path does not
  use them. Doc ids (``#docid = X`` comments, ``--doc-id-column``) are, as a ``doc_id`` column.
- **Partitions**: ``--partitions N`` per split, or ``--rows-per-partition N`` (default 1,000,000):
  ``ceil(rows / N)`` per split; never more partitions than queries.
- **Atomic**: everything is written into a hidden temporary sibling ``.OUT.partial-*`` and
  renamed to ``OUT`` at the end (files fsynced first). An error, Ctrl-C or SIGTERM removes the
  temporary directory and leaves ``OUT`` as it was; only SIGKILL can leave the hidden sibling
  behind, never a partial ``OUT``.
- **Refusals**: a non-empty ``OUT`` without ``--force``; with ``--force``, anything but an
  earlier output (only ``train/``, ``valid/``, ``test/`` of ``part-*.parquet``); a file or
  symbolic link at ``OUT``.
- **Output text**: progress on stderr (read lines per file; per partition a rich bar on a terminal,
  else a line), then on stdout one line per split (queries, rows, features, partitions, bytes,
  directory) and the ``ltr train`` command line that uses the result.
- **Errors**: a missing or unreadable file, a bad value (one line naming the file and the line or
  qid, from the readers), bad options or a refused ``OUT`` raise :class:`ltr.errors.LtrUserError`
  (``ltr: error: ...``, exit 2), before ``OUT`` or any directory is created, or with everything
  created removed again. Interrupts follow the dispatcher: 130 (Ctrl-C), 143 (SIGTERM), at any
  moment: every stop signal is recorded (:func:`ltr.tracking.lifecycle.stop_signals_recorded`),
  so one whose exception Python swallowed (it landed in a ``__del__`` or garbage-collection
  callback: "Exception ignored ... KeyboardInterrupt") still stops the command before the rename,
  and after the rename (``OUT`` complete) still exits 130 / 143.

Needs no Dask: the partitions are cut and written here with pyarrow, with the same cuts and the
same table as :func:`ltr.dask.parquet.write_query_partitions` (a test holds the files equal, byte
for byte).

Examples
--------
::

    ltr partition --train train.txt --valid vali.txt --test test.txt --out /shared/big --partitions 64
    ltr partition --train S1.txt.gz S2.txt.gz S3.txt.gz --valid S4.txt.gz --test S5.txt.gz --out mq2008_fold1
    ltr partition --train all.parquet --qid-column query_id --label-column grade --out parts --force
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import math
import os
import re
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from ltr.cli.args import OneLineParser
from ltr.config.choices import FileFormat
from ltr.config.data import ParquetDataConfig, SplitConfig
from ltr.config.schema import TrainConfig
from ltr.data.load import reader_options
from ltr.data.query_parts import feature_names, write_query_partitions
from ltr.data.ranking_data import RankingData
from ltr.data.readers import FORMATS, detect_format, read_split_files
from ltr.data.splits import check_fractions, holdout_queries, split_queries
from ltr.data.validate import check_split_set
from ltr.errors import DataError, LtrUserError
from ltr.tracking.lifecycle import raise_if_stop_requested, signals_deferred, stop_signals_recorded
from ltr.tracking.store import fsync_path

SPLITS = ("train", "valid", "test")
#: Default of ``--rows-per-partition``: about 0.5 GB of float32 features per partition at 136
#: features (MSLR-WEB30K), a few seconds of reading for a worker.
DEFAULT_ROWS_PER_PARTITION = 1_000_000
#: Column names of the output: the defaults of ``data=parquet_partitions`` (and of the writer).
QID_COLUMN = "qid"
LABEL_COLUMN = "label"
_PART_NAME = re.compile(r"part-\d+\.parquet")
#: Characters a Hydra override value may hold unquoted (and a shell word, too).
_PLAIN = re.compile(r"[A-Za-z0-9_./+\-@~]+")


@dataclasses.dataclass(frozen=True, slots=True)
class SplitWritten:
    """What was written for one split: counts, the files and their total size in bytes."""

    split: str
    n_queries: int
    n_rows: int
    n_features: int
    files: tuple[Path, ...]
    n_bytes: int


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
        "--format", choices=FORMATS, default=str(FileFormat.auto),
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
    split.add_argument("--seed", type=int, default=TrainConfig.seed,
                       help=f"seed of the cut (default {TrainConfig.seed}, the experiment's seed)")
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
                     help="replace OUT if it holds an earlier output (only train/, valid/, test/ of part-*.parquet)")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run ``ltr partition``; returns the exit code (0). User errors raise `LtrUserError`."""
    args = build_parser().parse_args(argv)
    out = Path(os.path.abspath(args.out.expanduser()))
    check_target(out, force=args.force)
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
    for paths in files.values():
        for path in paths:
            _check_input(path, str(args.format))
    options = _reader_options(args)
    with stop_signals_recorded(), _echo_data_logs():
        t0 = time.perf_counter()
        for split, paths in files.items():
            _say(f"reading {split}: {' + '.join(str(p) for p in paths)}")
        read = read_split_files(files, **options)
        splits = complete_splits(
            read, valid_fraction=args.valid_fraction, test_fraction=args.test_fraction, seed=args.seed,
        )
        check_split_set(splits, sources={s: " + ".join(str(p) for p in ps) for s, ps in files.items()})
        _say(f"read {sum(d.n_rows for d in splits.values()):,} rows in {time.perf_counter() - t0:.1f} s")
        for split, data in splits.items():
            if data.positions is not None:
                _say(f"note: the {split} split's positions are not written (data=parquet_partitions does not use them)")
        counts = {
            split: _n_partitions(data.n_rows, args.partitions, args.rows_per_partition)
            for split, data in splits.items()
        }
        written = write_partitioned_splits(splits, out, counts, force=args.force)
        for w in written:
            n_parts = len(w.files)
            print(
                f"{w.split + ':':<6} {w.n_queries:,} queries, {w.n_rows:,} rows, {w.n_features:,} features, "
                f"{n_parts:,} partition{'s' if n_parts != 1 else ''}, {w.n_bytes:,} bytes -> {out / w.split}"
            )
        print(f"train on it: {train_command(out)}")
        raise_if_stop_requested()  # interrupted after the rename: OUT is whole, the exit says 130/143
    return 0


# -- the pieces, in the order main uses them ---------------------------------------------------


def check_target(out: Path, *, force: bool) -> None:
    """Refuse an ``out`` this command must not write: a file or symlink, a non-empty directory
    without ``force``, or (with ``force``) a directory that is not an earlier output; and an
    ``out`` whose nearest existing ancestor is not a writable directory.

    Raises
    ------
    LtrUserError
        one line naming ``out`` and what to do.
    """
    if out.is_symlink():
        raise LtrUserError(f"--out {out} is a symbolic link; give the directory itself")
    if out.exists() and not out.is_dir():
        raise LtrUserError(f"--out {out} exists and is not a directory; choose another --out")
    if out.is_dir():
        entries = sorted(p.name for p in out.iterdir())
        if entries and not force:
            raise LtrUserError(
                f"--out {out} is not empty ({_listing(entries)}); pass --force to replace an "
                "earlier ltr partition output, or choose another --out"
            )
        foreign = _foreign_entries(out)
        if entries and foreign:
            raise LtrUserError(
                f"--force replaces only an earlier ltr partition output (train/, valid/, test/ of "
                f"part-*.parquet), but {out} holds {_listing(foreign)}; remove it yourself or choose another --out"
            )
    ancestor = out.parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise LtrUserError(f"cannot create --out {out}: {ancestor} is not a directory")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise LtrUserError(f"cannot create --out {out}: {ancestor} is not writable")


def complete_splits(
    splits: Mapping[str, RankingData], *, valid_fraction: float, test_fraction: float, seed: int
) -> dict[str, RankingData]:
    """Train, valid and test: the files' splits, a missing one cut from train by query as
    ``ltr train`` cuts it (:func:`ltr.data.splits.split_queries` when both are missing,
    :func:`ltr.data.splits.holdout_queries` for one); says on stderr what it cut."""
    train, valid, test = splits["train"], splits.get("valid"), splits.get("test")
    if valid is None and test is None:
        cut = split_queries(train, valid_fraction=valid_fraction, test_fraction=test_fraction, seed=seed)
        _say(
            f"no --valid or --test: cut train's {train.n_queries:,} queries into {cut.train.n_queries:,} / "
            f"{cut.valid.n_queries:,} / {cut.test.n_queries:,} (fractions {valid_fraction} / {test_fraction}, seed {seed})"
        )
        return dict(cut.items())
    if valid is None:
        train, valid = holdout_queries(train, fraction=valid_fraction, seed=seed, what="validation")
        _say(f"no --valid: held out {valid.n_queries:,} of train's queries (fraction {valid_fraction}, seed {seed})")
    if test is None:
        train, test = holdout_queries(train, fraction=test_fraction, seed=seed, what="test")
        _say(f"no --test: held out {test.n_queries:,} of train's queries (fraction {test_fraction}, seed {seed})")
    return {"train": train, "valid": valid, "test": test}


def write_partitioned_splits(
    splits: Mapping[str, RankingData],
    out: Path,
    n_partitions: Mapping[str, int],
    *,
    force: bool = False,
    progress: bool | None = None,
) -> list[SplitWritten]:
    """Write every split as ``out/<split>/part-NNNNN.parquet`` files of whole queries, atomically.

    Everything goes into a temporary sibling of ``out`` first (created with missing parents);
    files and directories are fsynced, then the sibling is renamed to ``out`` (replacing an empty
    directory, or with ``force`` an earlier output, which is deleted afterwards). On any
    exception, Ctrl-C or SIGTERM the temporary directory and the parents created for it are
    removed; ``out`` is as before. ``progress``: a rich bar (None: when stderr is a terminal),
    else one stderr line per partition.

    Raises
    ------
    DataError
        a feature named like the qid or label column.
    LtrUserError
        the file system refused a write or the rename (one line with the reason).
    """
    for split, data in splits.items():
        names = feature_names(data)
        if {QID_COLUMN, LABEL_COLUMN} & set(names):
            raise DataError(
                f"a feature of the {split} split is named like the qid or label column: "
                f"{QID_COLUMN!r}, {LABEL_COLUMN!r}; rename that column of the input"
            )
    created = _missing_ancestors(out)
    tmp: Path | None = None
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
        tmp.chmod(0o777 & ~_umask())  # mkdtemp's 0700 would hide the files from other users' workers
        written = []
        with _WriteProgress(splits, n_partitions, progress) as bar:
            for split, data in splits.items():
                written.append(_write_split(data, tmp, split, n_partitions[split], bar))
        for d in [*(tmp / s for s in splits), tmp]:
            fsync_path(d, os.O_RDONLY | os.O_DIRECTORY)
        with signals_deferred():
            raise_if_stop_requested()  # a Ctrl-C whose exception was swallowed (a __del__) stops here
            _commit(tmp, out, force=force)
            tmp = None
            created = []
        return [dataclasses.replace(w, files=tuple(out / w.split / f.name for f in w.files)) for w in written]
    except OSError as exc:
        raise LtrUserError(f"cannot write {exc.filename or out}: {exc.strerror or exc}") from None
    finally:
        if tmp is not None or created:
            with signals_deferred():
                if tmp is not None:
                    shutil.rmtree(tmp, ignore_errors=True)
                for d in reversed(created):
                    with suppress(OSError):
                        d.rmdir()


def train_command(out: Path) -> str:
    """The ``ltr train`` command line that trains on ``out`` (quoted for Hydra and the shell)."""
    root = str(out)
    if not _PLAIN.fullmatch(root):  # Hydra's quoted string: escape quotes and the backslashes before one
        body = re.sub(r"(\\*)'", lambda m: m.group(1) * 2 + "\\'", root)
        root = "'" + re.sub(r"(\\+)$", lambda m: m.group(1) * 2, body) + "'"
    word = f"data.root={root}"
    if not _PLAIN.fullmatch(word.replace("=", "", 1)):  # for the shell, readably if it can be
        word = f'"{word}"' if not re.search(r'[$`\\"!]', word) else shlex.quote(word)
    return f"ltr train data=parquet_partitions {word} trainer=dask"


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


def _listing(names: Sequence[str], limit: int = 3) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f", ... ({len(names)} entries)" if len(names) > limit else "")


def _foreign_entries(out: Path) -> list[str]:
    """Entries of ``out`` that an earlier output would not hold (empty: ``out`` is one)."""
    foreign = []
    for entry in sorted(out.iterdir()):
        if entry.name not in SPLITS or entry.is_symlink() or not entry.is_dir():
            foreign.append(entry.name)
            continue
        foreign += [
            f"{entry.name}/{f.name}"
            for f in sorted(entry.iterdir())
            if not _PART_NAME.fullmatch(f.name) or f.is_symlink() or not f.is_file()
        ]
    return foreign


def _check_input(path: Path, fmt: str) -> None:
    """Fail before any parsing on a missing file or (auto format) one whose format is unknown."""
    if fmt == str(FileFormat.auto):
        detect_format(path)  # the readers' one-line errors: missing, empty, text without qid:
    elif not path.is_file():
        raise DataError(f"data file {path} does not exist; check the path")


def _reader_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options ``ltr train data=parquet`` would read the files with (no parse cache)."""
    cfg = ParquetDataConfig(
        format=FileFormat(args.format), qid_column=args.qid_column, label_column=args.label_column,
        feature_columns=None if args.feature_columns is None else [
            c.strip() for c in args.feature_columns.split(",") if c.strip()
        ],
        delimiter=args.delimiter, n_features=args.n_features, cache=False, doc_id_column=args.doc_id_column,
    )
    options = reader_options(cfg)
    options.pop("name")  # each split is named after its first file, as the readers do
    return options


def _n_partitions(n_rows: int, partitions: int | None, rows_per_partition: int | None) -> int:
    if partitions is not None:
        return partitions
    return max(1, math.ceil(n_rows / (rows_per_partition or DEFAULT_ROWS_PER_PARTITION)))


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _missing_ancestors(out: Path) -> list[Path]:
    """The ancestors of ``out`` that do not exist yet, outermost first."""
    missing = []
    parent = out.parent
    while not parent.exists():
        missing.append(parent)
        parent = parent.parent
    return missing[::-1]


def _write_split(data: RankingData, tmp: Path, split: str, n_partitions: int, bar: _WriteProgress) -> SplitWritten:
    """One split's files (`ltr.data.query_parts.write_query_partitions`), each fsynced."""
    directory = tmp / split
    directory.mkdir()
    sizes: list[int] = []

    def written(i: int, n: int, path: Path, q0: int, q1: int, r0: int, r1: int) -> None:
        fsync_path(path)
        sizes.append(path.stat().st_size)
        bar.advance(split, f"{split}: {path.name} ({i + 1}/{n}): {q1 - q0:,} queries, {r1 - r0:,} rows, "
                           f"{sizes[-1]:,} bytes")  # fmt: skip

    paths = write_query_partitions(
        data, directory, n_partitions=n_partitions, qid_column=QID_COLUMN,
        label_column=LABEL_COLUMN, on_file=written,
    )  # fmt: skip
    return SplitWritten(split, data.n_queries, data.n_rows, data.n_features, tuple(paths), sum(sizes))


def _commit(tmp: Path, out: Path, *, force: bool) -> None:
    """Rename ``tmp`` to ``out``; an existing non-empty ``out`` (an earlier output, checked
    again here) is renamed aside first and deleted once ``tmp`` is in place."""
    old: Path | None = None
    if out.is_dir() and not out.is_symlink() and any(out.iterdir()):
        if not force or _foreign_entries(out):
            raise LtrUserError(f"--out {out} was filled while this command ran; nothing was written")
        old = out.parent / f".{out.name}.old-{os.getpid()}-{time.monotonic_ns()}"
        os.rename(out, old)
    try:
        os.rename(tmp, out)  # replaces an empty directory; fails on a non-empty one
    except OSError:
        if old is not None:
            os.rename(old, out)
        raise
    fsync_path(out.parent, os.O_RDONLY | os.O_DIRECTORY)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


class _WriteProgress:
    """Per-partition progress on stderr: a rich bar per split on a terminal, else a line each."""

    def __init__(self, splits: Mapping[str, RankingData], n_partitions: Mapping[str, int], enabled: bool | None) -> None:
        if enabled is None:
            enabled = sys.stderr.isatty()
        self._bar: Any = None
        self._tasks: dict[str, Any] = {}
        if enabled:
            from rich.console import Console
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
                console=Console(stderr=True), transient=True,
            )
            for split, data in splits.items():
                self._tasks[split] = self._bar.add_task(split, total=min(n_partitions[split], data.n_queries))

    def __enter__(self) -> _WriteProgress:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()

    def advance(self, split: str, line: str) -> None:
        if self._bar is not None:
            self._bar.advance(self._tasks[split])
        else:
            _say(line)


class _EchoHandler(logging.Handler):
    """The data layer's log lines (``parsed FILE: rows, queries, features``, warnings) on stderr."""

    def emit(self, record: logging.LogRecord) -> None:
        prefix = "" if record.levelno < logging.WARNING else f"{record.levelname.lower()}: "
        _say(prefix + record.getMessage())


@contextmanager
def _echo_data_logs() -> Iterator[None]:
    """Show ``ltr.data``'s INFO lines and warnings on stderr (the reading progress) in the block."""
    logger = logging.getLogger("ltr.data")
    handler = _EchoHandler()
    level, propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate

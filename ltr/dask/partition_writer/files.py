"""The work of ``ltr partition``: ranking files read, completed to three splits, and written
atomically as the whole-query Parquet partitions the Dask path reads (``data=parquet_partitions``).

Needs no Dask (it imports neither ``dask`` nor ``distributed``): the files are cut and written by
:func:`ltr.data.query_parts.write_query_partitions` with pyarrow, the cuts, columns and types that
:mod:`ltr.dask.parquet` reads. :mod:`ltr.cli.partition` parses the arguments, calls these
functions in the order below (the checks through :func:`ltr.dask.partition_writer.options.partition_inputs`)
and prints; the errors name its options (``--out``, ``--force``).

Contract of the functions
-------------------------
- :func:`check_target` and :func:`check_inputs` touch nothing: they refuse, before any parsing, an
  ``out`` this module must not write and an input file that is missing or of no known format.
- :func:`read_splits`: ``{split: [file, ...]}`` -> ``{"train", "valid", "test": RankingData}``:
  each split's files concatenated (one feature width across all splits), read with the options of
  ``ltr train data=parquet`` (:func:`ltr.data.load.reader_options`, no parse cache); a missing
  valid / test split is cut from train by query as ``ltr train`` cuts it (:func:`complete_splits`,
  which logs what it cut on this module's logger at INFO); no split may be empty.
- :func:`partition_counts`: ``{split: N}``, ``--partitions`` or ``ceil(rows / rows_per_partition)``
  (at least 1); the writer never makes more partitions than a split has queries.
- :func:`write_partitioned_splits`: ``out/{split}/part-00000.parquet``, ... of whole queries
  (``qid`` int64, or string as written when the input's qids are strings, ``label`` int32,
  ``doc_id`` string when the data has doc ids, the features float32) and, after the last of them,
  ``out/fingerprint.json`` (:mod:`ltr.dask.partition_writer.manifest`: the splits' content fingerprint as
  a local run of the same files logs it, and every file's relative path, bytes and rows), all or
  nothing: written into a hidden temporary sibling ``.OUT.partial-*`` (mode
  ``0777 & ~umask``), every file and directory fsynced, renamed to ``out`` (replacing an empty
  directory, or with ``force`` an earlier output, renamed aside first and deleted after), the parent
  fsynced. An exception, Ctrl-C or SIGTERM removes the temporary directory and the parents made for
  it; ``out`` stays as it was. The rename is the command's commit (:func:`ltr.runtime.stops.committing`):
  a stop signal recorded but swallowed earlier (in a ``__del__``) is raised before it, one that
  comes during it is held back until it is done, and once ``out`` is in place a stop signal stops
  nothing more (the work is done: the command ends with its exit code and output), so a stop
  never leaves a partial ``out`` and an exit of 130 / 143 always means no ``out``. The caller
  records stop signals (:func:`ltr.runtime.stops.stop_signals_recorded`) around the whole command.
- :func:`train_command`: the ``ltr train`` command line that trains on ``out``.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import re
import shlex
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from pathlib import Path

from ltr.config.choices import FileFormat
from ltr.config.groups.data import ParquetDataConfig
from ltr.dask.partition_writer.manifest import (
    MANIFEST_NAME,
    SPLITS,
    content_fingerprint,
    listing,
    write_manifest,
)
from ltr.data.formats.doc_ids import not_a_table
from ltr.data.formats.readers import detect_format, read_split_files
from ltr.data.load import reader_options
from ltr.data.query_parts import feature_names, write_query_partitions
from ltr.data.ranking_data import RankingData
from ltr.data.splits import holdout_queries, split_queries
from ltr.data.validate import check_split_set
from ltr.errors import DataError, LtrUserError, write_failed
from ltr.runtime.stops import committing, signals_deferred
from ltr.tracking.store import fsync_path

log = logging.getLogger(__name__)

#: Column names of the output: the defaults of ``data=parquet_partitions`` (and of the writer).
QID_COLUMN = "qid"
LABEL_COLUMN = "label"
DOC_ID_COLUMN = "doc_id"
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


@dataclasses.dataclass(frozen=True, slots=True)
class PartitionWritten:
    """One partition file written (and fsynced) in the temporary directory: file ``index`` of
    ``count`` of ``split``, its queries, rows and size in bytes (progress reporting)."""

    split: str
    index: int
    count: int
    path: Path
    n_queries: int
    n_rows: int
    n_bytes: int


#: Called after each partition file is written; ``write_partitioned_splits``' progress hook.
OnPartition = Callable[[PartitionWritten], None]


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
                f"--out {out} is not empty ({listing(entries)}); pass --force to replace an "
                "earlier ltr partition output, or choose another --out"
            )
        foreign = _foreign_entries(out)
        if entries and foreign:
            raise LtrUserError(
                f"--force replaces only an earlier ltr partition output (train/, valid/, test/ of "
                f"part-*.parquet, {MANIFEST_NAME}), but {out} holds {listing(foreign)}; remove it yourself "
                "or choose another --out"
            )
    ancestor = out.parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise LtrUserError(f"cannot create --out {out}: {ancestor} is not a directory")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise LtrUserError(f"cannot create --out {out}: {ancestor} is not writable")


def check_inputs(files: Mapping[str, Sequence[Path]], fmt: FileFormat, *, doc_id_column: str | None = None) -> None:
    """Fail before any parsing on a missing file or (``auto`` format) one whose format is unknown,
    or on a ``--doc-id-column`` (``doc_id_column``) for sparse text, which has no columns (its
    ``# docid = X`` comments are written as ``doc_id`` without the option): never ignored.

    Raises
    ------
    DataError
        the readers' one line: missing, empty, text without ``qid:`` (and no ``.query`` file);
        a doc id column for text (:func:`ltr.data.formats.doc_ids.not_a_table`).
    """
    for paths in files.values():
        for path in paths:
            if fmt == FileFormat.auto:
                kind = detect_format(path)
            elif not path.is_file():
                raise DataError(f"data file {path} does not exist; check the path")
            else:
                kind = str(fmt)
            if doc_id_column is not None and kind not in ("parquet", "csv"):
                raise not_a_table(f"--doc-id-column {doc_id_column}", path, "leave out --doc-id-column")


def read_splits(
    files: Mapping[str, Sequence[Path]],
    cfg: ParquetDataConfig,
    *,
    valid_fraction: float,
    test_fraction: float,
    seed: int,
) -> dict[str, RankingData]:
    """Train, valid and test read from ``files`` (``{split: [file, ...]}``, train required) as
    ``ltr train data=parquet`` reads them with the table options of ``cfg`` (its ``cache`` is
    ignored: no parse cache), a missing split cut from train (:func:`complete_splits`).

    Raises
    ------
    DataError
        a bad file or value (one line naming the file and the line or qid), or an empty split.
    """
    options = reader_options(dataclasses.replace(cfg, cache=False))
    options.pop("name")  # each split is named after its first file, as the readers do
    read = read_split_files(files, **options)
    splits = complete_splits(read, valid_fraction=valid_fraction, test_fraction=test_fraction, seed=seed)
    check_split_set(splits, sources={s: " + ".join(str(p) for p in ps) for s, ps in files.items()})
    return splits


def complete_splits(
    splits: Mapping[str, RankingData], *, valid_fraction: float, test_fraction: float, seed: int
) -> dict[str, RankingData]:
    """Train, valid and test: the files' splits, a missing one cut from train by query as
    ``ltr train`` cuts it (:func:`ltr.data.splits.split_queries` when both are missing,
    :func:`ltr.data.splits.holdout_queries` for one); logs (INFO) what it cut."""
    train, valid, test = splits["train"], splits.get("valid"), splits.get("test")
    if valid is None and test is None:
        cut = split_queries(train, valid_fraction=valid_fraction, test_fraction=test_fraction, seed=seed)
        log.info(
            "no --valid or --test: cut train's %s queries into %s / %s / %s (fractions %s / %s, seed %s)",
            f"{train.n_queries:,}", f"{cut.train.n_queries:,}", f"{cut.valid.n_queries:,}",
            f"{cut.test.n_queries:,}", valid_fraction, test_fraction, seed,
        )  # fmt: skip
        return dict(cut.items())
    if valid is None:
        train, valid = holdout_queries(train, fraction=valid_fraction, seed=seed, what="validation")
        log.info("no --valid: held out %s of train's queries (fraction %s, seed %s)",
                 f"{valid.n_queries:,}", valid_fraction, seed)  # fmt: skip
    if test is None:
        train, test = holdout_queries(train, fraction=test_fraction, seed=seed, what="test")
        log.info("no --test: held out %s of train's queries (fraction %s, seed %s)",
                 f"{test.n_queries:,}", test_fraction, seed)  # fmt: skip
    return {"train": train, "valid": valid, "test": test}


def partition_counts(
    splits: Mapping[str, RankingData], *, partitions: int | None, rows_per_partition: int
) -> dict[str, int]:
    """Partitions per split: ``partitions`` for each when given, else ``ceil(rows / rows_per_partition)``
    (at least 1). The writer caps each at the split's number of queries."""
    if partitions is not None:
        return dict.fromkeys(splits, partitions)
    return {split: max(1, math.ceil(data.n_rows / rows_per_partition)) for split, data in splits.items()}


def write_partitioned_splits(
    splits: Mapping[str, RankingData],
    out: Path,
    n_partitions: Mapping[str, int],
    *,
    force: bool = False,
    on_partition: OnPartition | None = None,
) -> list[SplitWritten]:
    """Write every split as ``out/<split>/part-NNNNN.parquet`` files of whole queries, atomically.

    When ``splits`` are train, valid and test, ``out/fingerprint.json`` is written after the last
    partition file (:func:`ltr.dask.partition_writer.manifest.write_manifest`: the content fingerprint
    of the splits, :func:`ltr.dask.partition_writer.manifest.content_fingerprint`, and each file's
    relative path, bytes and rows), so that a ``data=parquet_partitions`` run logs the hash a
    local run of the same data logs.

    Everything goes into a temporary sibling of ``out`` first (created with missing parents);
    files and directories are fsynced, then the sibling is renamed to ``out`` (replacing an empty
    directory, or with ``force`` an earlier output, which is deleted afterwards). On any
    exception, Ctrl-C or SIGTERM the temporary directory and the parents created for it are
    removed; ``out`` is as before. ``on_partition`` is called after each file is written and
    fsynced (progress). Returns one :class:`SplitWritten` per split, in the order of ``splits``,
    with the files' final paths under ``out``.

    Raises
    ------
    DataError
        a feature named like the qid or label column (before anything is created).
    LtrUserError
        the file system refused a write or the rename (one line with the reason), or ``out`` was
        filled by someone else meanwhile.
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
        with signals_deferred():  # a Ctrl-C between mkdtemp's mkdir and this assignment left it behind
            tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
        tmp.chmod(0o777 & ~_umask())  # mkdtemp's 0700 would hide the files from other users' workers
        written = [_write_split(data, tmp, split, n_partitions[split], on_partition) for split, data in splits.items()]
        if set(splits) == set(SPLITS):  # last: a manifest only beside every file it records
            _write_manifest(splits, tmp)
        for d in [*(tmp / s for s in splits), tmp]:
            fsync_path(d, os.O_RDONLY | os.O_DIRECTORY)
        with committing():  # a Ctrl-C whose exception was swallowed (a __del__) stops here; after it, none
            _commit(tmp, out, force=force)
            tmp = None
            created = []
        return [dataclasses.replace(w, files=tuple(out / w.split / f.name for f in w.files)) for w in written]
    except OSError as exc:
        raise write_failed(exc, f"cannot write {exc.filename or out}: {exc.strerror or exc}", path=out) from None
    finally:
        if tmp is not None or created:
            with signals_deferred():
                if tmp is not None:
                    shutil.rmtree(tmp, ignore_errors=True)
                for d in reversed(created):
                    with suppress(OSError):
                        d.rmdir()


def train_command(out: Path) -> str:
    """The ``ltr train`` command line that trains on ``out`` (quoted for Hydra and the shell).

    Examples
    --------
    >>> train_command(Path("/shared/big"))
    'ltr train data=parquet_partitions data.root=/shared/big trainer=dask'
    >>> print(train_command(Path("/data/my parts")))
    ltr train data=parquet_partitions "data.root='/data/my parts'" trainer=dask
    """
    root = str(out)
    if not _PLAIN.fullmatch(root):  # Hydra's quoted string: escape quotes and the backslashes before one
        body = re.sub(r"(\\*)'", lambda m: m.group(1) * 2 + "\\'", root)
        root = "'" + re.sub(r"(\\+)$", lambda m: m.group(1) * 2, body) + "'"
    word = f"data.root={root}"
    if not _PLAIN.fullmatch(word.replace("=", "", 1)):  # for the shell, readably if it can be
        word = f'"{word}"' if not re.search(r'[$`\\"!]', word) else shlex.quote(word)
    return f"ltr train data=parquet_partitions {word} trainer=dask"


# -- helpers -------------------------------------------------------------------------------------


def _foreign_entries(out: Path) -> list[str]:
    """Entries of ``out`` that an earlier output would not hold (empty: ``out`` is one): anything
    but ``train/``, ``valid/``, ``test/`` of ``part-*.parquet`` files and a ``fingerprint.json`` file."""
    foreign = []
    for entry in sorted(out.iterdir()):
        if entry.name == MANIFEST_NAME and entry.is_file() and not entry.is_symlink():
            continue
        if entry.name not in SPLITS or entry.is_symlink() or not entry.is_dir():
            foreign.append(entry.name)
            continue
        foreign += [
            f"{entry.name}/{f.name}"
            for f in sorted(entry.iterdir())
            if not _PART_NAME.fullmatch(f.name) or f.is_symlink() or not f.is_file()
        ]
    return foreign


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


def _write_split(
    data: RankingData, tmp: Path, split: str, n_partitions: int, on_partition: OnPartition | None
) -> SplitWritten:
    """One split's files (`ltr.data.query_parts.write_query_partitions`), each fsynced."""
    directory = tmp / split
    directory.mkdir()
    sizes: list[int] = []

    def written(i: int, n: int, path: Path, q0: int, q1: int, r0: int, r1: int) -> None:
        fsync_path(path)
        sizes.append(path.stat().st_size)
        if on_partition is not None:
            on_partition(PartitionWritten(split, i, n, path, q1 - q0, r1 - r0, sizes[-1]))

    paths = write_query_partitions(
        data, directory, n_partitions=n_partitions, qid_column=QID_COLUMN,
        label_column=LABEL_COLUMN, doc_id_column=DOC_ID_COLUMN, on_file=written,
    )  # fmt: skip
    return SplitWritten(split, data.n_queries, data.n_rows, data.n_features, tuple(paths), sum(sizes))


def _write_manifest(splits: Mapping[str, RankingData], tmp: Path) -> None:
    """``tmp/fingerprint.json``: the splits' content fingerprint and the files written (logs it, INFO)."""
    t = time.perf_counter()
    content = content_fingerprint(splits)
    doc_id_column = DOC_ID_COLUMN if any(data.doc_ids is not None for data in splits.values()) else None
    write_manifest(tmp, content, qid_column=QID_COLUMN, label_column=LABEL_COLUMN, doc_id_column=doc_id_column)
    log.info(
        "content fingerprint %s (train %s, valid %s, test %s) in %.1f s, recorded in %s",
        content["sha256"], *(content[s]["sha256"] for s in SPLITS), time.perf_counter() - t, MANIFEST_NAME,
    )  # fmt: skip


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

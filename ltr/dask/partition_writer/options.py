"""``ltr partition``'s options checked and turned into the work's inputs, before any file is read.

The command's contract (what ``ltr partition --help`` and ``docs/`` promise):

- **Input**: the files of each split in any format ``ltr train`` reads (LETOR / SVMlight text,
  LightGBM text + ``.query``, Parquet, CSV; ``.gz`` allowed), read by the same readers with the
  same options and validation as ``ltr train data=parquet`` (:func:`ltr.data.formats.readers.read_split_files`
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
  (:mod:`ltr.dask.partition_writer.manifest`). The hash is logged on stderr.
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
  (:func:`ltr.runtime.stops.stop_signals_recorded`), so one whose exception Python swallowed (it landed
  in a ``__del__`` or garbage-collection callback: "Exception ignored ... KeyboardInterrupt")
  still stops the command before the rename. Once ``OUT`` is in place the work is done
  (:func:`ltr.runtime.stops.committing`): a stop signal then stops nothing, and the command ends with
  exit 0 and its whole output, as every verb whose work is done.

:func:`partition_inputs` is the first step of the work (:mod:`ltr.dask.partition_writer.files` does the
rest); its errors name the command's options.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ltr.config.choices import FileFormat
from ltr.config.groups.data import ParquetDataConfig
from ltr.dask.partition_writer import files as partition_files
from ltr.dask.partition_writer.manifest import SPLITS
from ltr.data.splits import check_fractions
from ltr.errors import DataError, LtrUserError

__all__ = ["partition_inputs"]


def partition_inputs(
    out: Path,
    files: dict[str, Sequence[Path] | None],
    *,
    force: bool,
    fmt: str,
    qid_column: str,
    label_column: str,
    feature_columns: str | None,
    delimiter: str | None,
    n_features: int | None,
    doc_id_column: str | None,
    valid_fraction: float,
    test_fraction: float,
) -> tuple[dict[str, list[Path]], ParquetDataConfig]:
    """Check ``ltr partition``'s options: ``out`` may be written (``force``), the fractions lie in
    (0, 1) and leave train queries when a split is cut from it, the input files exist and are of
    a known format; touches nothing. Returns ``{split: [file, ...]}`` (given splits only, ``~``
    expanded) and the table options as ``ltr train data=parquet``'s config (no parse cache).
    ``feature_columns``: comma-separated names, or None for every other column."""
    partition_files.check_target(out, force=force)
    # before parsing: a bad fraction never costs a read of the whole input
    for flag, value in (("--valid-fraction", valid_fraction), ("--test-fraction", test_fraction)):
        if not 0.0 < value < 1.0:
            raise LtrUserError(f"{flag} {value} must lie in (0, 1)")
    if not files.get("valid") and not files.get("test"):
        try:
            check_fractions(valid_fraction, test_fraction)
        except DataError as exc:
            raise LtrUserError(f"--valid-fraction + --test-fraction: {exc}") from None
    given = {split: [Path(f).expanduser() for f in paths] for split in SPLITS if (paths := files.get(split))}
    cfg = ParquetDataConfig(
        format=FileFormat(fmt), qid_column=qid_column, label_column=label_column,
        feature_columns=None if feature_columns is None else [c.strip() for c in feature_columns.split(",") if c.strip()],
        delimiter=delimiter, n_features=n_features, cache=False, doc_id_column=doc_id_column,
    )  # fmt: skip
    partition_files.check_inputs(given, cfg.format, doc_id_column=doc_id_column)
    return given, cfg

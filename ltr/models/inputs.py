"""What ``ltr predict`` scores: files in any format ``ltr train`` reads, or a run's own split.

- **Parquet** (a file, several, or a directory of whole-query partitions as ``ltr partition``
  writes them) streams in batches of about ``batch_rows`` rows, cut at query boundaries: memory
  holds about three batches (``batch_rows x n_features`` float32 plus its Arrow columns each:
  :func:`ltr.models.predict.predict_input` reads one ahead) and one row per query, whatever the
  file's size. Features are read **by name**: the model's feature names
  (Parquet column names, or ``f1 .. fN`` for models trained on text files); a missing one is one
  line naming the file and the column; other columns are not read. The label column is optional
  (no labels: nothing to evaluate); a document id column is kept for TREC runs: one given
  (``doc_id_column``, ``--doc-id-column``) must be in every file, the run's
  (``data.doc_id_column``) is read when every file has it, else the files are scored without
  doc ids, as ``ltr train`` read them (:func:`ltr.data.formats.doc_ids.column_of_files`; CSV files
  likewise, by their headers).
  Doc ids are converted as ``ltr train``'s readers convert them
  (:func:`ltr.data.formats.doc_ids.from_arrow`: numbers as Arrow's text, a null one line).
  Feature values are converted as ``ltr train`` converts them
  (:func:`ltr.data.formats.table_features.feature_matrix`: the same float32 bits); an infinite or
  non-numeric one is refused in one line naming the file, the column and, for a value, its row
  and qid.
  Files may differ in numeric feature types (int64 in one, double in the next: each scored as it
  would be alone). String qids are numbered 0, 1, ... in order of first appearance over the
  files, as ``ltr train`` numbers them, and kept as written (``RankingData.qid_names``: the TREC
  run and the per-query table carry them).
- **Text** (LETOR/SVMlight, LightGBM with ``.query``) and **CSV** are read whole by the readers
  ``ltr train`` uses (same checks, same errors), then scored as one batch; a feature index beyond
  the model's width is refused there, in a line saying the file is not laid out for the model. Text has no columns: its doc ids are its ``# docid = X``
  comments, and a ``--doc-id-column`` given for it is refused in one line, never ignored (the
  run's ``data.doc_id_column`` is not asked for: it is left aside).
- **A run's split** (``valid`` / ``test``): the data the run was trained and evaluated on, made
  again from its config (synthetic data regenerated from its seed, files read again) and refused
  when its fingerprint is not the one the run logged (:mod:`ltr.models.own_split`).

Rows of one query must be contiguous (as for training): a query met again later is refused; a
file given twice (by two paths, or in a folder given too) is refused first, as given twice.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from numpy.typing import NDArray

from ltr.config.choices import RerankKind
from ltr.data.formats.arrow_matrix import to_float64
from ltr.data.formats.doc_ids import column_of_files, from_arrow, not_a_table
from ltr.data.formats.parquet_columns import ParquetColumns
from ltr.data.formats.read_columns import table_columns
from ltr.data.formats.readers import concat_ranking_data, detect_format, read_ranking_file, widen
from ltr.data.formats.table_features import ColumnSource, RowNames, feature_matrix, is_numeric
from ltr.data.formats.table_qids import qids_are_ids, query_numbers, refuse_string_qids
from ltr.data.load import reader_options
from ltr.data.query_parts import partition_files
from ltr.data.ranking_data import RankingData
from ltr.data.validate import run_starts
from ltr.errors import DataError, LtrUserError
from ltr.metrics.table import largest_gain
from ltr.models.logged import LoggedRun
from ltr.models.own_split import own_split

log = logging.getLogger(__name__)

#: Rows per batch of a streamed Parquet input (about 54 MB of float32 features at 136 columns).
DEFAULT_BATCH_ROWS = 100_000

#: The option naming a document id column (``doc_id_column`` of :func:`ltr.api.predict`).
DOC_ID_OPTION = "--doc-id-column"

#: What a message on a non-numeric feature column of a Parquet input advises.
NOT_NUMERIC_HINT = "the model was trained on numbers: write the column as numbers"


#: Why a batch's qids must be integers when the input's are (a file's qid type differs from the others').
STRING_QIDS = "the other files' qids are integers: write every file's qids with one type"


@dataclass(frozen=True)
class PredictInput:
    """Batches of whole queries, and what is known before reading them."""

    description: str
    batches: Callable[[], Iterator[RankingData]]
    labelled: bool
    n_rows: int
    #: ERR's normaliser for batch-wise tables (the largest gain of the whole input); None: one batch
    max_gain: float | None
    #: read batch by batch (Parquet), not whole
    streamed: bool = False


def parquet_files(paths: Sequence[Path]) -> list[Path]:
    """The Parquet files of ``paths``, in the order given: a directory stands for its
    ``*.parquet`` files in partition order (by number: :func:`ltr.data.query_parts.partition_files`,
    as ``ltr train data=parquet_partitions`` reads them)."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = partition_files(path)
            if not found:
                raise DataError(f"{path} holds no *.parquet files")
            files += found
        elif path.is_file():
            files.append(path)
        else:
            raise DataError(f"data file {path} does not exist; check the path")
    given_once(files)
    return files


def given_once(files: Sequence[Path]) -> None:
    """Refuse a data file given twice (by the same or another path, or in a folder given too) in
    one line: its queries would be scored twice (and refused as not contiguous)."""
    seen: dict[Path, Path] = {}
    for path in files:
        key = path.resolve()
        if key in seen:
            again = "" if str(seen[key]) == str(path) else f" (as {seen[key]} and {path})"
            raise LtrUserError(f"data file {path} is given twice{again}; give each file once")
        seen[key] = path


class Columns(NamedTuple):
    """The qid, label and document id columns a prediction reads, and who named the document id
    column: ``--doc-id-column`` (every file must have it) or None (the run's
    ``data.doc_id_column``: a file without it is scored without doc ids, as ``ltr train`` read
    the run's partitions; :func:`ltr.data.formats.doc_ids.column_of_files`)."""

    qid: str
    label: str
    doc_id: str | None
    doc_id_asked_by: str | None


def column_names(
    run: LoggedRun, qid_column: str | None, label_column: str | None, doc_id_column: str | None
) -> Columns:
    """The qid, label and document id columns: those given, else the run's data settings
    (``data.qid_column`` ...), else ``qid`` / ``label`` / none; a document id column given is
    asked for by ``--doc-id-column`` (:class:`Columns`)."""
    data_cfg = run.spec.config.data
    return Columns(
        qid_column or str(getattr(data_cfg, "qid_column", "qid")),
        label_column or str(getattr(data_cfg, "label_column", "label")),
        doc_id_column or getattr(data_cfg, "doc_id_column", None),
        None if doc_id_column is None else DOC_ID_OPTION,
    )


def _is_parquet(paths: Sequence[Path], fmt: str) -> bool:
    if fmt != "auto":
        return fmt == "parquet"
    first = paths[0]
    if first.is_dir():
        return True
    return first.is_file() and detect_format(first) == "parquet"


def open_input(
    run: LoggedRun,
    paths: Sequence[str | Path],
    *,
    fmt: str = "auto",
    batch_rows: int = DEFAULT_BATCH_ROWS,
    qid_column: str | None = None,
    label_column: str | None = None,
    doc_id_column: str | None = None,
) -> PredictInput:
    """The batches of ``paths`` for ``run``'s model (see the module docstring). Column options
    default to the run's data settings (``data.qid_column`` ...), then ``qid`` / ``label``."""
    if batch_rows < 1:
        raise LtrUserError(f"--batch-rows={batch_rows} must be >= 1")
    files = [Path(p).expanduser() for p in paths]
    if not files:
        raise LtrUserError("no data given: pass --data FILE or --split test")
    data_cfg = run.spec.config.data
    qid_column, label_column, doc_id_column, asked_by = column_names(run, qid_column, label_column, doc_id_column)
    if _is_parquet(files, fmt):
        return _parquet_input(run, parquet_files(files), batch_rows, qid_column, label_column, doc_id_column, asked_by)
    for f in files:
        if not f.is_file():
            raise DataError(f"data file {f} does not exist; check the path")
    given_once(files)
    options = {k: v for k, v in reader_options(data_cfg).items() if k in ("integer_labels", "max_label", "max_list_len", "delimiter")}
    text = fmt in ("auto", "letor", "svmlight", "lightgbm") and all(detect_format(f) != "csv" for f in files)
    if text and asked_by is not None and doc_id_column is not None:  # never ignored: refused
        raise not_a_table(f"{asked_by} {doc_id_column}", files[0], f"leave out {asked_by}")
    if not text and doc_id_column is not None:  # CSV: the rule of Parquet files, on the headers
        headers = [(f, table_columns(f, kind="csv", delimiter=options.get("delimiter"))) for f in files]
        doc_id_column = column_of_files(doc_id_column, headers, asked_by=asked_by)
    parts = [
        _read_for_model(
            run, f, text, format=fmt, n_features=run.n_features if text else None, qid_column=qid_column,
            label_column=label_column, feature_columns=None if text else run.feature_names,
            doc_id_column=None if text else doc_id_column, **options,
        )
        for f in files
    ]
    data = parts[0] if len(parts) == 1 else _concat(parts)
    return PredictInput(", ".join(str(f) for f in files), lambda: iter([data]), True, data.n_rows, None)


#: The text reader's line on a feature index above the width it was given (``n_features``).
_ABOVE_WIDTH = re.compile(r"^feature index (\d+) at line (\d+) of (.+) is above n_features=(\d+); raise n_features or fix the index$")


def _read_for_model(run: LoggedRun, path: Path, text: bool, **options: Any) -> RankingData:
    """One file read as ``ltr train`` reads it, at the model's width; a text file's feature index
    above that width is one line saying the file is not for this model (the width is the model's:
    there is no ``n_features`` to raise)."""
    try:
        return read_ranking_file(path, **options)
    except DataError as exc:
        found = _ABOVE_WIDTH.match(str(exc)) if text else None
        if found is None:
            raise
        index, line, source, width = found.groups()
        raise DataError(
            f"feature index {index} at line {line} of {source} is above n_features={width}, the width of the model "
            f"of run {run.label} (f1 .. f{width}): the file is not laid out as the run's data; fix the index, "
            "or score it with a model trained on its features"
        ) from None


def _concat(parts: list[RankingData]) -> RankingData:
    width = max(p.n_features for p in parts)
    return concat_ranking_data([widen(p, width) for p in parts], name=parts[0].name)


def split_input(run: LoggedRun, split: str) -> PredictInput:
    """The run's own ``split`` (``train``, ``valid`` or ``test``), with the labels its evaluation
    used, made again from its config and refused when it is not the data the run logged
    (:func:`ltr.models.own_split.own_split`: its fingerprint)."""
    data = own_split(run, split)
    return PredictInput(f"the {split} split of run {run.label}", lambda: iter([data]), True, data.n_rows, None)


def split_wide_step(run: LoggedRun) -> str | None:
    """Why the run's ranking or measures need the whole input at once, or None: the tail of a
    popularity feature (``tail_at_k``: a quantile of the split), ``rerank=uncertainty`` (popularity
    ranks of the split), ``rerank.category_bins`` (quantile bins of the split)."""
    config = run.spec.config
    if getattr(config.data, "popularity_feature", None) is not None:
        return f"data.popularity_feature={config.data.popularity_feature} (the tail is a quantile of the whole input)"
    if config.rerank.kind == RerankKind.uncertainty:
        return "rerank=uncertainty (popularity ranks of the whole input)"
    if config.rerank.kind != RerankKind.none and config.rerank.category_bins is not None:
        return "rerank.category_bins (quantile bins of the whole input)"
    return None


@dataclass(frozen=True)
class ParquetPlan:
    """What the footers and label columns of Parquet files say before any feature is read."""

    #: columns to read: qid, label (when every file has it), document id, the model's features
    columns: list[str]
    labelled: bool
    n_rows: int
    #: ERR's normaliser: the largest gain of every file's labels (None without labels)
    max_gain: float | None
    #: the qids are ids (strings): numbered 0, 1, ... in order of first appearance, written as they are
    qid_ids: bool = False
    #: the document id column read (every file has it), or None: no doc ids
    doc_id_column: str | None = None


def parquet_input_plan(
    run: LoggedRun,
    files: list[Path],
    qid_column: str,
    label_column: str,
    doc_id_column: str | None,
    doc_id_asked_by: str | None = None,
) -> ParquetPlan:
    """Check every file's columns against the model's feature names (one line naming the file and
    the first missing column) and read the label columns for ERR's normaliser. The document id
    column is read when every file has it; a file without it is one line when ``doc_id_asked_by``
    names the option that asked for it, else the files are scored without doc ids
    (:func:`ltr.data.formats.doc_ids.column_of_files`, the rule of ``ltr train``'s partition reader)."""
    names = run.feature_names
    n_rows = 0
    labelled = True
    schemas: list[tuple[Path, list[str]]] = []
    for path in files:
        try:
            schema = pq.read_schema(path)
            n_rows += pq.read_metadata(path).num_rows
        except (OSError, pa.ArrowException) as exc:
            raise DataError(f"{path} is not a readable Parquet file: {str(exc).splitlines()[0]}") from exc
        present = set(schema.names)
        missing = [c for c in [qid_column, *names] if c not in present]
        if missing:
            raise DataError(
                f"{path} has no column {missing[0]!r}"
                + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else "")
                + f"; the model of run {run.label} takes {names[0]} .. {names[-1]} by name"
            )
        schemas.append((path, schema.names))
        labelled = labelled and label_column in present
    doc_id_column = column_of_files(doc_id_column, schemas, asked_by=doc_id_asked_by)
    max_gain = None
    if labelled:
        top = max(int(pa.compute.max(pq.read_table(p, columns=[label_column]).column(0)).as_py() or 0) for p in files)
        max_gain = largest_gain(np.array([top], dtype=np.int64), run.spec.conventions)
    columns = [qid_column, *([label_column] if labelled else []), *([doc_id_column] if doc_id_column else []), *names]
    return ParquetPlan(columns, labelled, n_rows, max_gain, qids_are_ids(files, qid_column), doc_id_column)


def whole_input_warning(run: LoggedRun, files: list[Path]) -> str | None:
    """Why the run's ranking needs the whole input (:func:`split_wide_step`) when it is split over
    several files, each then taken on its own (logged as a warning); None otherwise."""
    whole = split_wide_step(run)
    if whole is not None and len(files) > 1:
        log.warning("%s: with %d files the run's %s is taken per file", files[0].parent, len(files), whole)
    return whole


def _parquet_input(
    run: LoggedRun,
    files: list[Path],
    batch_rows: int,
    qid_column: str,
    label_column: str,
    doc_id_column: str | None,
    doc_id_asked_by: str | None,
) -> PredictInput:
    plan = parquet_input_plan(run, files, qid_column, label_column, doc_id_column, doc_id_asked_by)
    names = run.feature_names
    whole = whole_input_warning(run, files)
    if whole is not None and len(files) == 1:
        log.info("scoring %s in one batch of %d rows: %s", files[0], plan.n_rows, whole)
        batch_rows = max(plan.n_rows, 1)
    label = label_column if plan.labelled else None

    def batches() -> Iterator[RankingData]:
        return _stream(files, plan.columns, names, qid_column, label, plan.doc_id_column, batch_rows, qid_ids=plan.qid_ids)

    described = f"{len(files)} Parquet file{'s' if len(files) > 1 else ''} ({files[0]}{' ...' if len(files) > 1 else ''})"
    return PredictInput(described, batches, plan.labelled, plan.n_rows, plan.max_gain, streamed=True)


def read_whole_file(
    path: Path,
    columns: list[str],
    names: list[str],
    qid_column: str,
    label_column: str | None,
    doc_id_column: str | None,
    *,
    qid_ids: bool = False,
) -> RankingData:
    """One Parquet file of whole queries as one batch (the columns of a :class:`ParquetPlan`;
    ``qid_ids``: its qids are ids, numbered from 0 in this file and kept as written)."""
    with ParquetColumns(path, columns) as table:  # the features read a few columns at a time
        table.require(columns, "the file changed after its columns were checked; run the command again")
        if table.num_rows == 0:
            raise DataError(f"{path} holds no rows")
        seen = QidsSeen({} if qid_ids else None)
        return _batch(table, names, qid_column, label_column, doc_id_column, seen, path, RowNames.of_file(path))


def _stream(
    files: list[Path],
    columns: list[str],
    names: list[str],
    qid_column: str,
    label_column: str | None,
    doc_id_column: str | None,
    batch_rows: int,
    *,
    qid_ids: bool = False,
) -> Iterator[RankingData]:
    """Whole-query batches of the files: each record batch, plus the rows of its last query
    carried from the previous one, up to the start of its own last query. ``qid_ids``: the qids
    are ids (strings), numbered 0, 1, ... in order of first appearance over the files, each
    batch keeping them as written (``RankingData.qid_names``)."""
    seen = QidsSeen({} if qid_ids else None)
    carry: pa.Table | None = None
    carry_file: Path | None = None
    carry_pieces: tuple[tuple[str, int, int], ...] = ()  # where the carried rows come from (RowNames)
    for path in files:
        first_row = 1  # of the next record batch in its file
        # pre_buffer=False: Arrow's default pre-buffers the file's column chunks and keeps them
        # (memory grows with the file: 1.24 GB vs 0.53 GB peak at 600k rows x 136, measured)
        for record_batch in pq.ParquetFile(path, pre_buffer=False).iter_batches(batch_size=batch_rows, columns=columns):
            table = pa.Table.from_batches([record_batch])
            if qid_ids:  # one type whatever each file's (int64 in one, string in the next): the ids as text
                table = table.set_column(table.schema.get_field_index(qid_column), qid_column, table.column(qid_column).cast(pa.string()))
            pieces = (*carry_pieces, (str(path), first_row, record_batch.num_rows))
            first_row += record_batch.num_rows
            if carry is not None:
                table = join_tables(carry, table, names, qid_column, RowNames(carry_pieces), path)
            qids = seen.row_numbers(table.column(qid_column), qid_column, RowNames(pieces))
            starts = run_starts(qids)
            cut = int(starts[-1])
            head, carry_pieces = _split_pieces(pieces, cut)
            if cut > 0:
                yield _batch(
                    table.slice(0, cut), names, qid_column, label_column, doc_id_column, seen, carry_file or path, RowNames(head)
                )
            carry, carry_file = table.slice(cut), path
    if carry is not None and carry.num_rows:
        yield _batch(carry, names, qid_column, label_column, doc_id_column, seen, carry_file or files[-1], RowNames(carry_pieces))


@dataclass
class QidsSeen:
    """The queries of the batches so far: their integer qids, or with ids (``names`` not None) the
    number each id was given (0, 1, ... in order of first appearance, as ``ltr train`` numbers
    string qids)."""

    names: dict[str, int] | None = None
    numbers: set[int] = field(default_factory=set)

    def row_numbers(self, column: pa.ChunkedArray, qid_column: str, rows: RowNames) -> NDArray[np.int64]:
        """Every row's qid (integers) or the number of its id within ``column`` (from 0), to cut at."""
        if self.names is None:
            return refuse_string_qids(column, qid_column, rows, STRING_QIDS)
        return query_numbers(column, rows)[0]

    def take(
        self, column: pa.ChunkedArray, qid_column: str, rows: RowNames, path: Path
    ) -> tuple[NDArray[np.int64], NDArray[np.int64], list[str] | None]:
        """Row qids, the start row of every query and (ids) every query's id, of a batch of whole
        queries met once each (else one line naming the query); the batch's queries are now seen."""
        if self.names is None:
            row_qids = refuse_string_qids(column, qid_column, rows, STRING_QIDS)
            starts = run_starts(row_qids)
            qids = row_qids[starts]
            unique, counts = np.unique(qids, return_counts=True)
            met = set(unique.tolist()) & self.numbers
            if unique.shape[0] < qids.shape[0] or met:
                repeated = sorted(met)[0] if met else int(unique[np.argmax(counts > 1)])
                raise DataError(f"the rows of qid {repeated} in {path} are not contiguous; group each query's rows together")
            self.numbers.update(unique.tolist())
            return row_qids, starts, None
        local, ids = query_numbers(column, rows)
        starts = run_starts(local)
        runs = local[starts]  # 0, 1, 2, ... unless a query's rows are split
        again = [q for q in ids if q in self.names]
        if again or runs.shape[0] > len(ids):
            repeated = again[0] if again else ids[int(runs[np.argmax(np.diff(runs) < 0) + 1])]
            raise DataError(f"the rows of qid {repeated!r} in {path} are not contiguous; group each query's rows together")
        first = len(self.names)
        self.names.update((q, first + i) for i, q in enumerate(ids))
        return local + first, starts, ids


def join_tables(
    carry: pa.Table, table: pa.Table, names: Sequence[str], qid_column: str, carry_rows: RowNames, path: Path
) -> pa.Table:
    """The rows of ``carry`` (the end of one file: ``carry_rows``) then those of ``table`` (from
    ``path``), scored as each would be on its own. A feature column whose type differs (int64 in
    one file, double in the next) becomes float64 in both, as :func:`feature_matrix` converts
    it (:func:`ltr.data.formats.arrow_matrix.to_float64`: the same float32 bits); other columns (qid,
    label, document id) take Arrow's common type. A feature that is not numeric in either is
    refused as in one file (:func:`feature_matrix`); columns Arrow cannot join are one line naming
    both files and the column."""
    if carry.schema.equals(table.schema):
        return pa.concat_tables([carry, table])
    features = set(names)
    for name in carry.column_names:
        old, new = carry.column(name).type, table.column(name).type
        if old == new or name not in features:
            continue
        for part, rows in ((carry, carry_rows), (table, RowNames.of_file(path))):
            if not is_numeric(part.column(name).type):  # refused with its own file's message
                feature_matrix(part, [name], qid_column=qid_column, rows=rows, not_numeric_hint=NOT_NUMERIC_HINT)
        carry = carry.set_column(carry.schema.get_field_index(name), name, to_float64(carry.column(name)))
        table = table.set_column(table.schema.get_field_index(name), name, to_float64(table.column(name)))
    try:
        return pa.concat_tables([carry, table], promote_options="permissive")
    except pa.ArrowException:
        name = next(n for n in carry.column_names if carry.column(n).type != table.column(n).type)
        raise DataError(
            f"column {name!r} has type {table.column(name).type} in {path} but {carry.column(name).type} in "
            f"{carry_rows.source}; write it with one type in every file"
        ) from None


def _split_pieces(
    pieces: tuple[tuple[str, int, int], ...], cut: int
) -> tuple[tuple[tuple[str, int, int], ...], tuple[tuple[str, int, int], ...]]:
    """``pieces`` of a table (:class:`RowNames`) as those of its first ``cut`` rows and of the rest."""
    head: list[tuple[str, int, int]] = []
    tail: list[tuple[str, int, int]] = []
    for path, first, n in pieces:
        taken = min(n, max(cut, 0))
        if taken:
            head.append((path, first, taken))
        if n > taken:
            tail.append((path, first + taken, n - taken))
        cut -= taken
    return tuple(head), tuple(tail)


def _batch(
    table: ColumnSource,
    names: list[str],
    qid_column: str,
    label_column: str | None,
    doc_id_column: str | None,
    seen: QidsSeen,
    path: Path,
    rows: RowNames,
) -> RankingData:
    """The rows of ``table`` (whole queries, none in ``seen``, which gains them) as a batch named
    for ``path``; ``rows`` names the file and row of a bad feature value."""
    n_rows = table.num_rows
    row_qids, starts, ids = seen.take(table.column(qid_column), qid_column, rows, path)
    qids = row_qids[starts]
    features = feature_matrix(table, names, qid_column=qid_column, rows=rows, not_numeric_hint=NOT_NUMERIC_HINT)
    if label_column is not None:
        labels = _labels(table.column(label_column), path, label_column)
    else:
        labels = np.zeros(n_rows, dtype=np.int32)
    offsets = np.concatenate([starts, [n_rows]]).astype(np.int64)
    doc_ids = None if doc_id_column is None else from_arrow(table.column(doc_id_column), name=doc_id_column, rows=rows)
    return RankingData(
        features, labels, qids, offsets, feature_names=tuple(names), name=path.stem, doc_ids=doc_ids,
        qid_names=None if ids is None else np.asarray(ids, dtype=object),
    )


def _labels(column: pa.ChunkedArray, path: Path, name: str) -> NDArray[np.int32]:
    values = column.to_numpy()
    if values.dtype.kind == "f":
        bad = ~np.isfinite(values) | (values != np.round(values))
        if bad.any():
            raise DataError(f"label {values[np.argmax(bad)]!r} in column {name!r} of {path} is not an integer grade")
    labels: NDArray[np.int32] = np.asarray(values, dtype=np.int32)
    if (labels < 0).any():
        raise DataError(f"label {int(labels[np.argmax(labels < 0)])} in column {name!r} of {path} is negative")
    return labels

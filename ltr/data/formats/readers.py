"""Public entry points: read one ranking file, or a set of split files with one common width.

:func:`read_ranking_file` picks the reader by extension and content:

- ``.parquet`` / ``.pq``: Parquet table (:mod:`ltr.data.formats.read_columns`);
- ``.csv`` / ``.tsv`` (optionally ``.gz``): CSV table with a header;
- anything else is sparse text (:mod:`ltr.data.formats.read_text`), gzipped or not. If its first data
  line has ``qid:``, it is LETOR / SVMlight and every line needs a qid. If not, it is LightGBM's
  form and the groups come from the ``.query`` side file (``rank.train`` or ``rank.train.gz`` ->
  ``rank.train.query``); its qids are then numbered 0, 1, ... in file order.

Positions (the logged 0-based place of every row, :mod:`ltr.data.feedback.positions`) come from a
LightGBM ``.position`` side file beside a text file (``rank.train`` -> ``rank.train.position``),
or from ``position_column`` of a Parquet / CSV table; they follow their rows through any
regrouping. So do document ids (:mod:`ltr.data.formats.doc_ids`): ``#docid = X`` comments of a text
file, or ``doc_id_column`` of a table. A ``.position`` file is part of the cache key, so a changed one is read again.

Every read is validated (:mod:`ltr.data.validate`) and, with a ``cache_dir``, cached
(:mod:`ltr.data.cache`).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from ltr.config.choices import FileFormat
from ltr.data.cache import (
    DEFAULT_MAX_MB,
    cache_key,
    cache_limit_mb,
    freeze_arrays,
    keep_recent,
    load_cached,
    recent_entry,
    store_cached,
    store_later,
)
from ltr.data.feedback.positions import concat_positions, find_position_file, read_position_file
from ltr.data.formats import doc_ids as doc_id_arrays
from ltr.data.formats.file_names import table_format_by_name
from ltr.data.formats.read_columns import read_table
from ltr.data.formats.read_text import head_has_qid, parse_svmlight, read_head
from ltr.data.formats.side_files import side_file_candidates
from ltr.data.formats.table_features import RowNames
from ltr.data.formats.table_qids import query_numbers
from ltr.data.ranking_data import RankingData
from ltr.data.validate import (
    LIGHTGBM_MAX_DEFAULT_LABEL,
    LIGHTGBM_MAX_LIST_LEN,
    RawTable,
    check_group_sizes,
    group_rows,
    to_ranking_data,
)
from ltr.errors import DataError

logger = logging.getLogger(__name__)

FORMATS: tuple[str, ...] = tuple(str(f) for f in FileFormat)


def detect_format(path: Path, *, query_file: Path | None = None) -> str:
    """``"parquet"``, ``"csv"``, ``"letor"`` (text with ``qid:``) or ``"lightgbm"`` (text + ``.query``).

    Raises
    ------
    DataError
        a missing file, an empty text file, or text without ``qid:`` and without a ``.query`` file.
    """
    if not path.exists():
        raise DataError(f"data file {path} does not exist; check the path")
    if path.is_dir():
        raise DataError(f"data file {path} is a directory, not a file")
    table = table_format_by_name(path)
    if table is not None:
        return table
    has_qid = head_has_qid(read_head(path))
    if has_qid is None:
        raise DataError(
            f"{path} has no data rows (an empty file, or only blank lines and comments); check "
            "the path, or regenerate the file"
        )
    if has_qid:
        return "letor"
    if query_file is not None or find_query_file(path) is not None:
        return "lightgbm"
    line = _first_data_line(path)
    raise DataError(
        f"line {line} of {path} has no qid:<id>; every line of a LETOR / SVMlight ranking file "
        f"needs one after the label (or put the group sizes in {_query_candidates(path)[0].name} "
        "beside it, LightGBM's form)"
    )


def find_query_file(path: Path) -> Path | None:
    """LightGBM's group-size side file of ``path``, if one exists."""
    for candidate in _query_candidates(path):
        if candidate.is_file():
            return candidate
    return None


def read_query_file(path: Path) -> np.ndarray[Any, np.dtype[np.int64]]:
    """Group sizes from a LightGBM ``.query`` file (one integer per line)."""
    if not path.is_file():
        raise DataError(f"group-size file {path} does not exist; check the path")
    sizes: list[int] = []
    for n, line in enumerate(path.read_text().splitlines(), start=1):
        token = line.strip()
        if not token:
            continue
        try:
            sizes.append(int(token))
        except ValueError:
            raise DataError(
                f"group size {token!r} at line {n} of {path} is not an integer; a .query file has "
                "one row count per line"
            ) from None
    return np.asarray(sizes, dtype=np.int64)


def read_ranking_file(
    path: str | Path,
    *,
    n_features: int | None = None,
    format: str = "auto",
    name: str | None = None,
    query_file: str | Path | None = None,
    qid_column: str = "qid",
    label_column: str = "label",
    feature_columns: Sequence[str] | None = None,
    delimiter: str | None = None,
    position_column: str | None = None,
    doc_id_column: str | None = None,
    behaviour_columns: Sequence[str] = (),
    integer_labels: bool = True,
    max_label: int | None = LIGHTGBM_MAX_DEFAULT_LABEL,
    max_list_len: int | None = LIGHTGBM_MAX_LIST_LEN,
    cache_dir: str | Path | None = None,
    cache_max_mb: int | None = DEFAULT_MAX_MB,
    progress: bool | None = None,
    value_labels: bool = False,
    cache_in_background: bool = False,
) -> RankingData:
    """Read one ranking file into a validated `RankingData`.

    ``cache_in_background``: a parsed file's cache entry is written by a background thread
    (:func:`ltr.data.cache.store_later`; :func:`ltr.data.cache.wait_for_stores` waits for it)
    while the caller goes on, instead of before this returns.

    ``value_labels``: keep the labels as real values (float64, finite and >= 0: value gains,
    ``ltr evaluate --gain value``), not integer grades; never cached.

    Parameters
    ----------
    path : the data file (``.gz`` allowed)
    n_features : fixed width of the feature matrix, a positive integer (text: an index above it
        is an error; tables: the number of feature columns must match). None: the largest index
        seen, at most :data:`ltr.data.formats.read_text.MAX_FEATURE_INDEX` (1,000,000).
    format : ``auto`` (by extension and content), ``letor`` / ``svmlight`` (text with ``qid:``),
        ``lightgbm`` (text + ``.query``), ``parquet`` or ``csv``
    name : the data set's name in `RankingData` (default: the file name)
    query_file : LightGBM group-size file (default: found beside ``path``)
    qid_column, label_column, feature_columns, delimiter : table options (Parquet / CSV)
    position_column : Parquet / CSV column of logged 0-based positions (not a feature); None: no
        positions. Text files take theirs from a ``.position`` side file when one exists.
    doc_id_column : Parquet / CSV column of document ids (kept as str, not a feature); None: no
        doc ids. Text files take theirs from ``#docid = X`` comments (every data line, or none).
    integer_labels, max_label, max_list_len : validation policies (:mod:`ltr.data.validate`)
    cache_dir : a directory for the binary cache; None: no cache
    cache_max_mb : size limit of the cache in MiB, least recently used entries evicted first;
        None: no limit. ``$LTR_CACHE_MAX_MB`` overrides it.
    progress : show a progress bar (None: when stderr is a terminal and the file is large)

    Returns
    -------
    RankingData
        rows contiguous per query (regrouped stably, with a warning, if they were not), with
        ``positions`` when the file has them.

    Raises
    ------
    DataError
        any problem with the file, in one line naming the file and line or qid.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "toy.txt"
    >>> _ = p.write_text("2 qid:7 1:0.5 3:1 # doc a\\n0 qid:7 2:1.5\\n1 qid:9 1:2\\n")
    >>> d = read_ranking_file(p)
    >>> d.features.shape, d.qids.tolist(), d.offsets.tolist(), d.labels.tolist()
    ((3, 3), [7, 9], [0, 2, 3], [2, 0, 1])
    """
    path = Path(path).expanduser()
    if format not in FORMATS:
        raise DataError(f"unknown data format {format!r}; use one of {', '.join(FORMATS)}")
    if n_features is not None and (isinstance(n_features, bool) or not isinstance(n_features, int) or n_features < 1):
        raise DataError(
            f"data.n_features={n_features!r} is not a positive integer; give the feature width "
            "(the largest feature index), or null to take it from the files"
        )
    qfile = Path(query_file).expanduser() if query_file is not None else None
    fmt = detect_format(path, query_file=qfile) if format == "auto" else format
    if fmt == "svmlight":
        fmt = "letor"
    if fmt == "lightgbm" and qfile is None:
        qfile = find_query_file(path)
        if qfile is None:
            raise DataError(
                f"no group-size file for {path} (looked for "
                f"{', '.join(p.name for p in _query_candidates(path))}); give data.query_file or "
                "use qid: in the data"
            )
    display_name = name if name is not None else _stem(path)
    options: dict[str, Any] = {
        "format": fmt, "n_features": n_features, "qid_column": qid_column,
        "label_column": label_column,
        "feature_columns": None if feature_columns is None else list(feature_columns),
        "delimiter": delimiter, "position_column": position_column,
        "integer_labels": integer_labels, "max_label": max_label, "max_list_len": max_list_len,
    }
    if doc_id_column is not None:  # only then: the cache keys of other reads stay as they were
        if fmt not in ("parquet", "csv"):
            raise doc_id_arrays.not_a_table(f"data.doc_id_column={doc_id_column!r}", path, "set data.doc_id_column=null")
        options["doc_id_column"] = doc_id_column
    if behaviour_columns:
        if fmt not in ("parquet", "csv"):
            raise DataError(
                f"data.behaviour_columns={list(behaviour_columns)} name columns of a Parquet / CSV table, "
                f"but {path} is sparse text; set data.behaviour_columns=[]"
            )
        options["behaviour_columns"] = [str(c) for c in behaviour_columns]
        cache_dir = None  # the parse cache does not store behaviour columns: read the table itself
    if value_labels:
        cache_dir = None  # the parse cache holds integer grades
    if not path.is_file():
        raise DataError(f"data file {path} does not exist; check the path")
    sources = [path] if qfile is None or fmt != "lightgbm" else [path, qfile]
    pfile = find_position_file(path) if fmt in ("letor", "lightgbm") else None
    if pfile is not None:
        sources.append(pfile)  # a new, changed or removed .position file changes the cache key
    cache = Path(cache_dir).expanduser() if cache_dir is not None else None
    if cache is not None:
        max_mb = cache_limit_mb(cache_max_mb)
        t0 = time.perf_counter()
        key = cache_key(sources, options)  # the files' state before reading them
        recent = recent_entry(cache, key)
        hit = recent or load_cached(cache, sources, options)
        if hit is not None:
            cached, cached_notes = hit
            for note in cached_notes:
                logger.warning("%s", note)
            if recent is None:
                keep_recent(key, cached, cached_notes)
                logger.info("read %s from the cache in %.2f s", path, time.perf_counter() - t0)
            else:
                logger.info("%s: the data this process read last (unchanged file)", path)
            return dataclasses.replace(cached, name=display_name)
    t0 = time.perf_counter()
    table = _parse(path, fmt, qfile, options, progress, pfile)
    notes: list[str] = []
    data = to_ranking_data(
        table, name=display_name, integer_labels=integer_labels, max_label=max_label,
        max_list_len=max_list_len, notes=notes, value_labels=value_labels,
    )
    logger.info(
        "parsed %s: %d rows, %d queries, %d features in %.2f s",
        path, data.n_rows, data.n_queries, data.n_features, time.perf_counter() - t0,
    )
    if cache is not None:
        freeze_arrays(data)
        store = store_later if cache_in_background else store_cached
        store(cache, sources, options, data, notes=notes, max_mb=max_mb)
        keep_recent(key, data, notes)
    return data


def read_split_files(
    paths: Mapping[str, str | Path | Sequence[str | Path] | None],
    **options: Any,
) -> dict[str, RankingData]:
    """Read the files of several splits (None: absent) with one common feature width.

    A split given as a list of files is their concatenation (e.g. MQ2008 S1+S2+S3). Sparse
    text files are widened with zero columns to the largest feature index seen in any file.
    Queries of LightGBM's ``.query`` form have no ids; they are numbered 0, 1, ... on across
    the files, so no two splits share one. Options are those of :func:`read_ranking_file`.
    """
    out: dict[str, RankingData] = {}
    next_qid = 0  # queries of LightGBM's .query form are numbered on across all files
    for split, spec in paths.items():
        if spec is None:
            continue
        files = [spec] if isinstance(spec, str | Path) else list(spec)
        if not files:
            raise DataError(f"no files given for the {split} split")
        parts = []
        for f in files:
            part = read_ranking_file(f, **options)
            if _format_of(Path(f), options) == "lightgbm":
                part = dataclasses.replace(part, qids=part.qids + next_qid)
                next_qid += part.n_queries
            parts.append(part)
        name = options.get("name")
        out[split] = concat_ranking_data(parts, name=name if name is not None else parts[0].name)
    if out:
        width = max(d.n_features for d in out.values())
        out = {s: widen(d, width) for s, d in out.items()}
    return out


def widen(data: RankingData, width: int) -> RankingData:
    """``data`` with zero feature columns appended up to ``width`` (unchanged if already that wide)."""
    if data.n_features == width:
        return data
    if data.feature_names:
        raise DataError(
            f"{data.name} has {data.n_features} named feature columns but another split has "
            f"{width}; give every split the same feature columns"
        )
    features = np.zeros((data.n_rows, width), dtype=np.float32)
    features[:, : data.n_features] = data.features
    return dataclasses.replace(data, features=features)


def concat_ranking_data(parts: Sequence[RankingData], *, name: str) -> RankingData:
    """Stack the rows of several `RankingData`; a qid found in two parts is regrouped (one warning,
    naming the first such qid as written). When a part's qids were strings (``qid_names``), the
    qids of every part are taken as written (an integer as its text) and numbered 0, 1, ... in
    order of first appearance over the parts, as one file's are: a string in two files is one
    query, two files' own numbers are not."""
    if len(parts) == 1:
        return dataclasses.replace(parts[0], name=name)
    width = max(p.n_features for p in parts)
    parts = [widen(p, width) for p in parts]
    row_qids = np.concatenate([p.row_qids() for p in parts])
    names: tuple[str, ...] | None = None
    if any(p.qid_names is not None for p in parts):  # every part's qids as written, numbered as one file's
        written = pa.chunked_array([pa.array(np.repeat(p.written_qids(), p.group_sizes)).cast(pa.string()) for p in parts])
        row_qids, listed = query_numbers(written, RowNames(tuple((p.name, 1, p.n_rows) for p in parts)))
        names = tuple(listed)
    table = RawTable(
        features=np.concatenate([p.features for p in parts]),
        labels=np.concatenate([p.labels for p in parts]).astype(np.float64),
        row_qids=row_qids,
        row_lines=np.arange(1, row_qids.shape[0] + 1, dtype=np.int64),
        source=" + ".join(p.name for p in parts),
        where="row",
        feature_names=parts[0].feature_names,
        positions=concat_positions([p.positions for p in parts], [p.name for p in parts]),
        qid_names=names,  # the regrouping warning names a query as written
    )
    qids, offsets, order = group_rows(table)
    features, labels = table.features, np.concatenate([p.labels for p in parts])
    positions = table.positions
    doc_ids = doc_id_arrays.concat([p.doc_ids for p in parts], [p.name for p in parts])
    behaviours = _concat_behaviours(parts)
    if order is not None:
        features, labels = features[order], labels[order]
        if positions is not None:
            positions = positions[order]
        if doc_ids is not None:
            doc_ids = doc_ids[order]
        if behaviours is not None:
            behaviours = {k: v[order] for k, v in behaviours.items()}
    return RankingData(
        features=features, labels=labels, qids=qids, offsets=offsets,
        feature_names=table.feature_names, name=name, positions=positions, doc_ids=doc_ids,
        behaviours=behaviours, qid_names=None if names is None else np.asarray(names, dtype=object)[qids],
    )


def _concat_behaviours(parts: Sequence[RankingData]) -> dict[str, NDArray[np.float64]] | None:
    """The parts' behaviour columns stacked (all parts have the same ones, or none has any)."""
    if all(p.behaviours is None for p in parts):
        return None
    names = [sorted(p.behaviours) if p.behaviours is not None else [] for p in parts]
    if any(n != names[0] for n in names):
        raise DataError(f"the files {' + '.join(p.name for p in parts)} do not have the same behaviour columns")
    return {k: np.concatenate([p.behaviours[k] for p in parts if p.behaviours is not None]) for k in names[0]}


def _parse(
    path: Path,
    fmt: str,
    qfile: Path | None,
    options: Mapping[str, Any],
    progress: bool | None,
    pfile: Path | None = None,
) -> RawTable:
    if fmt in ("parquet", "csv"):
        return read_table(
            path, kind=fmt, qid_column=options["qid_column"], label_column=options["label_column"],
            feature_columns=options["feature_columns"], delimiter=options["delimiter"],
            n_features=options["n_features"], position_column=options["position_column"],
            doc_id_column=options.get("doc_id_column"),
            behaviour_columns=options.get("behaviour_columns", ()),
        )
    if fmt == "letor":
        table = parse_svmlight(path, qid_required=True, n_features=options["n_features"], progress=progress)
    elif fmt == "lightgbm":
        assert qfile is not None
        sizes = read_query_file(qfile)
        table = parse_svmlight(path, qid_required=False, n_features=options["n_features"], progress=progress)
        if table.n_rows == 0:
            return table
        check_group_sizes(sizes, table.n_rows, query_path=str(qfile), data_path=str(path))
        table = dataclasses.replace(table, row_qids=np.repeat(np.arange(sizes.shape[0], dtype=np.int64), sizes))
    else:
        raise DataError(f"unknown data format {fmt!r}; use one of {', '.join(FORMATS)}")
    if pfile is None or table.n_rows == 0:
        return table
    positions = read_position_file(pfile, n_rows=table.n_rows, data_path=str(path), row_qids=table.row_qids)
    return dataclasses.replace(table, positions=positions)


def _format_of(path: Path, options: Mapping[str, Any]) -> str:
    fmt = str(options.get("format", "auto"))
    if fmt != "auto":
        return fmt
    query_file = options.get("query_file")
    return detect_format(path.expanduser(), query_file=None if query_file is None else Path(query_file))


def _query_candidates(path: Path) -> list[Path]:
    return side_file_candidates(path, ".query")


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".bz2", ".zst"):
        name = name.removesuffix(suffix)
    return name.rsplit(".", 1)[0] if "." in name else name


def _first_data_line(path: Path) -> int:
    for n, line in enumerate(read_head(path).decode("utf-8", errors="replace").splitlines(), start=1):
        s = line.strip()
        if s and not s.startswith("#"):
            return n
    return 1

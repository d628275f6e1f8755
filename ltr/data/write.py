"""Write a built-in data set as the files a user would bring: ``ltr data write``'s work.

What it writes (into one folder, ``out``):

- the three splits of the data set, cut exactly as ``ltr train data=NAME`` cuts them (the same
  composed config, :func:`ltr.data.load.load_splits` / :func:`ltr.data.load.load_click_splits`):
  ``train``, ``valid``, ``test`` as LETOR / SVMlight text (``.txt``: ``label qid:Q 1:v 2:v ... #
  docid = Q-i``, every feature written, values as the shortest decimal that reads back as the
  same float32), or as Parquet / CSV tables (``qid``, ``doc_id``, ``label``, one float32 column
  per feature under its name);
- for the click log (``synthetic_clicks``): each split carries the labels a run of it trains,
  validates and evaluates on (train: the clicks, valid and test: the true grades, or what
  ``data.train_labels`` / ``valid_labels`` / ``eval_labels`` say), its logged positions (a
  ``.position`` side file beside a text file; a ``position`` column of a table) and, in tables, the
  behaviour columns ``click``, ``dwell``, ``cart``, ``purchase`` (and ``randomized``, 1 on the
  rows of a session shown in random order, when ``data.randomized_share > 0``); plus the whole
  log as one click file ``clicks.parquet`` (``clicks.csv`` with ``fmt="csv"``): ``query``,
  ``doc_id``, ``position``, ``click``, ``dwell``, ``cart``, ``purchase`` (``randomized``),
  ``relevance``, one row per impression, what :func:`ltr.data.feedback.click_file.read_click_file` reads.

Document ids are ``Q-i`` (the query's id, the row's place in the generated list), the same in the
splits and the click file. Writing is vectorised (pyarrow), one file at a time into a hidden
temporary file in ``out``; every file is renamed into place only once all are written, so an error
leaves none. Existing files are refused unless ``force``; a folder that cannot be written is
refused before anything is generated.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import os
import secrets
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray
from omegaconf import OmegaConf

from ltr.config.allowed import problems
from ltr.config.compose import compose_train
from ltr.config.groups.data import SyntheticClicksDataConfig, SyntheticDataConfig
from ltr.config.unknown_key import data_option_of, unknown_key_message, unknown_keys
from ltr.data.feedback.clicks import BEHAVIOURS, generate_click_log
from ltr.data.load import load_click_splits, load_splits
from ltr.data.ranking_data import RankingData
from ltr.data.splits import Splits
from ltr.errors import DataError, LtrUserError, write_failed
from ltr.runtime.stops import committing

#: The built-in data sets that need no download, by their ``data=`` option.
BUILTIN = ("synthetic", "synthetic_clicks")
#: Output formats and the suffix of their split files.
FORMATS = {"letor": ".txt", "parquet": ".parquet", "csv": ".csv"}
#: The overrides accepted (the generator's, the split's, the experiment seed, the debug size).
OVERRIDE_PREFIXES = ("data.", "+data.", "split.", "+split.", "seed=", "debug=")
#: The behaviour column of the sessions shown in random order (1, else 0), written when the click
#: log has some (``data.randomized_share > 0``): ``data.randomized_column`` of a run on the files.
RANDOMIZED_COLUMN = "randomized"
#: The name of the click file, without its suffix.
CLICK_FILE_STEM = "clicks"
#: Rows formatted at a time for text (bounds the memory of the formatted text; ~50 MB per batch).
TEXT_BATCH_BYTES = 50_000_000


@dataclass(frozen=True, slots=True)
class WrittenFile:
    """One file written: its path, what it holds (``train``, ``valid``, ``test``, ``train
    positions``, ``click log``), its queries, rows and bytes."""

    path: Path
    what: str
    n_queries: int
    n_rows: int
    n_bytes: int


@dataclass(frozen=True, slots=True)
class DataWritten:
    """The files written and the ``ltr train`` command line that trains on them."""

    files: tuple[WrittenFile, ...]
    train_command: str
    n_features: int


def builtin_name(name: str) -> str:
    """``name`` if it is a built-in data set :func:`write_builtin` writes, else a one-line
    `LtrUserError` with a did-you-mean."""
    if name in BUILTIN:
        return name
    close = difflib.get_close_matches(name, BUILTIN, n=1, cutoff=0.5)
    hint = f"did you mean {close[0]!r}? " if close else ""
    reads = " (it reads files of your own)" if name in ("letor", "svmlight", "parquet", "mq2008", "parquet_partitions") else ""
    raise LtrUserError(f"unknown built-in data set {name!r}{reads}; {hint}built-in: {', '.join(BUILTIN)}")


def composed_config(name: str, overrides: Sequence[str] = ()) -> Any:
    """The ``ltr train data=NAME OVERRIDES`` config as its dataclasses (a ``TrainConfig``),
    checked as ``ltr train`` checks it: no unknown key, every value allowed.

    Only ``data.*``, ``split.*``, ``seed=`` and ``debug=`` overrides are taken: nothing else
    changes the data. Raises one-line `LtrUserError`\\ s.
    """
    builtin_name(name)
    for override in overrides:
        if override.split("=", 1)[0] in ("data", "+data"):
            raise LtrUserError(f"{override!r}: the data set is the NAME argument ({name}); drop the data= override")
        if not override.startswith(OVERRIDE_PREFIXES):
            raise LtrUserError(
                f"{override!r} does not change the data; ltr data write takes data.*, split.*, seed= "
                "and debug= overrides"
            )
    cfg = compose_train([f"data={name}", *overrides], what=f"the data {name}")
    try:
        config = OmegaConf.to_object(cfg)
    except Exception as exc:  # a value OmegaConf took but the dataclass refuses
        raise LtrUserError(f"cannot compose the data {name}: {str(exc).splitlines()[0]}") from None
    unknown = unknown_keys(cfg)  # a +data.key= override no schema has, as ltr train's check_schema
    if unknown:
        key, known = unknown[0]
        raise LtrUserError(unknown_key_message(key, known, data_option=data_option_of(OmegaConf.get_type(cfg.data))))
    found = problems(config)  # as ltr train's check_schema: every field's allowed values
    if found:
        raise LtrUserError(found[0])
    return config


def check_out(out: Path, names: Sequence[str], *, force: bool) -> None:
    """Refuse (one line) an ``out`` that is a file, cannot be created or written, or already
    holds one of ``names`` (unless ``force``). Creates nothing."""
    if out.exists() and not out.is_dir():
        raise LtrUserError(f"--out {out} is a file, not a folder")
    probe = out
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        where = "" if probe == out else f" (its folder {probe} is not writable)"
        raise LtrUserError(f"--out {out} cannot be written{where}")
    if out.is_dir() and not force:
        for name in names:
            if (out / name).exists() or (out / name).is_symlink():
                raise LtrUserError(f"{out / name} exists; pass --force to replace it")


def file_names(name: str, fmt: str) -> list[str]:
    """The names of the files :func:`write_builtin` writes for data set ``name`` in ``fmt``."""
    suffix = _suffix(fmt)
    names = [f"{split}{suffix}" for split in ("train", "valid", "test")]
    if name == "synthetic_clicks":
        if fmt == "letor":
            names += [f"{split}{suffix}.position" for split in ("train", "valid", "test")]
        names.append(f"{CLICK_FILE_STEM}{'.csv' if fmt == 'csv' else '.parquet'}")
    return names


def write_builtin(
    name: str,
    out: str | Path,
    *,
    fmt: str = "letor",
    overrides: Sequence[str] = (),
    force: bool = False,
) -> DataWritten:
    """Write the built-in data set ``name`` (``synthetic``, ``synthetic_clicks``) with
    ``overrides`` into ``out`` as ``fmt`` files (module docstring).

    Raises
    ------
    LtrUserError
        an unknown name or format, a bad override, a refused ``out`` or an existing file
        (without ``force``): before anything is generated or written. A write that fails
        (disk full) is one line too, and leaves no file of this call behind.
    """
    suffix = _suffix(fmt)
    config = composed_config(name, overrides)
    target = Path(os.path.abspath(Path(out).expanduser()))
    names = file_names(name, fmt)
    check_out(target, names, force=force)
    created = _make_folder(target)
    try:
        splits, log = _generate(name, config)
        jobs: list[tuple[str, str, RankingData, Callable[[RankingData, Path], None]]] = []
        for split, data in splits.items():
            jobs.append((f"{split}{suffix}", split, data, _WRITERS[fmt]))
            if fmt == "letor" and data.positions is not None:
                jobs.append((f"{split}{suffix}.position", f"{split} positions", data, _write_positions))
        if log is not None:
            kind = "csv" if fmt == "csv" else "parquet"
            jobs.append((f"{CLICK_FILE_STEM}.{kind}", "click log", log, functools.partial(_write_click_file, kind=kind)))
        written = _write_all(target, jobs)
    except BaseException:
        if created and not any(target.iterdir()):
            target.rmdir()  # the folder this call made, left empty: nothing written
        raise
    randomized = log is not None and RANDOMIZED_COLUMN in (log.behaviours or {})
    return DataWritten(tuple(written), train_command(name, target, fmt, randomized=randomized), splits.train.n_features)


def _generate(name: str, config: Any) -> tuple[Splits, RankingData | None]:
    """The splits of the built-in data set ``name`` as a run of ``config`` makes them (for the
    click log: the views a run trains, validates and evaluates on) and, for the click log, the
    whole log (true grades, positions, behaviours)."""
    seed = int(config.seed)
    try:
        if name != "synthetic_clicks":
            return load_splits(cast(SyntheticDataConfig, config.data), config.split, seed=seed), None
        clicks = cast(SyntheticClicksDataConfig, config.data)
        views = load_click_splits(clicks, config.split, seed=seed)
        splits = views.training_view(str(clicks.train_labels), str(clicks.valid_labels), str(clicks.eval_labels))
        generated = generate_click_log(clicks, seed=seed if clicks.seed is None else int(clicks.seed))
    except DataError as exc:
        raise LtrUserError(str(exc)) from None
    log = generated.data
    if float(clicks.randomized_share) > 0:  # the sessions shown in random order, as a behaviour column
        shuffled = log.qids[generated.randomized]
        splits = Splits(*(_with_randomized(part, shuffled) for _, part in splits.items()))
        log = _with_randomized(log, shuffled)
    return splits, log


def _with_randomized(data: RankingData, shuffled: NDArray[np.integer]) -> RankingData:
    """``data`` with the behaviour column ``randomized``: 1 on the rows of the queries ``shuffled``, else 0."""
    flags = np.isin(data.row_qids(), shuffled).astype(np.float64)
    return dataclasses.replace(data, behaviours={**(data.behaviours or {}), RANDOMIZED_COLUMN: flags})


def train_command(name: str, out: Path, fmt: str, *, randomized: bool = False) -> str:
    """The ``ltr train`` command line that trains on the split files written into ``out``
    (``randomized``: the tables hold the column :data:`RANDOMIZED_COLUMN`, named as
    ``data.randomized_column`` so that it is read as a behaviour, not as a feature).

    Examples
    --------
    >>> print(train_command("synthetic", Path("/d"), "letor"))
    ltr train data=svmlight data.train=/d/train.txt data.valid=/d/valid.txt data.test=/d/test.txt
    >>> print(train_command("synthetic", Path("/my data"), "csv"))  # doctest: +NORMALIZE_WHITESPACE
    ltr train data=parquet 'data.train=/my data/train.csv' 'data.valid=/my data/valid.csv'
        'data.test=/my data/test.csv' data.doc_id_column=doc_id
    """
    suffix = _suffix(fmt)
    option = "svmlight" if fmt == "letor" else "parquet"
    words = ["ltr", "train", f"data={option}"]
    words += [f"data.{split}={out / (split + suffix)}" for split in ("train", "valid", "test")]
    if fmt != "letor":
        words.append("data.doc_id_column=doc_id")
    if name == "synthetic_clicks" and fmt != "letor":  # text: positions from the .position files; no names
        # a click log as data: its clicks, positions and behaviour, and the examination curve
        # estimated from the log itself (a stranger's log has no known one)
        words += [
            "data.position_column=position", "data.click_column=click",
            f"data.behaviour_columns=[{','.join(b for b in BEHAVIOURS if b != 'click')}]",
            "data.popularity_feature=popularity", "eval.clicks.propensity=em",
        ]
        if randomized:
            words += [f"data.randomized_column={RANDOMIZED_COLUMN}"]
    return " ".join(shlex.quote(w) for w in words)


# -- writing -------------------------------------------------------------------------------------


def _suffix(fmt: str) -> str:
    if fmt not in FORMATS:
        raise LtrUserError(f"unknown format {fmt!r}; one of: {', '.join(FORMATS)}")
    return FORMATS[fmt]


def _make_folder(out: Path) -> bool:
    """Create ``out`` (and its missing parents); True when ``out`` itself did not exist."""
    if out.is_dir():
        return False
    try:
        out.mkdir(parents=True)
    except OSError as exc:
        raise LtrUserError(f"--out {out} cannot be created ({exc.strerror or exc})") from None
    return True


def _write_all(
    out: Path, jobs: Sequence[tuple[str, str, RankingData, Callable[[RankingData, Path], None]]]
) -> list[WrittenFile]:
    """Each job's file into a hidden temporary file in ``out``, then all renamed into place."""
    temps: list[tuple[Path, Path]] = []
    written: list[WrittenFile] = []
    try:
        for file_name, what, data, writer in jobs:
            tmp = out / f".{file_name}.{os.getpid()}-{secrets.token_hex(4)}.partial"
            tmp.touch(exist_ok=False)  # the user's umask, as the final file would have
            temps.append((tmp, out / file_name))
            writer(data, tmp)
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
            written.append(WrittenFile(out / file_name, what, data.n_queries, data.n_rows, tmp.stat().st_size))
        with committing():  # every file renamed into place or none; then the work is done
            for tmp, final in temps:
                os.replace(tmp, final)
    except OSError as exc:
        raise write_failed(exc, f"cannot write into {out}: {exc.strerror or exc}", path=out) from None
    finally:
        for tmp, _ in temps:
            tmp.unlink(missing_ok=True)
    return written


def doc_ids(data: RankingData) -> pa.Array:
    """``Q-i`` of every row: its query's id and its place in the query's rows (0-based)."""
    sizes = data.group_sizes
    within = np.arange(data.n_rows, dtype=np.int64) - np.repeat(data.offsets[:-1], sizes)
    ids = pc.binary_join_element_wise(_text(data.row_qids()), _text(within), "-")
    return ids


def _text(values: NDArray[Any]) -> pa.Array:
    """``values`` as decimal text: integers as integers, float32 as the shortest decimal that
    reads back as the same float32."""
    return pc.cast(pa.array(values), pa.string())


def _joined_bytes(lines: pa.Array) -> memoryview:
    """The text of a string array with a newline after each element, without a Python loop."""
    ended = pc.binary_join_element_wise(lines, pa.scalar("", pa.string()), "\n").cast(pa.large_string())
    offsets = np.frombuffer(ended.buffers()[1], dtype=np.int64)[ended.offset : ended.offset + len(ended) + 1]
    data = ended.buffers()[2]
    return memoryview(data)[int(offsets[0]) : int(offsets[-1])]


def _write_letor(data: RankingData, path: Path) -> None:
    """LETOR / SVMlight text: ``label qid:Q 1:v ... n:v # docid = Q-i``, every feature written."""
    n_features = data.n_features
    per_row = 40 + 16 * max(n_features, 1)
    batch = max(1, TEXT_BATCH_BYTES // per_row)
    qids = data.row_qids()
    ids = doc_ids(data)
    with open(path, "wb") as f:
        for start in range(0, data.n_rows, batch):
            stop = min(start + batch, data.n_rows)
            parts = [
                _text(data.labels[start:stop]),
                pc.binary_join_element_wise("qid", _text(qids[start:stop]), ":"),
            ]
            for j in range(n_features):
                values = _text(np.ascontiguousarray(data.features[start:stop, j]))
                parts.append(pc.binary_join_element_wise(str(j + 1), values, ":"))
            parts.append(pc.binary_join_element_wise("# docid =", ids[start:stop], " "))
            f.write(_joined_bytes(pc.binary_join_element_wise(*parts, " ")))


def _write_positions(data: RankingData, path: Path) -> None:
    """A LightGBM ``.position`` side file: one 0-based position per line, in row order."""
    if data.positions is None:  # pragma: no cover - only data with positions gets a .position file
        raise DataError(f"{data.name} has no positions to write; report this as a bug")
    with open(path, "wb") as f:
        f.write(_joined_bytes(_text(data.positions)))


def _split_table(data: RankingData) -> pa.Table:
    """``qid``, ``doc_id``, ``label``, the features by name; then ``position`` and the behaviour
    columns when the data has them."""
    columns: dict[str, pa.Array] = {
        "qid": pa.array(data.row_qids().astype(np.int64)),
        "doc_id": doc_ids(data),
        "label": pa.array(data.labels.astype(np.int32)),
    }
    for j, feature in enumerate(data.feature_names):
        columns[str(feature)] = pa.array(np.ascontiguousarray(data.features[:, j]))
    if data.positions is not None:
        columns["position"] = pa.array(data.positions.astype(np.int32))
    for behaviour, values in (data.behaviours or {}).items():
        columns[behaviour] = pa.array(_behaviour_values(behaviour, values))
    return pa.table(columns)


def _behaviour_values(name: str, values: NDArray[np.float64]) -> NDArray[Any]:
    """Counts (``click``, ``cart``, ``purchase``) as int32, seconds (``dwell``) as float64."""
    return values if name == "dwell" else values.astype(np.int32)


def _click_table(log: RankingData) -> pa.Table:
    """The click file: one row per impression, ``query``, ``doc_id``, ``position``, the
    behaviours (``click``, ``dwell``, ``cart``, ``purchase``) and the true grade ``relevance``."""
    if log.positions is None or log.behaviours is None:  # pragma: no cover - the generator gives both
        raise DataError("the click log has no positions or behaviours; report this as a bug")
    columns: dict[str, pa.Array] = {
        "query": pa.array(log.row_qids().astype(np.int64)),
        "doc_id": doc_ids(log),
        "position": pa.array(log.positions.astype(np.int32)),
    }
    for behaviour, values in log.behaviours.items():
        columns[behaviour] = pa.array(_behaviour_values(behaviour, values))
    columns["relevance"] = pa.array(log.labels.astype(np.int32))
    return pa.table(columns)


def _write_table(table: pa.Table, path: Path, kind: str) -> None:
    if kind == "csv":
        import pyarrow.csv as pcsv

        pcsv.write_csv(table, path)
    else:
        import pyarrow.parquet as pq

        pq.write_table(table, path)


def _write_parquet(data: RankingData, path: Path) -> None:
    _write_table(_split_table(data), path, "parquet")


def _write_csv(data: RankingData, path: Path) -> None:
    _write_table(_split_table(data), path, "csv")


def _write_click_file(log: RankingData, path: Path, *, kind: str) -> None:
    _write_table(_click_table(log), path, kind)


_WRITERS: dict[str, Callable[[RankingData, Path], None]] = {
    "letor": _write_letor,
    "parquet": _write_parquet,
    "csv": _write_csv,
}

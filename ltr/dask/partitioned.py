"""``ltr train data=parquet_partitions trainer=dask``: the rows never pass through the client.

The splits are directories of Parquet files of whole queries (``data.root/{train,valid,test}``,
written by :func:`ltr.dask.parquet.write_query_partitions`). The client reads only the files'
footers (for the data fingerprint, with the content hash ``ltr partition`` recorded beside them)
and the qids (to check that no query spans two files); the workers read their files
(:func:`ltr.dask.parquet.read_query_partitions`), train (:func:`ltr.dask.train.fit_partitioned`), predict and build each partition's per-query table
and LightGBM-gap parts. The client concatenates these small tables (one row per query) and
:func:`ltr.experiment.evaluation.evaluate` does the rest, as for every other data option.

Per-partition tables equal the whole split's table: queries are independent, and ERR's stop
probability (``gain / (max gain + 1)``) gets the split-wide largest gain, the maximum of the
partitions' (:func:`ltr.metrics.table.largest_gain`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from dask.delayed import delayed
from numpy.typing import NDArray

from ltr.config.groups.data import ParquetPartitionsDataConfig
from ltr.config.schema import TrainConfig, TrainerConfig
from ltr.dask.evaluate import predict_block
from ltr.dask.partition_writer.manifest import (
    CONTENT_METHOD,
    MANIFEST_NAME,
    SPLITS,
    check_manifest,
    file_entries,
)
from ltr.dask.partitions import PartitionedSplit
from ltr.data.fingerprint import HASH_HEX_DIGITS
from ltr.data.formats.arrow_matrix import float32_matrix
from ltr.data.query_parts import partition_files
from ltr.data.ranking_data import with_written_qids
from ltr.errors import DataError, LtrUserError
from ltr.metrics import MetricConventions, Strata, per_query_table
from ltr.metrics.reports.gap import LightgbmGap, gap_from_parts, gap_parts
from ltr.metrics.table import largest_gain
from ltr.metrics.top import with_top_doc_ids

log = logging.getLogger(__name__)


def split_directories(data: ParquetPartitionsDataConfig, trainer: TrainerConfig) -> dict[str, Path]:
    """``data.root/{train,valid,test}``; checks ``trainer=dask`` and that each holds Parquet files."""
    if trainer.kind != "dask":
        raise LtrUserError(
            f"data=parquet_partitions is read by Dask workers: use trainer=dask (got trainer={trainer.kind})"
        )
    root = Path(str(data.root))
    dirs = {split: root / split for split in SPLITS}
    for split, directory in dirs.items():
        if not partition_files(directory):
            raise DataError(
                f"data.root={root}: no {split}/*.parquet files; write them with "
                "ltr partition --train F [--valid F --test F] --out DIR"
            )
    return dirs


def partitions_fingerprint(data: ParquetPartitionsDataConfig, trainer: TrainerConfig) -> dict[str, Any]:
    """The data fingerprint of a partitions run: the content hash ``ltr partition`` recorded, while
    the files are those it wrote; else a fingerprint of the files' metadata. No rows are read.

    Every ``*.parquet`` file of each split is listed with its path relative to ``data.root``, size
    in bytes and row count (the Parquet footer), in partition order. When ``data.root`` holds the
    manifest of ``ltr partition`` (``fingerprint.json``, :mod:`ltr.dask.partition_writer.manifest`) and
    it records exactly these files (no file changed in size or rows, added or missing) and the
    run's qid and label columns, ``sha256`` (and each split's) is the content hash recorded there:
    the hash a local run of the same source files logs, so ``ltr compare`` accepts the two runs.
    Otherwise ``sha256`` hashes, per split, the files' listing: cheap, but a rewrite that keeps
    every file's size and row count is not detected, and it never equals a local run's; a
    manifest that exists but cannot be used says why in one warning.

    Returns
    -------
    dict
        ``method`` (how ``sha256`` was made), ``sha256`` (16 hex digits), and per split ``sha256``,
        ``n_rows``, ``n_features`` and ``files`` (``[{"path", "bytes", "rows"}, ...]``). From the
        manifest also ``shape``, ``n_rows``, ``n_queries``, ``n_features`` and ``labels`` of the
        whole set, and ``n_queries`` and ``labels`` per split, as a local run logs them.
    """
    dirs = split_directories(data, trainer)
    root = Path(str(data.root))
    files = {split: file_entries(root, split) for split in dirs}
    check = check_manifest(root, files, qid_column=str(data.qid_column), label_column=str(data.label_column))
    if check.content is not None:
        content = check.content
        return {"method": CONTENT_METHOD} | content | {split: content[split] | {"files": files[split]} for split in dirs}
    if check.why_not:
        log.warning(
            "%s: the data fingerprint hashes the files' metadata, not their content (no local run of the same "
            "data has it); write the partitions again with ltr partition to record it", check.why_not,
        )  # fmt: skip
    else:
        log.info("no %s in %s (ltr partition writes one): the data fingerprint hashes the files' metadata", MANIFEST_NAME, root)
    out: dict[str, Any] = {"method": "parquet file metadata: relative path, bytes, rows"}
    h = hashlib.sha256()
    for split, directory in dirs.items():
        names = pq.read_schema(partition_files(directory)[0]).names
        n_features = len([n for n in names if n not in (data.qid_column, data.label_column, _doc_id_column(data))])
        entry = json.dumps(files[split], sort_keys=True)
        h.update(split.encode())
        h.update(entry.encode())
        out[split] = {
            "sha256": hashlib.sha256(entry.encode()).hexdigest()[:HASH_HEX_DIGITS],
            "n_rows": sum(f["rows"] for f in files[split]),
            "n_features": n_features,
            "files": files[split],
        }
    out["sha256"] = h.hexdigest()[:HASH_HEX_DIGITS]
    return out


def _tables_block(
    features: NDArray[np.float32],
    labels: NDArray[np.int32],
    group_sizes: NDArray[np.int64],
    qids: NDArray[np.int64],
    doc_ids: NDArray[np.object_] | None,
    model_text: str,
    num_iteration: int,
    ks: tuple[int, ...],
    conventions: MetricConventions,
    strata: Strata,
    max_gain: float,
    gap_k: int,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One partition's per-query table and LightGBM-gap parts (on a worker)."""
    scores = predict_block(features, model_text, num_iteration)
    offsets = np.concatenate([[0], np.cumsum(group_sizes)]).astype(np.int64)
    table = per_query_table(
        labels, scores, offsets, qids, ks=ks, conventions=conventions, strata=strata, max_gain=max_gain
    )
    table = with_top_doc_ids(table, doc_ids, scores, offsets, labels=labels, ties=conventions.ties)
    return table, gap_parts(labels, scores, offsets, qids, gap_k, conventions)


def partitioned_tables(
    client: Any,
    booster: Any,
    split: PartitionedSplit,
    *,
    num_iteration: int,
    ks: list[int],
    conventions: MetricConventions,
    strata: Strata,
    gap_k: int,
) -> tuple[pd.DataFrame, LightgbmGap]:
    """The per-query table and LightGBM gap of ``split``, built partition by partition.

    Equal to ``per_query_table`` / ``lightgbm_gap`` on the whole split with the scores of
    ``booster.predict(features, num_iteration=num_iteration)``; only the per-query rows reach
    the client. The table's ``qid`` column holds the qids as written: the split's strings
    (``split.qid_names``, named on the client by :func:`ltr.data.ranking_data.with_written_qids`)
    when its qids are ids, else the integers.
    """
    parts = split.partitions()
    gains = client.gather(client.compute([delayed(largest_gain, pure=True)(p[1], conventions) for p in parts]))
    max_gain = float(max(gains))
    model = client.scatter(booster.model_to_string(num_iteration=-1), broadcast=True, hash=False)
    blocks = [
        delayed(_tables_block, pure=True)(
            features, labels, groups, qids, doc_ids, model, num_iteration, tuple(ks), conventions, strata,
            max_gain, gap_k,
        )
        for (features, labels, groups, qids), doc_ids in zip(parts, split.doc_id_blocks(), strict=True)
    ]
    results = client.gather(client.compute(blocks))
    table = pd.concat([r[0] for r in results], ignore_index=True)
    if split.qid_names is not None:  # numbers 0, 1, ... over the split's files
        table = with_written_qids(table, np.arange(split.qid_names.shape[0], dtype=np.int64), split.qid_names)
    gap = gap_from_parts(pd.concat([r[1] for r in results], ignore_index=True), gap_k)
    return table, gap


def fit_partitioned_tables(
    cfg: TrainConfig, *, ks: list[int], table_ks: list[int], strata: Strata, conventions: MetricConventions
) -> tuple[Any, dict[str, pd.DataFrame], dict[str, LightgbmGap], dict[str, float]]:
    """Read, train, predict and tabulate ``data=parquet_partitions`` on the Dask cluster.

    Returns the :class:`ltr.training.local.TrainResult`, the per-query table (cut-offs ``table_ks``)
    and LightGBM gap (at ``max(ks)``) of every split in ``cfg.eval.splits``, and timings
    (``read_partitions``, ``train``, ``evaluate_tables``).
    """
    from ltr.dask.parquet import read_query_partitions
    from ltr.dask.train import dask_client, fit_partitioned, warn_no_early_stopping

    dirs = split_directories(cfg.data, cfg.trainer)
    timings: dict[str, float] = {}
    warn_no_early_stopping(cfg.fit)
    with dask_client(cfg.trainer) as client:
        t = time.perf_counter()
        parts = {
            split: read_query_partitions(
                client, directory, qid_column=str(cfg.data.qid_column), label_column=str(cfg.data.label_column),
                doc_id_column=_doc_id_column(cfg.data),
            )
            for split, directory in dirs.items()
        }
        for split, part in parts.items():
            log.info(
                "%s: %d queries, %d rows, %d features in %d partitions",
                split, part.n_queries, part.n_rows, part.n_features, part.n_partitions,
            )
        timings["read_partitions"] = time.perf_counter() - t
        t = time.perf_counter()
        result = fit_partitioned(
            client, parts["train"], {"valid": parts["valid"], "test": parts["test"]},
            cfg.model, cfg.fit, eval_at=ks, seed=int(cfg.seed), conventions=conventions,
        )
        timings["train"] = time.perf_counter() - t
        t = time.perf_counter()
        tables: dict[str, pd.DataFrame] = {}
        gaps: dict[str, LightgbmGap] = {}
        for split in cfg.eval.splits:
            if split not in parts:
                raise LtrUserError(f"eval.splits: {split!r} is not one of {', '.join(SPLITS)}")
            tables[split], gaps[split] = partitioned_tables(
                client, result.booster, parts[split], num_iteration=result.best_iteration,
                ks=table_ks, conventions=conventions, strata=strata, gap_k=max(ks),
            )
        timings["evaluate_tables"] = time.perf_counter() - t
    return result, tables, gaps, timings


def first_rows(data: ParquetPartitionsDataConfig, split: str, n_rows: int) -> NDArray[np.float32]:
    """The feature columns (all but the qid, label and document id columns, in file order) of the first
    ``n_rows`` rows of ``split``'s first partition file, as float32 converted as the workers convert
    them (the logged model's input example); reads one row group's worth at most."""
    path = partition_files(Path(str(data.root)) / split)[0]
    reader = pq.ParquetFile(path)
    names = [n for n in reader.schema_arrow.names if n not in (data.qid_column, data.label_column, _doc_id_column(data))]
    batch = next(reader.iter_batches(batch_size=n_rows, columns=names))
    return float32_matrix(pa.Table.from_batches([batch]).columns, batch.num_rows)[0]


def _doc_id_column(data: Any) -> str | None:
    """The column of document ids of the partition files (``data.doc_id_column``)."""
    value = getattr(data, "doc_id_column", None)
    return None if value is None else str(value)

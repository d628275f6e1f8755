"""``ltr ope RUN --log FILE --data FILE...`` as functions: a run's ranking of a click log's
documents, its off-policy estimates (:mod:`ltr.online.ope`), logged on the run.

The run's model scores ``--data`` (feature tables with a query and a document id column, read as
``ltr predict --data`` reads them, the run's re-ranking applied); each logged impression
(``query``, ``doc_id``, ``position``, ``click`` and, when present, ``purchase``) is joined to
its score by (query, document id), both read as text. The candidate ranks, per query, the logged
documents it scored; logged documents without a score are left out of its list, scored
documents that were never logged cannot be evaluated (no click of theirs was seen) and are left
out too; both counts are reported. Everything is checked before anything is logged: a refusal
(no overlap, no propensities, a missing column, propensities too short) logs nothing.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ltr.data.click_file import integer_column, read_table_file
from ltr.data.clicks import examination_curve
from ltr.errors import DataError, DeviceFull, LtrUserError, full_device
from ltr.models.inputs import open_input
from ltr.models.logged import LoggedRun, load_run
from ltr.models.predict import predict_input
from ltr.online.ope import OpeResult, off_policy_estimates
from ltr.tracking import find_tracking_uri
from ltr.tracking.store import read_only_store
from ltr.tracking.store_lock import sqlite_db_path, sqlite_store_lock


@dataclass(frozen=True)
class OpeRun:
    """The estimates of one run on one click log, and what the join kept."""

    run: LoggedRun
    result: OpeResult
    log_path: Path
    log_rows: int
    matched_rows: int
    unlogged_scored_rows: int
    propensities: str


def parse_propensities(text: str | None, eta: float | None) -> tuple[list[float] | None, float | None]:
    """``--propensities 1,0.6,0.4`` (position 1 first) or ``--eta X``; neither is refused."""
    if text is None and eta is None:
        raise LtrUserError("propensities missing: give --propensities P1,P2,... (position 1 first) or --eta X for (1/rank)^X")
    if eta is not None:
        if not (math.isfinite(eta) and eta >= 0):
            raise LtrUserError(f"--eta={eta} must be a finite number >= 0")
        return None, eta
    try:
        values = [float(v) for v in str(text).split(",")]
    except ValueError:
        raise LtrUserError(f"--propensities {text!r}: not a comma-separated list of numbers") from None
    if not values or any(not (0 < v <= 1) for v in values):
        raise LtrUserError(f"--propensities {text!r}: each must lie in (0, 1]")
    return values, None


def read_log(path: Path, *, first_position: int = 0) -> tuple[pd.DataFrame, bool]:
    """The click log's ``query``, ``doc_id`` (as text), 0-based ``position``, ``click`` (0/1) and
    ``purchase`` (0/1, when the file has it); returns (frame, has purchases)."""
    required = ["query", "doc_id", "position", "click"]
    try:
        frame, purchases = read_table_file(path, [*required, "purchase"]), True
    except DataError as exc:
        if "'purchase'" not in str(exc):
            raise
        frame, purchases = read_table_file(path, required), False
    if frame.shape[0] == 0:
        raise DataError(f"{path} has no rows")
    out = pd.DataFrame({
        "query": frame["query"].astype(str).to_numpy(), "doc_id": frame["doc_id"].astype(str).to_numpy(),
        "position": integer_column(frame, "position", path, minimum=first_position) - first_position,
    })  # fmt: skip
    for column in ["click", *(["purchase"] if purchases else [])]:
        values = integer_column(frame, column, path, minimum=0)
        if values.max(initial=0) > 1:
            i = int(np.flatnonzero(values > 1)[0])
            raise DataError(f"{path}, row {i + 1}: {column} {values[i]} is not 0 or 1 (one row per impression)")
        out[column] = values
    return out, purchases


def run_ope(
    ref: str,
    log_path: Path,
    data: list[Path],
    *,
    propensities: list[float] | None,
    eta: float | None,
    k: int,
    clip: float | None,
    n_bootstrap: int = 1000,
    seed: int = 0,
    first_position: int = 0,
    doc_id_column: str = "doc_id",
    tracking_uri: str | None = None,
    experiment: str = "ltr",
    logs: bool = False,
) -> OpeRun:
    """Score, join and estimate (see the module docstring); logs nothing. ``logs``: the caller
    logs the estimates on the run next (:func:`log_ope`): a store that can only be read is
    refused first, before anything is read."""
    if k < 1:
        raise LtrUserError(f"--k={k} must be >= 1")
    if clip is not None and not (clip > 0 and math.isfinite(clip)):
        raise LtrUserError(f"--clip={clip} must be a finite number > 0")
    if n_bootstrap < 2:
        raise LtrUserError(f"--bootstrap={n_bootstrap} must be >= 2")
    if seed < 0:
        raise LtrUserError(f"--seed={seed} must be an integer >= 0")
    if logs:
        read_only = read_only_store(find_tracking_uri(tracking_uri))
        if read_only is not None:
            raise LtrUserError(
                f"the store {read_only} can only be read: ltr ope logs its estimates on run {ref}; "
                "pass --no-log to print them only"
            )
    log, purchases = read_log(log_path, first_position=first_position)
    run = load_run(ref, tracking_uri=tracking_uri, experiment=experiment)
    source = open_input(run, data, doc_id_column=doc_id_column)
    prediction = predict_input(run, source, keep=True)
    parts = []
    for batch in prediction.batches:
        if batch.doc_ids is None:
            raise LtrUserError(f"{source.description} has no document ids: ltr ope joins the log by (query, {doc_id_column})")
        qids = np.repeat(batch.data.written_qids(), batch.data.group_sizes)
        parts.append(pd.DataFrame({"query": qids.astype(str), "doc_id": batch.doc_ids.astype(str), "score": batch.scores}))
    scored = pd.concat(parts, ignore_index=True)
    if scored.duplicated(["query", "doc_id"]).any():
        dup = scored[scored.duplicated(["query", "doc_id"])].iloc[0]
        raise LtrUserError(f"{source.description}: query {dup['query']!r} holds document {dup['doc_id']!r} twice")
    if log.duplicated(["query", "doc_id"]).any():
        dup = log[log.duplicated(["query", "doc_id"])].iloc[0]
        raise LtrUserError(f"{log_path}: query {dup['query']!r} logs document {dup['doc_id']!r} twice (ltr ope reads one session per query)")
    joined = log.merge(scored, on=["query", "doc_id"], how="inner", sort=False)
    if joined.shape[0] == 0:
        raise LtrUserError(
            f"no overlap: none of the {log.shape[0]} impressions of {log_path} is a (query, doc_id) that the run scored in "
            f"{source.description}; give the feature files of the logged documents"
        )
    codes, _ = pd.factorize(joined["query"], sort=False)
    order = np.argsort(codes, kind="stable")
    joined = joined.iloc[order].reset_index(drop=True)
    sizes = np.bincount(codes[order])
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    positions = joined["position"].to_numpy(np.int64)
    if eta is not None:
        props = examination_curve(max(int(positions.max()) + 1, k), eta=eta)
        described = f"(1/rank)^{eta:g}"
    else:
        assert propensities is not None
        props = np.asarray(propensities, dtype=np.float64)
        described = ",".join(f"{p:g}" for p in propensities)
        deepest = int(positions.max()) + 1
        if deepest > props.size:
            raise LtrUserError(
                f"propensities missing for positions {props.size + 1}..{deepest}: --propensities gives {props.size}, "
                f"the log shows documents down to position {deepest}"
            )
    outcomes = {"click": joined["click"].to_numpy(), **({"purchase": joined["purchase"].to_numpy()} if purchases else {})}
    try:
        result = off_policy_estimates(
            outcomes, positions, joined["score"].to_numpy(np.float64), offsets, propensities=props, k=k, clip=clip,
            n_bootstrap=n_bootstrap, seed=seed,
        )  # fmt: skip
    except ValueError as exc:
        raise LtrUserError(str(exc)) from None
    unlogged = int(scored.shape[0] - joined.shape[0])
    return OpeRun(run, result, log_path, int(log.shape[0]), int(joined.shape[0]), unlogged, described)


def log_ope(ope: OpeRun) -> None:
    """Log the estimates on the run itself: metrics ``ope/<estimator>/<metric>`` (+ ``/low``,
    ``/high``, ``/ess``), tags ``ltr.ope.*`` (the log, the propensities, k, clip, bootstrap,
    seed) and every number as ``ope/ope.json``."""
    r = ope.result
    store = ope.run.store
    client = store.client
    run_id = ope.run.run_id
    from mlflow.entities import Metric, RunTag
    from mlflow.exceptions import MlflowException

    now = int(time.time() * 1000)
    metrics = [Metric(key, float(v), now, 0) for key, v in r.metrics().items()]
    tags = {
        "ltr.ope.log": str(ope.log_path), "ltr.ope.propensities": ope.propensities, "ltr.ope.k": str(r.k),
        "ltr.ope.clip": "none" if r.clip is None else f"{r.clip:g}", "ltr.ope.n_clipped": str(r.n_clipped),
        "ltr.ope.bootstrap": str(r.n_bootstrap), "ltr.ope.seed": str(r.seed),
    }  # fmt: skip
    data = {
        "log": str(ope.log_path), "log_rows": ope.log_rows, "matched_rows": ope.matched_rows,
        "unlogged_scored_rows": ope.unlogged_scored_rows, "propensities": ope.propensities, "k": r.k, "clip": r.clip,
        "n_clipped": r.n_clipped, "max_weight": r.max_weight, "n_queries": r.n_queries, "bootstrap": r.n_bootstrap,
        "seed": r.seed, "dm_fits": r.dm_fits,
        "estimates": {f"{e}/{m}": {"value": v.value, "low": v.low, "high": v.high, "ess": v.ess} for (e, m), v in r.estimates.items()},
    }  # fmt: skip
    try:
        with sqlite_store_lock(store.uri):  # the tags with the first metrics: one transaction when they fit
            client.log_batch(run_id, metrics=metrics[:900], tags=[RunTag(k, v) for k, v in tags.items()], synchronous=True)
            for start in range(900, len(metrics), 900):
                client.log_batch(run_id, metrics=metrics[start : start + 900], synchronous=True)
    except MlflowException as exc:
        db = sqlite_db_path(store.uri)
        full = full_device(exc, store=str(db) if db is not None else store.uri)
        if full is None:
            raise
        raise DeviceFull(f"{full}; the estimates are not logged on run {ope.run.label}") from exc
    client.log_text(run_id, json.dumps(data, indent=2, default=str), "ope/ope.json")

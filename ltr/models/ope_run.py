"""``ltr ope RUN [RUN_B] --log FILE --data FILE...`` as functions: a run's ranking of a click
log's documents, its off-policy estimates (:mod:`ltr.online.ope`), logged on the run; or two
runs' estimates on the same queries and their paired difference B - A.

The run's model scores ``--data`` (feature tables with a query and a document id column, read as
``ltr predict --data`` reads them, the run's re-ranking applied); each logged impression
(``query``, ``doc_id``, ``position``, ``click`` and, when present, ``purchase``) is joined to
its score by (query, document id), both read as text. The candidate ranks, per query, the logged
documents it scored; logged documents without a score are left out of its list, scored
documents that were never logged cannot be evaluated (no click of theirs was seen) and are left
out too; both counts are reported, and the share of the candidate's top k (over every document
it scored of a query) that the log showed is its *support coverage*. With two runs, the rows are
those both scored.

**Training queries are left out.** A run trained on clicks of the log scores its own training
queries with a model fitted to those very clicks: estimates there are biased upward. The run's
training split is made again as ``ltr predict RUN --split train`` makes it
(:func:`ltr.models.own_split.own_split`: a click log's ``data.train`` file, the regenerated split
of ``data=synthetic_clicks``) and the logged queries among its query ids (as written, compared as
text) are left out (with two runs, those of either). ``include_training_queries`` keeps them. A
run whose split cannot be made again is refused in one line naming the option that proceeds.

**Position-based clicks.** A log whose clicks look like a cascade (far fewer sessions with two
or more clicks than position-based users make) has the intervals of ``ips``, ``snips`` and
``dr`` withheld, with one note saying why; ``assume_position_based`` prints them anyway.

**Propensities**, one syntax: a list (position 1 first) whose last value extends to deeper
positions, ``(1/rank)^eta``, or a run's own estimated curve (:func:`run_propensities`).

Everything is checked before anything is logged: a refusal (no overlap, no propensities, a
missing column, a training split that cannot be made) logs nothing.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ltr.data.feedback.click_checks import check_click_rows
from ltr.data.feedback.click_file import integer_column, read_table_file
from ltr.data.feedback.clicks import examination_curve
from ltr.errors import DataError, DeviceFull, LtrUserError, full_device
from ltr.models.inputs import open_input
from ltr.models.logged import LoggedRun, load_run
from ltr.models.own_split import origin, own_split
from ltr.models.predict import predict_input
from ltr.online.ope import (
    ALL_ESTIMATORS,
    ESTIMATORS,
    NO_INTERVAL_REASON,
    Estimate,
    OpeResult,
    PairedResult,
    off_policy_estimates,
    paired_estimates,
)
from ltr.runtime.stops import committing
from ltr.tracking import find_tracking_uri
from ltr.tracking.sqlite.lock import sqlite_db_path, sqlite_store_lock
from ltr.tracking.store import read_only_store

#: The option that keeps the runs' training queries, and the bias it names.
INCLUDE_OPTION = "--include-training-queries"
BIAS = "estimates on the run's own training clicks are biased upward"
#: The run's artifact holding every position's estimated propensity.
PROPENSITY_ARTIFACT = "data/propensity.json"


@dataclass(frozen=True)
class TrainingQueries:
    """The logged queries a set of runs trained on: ``n_left_out`` logged queries left out (or,
    with ``included``, kept), of ``n_logged``; ``sources``: where each run's split came from."""

    n_left_out: int
    n_logged: int
    included: bool
    sources: list[str]

    def line(self, labels: Sequence[str]) -> str:
        """The first line ``ltr ope`` prints."""
        runs = " and ".join(labels)
        whose = "the run's" if len(labels) == 1 else "the runs'"
        if self.included:
            among = f"{self.n_left_out} of them" if self.sources else "any of them"
            return (f"kept every one of the {self.n_logged} logged queries, {among} training queries of run {runs} "
                    f"({INCLUDE_OPTION}): {BIAS}")  # fmt: skip
        return (f"left out {self.n_left_out} of {self.n_logged} logged queries as training queries of run {runs} "
                f"({whose} training split: {'; '.join(dict.fromkeys(self.sources))}); {INCLUDE_OPTION} keeps them")  # fmt: skip


@dataclass(frozen=True)
class OpeOptions:
    """What ``ltr ope`` estimates with, for one run or a pair: the propensities (a curve, a
    position-based ``eta``, or another run's), the cut-off ``k``, clipping of the weights,
    the bootstrap, the log's reading (first position, the document id column), the store, the
    estimators, and the two opt-ins (training queries kept, position-based users assumed)."""

    propensities: list[float] | None
    eta: float | None
    k: int
    clip: float | None
    n_bootstrap: int = 1000
    seed: int = 0
    first_position: int = 0
    doc_id_column: str = "doc_id"
    tracking_uri: str | None = None
    experiment: str = "ltr"
    propensities_from: str | None = None
    estimators: Sequence[str] = ESTIMATORS
    include_training_queries: bool = False
    assume_position_based: bool = False


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
    training: TrainingQueries | None = None


@dataclass(frozen=True)
class PairedOpe:
    """Two runs' estimates on the same rows of one click log, and their difference B - A."""

    run_a: LoggedRun
    run_b: LoggedRun
    result: PairedResult
    log_path: Path
    log_rows: int
    matched_rows: int
    propensities: str
    training: TrainingQueries


def parse_propensities(
    text: str | None, eta: float | None, from_run: str | None = None
) -> tuple[list[float] | None, float | None]:
    """``--propensities 1,0.6,0.4`` (position 1 first; the last value extends), ``--eta X`` or
    ``--propensities-from RUN`` (read later, from the run); none is refused."""
    if text is None and eta is None and from_run is None:
        raise LtrUserError(
            "propensities missing: give --propensities P1,P2,... (position 1 first, the last extends), --eta X for "
            "(1/rank)^X, or --propensities-from RUN"
        )
    if eta is not None:
        if not (math.isfinite(eta) and eta >= 0):
            raise LtrUserError(f"--eta={eta} must be a finite number >= 0")
        return None, eta
    if text is None:
        return None, None
    try:
        values = [float(v) for v in str(text).split(",")]
    except ValueError:
        raise LtrUserError(f"--propensities {text!r}: not a comma-separated list of numbers") from None
    if not values or any(not (0 < v <= 1) for v in values):
        raise LtrUserError(f"--propensities {text!r}: each must lie in (0, 1]")
    return values, None


def parse_estimators(text: str | None) -> tuple[str, ...]:
    """``--estimators ips,rips`` (default: :data:`ltr.online.ope.ESTIMATORS`), each known, once."""
    if text is None:
        return ESTIMATORS
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in ALL_ESTIMATORS]
    if unknown or not names:
        raise LtrUserError(f"--estimators {text!r}: each must be one of {','.join(ALL_ESTIMATORS)}")
    return tuple(dict.fromkeys(names))


def fill_not_identified(values: Sequence[float | None]) -> list[float]:
    """A logged curve (position 1 first) with each position not identified (None, NaN, or not in
    (0, 1]: EM's 0 of an unclicked position) taking the last identified value; values above 1
    are not identified either (examination relative to the top). Position 1 defaults to 1.

    >>> fill_not_identified([1.0, 0.5, None, float("nan"), 0.0, 0.25])
    [1.0, 0.5, 0.5, 0.5, 0.5, 0.25]
    """
    out: list[float] = []
    last = 1.0
    for v in values:
        if v is not None and math.isfinite(v) and 0.0 < v <= 1.0:
            last = float(v)
        out.append(last)
    return out


def run_propensities(run: LoggedRun) -> list[float]:
    """The examination curve ``run`` estimated (position 1 first): its ``data/propensity.json``
    (every position), else its ``propensity/pos_k`` metrics; positions not identified take the
    last identified value (:func:`fill_not_identified`).

    Raises
    ------
    LtrUserError
        the run logged no propensities (it did not train on a click log).
    """
    text = run.text_artifact(PROPENSITY_ARTIFACT)
    values: list[float | None] = []
    if text is not None:
        try:
            logged = json.loads(text).get("propensities") or []
            values = [None if v is None else float(v) for v in logged]
        except (json.JSONDecodeError, AttributeError, TypeError, ValueError):
            values = []
    if not values:
        metrics = run.metrics
        k = 1
        while f"propensity/pos_{k}" in metrics:
            values.append(metrics[f"propensity/pos_{k}"])
            k += 1
    if not values:
        raise LtrUserError(
            f"--propensities-from {run.label}: the run logged no propensities ({PROPENSITY_ARTIFACT} or propensity/pos_k; "
            "a run trained on a click log logs them); give --propensities or --eta"
        )
    return fill_not_identified(values)


def training_queries(run: LoggedRun) -> tuple[set[str], str]:
    """The query ids (as text) of ``run``'s training split made again, and where it comes from.

    Raises
    ------
    LtrUserError
        the split cannot be made again: one line naming why and ``--include-training-queries``.
    """
    try:
        data = own_split(run, "train")
    except (LtrUserError, DataError) as exc:
        raise LtrUserError(
            f"the training split of run {run.label} cannot be made again ({str(exc).rstrip('.')}), so its training "
            f"queries cannot be left out: pass {INCLUDE_OPTION} to estimate on every logged query ({BIAS})"
        ) from None
    return {str(q) for q in data.written_qids()}, origin(run.spec.config.data, "train")


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
    check_click_rows(out["query"], out["position"].to_numpy(), source=str(path), first_position=first_position)
    return out, purchases


def _refuse_options(options: OpeOptions) -> None:
    """The numbers of ``options`` ``ltr ope`` refuses, in one line, before anything is read."""
    k, clip, n_bootstrap, seed = options.k, options.clip, options.n_bootstrap, options.seed
    if k < 1:
        raise LtrUserError(f"--k={k} must be >= 1")
    if clip is not None and not (clip > 0 and math.isfinite(clip)):
        raise LtrUserError(f"--clip={clip} must be a finite number > 0")
    if n_bootstrap < 2:
        raise LtrUserError(f"--bootstrap={n_bootstrap} must be >= 2")
    if seed < 0:
        raise LtrUserError(f"--seed={seed} must be an integer >= 0")


def _scores(run: LoggedRun, data: list[Path], doc_id_column: str) -> pd.DataFrame:
    """``query``, ``doc_id`` (text) and ``score`` of every document ``run`` scores in ``data``."""
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
    return scored


def _coverage(scored: pd.DataFrame, logged: pd.DataFrame, queries: set[str], k: int) -> float:
    """Share of the candidate's top ``k`` documents (over every document it scored of the
    ``queries``) that the log showed."""
    frame = scored[scored["query"].isin(queries)]
    if frame.shape[0] == 0:
        return 1.0
    rank = frame.groupby("query", sort=False)["score"].rank(method="first", ascending=False)
    top = frame[rank.to_numpy() <= k]
    shown = top.merge(logged[["query", "doc_id"]], on=["query", "doc_id"], how="left", indicator=True)["_merge"] == "both"
    return float(shown.mean())


@dataclass(frozen=True)
class _Prepared:
    runs: list[LoggedRun]
    joined: pd.DataFrame
    offsets: np.ndarray
    propensities: np.ndarray
    described: str
    training: TrainingQueries
    coverage: list[float]
    unlogged: int
    log_rows: int
    purchases: bool


def _prepare(refs: Sequence[str], log_path: Path, data: list[Path], options: OpeOptions) -> _Prepared:
    """Read the log, load and score the runs, leave out their training queries, join."""
    propensities, eta, propensities_from, k = options.propensities, options.eta, options.propensities_from, options.k
    first_position, doc_id_column, tracking_uri = options.first_position, options.doc_id_column, options.tracking_uri
    experiment, include_training_queries = options.experiment, options.include_training_queries
    log, purchases = read_log(log_path, first_position=first_position)
    if log.duplicated(["query", "doc_id"]).any():
        dup = log[log.duplicated(["query", "doc_id"])].iloc[0]
        raise LtrUserError(f"{log_path}: query {dup['query']!r} logs document {dup['doc_id']!r} twice (ltr ope reads one session per query)")
    runs = [load_run(ref, tracking_uri=tracking_uri, experiment=experiment) for ref in refs]
    source_run = load_run(propensities_from, tracking_uri=tracking_uri, experiment=experiment) if propensities_from else None
    curve = run_propensities(source_run) if source_run is not None else None
    trained: set[str] = set()
    sources: list[str] = []
    if not include_training_queries:
        for run in runs:
            ids, where = training_queries(run)
            trained |= ids
            sources.append(where)
    else:
        for run in runs:  # counted when the split can be made, to name how many are kept
            try:
                ids, where = training_queries(run)
            except LtrUserError:
                continue
            trained |= ids
            sources.append(where)
    logged_queries = [str(q) for q in pd.unique(log["query"])]
    n_trained = int(sum(1 for q in logged_queries if q in trained))
    training = TrainingQueries(n_trained, len(logged_queries), include_training_queries, sources)
    kept_log = log if include_training_queries or not trained else log[~log["query"].isin(trained)]
    if kept_log.shape[0] == 0:
        raise LtrUserError(
            f"every one of the {training.n_logged} queries of {log_path} is a training query of run "
            f"{' and '.join(r.label for r in runs)}: give a log of other queries, or {INCLUDE_OPTION} ({BIAS})"
        )
    scored = [_scores(run, data, doc_id_column) for run in runs]
    joined = kept_log
    for i, frame in enumerate(scored):
        joined = joined.merge(frame.rename(columns={"score": f"score_{i}"}), on=["query", "doc_id"], how="inner", sort=False)
    if joined.shape[0] == 0:
        raise LtrUserError(
            f"no overlap: none of the {kept_log.shape[0]} impressions of {log_path} (training queries left out) is a "
            f"(query, doc_id) that {'the run' if len(runs) == 1 else 'both runs'} scored in the data given; give the "
            "feature files of the logged documents"
        )
    codes, _ = pd.factorize(joined["query"], sort=False)
    order = np.argsort(codes, kind="stable")
    joined = joined.iloc[order].reset_index(drop=True)
    sizes = np.bincount(codes[order])
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    positions = joined["position"].to_numpy(np.int64)
    deepest = max(int(positions.max()) + 1, k)
    if eta is not None:
        props = examination_curve(deepest, eta=eta)
        described = f"(1/rank)^{eta:g}"
    else:
        values = curve if curve is not None else propensities
        assert values is not None
        props = np.asarray(values, dtype=np.float64)
        shown = ",".join(f"{p:.3g}" for p in values[:10]) + (",..." if len(values) > 10 else "")
        described = f"{shown} of run {source_run.label}" if source_run is not None else ",".join(f"{p:g}" for p in values)
        if deepest > props.size:
            described += f" (the last extends to position {deepest})"
    queries = set(pd.unique(joined["query"]))
    coverage = [_coverage(frame, kept_log, queries, k) for frame in scored]
    kept_scored = scored[0] if include_training_queries else scored[0][~scored[0]["query"].isin(trained)]
    unlogged = int(kept_scored.shape[0] - joined.shape[0])
    return _Prepared(runs, joined, offsets, props, described, training, coverage, unlogged, int(log.shape[0]), purchases)


def run_ope(ref: str, log_path: Path, data: list[Path], options: OpeOptions, *, logs: bool = False) -> OpeRun:
    """Score, join and estimate (see the module docstring); logs nothing. ``logs``: the caller
    logs the estimates on the run next (:func:`log_ope`): a store that can only be read is
    refused first, before anything is read."""
    _refuse_options(options)
    if logs:
        read_only = read_only_store(find_tracking_uri(options.tracking_uri))
        if read_only is not None:
            raise LtrUserError(
                f"the store {read_only} can only be read: ltr ope logs its estimates on run {ref}; "
                "pass --no-log to print them only"
            )
    prep = _prepare([ref], log_path, data, options)
    joined = prep.joined
    outcomes = {"click": joined["click"].to_numpy(), **({"purchase": joined["purchase"].to_numpy()} if prep.purchases else {})}
    try:
        result = off_policy_estimates(
            outcomes, joined["position"].to_numpy(np.int64), joined["score_0"].to_numpy(np.float64), prep.offsets,
            propensities=prep.propensities, k=options.k, clip=options.clip, n_bootstrap=options.n_bootstrap,
            seed=options.seed, estimators=options.estimators, coverage=prep.coverage[0],
            assume_position_based=options.assume_position_based,
        )  # fmt: skip
    except ValueError as exc:
        raise LtrUserError(str(exc)) from None
    return OpeRun(prep.runs[0], result, log_path, prep.log_rows, int(joined.shape[0]), prep.unlogged, prep.described, prep.training)


def run_paired(ref_a: str, ref_b: str, log_path: Path, data: list[Path], options: OpeOptions) -> PairedOpe:
    """Runs A and B on the same rows of the log (the documents both scored, the queries neither
    trained on) and the difference B - A (:func:`ltr.online.ope.paired_estimates`); logs nothing."""
    _refuse_options(options)
    prep = _prepare([ref_a, ref_b], log_path, data, options)
    joined = prep.joined
    outcomes = {"click": joined["click"].to_numpy(), **({"purchase": joined["purchase"].to_numpy()} if prep.purchases else {})}
    try:
        result = paired_estimates(
            outcomes, joined["position"].to_numpy(np.int64), joined["score_0"].to_numpy(np.float64),
            joined["score_1"].to_numpy(np.float64), prep.offsets, propensities=prep.propensities, k=options.k,
            clip=options.clip, n_bootstrap=options.n_bootstrap, seed=options.seed, estimators=options.estimators,
            coverage=(prep.coverage[0], prep.coverage[1]), assume_position_based=options.assume_position_based,
        )  # fmt: skip
    except ValueError as exc:
        raise LtrUserError(str(exc)) from None
    return PairedOpe(prep.runs[0], prep.runs[1], result, log_path, prep.log_rows, int(joined.shape[0]), prep.described, prep.training)


def _estimate_json(e: Estimate) -> dict[str, Any]:
    """An estimate in ``ope/ope.json``: ``low``/``high`` null and ``no_interval`` (why) without an interval."""
    if e.has_interval:
        return {"value": e.value, "low": e.low, "high": e.high, "ess": e.ess}
    return {"value": e.value, "low": None, "high": None, "ess": e.ess, "no_interval": e.reason or NO_INTERVAL_REASON}


def log_ope(ope: OpeRun) -> None:
    """Log the estimates on the run itself: metrics ``ope/<estimator>/<metric>`` (+ ``/low``,
    ``/high`` where it has an interval, ``/ess``; ``ope/<estimator>/max_weight`` and ``/coverage``), tags ``ltr.ope.*``
    (the log, the propensities, k, clip, bootstrap, seed, estimators, training queries) and every
    number as ``ope/ope.json``. The command's work made final (:func:`~ltr.runtime.stops.committing`):
    a stop signal before it stops with nothing logged, one during it waits for its end, and one
    after it stops nothing (the command ends with its estimates logged and its exit code)."""
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
        "ltr.ope.estimators": ",".join(dict.fromkeys(e for e, _ in r.estimates if e != "logged")),
        "ltr.ope.training_queries": "unknown" if ope.training is None else (
            f"kept ({ope.training.n_left_out} of {ope.training.n_logged} logged queries)" if ope.training.included
            else f"left out ({ope.training.n_left_out} of {ope.training.n_logged} logged queries)"),
    }  # fmt: skip
    data = {
        "log": str(ope.log_path), "log_rows": ope.log_rows, "matched_rows": ope.matched_rows,
        "unlogged_scored_rows": ope.unlogged_scored_rows, "propensities": ope.propensities, "k": r.k, "clip": r.clip,
        "n_clipped": r.n_clipped, "max_weight": r.max_weight, "n_queries": r.n_queries, "bootstrap": r.n_bootstrap,
        "seed": r.seed, "dm_fits": r.dm_fits, "max_weights": r.max_weights, "coverage": r.coverage, "notes": r.notes,
        "training_queries": None if ope.training is None else {
            "left_out": 0 if ope.training.included else ope.training.n_left_out, "of_logged": ope.training.n_logged,
            "training_queries_logged": ope.training.n_left_out, "included": ope.training.included,
        },
        "estimates": {f"{e}/{m}": _estimate_json(v) for (e, m), v in r.estimates.items()},
    }  # fmt: skip
    with committing():
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

"""``ltr abtest A B`` as a function: two runs of the store, their rankings, a simulated A/B test.

The rankings are re-made, retrain-free, from what each run logged: its composed config
(``config/config.yaml``) regenerates the run's data (a seeded click log, ``data=synthetic_clicks``,
so the same queries, true grades and behaviours), and its model (``model_text/model.txt``, the
trees up to the best round) scores the split; a run that re-ranked (``rerank=...``) is re-ranked
the same way. Both runs must hold the same queries and true grades in the split (runs of one
click log, whatever their labels, model or re-ranking). The click model and the behaviour
probabilities are the log's own (:mod:`ltr.data.clicks`).

Runs on a user's click log (``data=parquet data.click_column=...``) re-read the log's files and
have no known click model: it is fitted to the log (:func:`fit_click_model`): the examination
propensities the run used (``eval.clicks.propensity``, estimated on the training split's clicks),
and an attractiveness per query-document pair of the split from its clicks over propensity,
smoothed with a Beta prior. No purchases are simulated there (the log says nothing of what a
click the logger never showed would have bought).
"""

from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass
from typing import Any

import lightgbm as lgb
import numpy as np
from numpy.typing import NDArray
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from ltr.compare.abtest import (
    MAX_SIMULATION_SECONDS,
    AbTestResult,
    ClickModel,
    n_sessions_of,
    simulate_abtest,
    simulation_seconds,
)
from ltr.compare.loading import run_labels
from ltr.config.choices import RerankKind
from ltr.config.data import ParquetDataConfig, SplitConfig, SyntheticClicksDataConfig
from ltr.config.logged import read_logged_config
from ltr.config.schema import ClickEvalConfig, RerankConfig
from ltr.data.click_log import click_options, clicks_of, is_click_log, propensity_inputs
from ltr.data.clicks import cart_probability, purchase_probability
from ltr.data.load import load_click_splits, load_splits
from ltr.data.ranking_data import RankingData
from ltr.errors import DataError, LtrUserError
from ltr.experiment.checks import popularity_column
from ltr.experiment.rerank import rerank_split
from ltr.metrics.propensity import estimate_propensity
from ltr.metrics.strata import Strata
from ltr.tracking import find_tracking_uri
from ltr.tracking.runs import RunRecord, RunStore


@dataclass(frozen=True)
class RunRanking:
    """One run's scores of a split, re-made from its logged config and model."""

    run: RunRecord
    label: str
    data: RankingData  # the split with its true grades (a user's log: its labels) and behaviour columns
    scores: NDArray[np.float64]
    config: SyntheticClicksDataConfig | ParquetDataConfig
    #: a user's click log: the click model fitted to it, and one line saying what it rests on
    fitted: ClickModel | None = None
    fit_note: str = ""


@dataclass(frozen=True)
class LoadedAbTest:
    """The simulation of two runs (``a`` the control, ``b`` the treatment) and where they came from."""

    result: AbTestResult
    a: RunRanking
    b: RunRanking
    split: str
    store: RunStore
    #: one line on the click model a user's log's simulation rests on ("" for the simulator's log)
    model_note: str = ""


def _typed(node: Any, schema: type[Any], key: str, run: RunRecord) -> Any:
    try:
        return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(schema), node))
    except OmegaConfBaseException as exc:
        raise LtrUserError(f"run {run.run_id} ({run.run_name!r}): its logged {key} config does not load: {exc}") from exc


def run_ranking(store: RunStore, run: RunRecord, label: str, *, split: str) -> RunRanking:
    """Re-make ``run``'s scores of ``split`` (see the module docstring)."""
    raw = read_logged_config(store.text_artifact(run, "config/config.yaml"), f"run {run.run_id}")
    kind = raw.get("data", {}).get("kind")
    user_log = kind == "parquet" and raw.data.get("click_column") is not None
    if kind != "synthetic_clicks" and not user_log:
        raise LtrUserError(
            f"run {run.run_id} ({run.run_name!r}) is on data kind {kind!r} without a click column: "
            "ltr abtest simulates the click model of a click log (data=synthetic_clicks, or data=parquet with "
            "data.click_column and data.position_column)"
        )
    split_cfg = _typed(raw.split, SplitConfig, "split", run)
    rerank_cfg = _typed(raw.get("rerank", {}), RerankConfig, "rerank", run)
    data_cfg: SyntheticClicksDataConfig | ParquetDataConfig
    fitted: ClickModel | None = None
    note = ""
    if user_log:
        table_cfg: ParquetDataConfig = _typed(raw.data, ParquetDataConfig, "data", run)
        data_cfg = table_cfg
        click_cfg = _typed(raw.get("eval", {}).get("clicks", {}), ClickEvalConfig, "eval.clicks", run)
        try:
            splits = load_splits(table_cfg, split_cfg, seed=int(raw.seed))
        except DataError as exc:
            raise LtrUserError(f"run {run.run_id} ({run.run_name!r}): its click log does not load: {exc}") from None
        data = getattr(splits, split)
        fitted, note = fit_click_model(table_cfg, click_cfg, splits.train, data, seed=int(raw.seed), split=split)
    else:
        simulated: SyntheticClicksDataConfig = _typed(raw.data, SyntheticClicksDataConfig, "data", run)
        data_cfg = simulated
        views = load_click_splits(simulated, split_cfg, seed=int(raw.seed))
        data = getattr(views.relevance, split)
    with tempfile.TemporaryDirectory() as tmp:
        booster = lgb.Booster(model_file=str(store.download(run, "model_text/model.txt", tmp)))
    if booster.num_feature() != data.n_features:
        raise LtrUserError(f"run {run.run_id}: its model takes {booster.num_feature()} features, the data has {data.n_features}")
    scores = np.asarray(booster.predict(data.features), dtype=np.float64)
    if rerank_cfg.kind != RerankKind.none:
        ks = tuple(int(k) for k in raw.eval.k)
        column = popularity_column(data_cfg, data)
        popularity = None if column is None else data.features[:, column]
        scores = rerank_split(rerank_cfg, data, scores, ks, popularity).scores
    return RunRanking(run, label, data, scores, data_cfg, fitted, note)


#: The strength ``a + b`` of the Beta prior that smooths a user's log's attractiveness estimates.
PRIOR_STRENGTH = 2.0


def fit_click_model(
    data_cfg: ParquetDataConfig, click_cfg: ClickEvalConfig, train: RankingData, data: RankingData, *, seed: int,
    split: str = "test",
) -> tuple[ClickModel, str]:
    """The position-based click model of a user's click log, and one line saying what it rests on.

    Examination: the propensities the run used (``eval.clicks.propensity`` on the training
    split's clicks, without the bootstrap), clipped at ``eval.clicks.min_propensity``.
    Attractiveness of every row (query-document pair) of ``data``: its clicks over propensity
    (the IPS estimate of its click probability when examined), smoothed with a Beta(a, b) prior
    whose mean ``m`` is the split's mean of clicks over propensity (clipped to [0.001, 0.999])
    and whose strength is ``a + b = PRIOR_STRENGTH``: ``(click / propensity + a) / (1 + a + b)``,
    at most 1.
    """
    if not is_click_log(data_cfg) or train.positions is None or data.positions is None:
        raise LtrUserError("a click log needs data.click_column and data.position_column")  # pragma: no cover - checked at train
    column = str(data_cfg.click_column)
    train_clicks = clicks_of(train, column)
    method = str(click_cfg.propensity)
    n = int(max(int(train.positions.max()), int(data.positions.max()))) + 1
    options = click_options(data_cfg)
    inputs = propensity_inputs(method, train, options)
    try:
        if method == "config":
            if click_cfg.propensities is None:
                raise ValueError("the run gave no eval.clicks.propensities")
            estimate = estimate_propensity(method="given", given=list(click_cfg.propensities), n_positions=n)
        else:
            estimate = estimate_propensity(
                train_clicks, train.positions, train.offsets, method="ctr" if method == "estimated" else method,
                n_positions=n, n_bootstrap=0, seed=seed, **inputs,
            )  # fmt: skip
    except ValueError as exc:
        raise LtrUserError(f"cannot fit the click model of the log (eval.clicks.propensity={method}): {exc}") from None
    exam = estimate.table(n, min_propensity=float(click_cfg.min_propensity))
    clicks = clicks_of(data, column).astype(np.float64)
    ips = clicks / exam[data.positions]
    mean = float(np.clip(ips.mean() if ips.size else 0.5, 0.001, 0.999))
    a, b = mean * PRIOR_STRENGTH, (1.0 - mean) * PRIOR_STRENGTH
    attract = np.minimum((ips + a) / (1.0 + a + b), 1.0)
    note = (
        f"the click model is fitted to the log, not known: examination of {n} positions by "
        f"eval.clicks.propensity={method} (position 2: {exam[1] if n > 1 else 1.0:.3f}), attractiveness of "
        f"{data.n_rows:,} query-document pairs of the {split} split = (click / propensity + a) / (1 + a + b), "
        f"Beta prior mean {mean:.3f}, a + b = {PRIOR_STRENGTH:g}; no purchases simulated"
    )
    return ClickModel(0.0, 0.0, 1.0, examination=exam, attract=attract), note


def click_model(ranking: RunRanking) -> ClickModel:
    """The click model and behaviour probabilities of the run's click log, per row of its split
    (a user's log: the model fitted to it, :func:`fit_click_model`)."""
    if ranking.fitted is not None:
        return ranking.fitted
    cfg, labels = ranking.config, ranking.data.labels
    assert isinstance(cfg, SyntheticClicksDataConfig)
    return ClickModel(
        float(cfg.examination_eta), float(cfg.click_noise), float(cfg.click_max),
        cart_probability(labels, cfg), purchase_probability(labels, cfg),
    )  # fmt: skip


def load_abtest(
    ref_a: str,
    ref_b: str,
    *,
    tracking_uri: str | None = None,
    experiment: str = "ltr",
    split: str = "test",
    sessions_per_day: float = 100_000.0,
    traffic_share: float = 0.05,
    days: float = 14.0,
    seed: int = 0,
) -> LoadedAbTest:
    """Resolve two runs as ``ltr compare`` does, re-make their rankings and simulate the test.

    Raises
    ------
    LtrUserError
        An unknown run, a run not on a click log, runs on different queries or grades, a bad
        traffic setting or seed, or so many sessions that the simulation would take more than
        :data:`~ltr.compare.abtest.MAX_SIMULATION_SECONDS` (estimated from the split's list
        lengths); all before any simulation.
    """
    if split not in ("train", "valid", "test"):
        raise LtrUserError(f"--split={split!r} is not one of train, valid, test")
    if not 0 < sessions_per_day < math.inf:
        raise LtrUserError(f"--sessions-per-day={sessions_per_day} must be a finite number > 0")
    if not 0 < traffic_share <= 1:
        raise LtrUserError(f"--traffic-share={traffic_share} must be in (0, 1]")
    if not 0 < days < math.inf:
        raise LtrUserError(f"--days={days} must be a finite number > 0")
    if seed < 0:
        raise LtrUserError(f"--seed={seed} must be an integer >= 0")
    if n_sessions_of(sessions_per_day, traffic_share, days) < 2:
        raise LtrUserError("the experiment holds fewer than 2 sessions: raise --sessions-per-day, --traffic-share or --days")
    store = RunStore(find_tracking_uri(tracking_uri), reap=False)  # it reads runs (--log: adds its own), and reaps none
    runs = [store.resolve(ref, experiment=experiment) for ref in (ref_a, ref_b)]
    if runs[0].run_id == runs[1].run_id:
        raise LtrUserError(f"A and B are the same run ({runs[0].run_id}); an A/B test needs two runs")
    labels = run_labels(runs)
    a, b = (run_ranking(store, run, label, split=split) for run, label in zip(runs, labels, strict=True))
    same = (
        np.array_equal(a.data.qids, b.data.qids) and np.array_equal(a.data.offsets, b.data.offsets)
        and np.array_equal(a.data.labels, b.data.labels)
    )  # fmt: skip
    if not same:
        raise LtrUserError(f"runs {labels[0]!r} and {labels[1]!r} hold different {split} queries or grades: they are not runs of one click log")
    n_sessions = n_sessions_of(sessions_per_day, traffic_share, days)
    seconds = simulation_seconds(n_sessions, a.data.offsets)
    if seconds > MAX_SIMULATION_SECONDS:
        raise LtrUserError(
            f"{n_sessions:,} sessions (--sessions-per-day x --traffic-share x --days) would take about "
            f"{_duration(seconds)} to simulate, more than {_duration(MAX_SIMULATION_SECONDS)}: lower --days, "
            "--traffic-share or --sessions-per-day (the sessions for 80 % power are usually far fewer)"
        )
    raw = read_logged_config(store.text_artifact(runs[0], "config/config.yaml"), f"run {runs[0].run_id}")
    strata = Strata(tuple(int(e) for e in raw.eval.strata))
    result = simulate_abtest(
        a.data.labels, a.data.offsets, a.scores, b.scores, click_model(a),
        sessions_per_day=sessions_per_day, traffic_share=traffic_share, days=days, seed=seed, strata=strata,
    )  # fmt: skip
    return LoadedAbTest(result, a, b, split, store, a.fit_note)


def _duration(seconds: float) -> str:
    """``"2.5 hours"``, ``"40 minutes"``, ``"3,170,979 years"``: a time as people say it."""
    hours = seconds / 3600
    if hours >= 24 * 365:
        return f"{hours / (24 * 365):,.0f} years"
    if hours >= 48:
        return f"{hours / 24:,.0f} days"
    if hours >= 1:
        return f"{round(hours, 1):g} hour{'' if round(hours, 1) == 1 else 's'}"
    return f"{seconds / 60:.0f} minutes"


def log_abtest(loaded: LoadedAbTest, *, experiment: str, markdown: str, figure: Any = None) -> str:
    """Record the simulation as its own MLflow run (``ltr.kind=abtest``) linked to both runs
    (``ltr.compare.run_ids``: A then B; ``ltr.compare.baseline_run_id``: A); returns its id.
    Metrics ``abtest/ctr_a``, ``ctr_b``, ``ctr_diff`` (and its interval), ``p_value``,
    ``days_for_power``, ``interleaving/win_rate``, ``interleaving/p_value``,
    ``interleaving/sessions_for_power``; every number in ``comparison/comparison.json``."""
    r = loaded.result
    values = {
        "abtest/ctr_a": r.ctr.a.value, "abtest/ctr_b": r.ctr.b.value, "abtest/ctr_diff": r.ctr.diff,
        "abtest/ctr_diff_low": r.ctr.low, "abtest/ctr_diff_high": r.ctr.high, "abtest/p_value": r.ctr.p_value,
        "abtest/sessions_for_power": r.ctr.sessions_needed, "abtest/days_for_power": r.ctr.days_needed,
        "abtest/expected_ctr_a": r.expected_ctr_a, "abtest/expected_ctr_b": r.expected_ctr_b,
        "interleaving/win_rate": r.interleaving.win_rate, "interleaving/p_value": r.interleaving.p_value,
        "interleaving/sessions_for_power": r.interleaving.sessions_needed,
    }  # fmt: skip
    name = f"abtest {loaded.split}: {loaded.b.label} vs {loaded.a.label}"
    return loaded.store.log_comparison(
        experiment=experiment, run_name=name[:250], runs=[loaded.a.run, loaded.b.run], baseline=loaded.a.run,
        split=loaded.split, metrics=["ctr"], markdown=markdown, data=r.to_dict(),
        params={"sessions_per_day": r.sessions_per_day, "traffic_share": r.traffic_share, "days": r.days, "seed": r.seed},
        kind="abtest", values={k: v for k, v in values.items() if np.isfinite(v)},
        figures={"figures/power.png": figure} if figure is not None else None,
    )  # fmt: skip

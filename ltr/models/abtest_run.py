"""``ltr abtest A B`` as a function: two runs of the store, their rankings, a simulated A/B test.

The rankings are re-made, retrain-free, from what each run logged: its composed config
(``config/config.yaml``) regenerates the run's data (a seeded click log, ``data=synthetic_clicks``,
so the same queries, true grades and behaviours), and its model (``model_text/model.txt``, the
trees up to the best round) scores the split; a run that re-ranked (``rerank=...``) is re-ranked
the same way. Both runs must hold the same queries and true grades in the split (runs of one
click log, whatever their labels, model or re-ranking). The click model and the behaviour
probabilities are the log's own (:mod:`ltr.data.feedback.clicks`).

Runs on a user's click log (``data=parquet data.click_column=...``) re-read the log's files and
have no known click model: it is fitted to the log (:func:`fit_click_model`): the examination
propensities the run used (``eval.clicks.propensity``, estimated on the training split's clicks),
and attractiveness a logistic function of the features plus a per-query effect, fitted to the
clicks given their examination; refitted on bootstrap resamples of the log's queries, whose
spread the CTR intervals hold beside the simulated sessions' noise. No purchases are simulated
there (the log says nothing of what a click the logger never showed would have bought).
"""

from __future__ import annotations

import dataclasses
import math
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException
from scipy.optimize import isotonic_regression

from ltr.compare.abtest import (
    MAX_SIMULATION_SECONDS,
    AbTestResult,
    ClickModel,
    LogAnchor,
    fit_attractiveness,
    n_sessions_of,
    simulate_abtest,
    simulation_seconds,
)
from ltr.compare.loading import run_labels
from ltr.config.choices import RerankKind
from ltr.config.groups.data import ParquetDataConfig, SplitConfig, SyntheticClicksDataConfig
from ltr.config.logged import read_logged_config
from ltr.config.schema import ClickEvalConfig, RerankConfig
from ltr.data.config_rules import popularity_column
from ltr.data.feedback.click_log import (
    behaviour,
    click_options,
    clicks_of,
    is_click_log,
    propensity_inputs,
    randomized_flags,
)
from ltr.data.feedback.clicks import cart_probability, purchase_probability
from ltr.data.load import load_click_splits, load_splits
from ltr.data.ranking_data import RankingData
from ltr.errors import DataError, LtrUserError
from ltr.metrics.clicks.propensity import MIN_POSITION_CLICKS, estimate_propensity
from ltr.metrics.strata import Strata
from ltr.online.propensity_check import cascade_reason
from ltr.rerank.step import rerank_split
from ltr.tracking import find_tracking_uri
from ltr.tracking.runs import RunRecord, RunStore
from ltr.training.backends import MODEL_FILES, load_model

#: Refits of a user's log's click model on bootstrap resamples of its queries (``--refits``):
#: they report the spread of the model's own B - A (the CTR intervals are anchored on the log).
DEFAULT_REFITS = 0

#: ``progress(done, total)``: called after every refit of the click model.
Progress = Callable[[int, int], None]


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


def run_ranking(
    store: RunStore, run: RunRecord, label: str, *, split: str, fit: bool = True, refits: int = DEFAULT_REFITS,
    progress: Progress | None = None, randomized_column: str | None = None,
) -> RunRanking:
    """Re-make ``run``'s scores of ``split`` (see the module docstring); on a user's log with
    ``fit``, also its fitted click model (:func:`fit_click_model`, ``refits`` resamples).
    ``randomized_column``: the log's column marking the sessions shown in random order (as
    ``data.randomized_column``, which it overrides)."""
    raw = read_logged_config(store.text_artifact(run, "config/config.yaml"), f"run {run.run_id}")
    kind = raw.get("data", {}).get("kind")
    user_log = kind == "parquet" and raw.data.get("click_column") is not None
    if randomized_column is not None and not user_log:
        raise LtrUserError(
            f"--randomized-column is for runs on your own click log (data=parquet with data.click_column); run "
            f"{run.run_id} ({run.run_name!r}) is on data kind {kind!r}"
        )
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
        if randomized_column is not None:
            table_cfg = dataclasses.replace(table_cfg, randomized_column=randomized_column)
        data_cfg = table_cfg
        click_cfg = _typed(raw.get("eval", {}).get("clicks", {}), ClickEvalConfig, "eval.clicks", run)
        try:
            splits = load_splits(table_cfg, split_cfg, seed=int(raw.seed))
        except DataError as exc:
            raise LtrUserError(f"run {run.run_id} ({run.run_name!r}): its click log does not load: {exc}") from None
        data = getattr(splits, split)
        if fit:
            fitted, note = fit_click_model(
                table_cfg, click_cfg, splits.train, data, seed=int(raw.seed), split=split, n_bootstrap=refits, progress=progress,
            )  # fmt: skip
    else:
        simulated: SyntheticClicksDataConfig = _typed(raw.data, SyntheticClicksDataConfig, "data", run)
        data_cfg = simulated
        views = load_click_splits(simulated, split_cfg, seed=int(raw.seed))
        data = getattr(views.relevance, split)
    with tempfile.TemporaryDirectory() as tmp:
        backend = run.tags.get("ltr.backend", "lightgbm")  # LightGBM, XGBoost or CatBoost
        try:
            booster = load_model(backend, store.download(run, f"model_text/{MODEL_FILES[backend]}", tmp))
        except ValueError as exc:
            raise LtrUserError(f"run {run.run_id}: its model_text/{MODEL_FILES[backend]} is {exc}") from None
    if booster.num_feature() != data.n_features:
        raise LtrUserError(f"run {run.run_id}: its model takes {booster.num_feature()} features, the data has {data.n_features}")
    scores = np.asarray(booster.predict(data.features), dtype=np.float64)
    if rerank_cfg.kind != RerankKind.none:
        ks = tuple(int(k) for k in raw.eval.k)
        column = popularity_column(data_cfg, data)
        popularity = None if column is None else data.features[:, column]
        scores = rerank_split(rerank_cfg, data, scores, ks, popularity).scores
    return RunRanking(run, label, data, scores, data_cfg, fitted, note)


def _examination(
    method: str, click_cfg: ClickEvalConfig, train: RankingData, column: str, options: dict[str, str], n: int, seed: int,
    split: str,
) -> tuple[NDArray[np.float64], int]:
    """The examination table of ``n`` positions the run's propensity method gives on ``train``
    (``eval.clicks.propensity``, no bootstrap), clipped at ``eval.clicks.min_propensity``, and
    the first 0-based position the method could not identify (NaN: the table extends the value
    before it; ``n`` when every position is identified)."""
    assert train.positions is not None
    if method == "config":
        if click_cfg.propensities is None:
            raise ValueError("the run gave no eval.clicks.propensities")
        estimate = estimate_propensity(method="given", given=list(click_cfg.propensities), n_positions=n)
    else:
        estimate = estimate_propensity(
            clicks_of(train, column, split=split), train.positions, train.offsets,
            method="ctr" if method == "estimated" else method, n_positions=n, n_bootstrap=0, seed=seed,
            **propensity_inputs(method, train, options),
        )  # fmt: skip
    floor = float(click_cfg.min_propensity)
    values = np.asarray(estimate.propensities, dtype=np.float64)[:n]
    unknown = np.flatnonzero(~np.isfinite(values))
    table = estimate.table(n, min_propensity=floor)
    first = int(unknown[0]) if unknown.size else n
    if 1 < first < n:  # past the identified positions: a power law through them, not a flat line
        table[first:] = _power_law_tail(table[:first], n, floor)
    return table, first


def _power_law_tail(head: NDArray[np.float64], n: int, floor: float) -> NDArray[np.float64]:
    """Examination of 0-based positions ``len(head)..n-1`` past the identified ``head``:
    ``head[-1] * (m / k) ** eta`` at 1-based position ``k`` (``m = len(head)``), ``eta`` the
    least-squares slope of ``-log(propensity)`` on ``log(position)`` through position 1 (at least
    0), clipped at ``floor``.

    >>> _power_law_tail(np.array([1.0, 0.5]), 4, 0.01).round(4).tolist()
    [0.3333, 0.25]
    """
    m = head.shape[0]
    x = np.log(np.arange(1, m + 1, dtype=np.float64))
    y = -np.log(np.clip(head, 1e-12, 1.0))
    eta = max(float(x @ y) / max(float(x @ x), 1e-12), 0.0)
    k = np.arange(m + 1, n + 1, dtype=np.float64)
    return np.asarray(np.clip(head[-1] * (m / k) ** eta, floor, 1.0), dtype=np.float64)


#: Resamples of the training split's queries whose examination curves the anchored interval
#: holds (an estimated curve's own error).
ANCHOR_CURVES = 400

#: The positions (from the top) the randomized sessions must identify for an anchored interval:
#: with fewer, the examination of the rest is a guess through two or three noisy values, and the
#: anchored CTR of a whole list rests on that guess.
MIN_ANCHOR_POSITIONS = 4

#: The propensity methods whose examination is a model's (biased when the logger ranked on
#: relevance the features do not show): a difference anchored on them gets no interval.
MODEL_PROPENSITIES = ("em", "estimated")


def _examination_method(method: str, options: dict[str, str]) -> str:
    """The propensity method the click model's examination takes: ``randomized`` when the log
    marks randomized sessions and the run's ``method`` is a model's (:data:`MODEL_PROPENSITIES`),
    else the run's."""
    return "randomized" if method in MODEL_PROPENSITIES and "randomized_column" in options else method


def randomized_curve(
    clicks: NDArray[np.float64], positions: NDArray[np.integer], randomized: NDArray[np.bool_], n: int, *,
    weights: NDArray[np.float64] | None = None, floor: float = 0.01,
) -> tuple[NDArray[np.float64], int]:
    """Examination of 0-based positions ``0..n-1`` relative to the top from the rows of the
    sessions shown in random order (``randomized``), and the first position it could not
    identify (``n``: none). Each position's click-through rate there (where position and
    attractiveness are independent, it is proportional to the position's examination), made
    non-increasing by isotonic regression weighted by the position's rows, divided by the top's,
    clipped at ``floor``; from the first position below the top with fewer than
    :data:`ltr.metrics.clicks.propensity.MIN_POSITION_CLICKS` clicks on, a power law through the ones
    above (:func:`_power_law_tail`). ``weights``: per row (a bootstrap's resample counts).

    >>> curve, first = randomized_curve(np.array([1.0, 1, 0, 1, 1, 0] * 5), np.array([0, 0, 1, 1, 2, 2] * 5), np.ones(30, bool), 4)
    >>> curve.round(4).tolist(), first
    ([1.0, 0.5, 0.5, 0.4046], 3)
    """
    pos = np.asarray(positions, dtype=np.int64)
    w = np.ones(pos.shape[0]) if weights is None else np.asarray(weights, dtype=np.float64)
    keep = np.asarray(randomized, dtype=bool) & (pos < n) & (w > 0)
    shown = np.bincount(pos[keep], weights=w[keep], minlength=n)[:n]
    clicked = np.bincount(pos[keep], weights=(w * clicks)[keep], minlength=n)[:n]
    if not clicked[0] > 0:
        raise ValueError("the randomized sessions hold no click at position 1")
    low = np.flatnonzero(clicked[1:] < MIN_POSITION_CLICKS)
    first = int(low[0]) + 1 if low.size else n
    fitted = isotonic_regression(clicked[:first] / shown[:first], weights=shown[:first], increasing=False).x
    head = np.clip(np.asarray(fitted, dtype=np.float64) / fitted[0], floor, 1.0)
    if first == n:
        return head, n
    tail = _power_law_tail(head, n, floor) if first > 1 else np.full(n - 1, head[0])
    return np.concatenate([head, tail]), first


def fit_click_model(
    data_cfg: ParquetDataConfig, click_cfg: ClickEvalConfig, train: RankingData, data: RankingData, *, seed: int,
    split: str = "test", n_bootstrap: int = DEFAULT_REFITS, progress: Progress | None = None,
) -> tuple[ClickModel, str]:
    """The position-based click model of a user's click log, and one line saying what it rests on.

    Examination: the propensities the run used (``eval.clicks.propensity`` on the training
    split's clicks, without its bootstrap), clipped at ``eval.clicks.min_propensity``; when the
    run used a model's (``em``, ``estimated``) and the log marks its randomized sessions
    (``data.randomized_column``), their curve instead (:func:`randomized_curve`), unless they
    identify fewer than :data:`MIN_ANCHOR_POSITIONS` positions.
    Attractiveness of every row of ``data``: a logistic function of its features, quadratic in
    the strongest, plus an effect of its query (:func:`ltr.compare.abtest.fit_attractiveness`), fitted by EM to the clicks of
    the training split and of ``data`` (the training split alone when ``split`` is ``train``)
    given each row's examination at its logged position. Its ``refits``: the same two fits on
    ``n_bootstrap`` resamples of the queries (of the training split and of ``data``, each with
    replacement, seeded by ``seed``), whose spread is reported. ``progress(done, n_bootstrap)``
    after every refit. Positions the
    propensity method could not identify (too few clicks there) take a power law through the
    identified ones (:func:`_power_law_tail`), and the line says so.

    Its ``anchor`` (:class:`ltr.compare.abtest.LogAnchor`): ``data``'s logged clicks and
    positions, the examination, and an attractiveness cross-fitted over two seeded halves of
    ``data``'s queries (each half's from the fit without its clicks, no query effect), on which
    :func:`ltr.compare.abtest.simulate_abtest` anchors the CTR rows; withheld, with one line
    why, when the examination is a model's (no randomized session marked), when the randomized
    sessions identify fewer than :data:`MIN_ANCHOR_POSITIONS` positions, or when the log has
    far fewer sessions of two or more clicks than position-based users make
    (:func:`ltr.online.propensity_check.cascade_reason`, ``ltr ope``'s check).
    """
    if not is_click_log(data_cfg) or train.positions is None or data.positions is None:
        raise LtrUserError("a click log needs data.click_column and data.position_column")  # pragma: no cover - checked at train
    if n_bootstrap < 0:
        raise LtrUserError(f"--refits={n_bootstrap} must be an integer >= 0")
    column = str(data_cfg.click_column)
    options = click_options(data_cfg)
    method = _examination_method(str(click_cfg.propensity), options)
    n = int(max(int(train.positions.max(initial=0)), int(data.positions.max(initial=0)))) + 1
    floor = float(click_cfg.min_propensity)

    def examination(picks: NDArray[np.int64] | None) -> tuple[NDArray[np.float64], int]:
        """The examination of the training split (``picks``: of a resample of its queries)."""
        if method == "randomized":  # non-increasing, every position (:func:`randomized_curve`)
            weights = None if picks is None else np.repeat(np.bincount(picks, minlength=train.n_queries), train.group_sizes).astype(np.float64)
            return randomized_curve(train_clicks, positions_train, flags, n, weights=weights, floor=floor)
        return _examination(method, click_cfg, train if picks is None else train.take_queries(picks), column, options, n, seed, "train")

    train_clicks = np.asarray(clicks_of(train, column, split="train"), dtype=np.float64)
    positions_train = np.asarray(train.positions, dtype=np.int64)
    flags = randomized_flags(train, options["randomized_column"]) > 0 if method == "randomized" else np.zeros(0, dtype=bool)
    try:
        exam, unknown = examination(None)
        too_few = ""
        if method == "randomized" and unknown < min(MIN_ANCHOR_POSITIONS, n):
            too_few = (
                f"the randomized sessions identify the examination of position{'s 1-' if unknown > 1 else ' '}{unknown} "
                f"only (too few clicks at position {unknown + 1}), too little to anchor the whole list's CTR on; more "
                "randomized sessions would give an interval"
            )
            if method != str(click_cfg.propensity):  # the model's examination: the run's own curve instead
                method = str(click_cfg.propensity)
                exam, unknown = examination(None)
    except ValueError as exc:
        raise LtrUserError(f"cannot fit the click model of the log (eval.clicks.propensity={method}): {exc}") from None
    parts = [train] if split == "train" else [train, data]
    clicks = np.concatenate([clicks_of(part, column, split=name) for part, name in zip(parts, ("train", split), strict=False)])
    positions = np.concatenate([np.asarray(part.positions, dtype=np.int64) for part in parts])
    features = np.concatenate([part.features for part in parts])
    offsets = np.concatenate([[0], np.cumsum(np.concatenate([part.group_sizes for part in parts]))]).astype(np.int64)
    # the rows of ``data`` and the indices of its queries among the fitted ones
    data_queries = np.arange(parts[-1].n_queries) + (offsets.shape[0] - 1 - parts[-1].n_queries)
    data_rows = np.repeat(data_queries, parts[-1].group_sizes)
    data_start = int(offsets[data_queries[0]]) if data_queries.size else int(offsets[-1])
    point = fit_attractiveness(clicks, exam[positions], features, offsets)
    refits: list[ClickModel] = []
    rng = np.random.default_rng([seed, 0xAB7F])
    for done in range(1, n_bootstrap + 1):
        picks = [rng.integers(0, part.n_queries, part.n_queries) for part in parts]
        weights = np.concatenate(
            [np.repeat(np.bincount(pick, minlength=part.n_queries), part.group_sizes) for pick, part in zip(picks, parts, strict=True)]
        ).astype(np.float64)
        try:
            refit_exam = examination(picks[0])[0]
        except ValueError:  # a resample the method cannot serve (e.g. no intervention): the log's own curve
            refit_exam = exam
        model = fit_attractiveness(clicks, refit_exam[positions], features, offsets, weights=weights, like=point)
        attract = model.predict(data.features, model.query_effect[data_rows])
        refits.append(ClickModel(0.0, 0.0, 1.0, examination=refit_exam, attract=attract))
        if progress is not None:
            progress(done, n_bootstrap)
    # the anchor: each half of data's queries gets the attractiveness of the fit without its clicks
    half = np.random.default_rng([seed, 0xA5C]).random(data.n_queries) < 0.5
    cross = np.empty(data.n_rows)
    for fold in (False, True):
        held = np.repeat(half == fold, data.group_sizes)
        if not held.any():
            continue
        weights = np.ones(clicks.shape[0])
        weights[data_start + np.flatnonzero(held)] = 0.0
        model = fit_attractiveness(clicks, exam[positions], features, offsets, weights=weights, like=point)
        cross[held] = model.predict(data.features[held])
    sources = "train split" if split == "train" else f"train and {split} splits"
    chosen = (
        f"eval.clicks.propensity={method}" if method == str(click_cfg.propensity)
        else f"the randomized sessions (data.randomized_column={options['randomized_column']}; the run used {click_cfg.propensity})"
    )  # fmt: skip
    guess = (
        (f"examination is not identified from position {unknown + 1} on (too few clicks): "
         + (f"a power law through positions 1-{unknown} is extended there" if unknown > 1 else "position 1's is used there")
         + f" ({exam[unknown]:.3f} at position {unknown + 1}), a guess")
        if 0 < unknown < n else ""
    )  # fmt: skip
    cascade = cascade_reason(clicks, positions, offsets)  # ltr ope's multi-click check
    withheld = f"{cascade}; the fitted click model is position-based too" if cascade else ""
    withheld = withheld or too_few
    if not withheld and method in MODEL_PROPENSITIES:
        withheld = (
            f"its examination is eval.clicks.propensity={method}'s, a model's, biased when the logger ranked on relevance "
            "the features do not show; mark the sessions shown in random order (data.randomized_column, or ltr abtest "
            "--randomized-column COL) for an interval anchored on the log"
        )
    source = f"the examination of {chosen}" + (f" ({guess})" if guess else "")
    curves = None
    if method != "config" and not withheld:  # an estimated curve: its error enters the interval
        crng = np.random.default_rng([seed, 0xC0C])
        tables = []
        for _ in range(ANCHOR_CURVES):
            pick = crng.integers(0, train.n_queries, train.n_queries)
            try:
                tables.append(examination(pick)[0])
            except ValueError:  # a resample the method cannot serve: the log's own curve
                tables.append(exam)
        curves = np.stack(tables)
    marks = behaviour(data, options.get("randomized_column"))
    groups = None if marks is None or data.n_queries == 0 else np.add.reduceat(marks > 0, data.offsets[:-1]) > 0
    anchor = LogAnchor(
        clicks[data_start:], np.asarray(data.positions, dtype=np.int64), exam, cross, source=source, withheld=withheld,
        seed=seed, curves=curves, groups=groups,
    )  # fmt: skip
    note = (
        f"the click model is fitted to the log, not known: examination of {n} positions by "
        f"{chosen} (position 2: {exam[1] if n > 1 else 1.0:.3f}), attractiveness a logistic "
        f"function of the features fitted to the clicks of the {sources} ({clicks.shape[0]:,} rows); "
        + ("the CTR rows have no interval (the verdict says why)" if withheld else
           f"the CTR rows are anchored on the {data.n_queries:,} {split} queries' logged clicks")
        + (f"; {n_bootstrap} refits on resampled queries give the model's own spread" if n_bootstrap else "")
        + "; no purchases simulated"
        + (f"; {guess}" if guess else "")
    )  # fmt: skip
    attract = point.predict(data.features, point.query_effect[data_rows])
    return ClickModel(0.0, 0.0, 1.0, examination=exam, attract=attract, refits=tuple(refits), anchor=anchor), note


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
    refits: int = DEFAULT_REFITS,
    progress: Progress | None = None,
    randomized_column: str | None = None,
) -> LoadedAbTest:
    """Resolve two runs as ``ltr compare`` does, re-make their rankings and simulate the test.

    Runs on a user's click log: the click model is fitted to A's log (:func:`fit_click_model`)
    with ``refits`` bootstrap refits (the spread of the model's own difference), and the CTR rows
    are anchored on the log's clicks, or given without an interval when the log cannot anchor
    them (:func:`ltr.compare.abtest.anchored_ctr`); ``progress(done, total)`` after every refit;
    ``randomized_column``: the log's column of the sessions shown in random order (overrides
    ``data.randomized_column``; only for runs on a user's log).

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
    if refits < 0:
        raise LtrUserError(f"--refits={refits} must be an integer >= 0")
    if n_sessions_of(sessions_per_day, traffic_share, days) < 2:
        raise LtrUserError("the experiment holds fewer than 2 sessions: raise --sessions-per-day, --traffic-share or --days")
    store = RunStore(find_tracking_uri(tracking_uri), reap=False)  # it reads runs (--log: adds its own), and reaps none
    runs = [store.resolve(ref, experiment=experiment) for ref in (ref_a, ref_b)]
    if runs[0].run_id == runs[1].run_id:
        raise LtrUserError(f"A and B are the same run ({runs[0].run_id}); an A/B test needs two runs")
    labels = run_labels(runs)
    if randomized_column is not None and not randomized_column.strip():
        raise LtrUserError("--randomized-column needs a column name")
    a = run_ranking(store, runs[0], labels[0], split=split, refits=refits, progress=progress, randomized_column=randomized_column)
    b = run_ranking(store, runs[1], labels[1], split=split, fit=False)  # the simulation is under A's log's model
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
    ``interleaving/sessions_for_power`` (a fitted click model: ``abtest/ctr_diff_fit_sd`` and
    ``abtest/ctr_diff_simulation_se`` too); every number in ``comparison/comparison.json``."""
    r = loaded.result
    values = {
        "abtest/ctr_a": r.ctr.a.value, "abtest/ctr_b": r.ctr.b.value, "abtest/ctr_diff": r.ctr.diff,
        "abtest/ctr_diff_low": r.ctr.low, "abtest/ctr_diff_high": r.ctr.high, "abtest/p_value": r.ctr.p_value,
        "abtest/sessions_for_power": r.ctr.sessions_needed, "abtest/days_for_power": r.ctr.days_needed,
        "abtest/expected_ctr_a": r.expected_ctr_a, "abtest/expected_ctr_b": r.expected_ctr_b,
        "interleaving/win_rate": r.interleaving.win_rate, "interleaving/p_value": r.interleaving.p_value,
        "interleaving/sessions_for_power": r.interleaving.sessions_needed,
    }  # fmt: skip
    if r.fit is not None:  # a fitted click model: the refits' spread, in the interval above
        values |= {"abtest/ctr_diff_fit_sd": r.fit.sd, "abtest/ctr_diff_simulation_se": r.fit.simulation_se}
    name = f"abtest {loaded.split}: {loaded.b.label} vs {loaded.a.label}"
    return loaded.store.log_comparison(
        experiment=experiment, run_name=name[:250], runs=[loaded.a.run, loaded.b.run], baseline=loaded.a.run,
        split=loaded.split, metrics=["ctr"], markdown=markdown, data=r.to_dict(),
        params={"sessions_per_day": r.sessions_per_day, "traffic_share": r.traffic_share, "days": r.days, "seed": r.seed},
        kind="abtest", values={k: v for k, v in values.items() if np.isfinite(v)},
        figures={"figures/power.png": figure} if figure is not None else None,
    )  # fmt: skip

"""Measurement: how often ltr's 95 % intervals hold the exact truth, on click logs of other simulators.

For every scenario (a user model and a log shape of :mod:`ltr.online.click_simulators`) and
seed, a log is simulated and each before-traffic estimator is called as ``ltr``'s commands call
it; its interval is checked against the exact truth of the simulator:

- ``propensity em`` / ``propensity ctr`` / ``propensity randomized`` / ``propensity em
  (randomized marked)``: :func:`ltr.metrics.clicks.propensity.estimate_propensity` (``method="em"``
  with the features, ``"ctr"``, ``"randomized"``; 50 resamples as
  ``eval.clicks.propensity_bootstrap``, then the check of
  :func:`ltr.online.propensity_check.check_position_based`, as every command) on the whole log;
  ``randomized`` and ``em (randomized marked)`` are given the sessions the simulator shuffled (every session of a uniformly random
  logger) as ``data.randomized_column`` marks them. Every position 2..10 the log shows is one
  check against the true PBM curve ``(1/rank)^eta``. For the cascade and DBN users there is no
  such curve: the truth is then the mean exact examination probability of the rows logged
  there, relative to position 1 (the quantity a position-based estimate would hope to find),
  and the row is marked ``(not PBM)``. A position estimated NaN ("not identified") counts as a
  refusal; a value printed with no interval as ``no interval`` (the estimator cannot be checked
  on such a log: ``em`` unmarked, ``ctr``; or EM lies outside the randomized sessions' interval
  there) or ``withheld`` (the log looks like cascade or DBN users), never as a miss.
- ``ope <estimator> <metric>``: :func:`ltr.online.ope.off_policy_estimates` (as ``ltr ope``:
  k = 10, 1,000 resamples, no clipping) of candidate A (``grade + N(0, 1)``) with the true PBM
  curve (cascade and DBN: the logged examination curve above for the position-based estimators,
  and for the cascade estimators the examination of a user who clicked nothing above,
  ``gamma ** r`` or 1, the curve of their model: one call each); the truth is the exact CTR@10,
  clicks@10 and purchase rate of A under the true user model
  (:func:`ltr.online.click_simulators.exact_metrics`). Every estimator the result holds is
  checked (new ones included); a metric without a known truth is skipped.
- ``ope paired <estimator> <metric>``: B - A (B: ``grade + N(0, 2)``), when ``ltr.online.ope``
  has a paired estimate (:func:`paired_ope`, tolerant of its name and result); else ``n/a``.
- ``abtest fitted ctr diff``: ``ltr abtest``'s path on a user's click log: the click model
  fitted to the log (:func:`ltr.models.abtest_run.fit_click_model`, ``eval.clicks.propensity=em``,
  training split = 70 % of the queries, the test split the rest, the shuffled sessions marked as
  ``data.randomized_column`` marks them), then :func:`ltr.compare.abtest.simulate_abtest` of A
  against B on the test queries (100,000 sessions a day x 5 % x 14 days), whose CTR difference is
  anchored on the test queries' logged clicks; the truth is the exact whole-list CTR of B minus A
  on the test queries under the true user model. A difference printed with no interval counts as
  ``no interval`` (too few randomized clicks) or ``withheld`` (cascade-like clicks), never as a
  miss. ``--refits`` (default 0) refits the click model, which only reports its spread.
- ``calibrate slope`` (scenario ``calibration``): 12 simulated past A/B tests (pairs of rankings
  of a PBM log, offline delta = nDCG@10 on the true grades, online delta = a simulated test's CTR
  difference on 20,000 sessions an arm); :func:`ltr.online.calibrate.calibrate_frame`'s slope
  interval against the least-squares slope of the *exact* online deltas on the offline deltas
  (what the fitted slope estimates over these experiments).

``dm`` (the direct method), ``rips`` and ``cascade_dr`` (its prefix ratios) are a click model's
guess that ``ltr ope`` prints with no interval (NaN bounds): their rows say ``no interval`` and
give the mean error, not a coverage. An interval ``ltr ope`` withholds because it detected that
the log breaks the estimator's assumption (``ips``, ``snips``, ``dr`` on cascade-like clicks:
the estimate's ``reason``) counts as ``withheld``, not a miss: the cell says ``withheld`` when
every log's was, else the coverage of the others and ``(n withheld)``.

Not measured: the interleaving win rate and the sessions needed (ltr prints them without an interval).

Usage::

    .venv/bin/python benchmarks/bench_coverage.py --seeds 100          # the table of the manual
    .venv/bin/python benchmarks/bench_coverage.py --quick              # 10 seeds, a look
    .venv/bin/python benchmarks/bench_coverage.py --scenario cascade --seeds 30 --workers 2
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one thread per worker: the workers are the parallelism

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import inspect  # noqa: E402
import math  # noqa: E402
import re  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable, Iterable  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from typing import Any, cast  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from numpy.typing import NDArray  # noqa: E402

from ltr.online.click_simulators import (  # noqa: E402
    LogSpec,
    SimulatedLog,
    UserModel,
    candidate_scores,
    exact_metrics,
    simulate_log,
)

K = 10
LEVEL = 0.95
#: A value printed with no interval (``dm``, a model's guess): reported as such, not a coverage failure.
NO_INTERVAL_NOTE = "no interval (a model's guess)"
#: An interval ltr withholds because it detected that the log breaks the estimator's assumption
#: (``ltr ope`` on cascade-like clicks): reported as such, not a coverage failure.
WITHHELD_NOTE = "withheld (the log breaks its assumption)"
#: ``ltr abtest``'s refits of the fitted click model (its --refits), and the seeds it runs on:
#: each refit is an EM fit, the slowest check by far (set by --refits and --abtest-seeds)
OPTIONS = {"refits": 0, "abtest_seeds": 20, "randomized": 1}
PROPENSITY_POSITIONS = 10  # positions 2..10 are checked


@dataclass(frozen=True)
class Scenario:
    """A user model and a log shape; ``checks``: which estimators run on it."""

    name: str
    spec: LogSpec
    about: str
    checks: tuple[str, ...] = ("em", "em-randomized", "ctr", "randomized", "ope", "paired")


def _spec(n_queries: int = 1000, lengths: tuple[int, int] = (4, 20), **kwargs: Any) -> LogSpec:
    model = kwargs.pop("model", UserModel())
    return LogSpec(n_queries=n_queries, list_lengths=lengths, model=model, **kwargs)


WITH_ABTEST = ("em", "em-randomized", "ctr", "randomized", "ope", "paired", "abtest")
SCENARIOS: tuple[Scenario, ...] = (
    Scenario("pbm-random", _spec(logger_noise=None), "PBM eta 1, uniformly random logger"),
    Scenario("pbm-eta0.5", _spec(model=UserModel(eta=0.5), shuffled_share=0.3), "PBM eta 0.5, noisy relevance logger, 30 % shuffled"),
    Scenario("pbm-eta1", _spec(shuffled_share=0.3), "PBM eta 1, noisy relevance logger, 30 % shuffled", WITH_ABTEST),
    Scenario("pbm-eta1.5", _spec(model=UserModel(eta=1.5), shuffled_share=0.3), "PBM eta 1.5, noisy relevance logger, 30 % shuffled"),
    Scenario("pbm-sorted", _spec(logger_noise=0.3, shuffled_share=0.0), "PBM eta 1, relevance-sorted logger (noise 0.3), no shuffled sessions"),
    Scenario("pbm-nan", _spec(shuffled_share=0.3, nan_share=0.03), "PBM eta 1, noisy logger, 30 % shuffled, 3 % NaN feature cells", WITH_ABTEST),
    Scenario("cascade", _spec(model=UserModel(kind="cascade", continuation=0.2), shuffled_share=0.3), "cascade clicks (go on after a click: 0.2), noisy logger, 30 % shuffled", WITH_ABTEST),
    Scenario("cascade-1click", _spec(model=UserModel(kind="cascade", continuation=0.0), shuffled_share=0.3), "classic cascade (a click ends the session), noisy logger, 30 % shuffled"),
    Scenario("dbn", _spec(model=UserModel(kind="dbn", gamma=0.9), shuffled_share=0.3), "DBN (gamma 0.9, satisfaction 0.1-0.8), noisy logger, 30 % shuffled"),
    Scenario("short-lists", _spec(lengths=(1, 5), shuffled_share=0.3), "PBM eta 1, lists of 1-5, 30 % shuffled"),
    Scenario("long-lists", _spec(n_queries=300, lengths=(50, 300), shuffled_share=0.3), "PBM eta 1, 300 queries, lists of 50-300, 30 % shuffled"),
    Scenario("small-log", _spec(n_queries=300, shuffled_share=0.3), "PBM eta 1, 300 queries, 30 % shuffled", WITH_ABTEST),
    Scenario("calibration", _spec(n_queries=1000), "12 past A/B tests of a PBM log (eta 1)", ("calibrate",)),
)


@dataclass
class Check:
    """One interval against its truth (``covered`` None: refused, ``note`` says why)."""

    scenario: str
    quantity: str
    covered: bool | None
    width: float = math.nan
    error: float = math.nan
    note: str = ""
    whole: bool = False  # the interval is the whole range the truth can take: it says nothing
    warned: bool = False  # the result said in a note that the log breaks this estimator's assumption


@dataclass
class Tally:
    checks: int = 0
    covered: int = 0
    refused: int = 0
    whole: int = 0
    warned: int = 0
    widths: list[float] = field(default_factory=list)
    errors: list[float] = field(default_factory=list)
    notes: dict[str, int] = field(default_factory=dict)


def _interval_check(
    scenario: str, quantity: str, value: float, low: float, high: float, truth: float, *, top: float | None = None,
    reason: str = "",
) -> Check:
    """``top``: the largest value the truth can take (a rate: 1), when it has a range ``[0, top]``;
    ``reason``: why ltr gives no interval (a withheld one names a broken assumption)."""
    if math.isfinite(value) and math.isnan(low) and math.isnan(high):  # ltr gives a model's guess no interval
        note = WITHHELD_NOTE if _withheld(reason) else NO_INTERVAL_NOTE
        return Check(scenario, quantity, None, note=note, error=value - truth)
    if not (math.isfinite(low) and math.isfinite(high) and math.isfinite(value)):
        return Check(scenario, quantity, None, note="no finite interval")
    whole = top is not None and low <= 0.0 and high >= top
    return Check(scenario, quantity, bool(low <= truth <= high), high - low, value - truth, whole=whole)


def _withheld(reason: str) -> bool:
    """Whether ``reason`` (an estimate's) is ``ltr ope``'s interval withheld on a broken assumption."""
    import ltr.online.ope as ope

    return bool(reason) and reason == getattr(ope, "NOT_POSITION_BASED_REASON", None)


def _top(metric: str) -> float | None:
    """The range's top of a metric: ``clicks_at_<k>`` k, a rate 1; None: no range (a difference)."""
    if metric.startswith("clicks_at_"):
        return float(metric.removeprefix("clicks_at_"))
    return 1.0 if metric in ("ctr", "purchase_rate") else None


def _refused(scenario: str, quantity: str, exc: BaseException) -> Check:
    return Check(scenario, quantity, None, note=f"{type(exc).__name__}: {str(exc).splitlines()[0][:140] if str(exc) else ''}")


# -- propensities --------------------------------------------------------------------------------


def randomized_mark(log: SimulatedLog) -> NDArray[np.int64]:
    """The ``data.randomized_column`` of the log, one 0 / 1 per row: 1 on the sessions shown in a
    uniformly random order (the shuffled ones; every session of a uniformly random logger)."""
    shown_at_random = log.shuffled | (log.spec.logger_noise is None)
    return np.repeat(shown_at_random, np.diff(log.offsets)).astype(np.int64)


def _no_interval_note(est: Any) -> str:
    """Why a propensity printed with no interval has none: withheld (cascade-like clicks) or no
    interval (the estimator cannot be checked there)."""
    fit = est.fit or {}
    if fit.get("cascade_like"):
        return WITHHELD_NOTE
    if est.method == "em" and fit.get("checked"):
        return f"{NO_INTERVAL_NOTE}: EM outside the randomized interval, or too few randomized clicks"
    return f"{NO_INTERVAL_NOTE}: cannot be checked on this log"


def propensity_checks(sc: Scenario, log: SimulatedLog, method: str, seed: int, *, marked: bool = False) -> list[Check]:
    """``estimate_propensity`` as training calls it (every logged position, 50 resamples);
    ``marked``: with the randomized sessions marked (always for ``randomized``)."""
    from ltr.metrics.clicks.propensity import estimate_propensity
    from ltr.online.propensity_check import check_position_based

    n = int(log.positions.max()) + 1
    name = f"propensity {method}" + (" (randomized marked)" if marked and method != "randomized" else "")
    quantity = name + ("" if log.model.kind == "pbm" else " (not PBM)")
    extra: dict[str, Any] = {"features": log.features} if method == "em" else {}
    if method == "randomized" or marked:  # the sessions shown in random order, as data.randomized_column marks them
        extra["randomized"] = randomized_mark(log)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = estimate_propensity(
                log.clicks, log.positions, log.offsets, method=method, n_positions=n, n_bootstrap=50,
                confidence=LEVEL, seed=seed, **extra,
            )  # fmt: skip
        est = check_position_based(est, log.clicks, log.positions, log.offsets)  # as every command does
    except Exception as exc:  # a refusal (ValueError / LtrUserError / DataError): one line
        return [_refused(sc.name, quantity, exc)]
    truth = log.true_propensities(n)
    if truth is None:
        truth = log.logged_examination(n)
    out = []
    for p in range(1, min(n, PROPENSITY_POSITIONS)):
        value, low, high = float(est.propensities[p]), float(est.low[p]), float(est.high[p])
        if not math.isfinite(value):
            out.append(Check(sc.name, quantity, None, note="position not identified"))
        elif not math.isfinite(float(truth[p])):
            continue
        elif math.isnan(low) and math.isnan(high):  # printed with no interval: not a miss
            out.append(Check(sc.name, quantity, None, note=_no_interval_note(est), error=value - float(truth[p])))
        else:
            out.append(_interval_check(sc.name, quantity, value, low, high, float(truth[p]), top=1.0))
    return out


def propensity_curve(log: SimulatedLog, *, cascade: bool = False) -> NDArray[np.float64]:
    """The examination curve ``ltr ope`` is given, at least ``K`` positions long: the true PBM
    curve; for cascade and DBN users the logged examination curve (position-based estimators)
    or, ``cascade``, the examination of a user who clicked nothing above (the cascade
    estimators' model: ``gamma ** r``, 1 for the cascade)."""
    n = max(int(log.positions.max()) + 1, K)
    if log.model.kind != "pbm" and cascade:
        return np.clip(log.model.unclicked_examination(n), 1e-3, 1.0)
    curve = log.true_propensities(n)
    if curve is None:
        curve = log.logged_examination(n)
        last = np.maximum.accumulate(np.where(np.isfinite(curve), np.arange(n), 0))
        curve = np.clip(curve[last], 1e-3, 1.0)
    return np.asarray(curve, dtype=np.float64)


def _is_cascade_estimator(estimator: str) -> bool:
    import ltr.online.ope as ope

    return estimator in tuple(getattr(ope, "CASCADE_ESTIMATORS", ()))


# -- off-policy estimates ------------------------------------------------------------------------


def _truth_of(metric: str, truths: dict[str, float]) -> float | None:
    return truths.get(metric)


def _estimates_of(result: Any) -> Iterable[tuple[tuple[str, str], Any]]:
    """``((estimator, metric), estimate)`` of an OPE result (its ``estimates`` mapping)."""
    estimates = getattr(result, "estimates", result)
    if isinstance(estimates, dict):
        yield from estimates.items()


def ope_checks(sc: Scenario, log: SimulatedLog, seed: int) -> list[Check]:
    from ltr.online.ope import off_policy_estimates

    scores = candidate_scores(log, noise=1.0, seed=seed, salt=1)
    exact = log.exact(scores, k=K)
    truths = {name: float(v.mean()) for name, v in exact.items()}
    tag = "" if log.model.kind == "pbm" else " (not PBM)"
    outcomes = {"click": log.clicks, "purchase": log.purchases}
    out = []
    # each estimator gets the curve its click model means (they differ for cascade and DBN users)
    for cascade in (False, True) if log.model.kind != "pbm" else (False,):
        try:
            result = off_policy_estimates(
                outcomes, log.positions, scores, log.offsets, propensities=propensity_curve(log, cascade=cascade), k=K,
                clip=None, n_bootstrap=1000, seed=seed, level=LEVEL, **_every_estimator(off_policy_estimates),
            )  # fmt: skip
        except Exception as exc:
            return [_refused(sc.name, "ope" + tag, exc)]
        out.extend(_ope_result_checks(sc, result, truths, tag, cascade=cascade if log.model.kind != "pbm" else None))
    return out


def _ope_result_checks(sc: Scenario, result: Any, truths: dict[str, float], tag: str, *, cascade: bool | None) -> list[Check]:
    """The checks of one OPE result (``cascade``: only the cascade estimators, or only the
    others; None: every estimator)."""
    out = []
    warned = _assumption_notes(result)
    for (estimator, metric), e in _estimates_of(result):
        truth = _truth_of(metric, truths)
        if truth is None or estimator == "logged":
            continue
        if cascade is not None and _is_cascade_estimator(estimator) != cascade:
            continue
        out.append(
            _interval_check(sc.name, f"ope {estimator} {metric}{tag}", float(e.value), float(e.low), float(e.high), truth, top=_top(metric),
                            reason=str(getattr(e, "reason", "")))
        )
        out[-1].warned = any(re.search(rf"\b{re.escape(estimator)}\b", note.split("; compare")[0]) for note in warned)
    return out


def _every_estimator(fn: Callable[..., Any]) -> dict[str, Any]:
    """``estimators=`` every estimator ``ltr.online.ope`` has (``ALL_ESTIMATORS``), when ``fn`` takes it."""
    import ltr.online.ope as ope

    every = getattr(ope, "ALL_ESTIMATORS", None)
    return {"estimators": tuple(every)} if every and "estimators" in inspect.signature(fn).parameters else {}


def _assumption_notes(result: Any) -> list[str]:
    """The result's one-line notes of a broken assumption (not those of an estimate projected
    onto its range)."""
    notes = getattr(result, "notes", None) or []
    return [str(n) for n in notes if "outside the metric's range" not in str(n)]


def _paired_function() -> Callable[..., Any] | None:
    """A paired estimate of B - A in :mod:`ltr.online.ope`, if the library has one (by name)."""
    import ltr.online.ope as ope

    for name in ("paired_off_policy_estimates", "off_policy_difference", "paired_estimates", "off_policy_paired", "paired_ope"):
        fn = getattr(ope, name, None)
        if callable(fn):
            return fn  # type: ignore[no-any-return]
    return None


def paired_ope(
    log: SimulatedLog, scores_a: NDArray[np.float64], scores_b: NDArray[np.float64], seed: int, *, cascade: bool = False
) -> Iterable[tuple[tuple[str, str], Any]] | None:
    """``((estimator, metric), estimate of B - A)`` from the library's paired estimate, or None
    when it has none. Tolerant: the scores are passed by the names the function takes
    (``scores_a``/``scores_b``, ``scores``/``scores_b``, ...), the differences read from the
    result's ``difference`` / ``differences`` / ``estimates`` mapping."""
    fn = _paired_function()
    outcomes = {"click": log.clicks, "purchase": log.purchases}
    common: dict[str, Any] = {"propensities": propensity_curve(log, cascade=cascade), "k": K, "n_bootstrap": 1000, "seed": seed}
    if fn is None:
        from ltr.online.ope import off_policy_estimates as typed_estimates

        off_policy_estimates = cast(Any, typed_estimates)  # keywords of a newer library
        params = inspect.signature(typed_estimates).parameters
        other = next((p for p in ("scores_b", "baseline_scores", "other_scores", "scores_a") if p in params), None)
        if other is None:
            return None
        if other == "scores_a":
            result = off_policy_estimates(outcomes, log.positions, scores_b, log.offsets, scores_a=scores_a, **common)
        elif other == "scores_b":
            result = off_policy_estimates(outcomes, log.positions, scores_a, log.offsets, scores_b=scores_b, **common)
        else:
            result = off_policy_estimates(outcomes, log.positions, scores_b, log.offsets, **{other: scores_a}, **common)
    else:
        values = {"outcomes": outcomes, "log_positions": log.positions, "positions": log.positions, "offsets": log.offsets, **common}
        params = inspect.signature(fn).parameters
        names = [p for p in params if "score" in p]
        if len(names) < 2:
            raise TypeError(f"{fn.__name__} takes no two score arrays: {list(params)}")
        values.update({names[0]: scores_a, names[1]: scores_b, **_every_estimator(fn)})
        result = fn(**{p: values[p] for p in params if p in values})
    for attr in ("difference", "differences"):
        found = getattr(result, attr, None) if not isinstance(result, dict) else result.get(attr)
        if isinstance(found, dict):
            flat: list[tuple[tuple[str, str], Any]] = []
            for key, value in found.items():
                if isinstance(key, tuple):
                    flat.append((key, value))
                elif isinstance(value, dict):  # {"ips": {"ctr": {...}}}
                    flat.extend(((str(key), str(m)), v) for m, v in value.items())
            return flat
    return list(_estimates_of(result))


def _value(e: Any, name: str) -> float:
    return float(e[name] if isinstance(e, dict) else getattr(e, name))


def paired_checks(sc: Scenario, log: SimulatedLog, seed: int) -> list[Check]:
    scores_a = candidate_scores(log, noise=1.0, seed=seed, salt=1)
    scores_b = candidate_scores(log, noise=2.0, seed=seed, salt=2)
    ea, eb = log.exact(scores_a, k=K), log.exact(scores_b, k=K)
    truths = {name: float(eb[name].mean() - ea[name].mean()) for name in ea}
    tag = "" if log.model.kind == "pbm" else " (not PBM)"
    out = []
    for cascade in (False, True) if log.model.kind != "pbm" else (False,):
        try:
            found = paired_ope(log, scores_a, scores_b, seed, cascade=cascade)
        except Exception as exc:
            return [_refused(sc.name, "ope paired" + tag, exc)]
        if found is None:
            return [Check(sc.name, "ope paired B - A", None, note="n/a: ltr.online.ope has no paired estimate")]
        out.extend(_paired_result_checks(sc, found, truths, tag, cascade=cascade if log.model.kind != "pbm" else None))
    return out


def _paired_result_checks(
    sc: Scenario, found: Iterable[tuple[tuple[str, str], Any]], truths: dict[str, float], tag: str, *, cascade: bool | None
) -> list[Check]:
    out = []
    for (estimator, metric), e in found:
        truth = truths.get(metric)
        if truth is None or estimator == "logged":
            continue
        if cascade is not None and _is_cascade_estimator(estimator) != cascade:
            continue
        out.append(_interval_check(sc.name, f"ope paired {estimator} {metric}{tag}", _value(e, "value"), _value(e, "low"), _value(e, "high"), truth,
                                   reason=str(getattr(e, "reason", ""))))
    return out


# -- ltr abtest on a fitted click model ------------------------------------------------------------


def abtest_checks(sc: Scenario, log: SimulatedLog, seed: int) -> list[Check]:
    from ltr.compare.abtest import simulate_abtest
    from ltr.config.choices import Propensity
    from ltr.config.groups.data import ParquetDataConfig
    from ltr.config.schema import ClickEvalConfig
    from ltr.models.abtest_run import fit_click_model

    quantity = "abtest fitted ctr diff" + ("" if log.model.kind == "pbm" else " (not PBM)")
    rng = np.random.default_rng([seed, 0xAB])
    test = rng.random(log.n_queries) < 0.3
    train_q, test_q = np.flatnonzero(~test), np.flatnonzero(test)
    train, data = log.ranking_data(train_q, name="train"), log.ranking_data(test_q, name="test")
    scores_a_all = candidate_scores(log, noise=1.0, seed=seed, salt=1)
    scores_b_all = candidate_scores(log, noise=2.0, seed=seed, salt=2)
    rows = np.concatenate([np.arange(log.offsets[q], log.offsets[q + 1]) for q in test_q]) if test_q.size else np.zeros(0, np.int64)
    scores_a, scores_b = scores_a_all[rows], scores_b_all[rows]
    truth_a = exact_metrics(log.model, data.labels, scores_a, data.offsets, k=None)["ctr"].mean()
    truth_b = exact_metrics(log.model, data.labels, scores_b, data.offsets, k=None)["ctr"].mean()
    truth = float(truth_b - truth_a)
    # the sessions shown in random order, marked as data.randomized_column marks them (the simulator knows them)
    def marked_as(part: Any, queries: NDArray[np.int64]) -> Any:
        flags = {"randomized": np.repeat(log.shuffled[queries], np.diff(log.offsets)[queries]).astype(np.float64)}
        return dataclasses.replace(part, behaviours={**(part.behaviours or {}), **flags})

    train, data = marked_as(train, train_q), marked_as(data, test_q)
    marked = {"randomized_column": "randomized"} if OPTIONS.get("randomized", 1) and log.shuffled[train_q].any() else {}
    data_cfg = ParquetDataConfig(
        click_column="click", position_column="position", doc_id_column="doc_id", behaviour_columns=["click", "purchase"], **marked,
    )  # fmt: skip
    click_cfg = ClickEvalConfig(propensity=Propensity.em)
    try:
        params = inspect.signature(fit_click_model).parameters
        extra: dict[str, Any] = {}
        for name in ("n_bootstrap", "bootstrap", "refits"):
            if name in params:
                extra[name] = OPTIONS["refits"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fitted = fit_click_model(data_cfg, click_cfg, train, data, seed=seed, split="test", **extra)
        model = fitted[0] if isinstance(fitted, tuple) else fitted
        sim_params = inspect.signature(simulate_abtest).parameters
        kwargs: dict[str, Any] = {"seed": seed}
        if "models" in sim_params and isinstance(model, list | tuple):
            kwargs["models"] = model
            model = model[0]
        result = simulate_abtest(data.labels, data.offsets, scores_a, scores_b, model, **kwargs)
    except Exception as exc:
        return [_refused(sc.name, quantity, exc)]
    d = result.ctr
    anchoring = getattr(result, "anchoring", None)
    if anchoring is not None and not anchoring.anchored:  # withheld in one line: counted as such, not a coverage
        check = _interval_check(sc.name, quantity, float(d.diff), math.nan, math.nan, truth)
        cascade = "sessions with two or more clicks" in anchoring.reason  # the log breaks the click model
        check.note = WITHHELD_NOTE if cascade else f"{NO_INTERVAL_NOTE}: {anchoring.reason.split(':')[0].split(' (')[0][:90]}"
        return [check]
    return [_interval_check(sc.name, quantity, float(d.diff), float(d.low), float(d.high), truth)]


# -- calibration ------------------------------------------------------------------------------------


def _ndcg_at(grades: NDArray[np.integer], scores: NDArray[np.float64], offsets: NDArray[np.int64], k: int) -> float:
    """Mean nDCG@k (exponential gain, log2 discount) of the ranking by ``scores``."""
    from ltr.data.feedback.clicks import rank_within_queries

    sizes = np.diff(offsets)
    query = np.repeat(np.arange(sizes.shape[0]), sizes)
    gain = 2.0 ** np.asarray(grades, dtype=np.float64) - 1.0
    ranks = rank_within_queries(scores, offsets)
    ideal = rank_within_queries(gain, offsets)

    def disc(r: NDArray[np.int32]) -> NDArray[np.float64]:
        return np.asarray(np.where(r < k, 1.0 / np.log2(r + 2.0), 0.0), dtype=np.float64)

    dcg = np.bincount(query, weights=gain * disc(ranks), minlength=sizes.shape[0])
    idcg = np.bincount(query, weights=gain * disc(ideal), minlength=sizes.shape[0])
    return float(np.mean(np.divide(dcg, idcg, out=np.zeros_like(dcg), where=idcg > 0)))


def calibration_checks(sc: Scenario, log: SimulatedLog, seed: int) -> list[Check]:
    from ltr.online.calibrate import calibrate_frame

    rng = np.random.default_rng([seed, 0xCA1])
    sessions = 20_000
    rows = []
    for i in range(12):
        a = candidate_scores(log, noise=float(rng.uniform(0.5, 3.0)), seed=seed, salt=100 + 2 * i)
        b = candidate_scores(log, noise=float(rng.uniform(0.5, 3.0)), seed=seed, salt=101 + 2 * i)
        ta, tb = float(log.exact(a, k=None)["ctr"].mean()), float(log.exact(b, k=None)["ctr"].mean())
        observed = rng.binomial(sessions, tb) / sessions - rng.binomial(sessions, ta) / sessions
        rows.append({"offline": _ndcg_at(log.grades, b, log.offsets, 10) - _ndcg_at(log.grades, a, log.offsets, 10), "online": observed, "true": tb - ta})
    frame = pd.DataFrame(rows)
    x, y = frame["offline"].to_numpy(), frame["true"].to_numpy()
    truth = float(((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()) ** 2).sum())
    try:
        fit = calibrate_frame(frame, "offline", "online").fit
    except Exception as exc:
        return [_refused(sc.name, "calibrate slope", exc)]
    return [_interval_check(sc.name, "calibrate slope", fit.slope, fit.low, fit.high, truth)]


# -- the run ----------------------------------------------------------------------------------------

CHECKS: dict[str, Callable[[Scenario, SimulatedLog, int], list[Check]]] = {
    "em": lambda sc, log, seed: propensity_checks(sc, log, "em", seed),
    "em-randomized": lambda sc, log, seed: propensity_checks(sc, log, "em", seed, marked=True),
    "ctr": lambda sc, log, seed: propensity_checks(sc, log, "ctr", seed),
    "randomized": lambda sc, log, seed: propensity_checks(sc, log, "randomized", seed),
    "ope": ope_checks,
    "paired": paired_checks,
    "abtest": abtest_checks,
    "calibrate": calibration_checks,
}


def run_seed(task: tuple[str, int, tuple[str, ...]] | tuple[str, int, tuple[str, ...], dict[str, int]]) -> list[Check]:
    """Every check of one scenario and seed (``only``: a subset of the checks; empty: all;
    an optional fourth item updates :data:`OPTIONS`)."""
    name, seed, only = task[:3]
    if len(task) > 3:
        OPTIONS.update(task[3])
    sc = next(s for s in SCENARIOS if s.name == name)
    log = simulate_log(sc.spec, seed=seed)
    out: list[Check] = []
    for check in sc.checks:
        if check == "abtest" and seed >= OPTIONS["abtest_seeds"]:
            continue
        if not only or check in only:
            out.extend(CHECKS[check](sc, log, seed))
    return out


def tally(checks: Iterable[Check]) -> dict[tuple[str, str], Tally]:
    out: dict[tuple[str, str], Tally] = {}
    for c in checks:
        t = out.setdefault((c.scenario, c.quantity), Tally())
        if c.covered is None:
            if c.note.startswith(NO_INTERVAL_NOTE) or c.note == WITHHELD_NOTE:
                t.errors.append(c.error)  # its error still says how far the guess is
            t.refused += 1
            t.notes[c.note] = t.notes.get(c.note, 0) + 1
            continue
        t.checks += 1
        t.covered += int(c.covered)
        t.whole += int(c.whole)
        t.warned += int(c.warned)
        t.widths.append(c.width)
        t.errors.append(c.error)
    return out


def markdown(tallies: dict[tuple[str, str], Tally], seeds: int) -> str:
    lines = [
        "| scenario | quantity | checks | coverage of the truth | mean width | mean error | whole range | warned | refused |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for (scenario, quantity), t in tallies.items():
        cover = f"{100 * t.covered / t.checks:.1f} %" if t.checks else "-"
        if t.checks and t.covered / t.checks < 0.9:
            cover = f"**{cover}**"
        width = f"{np.mean(t.widths):.4g}" if t.widths else "-"
        error = f"{np.mean(t.errors):+.4g}" if t.errors else "-"
        refused = "-" if not t.refused else f"{t.refused}: " + "; ".join(f"{n} x {note}" for note, n in t.notes.items())
        whole = f"{t.whole}" if t.whole else "-"
        warned = f"{t.warned}" if t.warned else "-"
        lines.append(f"| {scenario} | {quantity} | {t.checks} | {cover} | {width} | {error} | {whole} | {warned} | {refused} |")
    return "\n".join(lines)


def pivot(tallies: dict[tuple[str, str], Tally]) -> str:
    """Coverage only, one row per quantity and one column per scenario (``*``: the scenario breaks
    the estimator's click model; ``n/a``: not measured; ``refused``: every check refused)."""
    scenarios = list(dict.fromkeys(s for s, _ in tallies))
    quantities = list(dict.fromkeys(q.removesuffix(" (not PBM)") for _, q in tallies))
    lines = ["| quantity | " + " | ".join(scenarios) + " |", "|---|" + "---:|" * len(scenarios)]
    for q in quantities:
        cells = []
        for s in scenarios:
            t, star = tallies.get((s, q)), ""
            if t is None:
                t, star = tallies.get((s, f"{q} (not PBM)")), "*"
            if t is None:
                cells.append("")
            elif t.checks == 0:
                none = "no interval" if any(n.startswith(NO_INTERVAL_NOTE) for n in t.notes) else "withheld" if WITHHELD_NOTE in t.notes else "refused"
                cells.append("n/a" if any(n.startswith("n/a") for n in t.notes) else none)
            else:
                share = 100 * t.covered / t.checks
                text = f"{share:.0f}{star}"
                if t.notes.get(WITHHELD_NOTE) and not q.startswith("propensity"):  # some logs withheld, the rest covered this often
                    text += f" ({t.notes[WITHHELD_NOTE]} withheld)"
                text += _unbounded_share(q, t)
                cells.append(f"**{text}**" if share < 90 else text)
        lines.append(f"| {q} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _unbounded_share(quantity: str, t: Tally) -> str:
    """`` (84 % withheld, 12 % no interval)``: the shares of a propensity row's values (positions
    of every log) printed with no interval, beside those with one; empty when none, and for
    the other rows."""
    if not quantity.startswith("propensity"):
        return ""
    withheld = t.notes.get(WITHHELD_NOTE, 0)
    none = sum(n for note, n in t.notes.items() if note.startswith(NO_INTERVAL_NOTE))
    total = t.checks + withheld + none
    parts = [f"{100 * n / total:.0f} % {what}" for n, what in ((withheld, "withheld"), (none, "no interval")) if n]
    return f" ({', '.join(parts)})" if parts else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--quick", action="store_true", help="10 seeds")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--refits", type=int, default=OPTIONS["refits"], help="ltr abtest's refits of the fitted click model")
    parser.add_argument("--abtest-seeds", type=int, default=OPTIONS["abtest_seeds"], help="seeds of the (slow) abtest check")
    parser.add_argument("--scenario", action="append", default=[], help="only these scenarios (repeatable)")
    parser.add_argument("--check", action="append", default=[], choices=sorted(CHECKS), help="only these checks (repeatable)")
    args = parser.parse_args()
    seeds = 10 if args.quick else args.seeds
    names = args.scenario or [s.name for s in SCENARIOS]
    unknown = [n for n in names if n not in {s.name for s in SCENARIOS}]
    if unknown:
        parser.error(f"unknown scenario {unknown[0]!r}; one of: {', '.join(s.name for s in SCENARIOS)}")
    options = {"refits": args.refits, "abtest_seeds": min(args.abtest_seeds, seeds)}
    OPTIONS.update(options)
    tasks = [(name, seed, tuple(args.check), options) for name in names for seed in range(seeds)]
    t0 = time.perf_counter()
    checks: list[Check] = []
    if args.workers > 1:
        with ProcessPoolExecutor(args.workers) as pool:
            for part in pool.map(run_seed, tasks, chunksize=1):
                checks.extend(part)
    else:
        for task in tasks:
            checks.extend(run_seed(task))
    print(
        f"95 % intervals against the exact truth, {seeds} seeds per scenario (k = {K}; ltr abtest: "
        f"{OPTIONS['abtest_seeds']} seeds, {OPTIONS['refits']} refits):\n"
    )
    for s in SCENARIOS:
        if s.name in names:
            print(f"- `{s.name}`: {s.about}")
    print()
    tallies = tally(checks)
    print("Coverage (%) of the exact truth by the 95 % intervals (* : the clicks break the estimator's model):\n")
    print(pivot(tallies))
    print("\nEvery check:\n")
    print(markdown(tallies, seeds))
    print(f"\n{time.perf_counter() - t0:.0f} s, {args.workers} workers")


if __name__ == "__main__":
    main()

"""A simulated A/B test and team-draft interleaving of two rankings under a position-based click model.

The story, for ``n_sessions`` sessions (seeded, bit-identical on rerun):

- every session is one query drawn uniformly from the split's queries, and is assigned to arm A
  or arm B with probability 1/2 each (the A/B test);
- a session shows its arm's whole list; the document at 0-based position ``p`` with true grade
  ``g`` is clicked with probability ``examination(p) * attractiveness(g)``
  (:func:`ltr.data.feedback.clicks.examination_curve`, :func:`ltr.data.feedback.clicks.attractiveness`),
  independently; with behaviour probabilities, a click adds to the cart and a cart becomes a
  purchase as in :mod:`ltr.data.feedback.clicks`;
- the *same* sessions (same queries) are also shown the team-draft interleaving of A and B
  (Chapelle, Joachims, Radlinski, Yue, TOIS 2012): a click credits the team that contributed
  the document; a session is won by the team with more clicks, tied otherwise.

Statistics (two-sided, alpha = 0.05, power 0.8):

- per arm: CTR (share of sessions with at least one click) and purchase rate with 95 % Wilson
  intervals; the difference B - A with a 95 % Wald interval and the pooled two-proportion
  z-test's p-value; the sessions (and days, at ``sessions_per_day * traffic_share`` sessions a
  day in the experiment) a test needs for 80 % power at the observed difference;
- interleaving: B's win rate among decided sessions, the exact binomial test against 1/2, and
  the sessions needed for 80 % power at the observed win rate and share of decided sessions.

Everything is numpy over the flat session-by-row arrays of a chunk of sessions (about
:data:`CHUNK_ROWS` slots, so the memory is bounded whatever the number of sessions; the result
does not depend on the chunk size), plus one numba kernel
(:func:`ltr.compare._interleave.team_draft`); no per-session Python loop.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from ltr.compiled import kernels
from ltr.data.feedback.clicks import attractiveness, examination_curve, rank_within_queries
from ltr.metrics.offsets import row_queries
from ltr.metrics.strata import Strata

Z_ALPHA = 1.959963984540054  # two-sided alpha = 0.05
Z_POWER = 0.8416212335729143  # power 0.8


@dataclass(frozen=True, slots=True)
class LogAnchor:
    """The logged sessions of the simulated split that a fitted click model's CTR is anchored on
    (:func:`anchored_ctr`), per row of the split: ``clicks`` (0/1), 0-based logged ``positions``,
    ``attract``, the attractiveness of a model fitted without the row's own query's clicks
    (cross-fitted), and ``examination`` per 0-based position (its last value extends).
    ``withheld``: one line saying why the interval is withheld ("" : it is given);
    ``source``: what the examination is, for the report."""

    clicks: NDArray[np.float64]
    positions: NDArray[np.int64]
    examination: NDArray[np.float64]
    attract: NDArray[np.float64]
    source: str = ""
    withheld: str = ""
    n_bootstrap: int = 1000
    seed: int = 0
    #: examination curves of resamples of the log the examination was estimated from, shape
    #: ``(n_curves, n_positions)``: the bootstrap then resamples the curve too (its error enters
    #: the interval); None: the examination is given, no error of its own
    curves: NDArray[np.float64] | None = None
    #: per query of the split: shown in random order (True) or not; the IPS corrections of the
    #: two groups are combined by their precision (:func:`anchored_ctr`); None: one group
    groups: NDArray[np.bool_] | None = None


@dataclass(frozen=True, slots=True)
class ClickModel:
    """The position-based click model of a click log, and optionally what follows a click:
    ``cart[row]`` / ``purchase[row]``, the probabilities that a click adds the row's document to
    the cart, and that a cart becomes a purchase (None: no purchases simulated)."""

    eta: float
    click_noise: float
    click_max: float
    cart: NDArray[np.float64] | None = None
    purchase: NDArray[np.float64] | None = None
    #: a fitted model instead of the simulator's (a user's log): examination per 0-based position
    #: (its last value extends) and attractiveness per row; None: ``eta`` and the grade's curve
    examination: NDArray[np.float64] | None = None
    attract: NDArray[np.float64] | None = None
    #: a fitted model's refits on bootstrap resamples of its log (examination and attractiveness
    #: each): :func:`simulate_abtest` adds their spread to its intervals (:func:`with_fit_uncertainty`)
    refits: tuple[ClickModel, ...] = ()
    #: a fitted model's log: :func:`simulate_abtest` anchors the CTR row on it (:func:`anchored_ctr`)
    anchor: LogAnchor | None = None

    def curves(self, labels: NDArray[np.integer], n_positions: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Examination of positions ``0..n_positions-1`` and attractiveness of every row."""
        if self.examination is None:
            exam = examination_curve(n_positions, eta=self.eta)
        else:
            exam = np.full(n_positions, self.examination[-1])
            exam[: min(n_positions, self.examination.shape[0])] = self.examination[:n_positions]
        if self.attract is None:
            return exam, attractiveness(labels, click_noise=self.click_noise, click_max=self.click_max)
        return exam, self.attract


@dataclass(frozen=True, slots=True)
class Rate:
    """A share of sessions with its 95 % Wilson interval."""

    value: float
    low: float
    high: float
    n: int


@dataclass(frozen=True, slots=True)
class Difference:
    """Arm B minus arm A of a share of sessions.

    ``low``/``high``: 95 % Wald interval; ``p_value``: pooled two-proportion z-test;
    ``sessions_needed``: sessions of both arms together for 80 % power at ``diff`` (inf when
    ``diff`` is 0); ``days_needed``: those at the experiment's sessions per day."""

    a: Rate
    b: Rate
    diff: float
    low: float
    high: float
    p_value: float
    sessions_needed: float
    days_needed: float


@dataclass(frozen=True, slots=True)
class Interleaving:
    """Team-draft interleaving of A and B on the same sessions.

    ``win_rate``: B's share of the decided sessions (wins of B / (wins of A + wins of B));
    ``p_value``: exact binomial test of ``win_rate`` = 1/2; ``sessions_needed``: sessions for
    80 % power at the observed win rate and share of decided sessions, a whole number rounded up
    (inf at a win rate of 1/2);
    ``days_needed``: those at the experiment's sessions per day."""

    wins_a: int
    wins_b: int
    ties: int
    win_rate: float
    p_value: float
    sessions_needed: float
    days_needed: float


@dataclass(frozen=True, slots=True)
class StratumResult:
    """The A/B test and interleaving of the sessions whose query lies in one list-length stratum."""

    stratum: str
    n_sessions: int
    ctr: Difference
    interleaving: Interleaving
    purchases: Difference | None = None


@dataclass(frozen=True, slots=True)
class FitUncertainty:
    """What a fitted click model adds to the A/B test's noise (:func:`with_fit_uncertainty`).

    ``n_refits`` refits of the click model on bootstrap resamples of the log's queries; ``sd``:
    the standard deviation over them of the exact expected CTR difference B - A of the split
    (``strata_sd`` per stratum of list length); ``refit_low`` / ``refit_high``: their 2.5 and
    97.5 percentiles; ``simulation_se``: the simulated sessions' own standard error of the
    difference; ``sessions_low`` / ``sessions_high``: the sessions for 80 % power at the ends of
    the difference's interval (inf when it holds 0)."""

    n_refits: int
    sd: float
    refit_low: float
    refit_high: float
    simulation_se: float
    sessions_low: float
    sessions_high: float
    strata_sd: list[float] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Anchoring:
    """How a fitted click model's CTR rows were made (:func:`anchored_ctr`).

    ``anchored``: the rows are the doubly robust estimates on the logged sessions of the split,
    with intervals; otherwise they are the simulation's values with no interval, and
    ``reason`` says why in one line (else what the interval rests on). ``simulated``: the
    simulated sessions' own difference under the fitted model (its forecast);
    ``sessions_low`` / ``sessions_high``: the sessions for 80 % power at the ends of the
    difference's interval (inf when it holds 0; NaN without an interval)."""

    anchored: bool
    reason: str
    n_queries: int
    simulated: Difference
    sessions_low: float
    sessions_high: float


@dataclass(frozen=True)
class AbTestResult:
    """Everything one simulation reports (see the module docstring); ``expected_ctr_a`` /
    ``expected_ctr_b``: the exact expected CTR of each arm (mean over queries of the probability
    of at least one click), which the simulated CTRs estimate."""

    n_sessions: int
    sessions_per_day: float
    traffic_share: float
    days: float
    seed: int
    ctr: Difference
    interleaving: Interleaving
    expected_ctr_a: float
    expected_ctr_b: float
    purchases: Difference | None = None
    strata: list[StratumResult] = field(default_factory=list)
    #: a fitted click model's uncertainty, already in the intervals of ``ctr`` and ``strata``
    #: (:func:`with_fit_uncertainty`); None: a known click model (the key is then left out of
    #: :meth:`to_dict`)
    fit: FitUncertainty | None = None
    #: a fitted click model's log: the CTR rows are anchored on it, or have no interval
    #: (:func:`anchored_ctr`); None: a known click model (the key is then left out of :meth:`to_dict`)
    anchoring: Anchoring | None = None

    def to_dict(self) -> dict[str, Any]:
        """Every number, JSON-ready: counts as integers (``sessions_needed``, ``sessions_low`` and
        ``sessions_high`` too, whole numbers of sessions), inf as the string ``"inf"``, a missing
        number (an interval withheld) as null; ``fit`` and ``anchoring`` only when the click model
        was fitted."""
        def clean(value: Any) -> Any:
            if isinstance(value, dict):
                return {k: int(v) if k in _WHOLE and math.isfinite(v) else clean(v) for k, v in value.items()}
            if isinstance(value, list):
                return [clean(v) for v in value]
            if isinstance(value, float) and math.isnan(value):
                return None
            if isinstance(value, float) and not math.isfinite(value):
                return str(value)
            return value

        out = dict(clean(asdict(self)))
        for key in ("fit", "anchoring"):
            if getattr(self, key) is None:
                del out[key]
        return out


#: The keys of :meth:`AbTestResult.to_dict` that count whole sessions.
_WHOLE = frozenset({"sessions_needed", "sessions_low", "sessions_high"})


def wilson(successes: int, n: int) -> Rate:
    """The share ``successes / n`` with its 95 % Wilson score interval.

    Examples
    --------
    >>> r = wilson(50, 100)
    >>> round(r.low, 4), round(r.high, 4)
    (0.4038, 0.5962)
    """
    if n == 0:
        return Rate(math.nan, math.nan, math.nan, 0)
    p = successes / n
    z2 = Z_ALPHA * Z_ALPHA
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = Z_ALPHA * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return Rate(p, centre - half, centre + half, n)


def two_proportions(success_a: int, n_a: int, success_b: int, n_b: int, *, sessions_per_day: float) -> Difference:
    """B - A of two shares: Wald interval, pooled z-test, sessions and days for 80 % power.

    Sessions needed (both arms, equal split) at the observed rates ``pa``, ``pb``:
    ``2 * (z_alpha * sqrt(2 pbar (1 - pbar)) + z_power * sqrt(pa (1 - pa) + pb (1 - pb)))**2 / (pb - pa)**2``.

    Examples
    --------
    z = 0.03 / sqrt(0.115 * 0.885 * 2 / 1000) = 2.103; per arm
    ((1.96 * sqrt(2 * 0.115 * 0.885) + 0.8416 * sqrt(0.09 + 0.1131)) / 0.03)**2 = 1773.99 -> 1774:

    >>> d = two_proportions(100, 1000, 130, 1000, sessions_per_day=1000.0)
    >>> round(d.diff, 3), round(d.p_value, 4), round(d.sessions_needed)
    (0.03, 0.0355, 3548)
    """
    a, b = wilson(success_a, n_a), wilson(success_b, n_b)
    if n_a == 0 or n_b == 0:
        nan = math.nan
        return Difference(a, b, nan, nan, nan, nan, nan, nan)
    pa, pb = a.value, b.value
    diff = pb - pa
    se = math.sqrt(pa * (1 - pa) / n_a + pb * (1 - pb) / n_b)
    pooled = (success_a + success_b) / (n_a + n_b)
    se0 = math.sqrt(pooled * (1 - pooled) * (1 / n_a + 1 / n_b))
    p_value = float(2 * stats.norm.sf(abs(diff) / se0)) if se0 > 0 else (1.0 if diff == 0 else 0.0)
    needed = sessions_for_power(pa, pb)
    return Difference(a, b, diff, diff - Z_ALPHA * se, diff + Z_ALPHA * se, p_value, float(needed), needed / sessions_per_day)


def sessions_for_power(pa: float, pb: float) -> float:
    """Sessions of both arms (equal split) an A/B test of two shares ``pa``, ``pb`` needs for 80 %
    power at alpha = 0.05 (two-sided), a whole number: inf when they are equal
    (:func:`two_proportions`)."""
    diff = pb - pa
    if diff == 0:
        return math.inf
    pbar = (pa + pb) / 2
    root = Z_ALPHA * math.sqrt(2 * pbar * (1 - pbar)) + Z_POWER * math.sqrt(pa * (1 - pa) + pb * (1 - pb))
    return float(2 * math.ceil(root * root / (diff * diff)))


def interleaving_test(wins_a: int, wins_b: int, ties: int, *, sessions_per_day: float) -> Interleaving:
    """B's win rate among decided sessions, its exact binomial p-value, and the sessions needed
    for 80 % power: ``n_decided = (z_alpha / 2 + z_power * sqrt(w (1 - w)))**2 / (w - 1/2)**2``
    decided sessions at the observed win rate ``w`` (rounded up), divided by the share of decided
    sessions (rounded up: a whole number of sessions, as the A/B test's).

    Examples
    --------
    ``((1.96 * 0.5 + 0.8416 * sqrt(0.24)) / 0.1)**2 = 193.8 -> 194`` decided sessions, half decided:

    >>> r = interleaving_test(400, 600, 1000, sessions_per_day=1000.0)
    >>> r.win_rate, round(r.sessions_needed)
    (0.6, 388)
    """
    decided = wins_a + wins_b
    n = decided + ties
    if decided == 0:
        return Interleaving(wins_a, wins_b, ties, math.nan, 1.0, math.inf, math.inf)
    w = wins_b / decided
    p_value = float(stats.binomtest(wins_b, decided, 0.5).pvalue)
    if w == 0.5:
        needed = math.inf
    else:
        root = Z_ALPHA * 0.5 + Z_POWER * math.sqrt(w * (1 - w))
        needed = math.ceil(math.ceil(root * root / ((w - 0.5) ** 2)) / (decided / n))
    return Interleaving(wins_a, wins_b, ties, w, p_value, float(needed), needed / sessions_per_day)


def _orders(ranks: NDArray[np.int32], offsets: NDArray[np.int64]) -> NDArray[np.int64]:
    """Per query, the rows (offsets within the query) in rank order: ``order[lo + r]`` is the row of rank ``r``."""
    sizes = np.diff(offsets)
    within = np.arange(ranks.shape[0], dtype=np.int64) - np.repeat(offsets[:-1], sizes)
    order = np.empty(ranks.shape[0], dtype=np.int64)
    order[np.repeat(offsets[:-1], sizes) + ranks] = within
    return order


def expected_ctr(labels: NDArray[np.integer], ranks: NDArray[np.int32], offsets: NDArray[np.int64], model: ClickModel) -> NDArray[np.float64]:
    """Per query, the exact probability of at least one click on the list ranked by ``ranks``
    (0 for a query with no documents)."""
    sizes = np.diff(offsets)
    exam, attract = model.curves(labels, int(sizes.max(initial=1)))
    p = exam[ranks] * attract
    with np.errstate(divide="ignore"):
        log_miss = np.log1p(-np.minimum(p, 1.0))
    # reduceat over the non-empty queries' starts only: an empty query would take its neighbour's
    # first row (or index past the end when it is last); each sum is the same sequential sum
    ctr = np.zeros(sizes.shape[0])
    nonempty = sizes > 0
    if nonempty.any():
        ctr[nonempty] = -np.expm1(np.add.reduceat(log_miss, offsets[:-1][nonempty]))
    return ctr


#: Rows (session-by-document slots) a simulation holds at once: its memory (~100 bytes a row,
#: ~100 MB) is bounded whatever the number of sessions; the results do not depend on it.
CHUNK_ROWS = 1 << 20
#: Slots a second the simulation is assumed to get through, for :func:`simulation_seconds`:
#: measured 1.2e7 a CPU-second (1M to 70M sessions of a debug-sized click log, ~20 slots a
#: session, on the 2-core reference machine); 8e6 leaves room for a busier or slower one.
ROWS_PER_SECOND = 8e6
#: The longest simulation :func:`ltr.models.abtest_run.load_abtest` starts, in estimated seconds.
MAX_SIMULATION_SECONDS = 3600.0

_DRAWS = ("click", "cart", "buy", "coin", "il_click")  # the per-slot uniforms, in the stream's order


def n_sessions_of(sessions_per_day: float, traffic_share: float, days: float) -> int:
    """The sessions of an experiment: ``round(sessions_per_day * traffic_share * days)``."""
    return round(sessions_per_day * traffic_share * days)


def simulation_seconds(n_sessions: int, offsets: NDArray[np.int64]) -> float:
    """The estimated time of :func:`simulate_abtest` of ``n_sessions`` sessions of the queries of
    ``offsets`` (their expected slots, the mean list length each, at :data:`ROWS_PER_SECOND`).

    >>> round(simulation_seconds(8_000_000, np.array([0, 1, 3])))  # 1.5 slots a session
    2
    """
    sizes = np.diff(np.asarray(offsets, dtype=np.int64))
    return n_sessions * max(float(sizes.mean()) if sizes.size else 0.0, 1.0) / ROWS_PER_SECOND


def _chunks(n: int, size: int) -> Iterator[tuple[int, int]]:
    for lo in range(0, n, size):
        yield lo, min(n, lo + size)


def _at(state: Mapping[str, Any], steps: int) -> np.random.Generator:
    """A generator ``steps`` 64-bit draws past the PCG64 ``state`` (one uniform double is one draw)."""
    bitgen = np.random.PCG64()
    bitgen.state = cast(Any, state)
    bitgen.advance(steps)
    return np.random.Generator(bitgen)


def simulate_abtest(
    labels: NDArray[np.integer],
    offsets: NDArray[np.int64],
    scores_a: NDArray[np.float64],
    scores_b: NDArray[np.float64],
    model: ClickModel,
    *,
    sessions_per_day: float = 100_000.0,
    traffic_share: float = 0.05,
    days: float = 14.0,
    seed: int = 0,
    strata: Strata | None = None,
    chunk_sessions: int | None = None,
) -> AbTestResult:
    """Simulate the A/B test and the interleaving of two rankings (see the module docstring).

    Parameters
    ----------
    labels : int array, shape (n_rows,)
        True grades (0-4) of the split's documents, rows contiguous per query.
    offsets : int64, shape (n_queries + 1,)
    scores_a, scores_b : float64, shape (n_rows,)
        The two rankers' scores; each query is shown in descending score (ties in row order).
    model : the click model (and purchase probabilities, if any); a fitted model's ``refits``
        widen the CTR intervals by the fit's uncertainty (:func:`with_fit_uncertainty`)
    sessions_per_day, traffic_share, days : the experiment's traffic: ``round(sessions_per_day
        * traffic_share * days)`` sessions are simulated, half per arm in expectation
    seed : every draw comes from ``numpy.random.default_rng([seed, 0xAB7E])``, in this order:
        the query of every session, its arm, then per slot (session by document) of all sessions
        the click, add-to-cart and purchase uniforms of the A/B list, the interleaving's coins,
        and the clicks on the interleaved list
    strata : list-length strata of the per-stratum results (default 1-10, 11-50, 51+)
    chunk_sessions : sessions simulated at once (default: about :data:`CHUNK_ROWS` slots); each
        chunk reads its part of every stream above (a first pass over the query draws counts the
        slots, so the later streams start where they would), so the result is the same, bit for
        bit, for every chunk size, and the memory is one chunk's

    Returns
    -------
    AbTestResult

    Raises
    ------
    ValueError
        ``chunk_sessions`` < 1.
    """
    if chunk_sessions is not None and chunk_sessions < 1:
        raise ValueError(f"chunk_sessions={chunk_sessions} must be >= 1")
    labels = np.asarray(labels)
    offsets = np.asarray(offsets, dtype=np.int64)
    sizes = np.diff(offsets)
    n_queries = sizes.shape[0]
    n_sessions = n_sessions_of(sessions_per_day, traffic_share, days)
    per_day = sessions_per_day * traffic_share
    ranks_a = rank_within_queries(np.asarray(scores_a, dtype=np.float64), offsets)
    ranks_b = rank_within_queries(np.asarray(scores_b, dtype=np.float64), offsets)
    order_a, order_b = _orders(ranks_a, offsets), _orders(ranks_b, offsets)
    exam, attract_all = model.curves(labels, int(sizes.max(initial=1)))
    cart, purchase = model.cart, model.purchase
    purchases = cart is not None and purchase is not None
    strata = strata or Strata()
    # tallies per (stratum + 1, arm): stratum -1 holds the sessions of empty queries
    stratum_of = strata.assign(sizes) + 1
    n_keys = 2 * (len(strata.labels) + 1)
    tally = {name: np.zeros(n_keys, dtype=np.int64) for name in ("sessions", "clicked", "bought", "wins_a", "wins_b")}
    step = chunk_sessions or max(1, int(CHUNK_ROWS / max(float(sizes.mean()) if n_queries else 1.0, 1.0)))

    # where each stream starts: the queries first (a pass over them counts the slots), then the arms, then the slots
    queries = np.random.default_rng([seed, 0xAB7E])
    n_slots = sum(int(sizes[queries.integers(0, n_queries, hi - lo)].sum()) for lo, hi in _chunks(n_sessions, step))
    after_queries = queries.bit_generator.state
    queries = np.random.default_rng([seed, 0xAB7E])
    arms = _at(after_queries, 0)
    slot_draws = {name: _at(after_queries, n_sessions + i * n_slots) for i, name in enumerate(_DRAWS)}

    # numba: loaded when a kernel runs
    team_draft = kernels.compiled("ltr.compare._interleave").team_draft

    for lo, hi in _chunks(n_sessions, step):
        m = hi - lo
        query = queries.integers(0, n_queries, m)
        arm_b = arms.random(m) < 0.5
        # the session-by-row expansion: slot j of session s is row starts[s] + j of its query
        s_sizes = sizes[query]
        starts = offsets[:-1][query]
        session = np.repeat(np.arange(m), s_sizes)
        slot_start = np.zeros(m + 1, dtype=np.int64)
        np.cumsum(s_sizes, out=slot_start[1:])
        rows = starts[session] + (np.arange(slot_start[-1]) - slot_start[:-1][session])
        n_rows = rows.shape[0]
        attract = attract_all[rows]

        # A/B: each session sees its arm's list
        shown = np.where(arm_b[session], ranks_b[rows], ranks_a[rows])
        clicked = slot_draws["click"].random(n_rows) < exam[shown] * attract
        any_click = np.bincount(session, weights=clicked, minlength=m) > 0
        key = 2 * stratum_of[query] + arm_b
        tally["sessions"] += np.bincount(key, minlength=n_keys)
        tally["clicked"] += np.bincount(key[any_click], minlength=n_keys)
        if cart is not None and purchase is not None:
            u_cart, u_buy = slot_draws["cart"].random(n_rows), slot_draws["buy"].random(n_rows)
            bought = clicked & (u_cart < cart[rows]) & (u_buy < purchase[rows])
            tally["bought"] += np.bincount(key[np.bincount(session, weights=bought, minlength=m) > 0], minlength=n_keys)

        # interleaving on the same sessions: clicks on the interleaved list, credited per team
        coins = np.asarray(slot_draws["coin"].random(n_rows) < 0.5, dtype=np.bool_)
        position, team = team_draft(starts, s_sizes, order_a, order_b, coins)
        il_click = slot_draws["il_click"].random(n_rows) < exam[position] * attract
        clicks_b = np.bincount(session, weights=il_click & (team == 1), minlength=m)
        clicks_a = np.bincount(session, weights=il_click & (team == 0), minlength=m)
        tally["wins_b"] += np.bincount(key[clicks_b > clicks_a], minlength=n_keys)
        tally["wins_a"] += np.bincount(key[clicks_a > clicks_b], minlength=n_keys)

    def summarise(t: dict[str, NDArray[np.int64]]) -> tuple[Difference, Interleaving, Difference | None]:
        (na, nb), (ca, cb), (ba, bb) = (t[name].tolist() for name in ("sessions", "clicked", "bought"))
        ctr = two_proportions(ca, na, cb, nb, sessions_per_day=per_day)
        buys = two_proportions(ba, na, bb, nb, sessions_per_day=per_day) if purchases else None
        wins_a, wins_b = int(t["wins_a"].sum()), int(t["wins_b"].sum())
        il = interleaving_test(wins_a, wins_b, na + nb - wins_a - wins_b, sessions_per_day=per_day)
        return ctr, il, buys

    by_stratum = {name: values.reshape(-1, 2) for name, values in tally.items()}
    ctr, il, buys = summarise({name: values.sum(axis=0) for name, values in by_stratum.items()})
    per_stratum = []
    for index, name in enumerate(strata.labels):
        s_ctr, s_il, s_buys = summarise({key: values[index + 1] for key, values in by_stratum.items()})
        per_stratum.append(StratumResult(name, int(by_stratum["sessions"][index + 1].sum()), s_ctr, s_il, s_buys))
    result = AbTestResult(
        n_sessions, float(sessions_per_day), float(traffic_share), float(days), int(seed), ctr, il,
        float(expected_ctr(labels, ranks_a, offsets, model).mean()),
        float(expected_ctr(labels, ranks_b, offsets, model).mean()),
        buys, per_stratum,
    )  # fmt: skip
    if model.refits:
        refit_diffs = np.stack(
            [expected_ctr(labels, ranks_b, offsets, refit) - expected_ctr(labels, ranks_a, offsets, refit) for refit in model.refits]
        )
        result = with_fit_uncertainty(result, refit_diffs, offsets, strata)
    if model.anchor is not None:
        result = anchored_ctr(result, ranks_a, ranks_b, offsets, model.anchor, strata)
    return result


def power_curves(result: AbTestResult, sessions: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Power (alpha = 0.05, two-sided, normal approximation) of the A/B test of CTR and of
    interleaving after ``sessions`` sessions each, at the effects ``result`` observed."""
    n = np.asarray(sessions, dtype=np.float64)
    ab = result.ctr
    pa, pb = ab.a.value, ab.b.value
    pbar = (pa + pb) / 2
    se0 = np.sqrt(2 * pbar * (1 - pbar) / (n / 2))
    se1 = np.sqrt((pa * (1 - pa) + pb * (1 - pb)) / (n / 2))
    power_ab = stats.norm.sf((Z_ALPHA * se0 - abs(pb - pa)) / se1)
    il = result.interleaving
    decided_share = (il.wins_a + il.wins_b) / max(il.wins_a + il.wins_b + il.ties, 1)
    w = il.win_rate
    m = n * decided_share
    power_il = stats.norm.sf((Z_ALPHA * 0.5 / np.sqrt(m) - abs(w - 0.5)) / (np.sqrt(w * (1 - w)) / np.sqrt(m)))
    return np.asarray(power_ab, dtype=np.float64), np.asarray(power_il, dtype=np.float64)


#: Features whose pairwise products (and squares) enter the attractiveness model of a fitted
#: click model: the ones with the largest linear coefficients.
QUADRATIC_FEATURES = 8
#: The ridge penalty of the attractiveness model's coefficients (the constant is not penalised).
ATTRACT_RIDGE = 1.0


def _sigmoid(z: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.asarray(0.5 * (1.0 + np.tanh(0.5 * z)), dtype=np.float64)


@dataclass(frozen=True)
class AttractivenessModel:
    """Attractiveness as a logistic function of a row's features: ``sigmoid(design(x) @ coef)``.

    The design (:meth:`design`): every feature standardised by ``mean`` / ``scale`` (a missing
    cell, NaN, at 0: the mean), one 0/1 indicator per feature of ``missing``, the products of the
    feature pairs of ``pairs`` (squares included), and a constant last; plus, for the rows it was
    fitted on, one effect per query (``query_effect``)."""

    mean: NDArray[np.float64]
    scale: NDArray[np.float64]
    missing: NDArray[np.bool_]
    pairs: NDArray[np.int64]  # shape (n_pairs, 2)
    coef: NDArray[np.float64]
    #: the fitted effect of every query of the fitting rows (:func:`fit_attractiveness`)
    query_effect: NDArray[np.float64]
    #: the precision (1 / variance) of the normal prior of the query effects, estimated
    query_precision: float = 1.0

    def design(self, features: NDArray[Any]) -> NDArray[np.float64]:
        """The design matrix of ``features`` (shape ``(n_rows, n_features)``)."""
        x = np.asarray(features, dtype=np.float64)
        nan = np.isnan(x)
        z = np.where(nan, 0.0, (np.where(nan, 0.0, x) - self.mean) / self.scale)
        products = z[:, self.pairs[:, 0]] * z[:, self.pairs[:, 1]]
        return np.hstack([z, nan[:, self.missing].astype(np.float64), products, np.ones((x.shape[0], 1))])

    def predict(self, features: NDArray[Any], effect: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
        """The attractiveness of every row, in (0, 1); ``effect``: each row's query effect (default 0)."""
        return _sigmoid(self.design(features) @ self.coef + (0.0 if effect is None else effect))


def _pbm_logistic(
    clicks: NDArray[np.float64], examined: NDArray[np.float64], design: NDArray[np.float64], weights: NDArray[np.float64],
    start: NDArray[np.float64] | None, groups: NDArray[np.int64], n_groups: int, start_effect: NDArray[np.float64] | None,
    precision: float, *, iterations: int = 400, tol: float = 1e-4,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``coef`` and the per-group effects ``u`` maximising the weighted, penalised likelihood of
    ``P(click) = examined * sigmoid(design @ coef + u[groups])``: a ridge penalty
    :data:`ATTRACT_RIDGE` on ``coef`` (not on the last, constant column) and a normal prior of
    variance ``1 / precision`` on every ``u``. By EM: the E-step gives an unclicked row its
    posterior of being attractive, the M-step one Boehning bound step for ``coef`` (one fixed
    matrix), then one for every ``u`` (a group's rows at once, no loop)."""
    k = design.shape[1]
    if start is None:
        coef = np.zeros(k)
        rate = float(np.average(clicks, weights=weights)) / max(float(np.average(examined, weights=weights)), 1e-12)
        mean = min(max(rate, 1e-3), 0.9)
        coef[-1] = math.log(mean / (1.0 - mean))
    else:
        coef = start.copy()
    effect = np.zeros(n_groups) if start_effect is None else start_effect.copy()
    ridge = np.full(k, ATTRACT_RIDGE)
    ridge[-1] = 1e-6
    bound = np.linalg.inv(0.25 * (design * weights[:, None]).T @ design + np.diag(ridge))
    effect_bound = 0.25 * np.bincount(groups, weights=weights, minlength=n_groups) + precision
    clicked = clicks > 0

    def step(x: NDArray[np.float64]) -> NDArray[np.float64]:
        """One EM iteration: the E-step, then one bound step of ``coef`` and one of every ``u``."""
        cf, u = x[:k], x[k:]
        g = _sigmoid(design @ cf + u[groups])
        target = np.where(clicked, 1.0, (1.0 - examined) * g / np.maximum(1.0 - examined * g, 1e-12))
        cf = cf + bound @ (design.T @ (weights * (target - g)) - ridge * cf)
        g = _sigmoid(design @ cf + u[groups])
        u = u + (np.bincount(groups, weights=weights * (target - g), minlength=n_groups) - precision * u) / effect_bound
        return np.concatenate([cf, u])

    # SQUAREM (Varadhan and Roland, 2008), as ltr.metrics.clicks.propensity.regression_em: extrapolate
    # along two EM steps, then one EM step
    x = np.concatenate([coef, effect])
    done = 0
    while done < iterations:
        x1 = step(x)
        x2 = step(x1)
        r, v = x1 - x, x2 - 2 * x1 + x
        alpha = min(-math.sqrt(float(r @ r)) / max(math.sqrt(float(v @ v)), 1e-300), -1.0)
        new = step(x - 2 * alpha * r + alpha * alpha * v)
        done += 3
        change = float(np.max(np.abs(new - x), initial=0.0))
        x = new
        if not np.all(np.isfinite(x)):  # pragma: no cover - an extrapolation too far: plain EM steps instead
            x = x2
        if change < tol:
            break
    coef, effect = x[:k], x[k:]
    return np.asarray(coef, dtype=np.float64), np.asarray(effect, dtype=np.float64)


def fit_attractiveness(
    clicks: NDArray[Any], examined: NDArray[np.float64], features: NDArray[Any], offsets: NDArray[np.int64], *,
    weights: NDArray[np.float64] | None = None, like: AttractivenessModel | None = None,
) -> AttractivenessModel:
    """The attractiveness model of a position-based click log: ``P(click) = examined *
    sigmoid(design(x) @ coef + u[query])``, ``examined`` each row's examination propensity at its
    logged position, ``u`` one effect per query of ``offsets`` (queries differ in how attractive
    all their documents are), with a normal prior whose variance is estimated from the spread of
    the queries' click counts beyond the model's (method of moments).

    A first fit linear in the standardised features picks the :data:`QUADRATIC_FEATURES`
    features of largest coefficient; the model adds their pairwise products and squares (a click
    probability is rarely linear on the logit scale). ``like``: refit the design of that model
    (its standardisation, indicators and pairs, starting from its coefficients) under new
    ``weights`` (a bootstrap's), so the refits of one log differ only by their data.
    """
    c = np.asarray(clicks, dtype=np.float64)
    w = np.ones(c.shape[0]) if weights is None else np.asarray(weights, dtype=np.float64)
    e = np.clip(np.asarray(examined, dtype=np.float64), 1e-6, 1.0)
    offsets = np.asarray(offsets, dtype=np.int64)
    n_groups = offsets.shape[0] - 1
    groups = row_queries(offsets)
    if like is not None:
        coef, effect = _pbm_logistic(c, e, like.design(features), w, like.coef, groups, n_groups, like.query_effect, like.query_precision)
        return dataclasses.replace(like, coef=coef, query_effect=effect)
    x = np.asarray(features, dtype=np.float64)
    nan = np.isnan(x)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN column: mean and scale NaN, set below
        mean = np.nan_to_num(np.nanmean(x, axis=0)) if x.shape[0] else np.zeros(x.shape[1])
        scale = np.nan_to_num(np.nanstd(x, axis=0)) if x.shape[0] else np.ones(x.shape[1])
    scale = np.where(scale > 0, scale, 1.0)
    missing = np.asarray(nan.any(axis=0), dtype=np.bool_)
    no_pairs = np.zeros((0, 2), dtype=np.int64)
    linear = AttractivenessModel(mean, scale, missing, no_pairs, np.zeros(0), np.zeros(0))
    coef, effect = _pbm_logistic(c, e, linear.design(x), w, None, groups, n_groups, None, 1.0)
    top = np.sort(np.argsort(-np.abs(coef[: x.shape[1]]), kind="stable")[: min(QUADRATIC_FEATURES, x.shape[1])])
    i, j = np.triu_indices(top.shape[0])
    pairs = np.column_stack([top[i], top[j]]).astype(np.int64)
    coef = np.concatenate([coef[:-1], np.zeros(pairs.shape[0]), coef[-1:]])
    design = AttractivenessModel(mean, scale, missing, pairs, coef, effect).design(x)
    # the variance of the queries' effects by the method of moments: with no effect a query's
    # clicks C deviate from their expectation sum(P) by sum(P (1 - P)) in variance; an effect u
    # adds about (u * sum(dP/du))**2, dP/du = e g (1 - g)
    coef, effect = _pbm_logistic(c, e, design, w, coef, groups, n_groups, np.zeros(n_groups), 1e6)
    g = _sigmoid(design @ coef)
    prob = e * g
    excess = np.bincount(groups, weights=c - prob, minlength=n_groups) ** 2
    noise = np.bincount(groups, weights=prob * (1.0 - prob), minlength=n_groups)
    slope = np.bincount(groups, weights=prob * (1.0 - g), minlength=n_groups) ** 2
    weight = np.bincount(groups, weights=w, minlength=n_groups) / np.maximum(np.diff(offsets), 1)  # a query's resample count
    variance = float(np.sum(weight * (excess - noise)) / max(float(np.sum(weight * slope)), 1e-12))
    precision = 1.0 / min(max(variance, 1e-4), 100.0)
    coef, effect = _pbm_logistic(c, e, design, w, coef, groups, n_groups, effect, precision)
    return AttractivenessModel(mean, scale, missing, pairs, coef, effect, precision)


def with_fit_uncertainty(
    result: AbTestResult, refit_diffs: NDArray[np.float64], offsets: NDArray[np.int64], strata: Strata | None = None,
) -> AbTestResult:
    """``result`` with the fitted click model's uncertainty in its CTR intervals, p-values and
    sessions needed.

    ``refit_diffs``: shape ``(n_refits, n_queries)``, every refit's exact expected CTR
    difference B - A of every query of the split (:func:`expected_ctr`). The variance of the
    simulated difference is the simulated sessions' (its Wald interval's) plus the refits'
    variance of the split's mean difference; per stratum of list length the same with the mean
    over the stratum's queries. The interval is ``diff +- z * sqrt(se_sim**2 + sd**2)``, the
    p-value the pooled z-test's with ``sd**2`` added to its variance. Purchases and interleaving
    are not changed (a fitted model simulates no purchases).
    """
    diffs = np.asarray(refit_diffs, dtype=np.float64)
    sizes = np.diff(np.asarray(offsets, dtype=np.int64)).astype(np.int64)
    strata = strata or Strata()
    stratum = strata.assign(sizes)

    def widened(d: Difference, sd: float) -> tuple[Difference, float]:
        if not math.isfinite(d.diff):
            return d, math.nan
        se_sim = (d.high - d.low) / (2 * Z_ALPHA)
        se = math.sqrt(se_sim * se_sim + sd * sd)
        n_a, n_b = d.a.n, d.b.n
        pooled = (d.a.value * n_a + d.b.value * n_b) / (n_a + n_b)
        se0 = math.sqrt(pooled * (1 - pooled) * (1 / n_a + 1 / n_b) + sd * sd)
        p_value = float(2 * stats.norm.sf(abs(d.diff) / se0)) if se0 > 0 else (1.0 if d.diff == 0 else 0.0)
        return Difference(d.a, d.b, d.diff, d.diff - Z_ALPHA * se, d.diff + Z_ALPHA * se, p_value, d.sessions_needed, d.days_needed), se_sim

    def spread(values: NDArray[np.float64]) -> float:
        return float(values.std(ddof=1)) if values.shape[0] > 1 else math.nan

    overall = diffs.mean(axis=1) if diffs.shape[1] else np.zeros(diffs.shape[0])
    sd = spread(overall)
    ctr, se_sim = widened(result.ctr, sd)
    strata_sd, per_stratum = [], []
    for index, s in enumerate(result.strata):
        inside = stratum == index
        s_sd = spread(diffs[:, inside].mean(axis=1)) if inside.any() else 0.0
        strata_sd.append(s_sd)
        per_stratum.append(StratumResult(s.stratum, s.n_sessions, widened(s.ctr, s_sd)[0], s.interleaving, s.purchases))
    pa = ctr.a.value
    ends = sorted((abs(ctr.low), abs(ctr.high)))
    if ctr.low <= 0 <= ctr.high or not math.isfinite(ctr.diff):
        low_n, high_n = (sessions_for_power(pa, pa + ends[1]) if math.isfinite(ctr.diff) else math.nan), math.inf
    else:
        low_n, high_n = sessions_for_power(pa, pa + math.copysign(ends[1], ctr.diff)), sessions_for_power(pa, pa + math.copysign(ends[0], ctr.diff))
    q_low, q_high = (np.percentile(overall, [2.5, 97.5]).tolist() if overall.size else [math.nan, math.nan])
    fit = FitUncertainty(int(diffs.shape[0]), sd, float(q_low), float(q_high), se_sim, low_n, high_n, strata_sd)
    return AbTestResult(
        result.n_sessions, result.sessions_per_day, result.traffic_share, result.days, result.seed, ctr,
        result.interleaving, result.expected_ctr_a, result.expected_ctr_b, result.purchases, per_stratum, fit,
    )  # fmt: skip


def doubly_robust_ctr(
    ranks: NDArray[np.integer], offsets: NDArray[np.int64], anchor: LogAnchor, examination: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Per query, the doubly robust whole-list CTR of the ranking ``ranks`` (0-based, per row)
    from the logged sessions of ``anchor``, and each row's slope of it in the row's click.

    With ``e`` the examination, ``a`` the (cross-fitted) attractiveness, ``p_d = e(r_d) a_d`` the
    model's click probability of row ``d`` at its new position ``r_d`` and ``l_d`` its logged
    position: ``1 - prod_d (1 - p_d) + sum_d slope_d * (y_d - e(l_d) a_d)``, ``slope_d =
    prod_{j != d} (1 - p_j) * e(r_d) / e(l_d)``: the model's CTR, linearised in each document's
    click probability and corrected by the document's IPS residual. With the examination right
    and the clicks position-based, unbiased for the session's CTR when ``a`` is, and otherwise
    off only by products of two documents' errors of ``a`` (the correction is first-order; ``a``
    must not be fitted on the query's own clicks). ``examination``: another curve than ``anchor.examination``.

    >>> anchor = LogAnchor(np.array([1.0, 0.0]), np.array([0, 1]), np.array([1.0, 0.5]), np.array([0.5, 0.2]))
    >>> v, slope, p = doubly_robust_ctr(np.array([1, 0]), np.array([0, 2]), anchor)
    >>> round(float(v[0]), 12)  # 1 - 0.75 * 0.8 + 0.8 * 0.5 * (1 - 0.5) + 0.75 * 2 * (0 - 0.1)
    0.45
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    sizes = np.diff(offsets)
    n_q = sizes.shape[0]
    query = row_queries(offsets)
    ranks = np.asarray(ranks, dtype=np.int64)
    n = int(max(int(ranks.max(initial=0)), int(anchor.positions.max(initial=0)))) + 1
    curve = anchor.examination if examination is None else np.asarray(examination, dtype=np.float64)
    exam = np.full(n, curve[-1])
    exam[: min(n, curve.shape[0])] = curve[:n]
    e_new, e_log = exam[ranks], exam[anchor.positions]
    a = np.asarray(anchor.attract, dtype=np.float64)
    p_new = np.clip(e_new * a, 0.0, 1.0 - 1e-12)
    log_stay = np.log1p(-p_new)
    stay = np.bincount(query, weights=log_stay, minlength=n_q)
    slope = np.exp(stay[query] - log_stay) * e_new / e_log
    p_log = np.clip(e_log * a, 0.0, 1.0)
    values = 1.0 - np.exp(stay) + np.bincount(query, weights=slope * (anchor.clicks - p_log), minlength=n_q)
    return np.asarray(values, dtype=np.float64), np.asarray(slope, dtype=np.float64), np.asarray(p_log, dtype=np.float64)


def _dr_parts(
    ranks: NDArray[np.integer], offsets: NDArray[np.int64], anchor: LogAnchor, examination: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """:func:`doubly_robust_ctr` in parts: per query the model's CTR and the IPS correction (their
    sum the doubly robust CTR), per row the slope and the model's click probability at the
    logged position."""
    values, slope, p_log = doubly_robust_ctr(ranks, offsets, anchor, examination)
    sizes = np.diff(np.asarray(offsets, dtype=np.int64)).astype(np.int64)
    query = row_queries(offsets)
    correction = np.asarray(np.bincount(query, weights=slope * (anchor.clicks - p_log), minlength=sizes.shape[0]), dtype=np.float64)
    return values - correction, correction, slope, p_log


#: A group of queries (randomized or not) with fewer than this many leaves its IPS corrections out.
MIN_GROUP_QUERIES = 10


def group_scale(correction: NDArray[np.float64], groups: NDArray[np.bool_] | None) -> NDArray[np.float64]:
    """Per query, the factor of its IPS correction in the anchored mean: ``w_g * n / n_g`` for a
    query of group ``g`` (``n_g`` queries of ``n``), ``w_g`` proportional to the precision
    ``n_g / var_g`` of the group's mean ``correction`` (a group of fewer than
    :data:`MIN_GROUP_QUERIES` queries: 0). Sessions are randomized independently of their
    query, so each group is a random sample of the queries and its mean correction an unbiased
    estimate of all of theirs: the combination is too, and leans on the group whose corrections
    vary least (the ordered sessions, whose weights ``e(new) / e(logged)`` are near 1). All 1
    without groups.

    >>> group_scale(np.array([0.0, 2.0] * 10 + [0.0, 1.0] * 10), np.array([True] * 20 + [False] * 20)).round(3).tolist()[::20]
    [0.4, 1.6]
    """
    n_q = correction.shape[0]
    if groups is None:
        return np.ones(n_q)
    g = np.asarray(groups, dtype=bool)
    parts = [~g, g]
    precision = []
    for inside in parts:
        m = int(inside.sum())
        var = float(correction[inside].var(ddof=1)) / m if m >= MIN_GROUP_QUERIES else math.inf
        precision.append(0.0 if not math.isfinite(var) else 1.0 / max(var, 1e-12))
    total = sum(precision)
    if total == 0:
        return np.ones(n_q)
    scale = np.zeros(n_q)
    for inside, w in zip(parts, precision, strict=True):
        if inside.any():
            scale[inside] = w / total * n_q / int(inside.sum())
    return scale


def _bca_interval(
    values: NDArray[np.float64], means: NDArray[np.float64], boot: NDArray[np.float64], level: float = 0.95,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The bias-corrected and accelerated (BCa; Efron 1987) bootstrap interval of each column's
    mean: ``values`` per query (one column per quantity), ``boot`` the resampled means (one row
    per resample). The bias correction ``z0`` is the normal quantile of the share of resampled
    means below the estimate, the acceleration the mean's closed-form jackknife
    ``sum(d^3) / (6 sum(d^2)^1.5)``, ``d = x - mean``, as :func:`ltr.online.ope.bca_interval`.

    >>> low, high = _bca_interval(np.array([[0.0], [1.0]]), np.array([0.5]), np.array([[0.0], [0.5], [0.5], [1.0]]))
    >>> low.tolist(), high.tolist()
    ([0.0], [1.0])
    """
    n_cols = values.shape[1]
    d = values - means
    s2 = (d * d).sum(axis=0)
    accel = np.divide((d**3).sum(axis=0), 6.0 * s2**1.5, out=np.zeros(n_cols), where=s2 > 0)
    below = (boot < means).mean(axis=0) + 0.5 * (boot == means).mean(axis=0)
    n_boot = boot.shape[0]
    z0 = stats.norm.ppf(np.clip(below, 1.0 / (n_boot + 1), 1.0 - 1.0 / (n_boot + 1)))
    ordered = np.sort(boot, axis=0)
    tail = (1.0 - level) / 2.0
    out = []
    for z in (stats.norm.ppf(tail), stats.norm.ppf(1.0 - tail)):
        probs = stats.norm.cdf(z0 + (z0 + z) / (1.0 - accel * (z0 + z)))
        index = np.clip(np.rint(probs * (n_boot - 1)).astype(np.int64), 0, n_boot - 1)
        out.append(np.asarray(ordered[index, np.arange(n_cols)], dtype=np.float64))
    return out[0], out[1]


def _anchored_difference(values: NDArray[np.float64], boot: NDArray[np.float64], floor_variance: float, per_day: float) -> Difference:
    """The anchored CTR of A and B and B - A over queries: ``values`` per query (columns A, B,
    B - A), ``boot`` their means over resamples (one row each). The means (each rate cut to
    [0, 1], the difference their difference), each with a 95 % BCa interval
    (:func:`_bca_interval`), the difference's widened to at least
    ``+- z sqrt(floor_variance) / n`` and cut to [-1, 1]; the p-value the normal test with the
    standard error of the interval's side toward 0 (below 0.05 exactly when it excludes 0);
    sessions for power at the anchored rates (days
    at ``per_day`` sessions a day)."""
    n_q = values.shape[0]
    if n_q == 0:
        nan = math.nan
        return Difference(Rate(nan, nan, nan, 0), Rate(nan, nan, nan, 0), nan, nan, nan, nan, nan, nan)
    means = values.mean(axis=0)
    low, high = _bca_interval(values, means, boot)
    pa, pb = (min(max(float(m), 0.0), 1.0) for m in means[:2])
    diff = pb - pa
    half = Z_ALPHA * math.sqrt(max(floor_variance, 0.0)) / n_q
    d_low = max(min(float(low[2]) - float(means[2]) + diff, diff - half, diff), -1.0)
    d_high = min(max(float(high[2]) - float(means[2]) + diff, diff + half, diff), 1.0)

    def rate(i: int, value: float) -> Rate:
        return Rate(value, min(max(float(low[i]), 0.0), value), max(min(float(high[i]), 1.0), value), n_q)

    se = (diff - d_low if diff > 0 else d_high - diff) / Z_ALPHA  # the interval's side toward 0: p < 0.05 when it excludes 0
    p_value = float(2 * stats.norm.sf(abs(diff) / se)) if se > 0 else (1.0 if diff == 0 else 0.0)
    needed = sessions_for_power(pa, pb)
    return Difference(rate(0, pa), rate(1, pb), diff, d_low, d_high, p_value, needed, needed / per_day)


def _without_interval(d: Difference) -> Difference:
    """``d``'s values with every interval and the p-value NaN (a model's forecast, no interval)."""
    nan = math.nan
    return Difference(
        Rate(d.a.value, nan, nan, d.a.n), Rate(d.b.value, nan, nan, d.b.n), d.diff, nan, nan, nan, d.sessions_needed, d.days_needed,
    )  # fmt: skip


def _sessions_over(ctr: Difference) -> tuple[float, float]:
    """The sessions for 80 % power at the far and the near end of ``ctr``'s interval (inf when it
    holds 0; NaN without an interval)."""
    if not (math.isfinite(ctr.low) and math.isfinite(ctr.high) and math.isfinite(ctr.diff)):
        return math.nan, math.nan
    pa = ctr.a.value
    ends = sorted((abs(ctr.low), abs(ctr.high)))

    def at(diff: float) -> float:  # a rate stays in [0, 1]
        return sessions_for_power(pa, min(max(pa + diff, 0.0), 1.0))

    if ctr.low <= 0 <= ctr.high:
        far = ctr.high if abs(ctr.high) >= abs(ctr.low) else ctr.low
        return at(far), math.inf
    sign = math.copysign(1.0, ctr.diff)
    return at(sign * ends[1]), at(sign * ends[0])


def _joint_bootstrap(
    values: NDArray[np.float64], scale: NDArray[np.float64], ranks_a: NDArray[np.integer], ranks_b: NDArray[np.integer],
    offsets: NDArray[np.int64], anchor: LogAnchor, subsets: list[NDArray[np.bool_]],
) -> list[NDArray[np.float64]]:
    """Per subset of the queries, the means of ``values`` (per query: A, B, B - A) over seeded
    resamples of the queries with replacement (``anchor.n_bootstrap`` of them; with
    ``anchor.curves``, one per curve, each resample's values recomputed under its curve, the
    corrections times ``scale``)."""
    n_q = values.shape[0]
    curves = anchor.curves
    n_boot = anchor.n_bootstrap if curves is None else int(curves.shape[0])
    rng = np.random.default_rng([anchor.seed, 0xA9C4])
    counts = rng.multinomial(n_q, np.full(n_q, 1.0 / max(n_q, 1)), size=n_boot).astype(np.float64) if n_q else np.zeros((n_boot, 0))
    out = [np.empty((n_boot, 3)) for _ in subsets]
    for b in range(n_boot):
        v = values
        if curves is not None:
            m_a, c_a = _dr_parts(ranks_a, offsets, anchor, curves[b])[:2]
            m_b, c_b = _dr_parts(ranks_b, offsets, anchor, curves[b])[:2]
            v = np.column_stack([m_a + scale * c_a, m_b + scale * c_b, m_b - m_a + scale * (c_b - c_a)])
        for boot, inside in zip(out, subsets, strict=True):
            weight = counts[b, inside]
            total = float(weight.sum())
            boot[b] = weight @ v[inside] / total if total > 0 else (values[inside].mean(axis=0) if inside.any() else math.nan)
    return out


def anchored_ctr(
    result: AbTestResult, ranks_a: NDArray[np.integer], ranks_b: NDArray[np.integer], offsets: NDArray[np.int64],
    anchor: LogAnchor, strata: Strata | None = None,
) -> AbTestResult:
    """``result`` with its CTR rows (overall and per stratum of list length) anchored on the logged
    sessions of ``anchor``.

    Unless ``anchor.withheld``: each arm's CTR is the mean over the split's queries of its
    doubly robust whole-list CTR (:func:`doubly_robust_ctr`), the IPS corrections of the
    randomized and the ordered sessions combined by their precision (:func:`group_scale`), and
    B - A the mean per-query difference, with 95 % BCa bootstrap intervals over the queries
    (and over the examination's own resamples, ``anchor.curves``), the difference's at least
    ``z`` times the standard deviation the click model gives it (each row's correction is linear
    in its click: ``sum p (1 - p) (slope_B - slope_A)^2``); the p-value is the normal test of
    that interval's side toward 0, the sessions for 80 % power those at the anchored rates. They hold the truth
    when the examination is right and the clicks position-based, up to the products of two
    documents' errors of the fitted attractiveness. With ``anchor.withheld``: the simulation's values with no interval or
    p-value (:func:`verdict` gives the reason). Interleaving and purchases are the simulation's.
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    sizes = np.diff(offsets)
    n_q = sizes.shape[0]
    query = row_queries(offsets)
    strata = strata or Strata()
    stratum = strata.assign(sizes)
    if anchor.withheld:
        ctr = _without_interval(result.ctr)
        per_stratum = [StratumResult(s.stratum, s.n_sessions, _without_interval(s.ctr), s.interleaving, s.purchases) for s in result.strata]
        anchoring = Anchoring(False, anchor.withheld, n_q, result.ctr, math.nan, math.nan)
    else:
        m_a, c_a, slope_a, p_log = _dr_parts(ranks_a, offsets, anchor)
        m_b, c_b, slope_b, _ = _dr_parts(ranks_b, offsets, anchor)
        scale = group_scale(c_b - c_a, anchor.groups)
        x1 = (slope_b - slope_a) * (1.0 - p_log) * scale[query]
        x0 = -(slope_b - slope_a) * p_log * scale[query]
        values = np.column_stack([m_a + scale * c_a, m_b + scale * c_b, m_b - m_a + scale * (c_b - c_a)])
        subsets = [np.ones(n_q, dtype=bool), *(stratum == index for index in range(len(result.strata)))]
        boots = _joint_bootstrap(values, scale, ranks_a, ranks_b, offsets, anchor, subsets)
        per_day = result.sessions_per_day * result.traffic_share

        def over(inside: NDArray[np.bool_], boot: NDArray[np.float64]) -> Difference:
            rows = inside[query]  # the click model's variance of the sum of the corrections, each linear in its click
            var = float((p_log[rows] * (1.0 - p_log[rows]) * (x1[rows] - x0[rows]) ** 2).sum())
            return _anchored_difference(values[inside], boot, var, per_day)

        ctr = over(subsets[0], boots[0])
        per_stratum = [
            StratumResult(s.stratum, s.n_sessions, over(subsets[index + 1], boots[index + 1]), s.interleaving, s.purchases)
            for index, s in enumerate(result.strata)
        ]
        low_n, high_n = _sessions_over(ctr)
        anchoring = Anchoring(True, anchor.source, n_q, result.ctr, low_n, high_n)
    return dataclasses.replace(result, ctr=ctr, strata=per_stratum, anchoring=anchoring)


def verdict(result: AbTestResult) -> str:
    """One line: whether the CTR difference's interval tells A from B (it holds 0, or not); a
    fitted model's difference without an interval: why there is none."""
    d = result.ctr
    anchoring = result.anchoring
    if anchoring is not None and not anchoring.anchored:
        return f"no interval (model): B - A in CTR {d.diff:+.4f} is the fitted click model's forecast; {anchoring.reason}"
    if anchoring is not None:
        where = "anchored on the log's clicks"
    else:
        where = "allowing for the click model's fit" if result.fit is not None else "under the click model"
    if not math.isfinite(d.diff):
        return "the simulation holds no session of one arm: it cannot tell A from B"
    if d.low <= 0 <= d.high:
        return (
            f"cannot tell A from B: the 95 % interval of B - A in CTR, [{d.low:+.4f}, {d.high:+.4f}], holds 0 ({where}); "
            "the log cannot say which is better"
        )
    better, worse = ("B", "A") if d.diff > 0 else ("A", "B")
    return f"{better} beats {worse}: B - A in CTR {d.diff:+.4f}, 95 % interval [{d.low:+.4f}, {d.high:+.4f}] ({where})"

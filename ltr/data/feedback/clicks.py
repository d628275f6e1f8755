"""A seeded synthetic click log: true relevance, a logged ranking and position-biased clicks.

What it holds, for a given seed (bit-identical on every run):

- the documents, features and true graded relevance (0-4) of :mod:`ltr.data.synthetic`, plus one
  extra feature ``popularity`` (standard normal, independent of relevance);
- a *logged ranking* per query, the order a production ranker showed: documents sorted by
  ``label + logger_popularity * popularity + logger_noise * N(0, 1)`` (descending). The logger
  favours popular documents, which are no more relevant than others: clicks, which follow
  position, then make popularity look relevant to a model trained on them naively. A share
  ``randomized_share`` of the sessions is shown in a uniformly random order instead (a
  randomisation experiment, from which propensities can be estimated without bias);
- ``positions``: the 0-based position of every row in its logged ranking (0 = shown first);
- clicks from a position-based click model (PBM), one session per query: a document at position
  ``p`` is examined with probability ``examination(p) = (1 / (p + 1)) ** examination_eta``, and an
  examined document with grade ``g`` is clicked with probability
  ``click_noise + (click_max - click_noise) * (2**g - 1) / (2**4 - 1)``; clicks are independent
  Bernoulli draws of ``examination * attractiveness``;
- what a clicked document's user did next (drawn from a *separate* seeded stream, after all of the
  above: adding behaviours changed no earlier array of the log), as the behaviour columns
  ``click`` (0/1), ``dwell`` (seconds on the page; 0 without a click), ``cart`` (added to the
  cart, 0/1) and ``purchase`` (0/1) of ``data.behaviours``. A click on a document of grade ``g``
  dwells ``exp(N(log(dwell_seconds) + dwell_per_grade * g, dwell_sigma))`` seconds, adds to the
  cart with probability ``cart_base + (cart_max - cart_base) * (2**g - 1) / 15`` and, once in the
  cart, is bought with probability ``purchase_base + (purchase_max - purchase_base) * g / 4``.
  Better documents hold the user longer and sell more, but noisily: a label recipe
  (:mod:`ltr.data.feedback.recipes`) built from these columns is a noisy view of the true grade.

Training on clicks sees ``positions``; evaluation uses the true grades (``ClickLog.data.labels``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ltr.config.groups.data import SyntheticClicksDataConfig
from ltr.data.ranking_data import RankingData
from ltr.data.synthetic import generate_synthetic
from ltr.errors import DataError
from ltr.metrics.offsets import row_queries

#: The top grade of the synthetic data (grades 0..4).
MAX_GRADE = 4
#: The behaviour columns of the log (``ClickLog.data.behaviours``), the inputs of label recipes.
BEHAVIOURS = ("click", "dwell", "cart", "purchase")


@dataclass(frozen=True, slots=True)
class ClickLog:
    """A click log with its ground truth.

    Parameters
    ----------
    data : RankingData
        Features (the synthetic ones plus ``popularity``), true graded relevance as ``labels``,
        and ``positions`` (0-based logged positions, one per row).
    clicks : int32 array, shape (n_rows,)
        1 where the document was clicked in its query's session, else 0.
    click_probability : float64 array, shape (n_rows,)
        The probability each click was drawn with (examination x attractiveness).
    randomized : bool array, shape (n_queries,)
        True for sessions shown in random order.
    """

    data: RankingData
    clicks: NDArray[np.int32]
    click_probability: NDArray[np.float64]
    randomized: NDArray[np.bool_]

    def click_data(self) -> RankingData:
        """The same rows with the clicks as labels (what a ranker is trained on)."""
        return dataclasses.replace(self.data, labels=self.clicks)


def examination_curve(n_positions: int, *, eta: float) -> NDArray[np.float64]:
    """Examination probability of positions ``0..n_positions-1``: ``(1 / (p + 1)) ** eta``.

    Examples
    --------
    >>> examination_curve(4, eta=1.0).round(4).tolist()
    [1.0, 0.5, 0.3333, 0.25]
    """
    if eta < 0:
        raise DataError(f"data.examination_eta must be >= 0, got {eta}")
    return np.asarray((1.0 / np.arange(1, n_positions + 1, dtype=np.float64)) ** eta)


def attractiveness(labels: NDArray[np.integer], *, click_noise: float, click_max: float) -> NDArray[np.float64]:
    """Click probability of an examined document of each grade (0 -> ``click_noise``, 4 -> ``click_max``).

    Examples
    --------
    >>> attractiveness(np.array([0, 1, 4]), click_noise=0.1, click_max=1.0).round(3).tolist()
    [0.1, 0.16, 1.0]
    """
    if not 0.0 <= click_noise <= click_max <= 1.0:
        raise DataError(
            f"need 0 <= data.click_noise <= data.click_max <= 1, got click_noise={click_noise}, "
            f"click_max={click_max}"
        )
    scale = (2.0 ** np.asarray(labels, dtype=np.float64) - 1.0) / (2.0**MAX_GRADE - 1.0)
    return np.asarray(click_noise + (click_max - click_noise) * scale)


def rank_within_queries(scores: NDArray[np.float64], offsets: NDArray[np.int64]) -> NDArray[np.int32]:
    """0-based rank of every row within its query by descending score (ties: row order).

    Examples
    --------
    >>> rank_within_queries(np.array([0.1, 0.9, 0.5, 2.0, 1.0]), np.array([0, 3, 5])).tolist()
    [2, 0, 1, 0, 1]
    """
    sizes = np.diff(offsets)
    query = row_queries(offsets)
    order = np.lexsort((-scores, query))  # stable: by query, then by descending score
    ranks = np.empty(scores.shape[0], dtype=np.int32)
    ranks[order] = np.arange(scores.shape[0]) - np.repeat(offsets[:-1], sizes)
    return ranks


def generate_click_log(cfg: SyntheticClicksDataConfig, *, seed: int) -> ClickLog:
    """Generate the click log described in the module docstring.

    Parameters
    ----------
    cfg : a :class:`ltr.config.groups.data.SyntheticClicksDataConfig` (or anything with its fields)
    seed : the seed of every random draw (the documents use ``seed`` exactly as
        :func:`ltr.data.synthetic.generate_synthetic`; the log draws from a child stream)

    Returns
    -------
    ClickLog
        ``data.labels`` the true grades, ``data.positions`` the logged positions, ``clicks``.

    Examples
    --------
    >>> from ltr.config.groups.data import SyntheticClicksDataConfig
    >>> log = generate_click_log(SyntheticClicksDataConfig(n_queries=50), seed=1)
    >>> log.data.feature_names[-1], log.clicks.shape == log.data.labels.shape
    ('popularity', True)
    """
    if not 0.0 <= cfg.randomized_share <= 1.0:
        raise DataError(f"data.randomized_share must lie in [0, 1], got {cfg.randomized_share}")
    if cfg.logger_noise < 0:
        raise DataError(f"data.logger_noise must be >= 0, got {cfg.logger_noise}")
    base = generate_synthetic(cfg, seed=seed)
    rng = np.random.default_rng([seed, 0xC11C])
    n_rows, n_queries = base.n_rows, base.n_queries
    sizes = base.group_sizes

    popularity = rng.standard_normal(n_rows)
    randomized = rng.random(n_queries) < cfg.randomized_share
    logger_score = (
        base.labels + cfg.logger_popularity * popularity + cfg.logger_noise * rng.standard_normal(n_rows)
    )
    shuffled = rng.random(n_rows)
    score = np.where(np.repeat(randomized, sizes), shuffled, logger_score)
    positions = rank_within_queries(score, base.offsets)

    exam = examination_curve(int(sizes.max()), eta=float(cfg.examination_eta))[positions]
    attract = attractiveness(base.labels, click_noise=float(cfg.click_noise), click_max=float(cfg.click_max))
    prob = exam * attract
    clicks = (rng.random(n_rows) < prob).astype(np.int32)

    features = np.hstack([base.features, popularity[:, None].astype(np.float32)])
    data = RankingData(
        features=np.ascontiguousarray(features),
        labels=base.labels,
        qids=base.qids,
        offsets=base.offsets,
        feature_names=(*base.feature_names, "popularity"),
        name=str(cfg.name),
        positions=positions,
    )
    behaviours = simulate_behaviours(base.labels, clicks, cfg, seed=seed)
    data = dataclasses.replace(data, behaviours=behaviours)
    return ClickLog(data=data, clicks=clicks, click_probability=prob, randomized=randomized)


def cart_probability(labels: NDArray[np.integer], cfg: SyntheticClicksDataConfig) -> NDArray[np.float64]:
    """Probability that a click on a document of each grade adds it to the cart.

    Examples
    --------
    >>> from ltr.config.groups.data import SyntheticClicksDataConfig
    >>> cart_probability(np.array([0, 4]), SyntheticClicksDataConfig(cart_base=0.01, cart_max=0.5)).tolist()
    [0.01, 0.5]
    """
    if not 0.0 <= cfg.cart_base <= cfg.cart_max <= 1.0:
        raise DataError(f"need 0 <= data.cart_base <= data.cart_max <= 1, got {cfg.cart_base}, {cfg.cart_max}")
    scale = (2.0 ** np.asarray(labels, dtype=np.float64) - 1.0) / (2.0**MAX_GRADE - 1.0)
    return np.asarray(cfg.cart_base + (cfg.cart_max - cfg.cart_base) * scale)


def purchase_probability(labels: NDArray[np.integer], cfg: SyntheticClicksDataConfig) -> NDArray[np.float64]:
    """Probability that a document of each grade, once in the cart, is bought.

    Examples
    --------
    >>> from ltr.config.groups.data import SyntheticClicksDataConfig
    >>> purchase_probability(np.array([0, 2, 4]), SyntheticClicksDataConfig(purchase_base=0.1, purchase_max=0.7)).tolist()
    [0.1, 0.4, 0.7]
    """
    if not 0.0 <= cfg.purchase_base <= cfg.purchase_max <= 1.0:
        raise DataError(
            f"need 0 <= data.purchase_base <= data.purchase_max <= 1, got {cfg.purchase_base}, {cfg.purchase_max}"
        )
    return np.asarray(cfg.purchase_base + (cfg.purchase_max - cfg.purchase_base) * np.asarray(labels, dtype=np.float64) / MAX_GRADE)


def simulate_behaviours(
    labels: NDArray[np.integer], clicks: NDArray[np.integer], cfg: SyntheticClicksDataConfig, *, seed: int
) -> dict[str, NDArray[np.float64]]:
    """The behaviour columns after the clicks (``click``, ``dwell``, ``cart``, ``purchase``), as
    the module docstring says; drawn from their own stream ``default_rng([seed, 0xBE4A])``, every
    row's draws taken whether it was clicked or not (so a change of clicks moves no other row)."""
    if cfg.dwell_seconds <= 0 or cfg.dwell_sigma < 0:
        raise DataError(f"need data.dwell_seconds > 0 and data.dwell_sigma >= 0, got {cfg.dwell_seconds}, {cfg.dwell_sigma}")
    rng = np.random.default_rng([seed, 0xBE4A])
    n_rows = labels.shape[0]
    grades = np.asarray(labels, dtype=np.float64)
    clicked = np.asarray(clicks) > 0
    log_dwell = np.log(cfg.dwell_seconds) + cfg.dwell_per_grade * grades + cfg.dwell_sigma * rng.standard_normal(n_rows)
    cart = clicked & (rng.random(n_rows) < cart_probability(labels, cfg))
    purchase = cart & (rng.random(n_rows) < purchase_probability(labels, cfg))
    return {
        "click": clicked.astype(np.float64),
        "dwell": np.where(clicked, np.exp(log_dwell), 0.0),
        "cart": cart.astype(np.float64),
        "purchase": purchase.astype(np.float64),
    }


@dataclass(frozen=True, slots=True)
class OnlineCtr:
    """The click-through rate an A/B test of a ranking would see under the click model.

    ``ctr``: share of the simulated sessions with at least one click; ``ci_low``/``ci_high``: its
    95 % Wilson interval over the ``n_sessions`` sessions; ``expected``: the exact expectation
    (mean over queries of ``1 - prod(1 - examination(p) * attractiveness(grade at p))``).
    """

    ctr: float
    ci_low: float
    ci_high: float
    expected: float
    n_sessions: int


def simulate_online_ctr(
    labels: NDArray[np.integer],
    scores: NDArray[np.float64],
    offsets: NDArray[np.int64],
    *,
    eta: float,
    click_noise: float,
    click_max: float,
    sessions_per_query: int,
    seed: int,
) -> OnlineCtr:
    """Simulate ``sessions_per_query`` sessions of every query shown in the order of ``scores``.

    Each session shows the whole list (descending score, ties in row order, as
    `rank_within_queries`); a document at 0-based position ``p`` with true grade ``g`` is clicked
    with probability ``examination_curve(p, eta) * attractiveness(g)``, independently (the
    position-based model that generated the log). A session "clicks" when it has at least one
    click, so a query's sessions are one binomial draw with its exact probability of a click:
    the simulation is vectorised over queries and bit-identical for a seed. Empty queries never
    click.

    Examples
    --------
    >>> r = simulate_online_ctr(np.array([4, 0]), np.array([1.0, 0.0]), np.array([0, 2]),
    ...     eta=1.0, click_noise=0.1, click_max=1.0, sessions_per_query=10, seed=0)
    >>> r.expected, r.ctr  # grade 4 on top is always clicked
    (1.0, 1.0)
    """
    if sessions_per_query < 1:
        raise DataError(f"eval.clicks.online_sessions must be >= 1, got {sessions_per_query}")
    labels = np.asarray(labels)
    sizes = np.diff(offsets)
    n_q = sizes.shape[0]
    ranks = rank_within_queries(np.asarray(scores, dtype=np.float64), offsets)
    exam = examination_curve(int(sizes.max(initial=0)), eta=eta)
    p_click = exam[ranks] * attractiveness(labels, click_noise=click_noise, click_max=click_max)
    with np.errstate(divide="ignore"):
        log_miss = np.log1p(-np.minimum(p_click, 1.0))
    miss = np.zeros(n_q)
    full = np.flatnonzero(sizes > 0)
    if full.shape[0]:
        miss[full] = np.add.reduceat(log_miss, offsets[:-1][full]) if log_miss.shape[0] else 0.0
    p_any = np.where(sizes > 0, -np.expm1(miss), 0.0)
    rng = np.random.default_rng([seed, 0x0C7A])
    clicked = rng.binomial(sessions_per_query, p_any)
    n = n_q * sessions_per_query
    ctr = float(clicked.sum() / n) if n else 0.0
    z = 1.959963984540054
    if n:
        centre = (ctr + z * z / (2 * n)) / (1 + z * z / n)
        half = z * np.sqrt(ctr * (1 - ctr) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    else:
        centre, half = 0.0, 0.0
    return OnlineCtr(ctr, float(centre - half), float(centre + half), float(p_any.mean()) if n_q else 0.0, n)

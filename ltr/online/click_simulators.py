"""Click simulators whose truth is exact: position-based, cascade and DBN users on seeded logs.

A simulated click log is what a team's log holds (one session per query: the documents a
logging ranker showed, their 0-based positions, the clicks and purchases, the features) plus
what no real log holds: the true grades and the user model, from which any candidate ranking's
expected online metrics follow in closed form. The coverage benchmark
(``benchmarks/bench_coverage.py``) and the tests use them to check that an interval holds the
truth.

User models (:class:`UserModel`; a document of grade ``g`` in ``0..4`` has attractiveness
``a(g) = click_noise + (click_max - click_noise) * (2**g - 1) / 15``, and a click on it is a
purchase with probability ``b(g) = purchase_noise + (purchase_max - purchase_noise) * g / 4``):

- ``pbm``: the position-based model. Position ``r`` (0-based) is examined with probability
  ``e(r) = (1 / (r + 1)) ** eta``, independently of the rest; an examined document is clicked
  with probability ``a``. Per query and top ``k``: ``clicks@k = sum e(r) a(d_r)``,
  ``ctr@k = 1 - prod (1 - e(r) a(d_r))``, ``purchase_rate@k = 1 - prod (1 - e(r) a b)``.
- ``cascade``: the user scans top-down, clicks an examined document with probability ``a``,
  and after a click goes on with probability ``continuation`` (0: the classic cascade, at most
  one click); after no click always goes on.
- ``dbn``: the dynamic Bayesian network model (Chapelle and Zhang, WWW 2009): an examined
  document is clicked with probability ``a``; a click satisfies with probability ``s(g) =
  sat_noise + (sat_max - sat_noise) * g / 4``, which ends the session; otherwise the user goes on
  with probability ``gamma``.

The two sequential models are one recursion: at an examined position the user goes on with
probability ``c1(d)`` after a click and ``c0`` after none (cascade: ``c1 = continuation``,
``c0 = 1``; DBN: ``c1 = gamma (1 - s(d))``, ``c0 = gamma``), the continuation independent of
the purchase. With ``P_r`` the product over the positions above ``r`` (the prefix):
``P(examined r) = prod (a c1 + (1 - a) c0)``, ``clicks@k = sum_r P(examined r) a_r``;
``ctr@k = sum_r a_r prod (1 - a) c0`` (the first click at ``r``);
``purchase_rate@k = sum_r a_r b_r prod (a (1 - b) c1 + (1 - a) c0)`` (the first purchase at ``r``).

Everything is numpy over flat arrays with query offsets (rows ``offsets[q]:offsets[q + 1]`` are
query ``q``'s); ranks are 0-based within each query (:func:`ltr.data.feedback.clicks.rank_within_queries`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ltr.data.feedback.clicks import rank_within_queries
from ltr.data.ranking_data import RankingData
from ltr.metrics.offsets import row_queries

#: The user models of :class:`UserModel`.
KINDS = ("pbm", "cascade", "dbn")
#: The top grade (grades ``0..MAX_GRADE``).
MAX_GRADE = 4
#: The share of each grade 0..4 among the simulated documents.
GRADE_SHARES = (0.45, 0.25, 0.15, 0.10, 0.05)


@dataclass(frozen=True)
class UserModel:
    """How a simulated user examines, clicks and buys (module docstring)."""

    kind: str = "pbm"
    eta: float = 1.0
    click_noise: float = 0.05
    click_max: float = 0.9
    continuation: float = 0.0
    gamma: float = 0.9
    sat_noise: float = 0.1
    sat_max: float = 0.8
    purchase_noise: float = 0.02
    purchase_max: float = 0.4

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind={self.kind!r} is not one of {', '.join(KINDS)}")
        for name in ("continuation", "gamma", "click_noise", "click_max", "sat_noise", "sat_max", "purchase_noise", "purchase_max"):
            value = float(getattr(self, name))
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name}={value:g} must lie in [0, 1]")
        if not (math.isfinite(self.eta) and self.eta >= 0):
            raise ValueError(f"eta={self.eta:g} must be a finite number >= 0")

    def attractiveness(self, grades: NDArray[np.integer]) -> NDArray[np.float64]:
        """``a(g)``: the click probability of an examined document of each grade."""
        scale = (2.0 ** np.asarray(grades, dtype=np.float64) - 1.0) / (2.0**MAX_GRADE - 1.0)
        return np.asarray(self.click_noise + (self.click_max - self.click_noise) * scale)

    def purchase(self, grades: NDArray[np.integer]) -> NDArray[np.float64]:
        """``b(g)``: the probability that a click on a document of each grade is a purchase."""
        g = np.asarray(grades, dtype=np.float64) / MAX_GRADE
        return np.asarray(self.purchase_noise + (self.purchase_max - self.purchase_noise) * g)

    def satisfaction(self, grades: NDArray[np.integer]) -> NDArray[np.float64]:
        """``s(g)`` (DBN): the probability that a click satisfies the user and ends the session."""
        g = np.asarray(grades, dtype=np.float64) / MAX_GRADE
        return np.asarray(self.sat_noise + (self.sat_max - self.sat_noise) * g)

    def examination(self, n_positions: int) -> NDArray[np.float64]:
        """``e(r) = (1 / (r + 1)) ** eta`` of 0-based positions ``0..n_positions-1`` (the PBM's curve).

        >>> UserModel(eta=1.0).examination(3).round(4).tolist()
        [1.0, 0.5, 0.3333]
        """
        return np.asarray((1.0 / np.arange(1, int(n_positions) + 1, dtype=np.float64)) ** self.eta)

    def unclicked_examination(self, n_positions: int) -> NDArray[np.float64]:
        """Per 0-based position, the probability that a user who clicked nothing above examines
        it: the PBM's ``e(r)``; the sequential models' ``c0 ** r`` (the cascade: 1 everywhere).
        The examination curve of a cascade estimator's model (a click probability ``e(r) a(d)``
        given no click above).

        >>> UserModel(kind="dbn", gamma=0.5).unclicked_examination(3).tolist()
        [1.0, 0.5, 0.25]
        """
        if self.kind == "pbm":
            return self.examination(n_positions)
        c0 = 1.0 if self.kind == "cascade" else float(self.gamma)
        return np.asarray(c0 ** np.arange(int(n_positions), dtype=np.float64))

    def continues(self, grades: NDArray[np.integer]) -> tuple[NDArray[np.float64], float]:
        """``(c1, c0)`` of the sequential models: going on after a click (per row), after none."""
        if self.kind == "cascade":
            return np.full(np.asarray(grades).shape[0], float(self.continuation)), 1.0
        if self.kind == "dbn":
            return np.asarray(self.gamma * (1.0 - self.satisfaction(grades))), float(self.gamma)
        raise ValueError("the position-based model has no continuation")


def _rank_order(ranks: NDArray[np.integer], offsets: NDArray[np.int64]) -> NDArray[np.int64]:
    """``order[offsets[q] + r]`` = the row of query ``q`` at rank ``r``."""
    sizes = np.diff(offsets)
    starts = np.repeat(offsets[:-1], sizes)
    order = np.empty(starts.shape[0], dtype=np.int64)
    order[starts + np.asarray(ranks, dtype=np.int64)] = np.arange(starts.shape[0], dtype=np.int64)
    return order


def prefix_products(factors: NDArray[np.float64], offsets: NDArray[np.int64]) -> NDArray[np.float64]:
    """Per row (rows in rank order within each query) the product of its query's factors before
    it (1 at the top), taken in logs with zeros counted apart.

    >>> prefix_products(np.array([0.5, 0.5, 0.5, 0.0, 0.3]), np.array([0, 3, 5])).round(12).tolist()
    [1.0, 0.5, 0.25, 1.0, 0.0]
    """
    f = np.asarray(factors, dtype=np.float64)
    sizes = np.diff(offsets)
    starts = np.repeat(offsets[:-1], sizes)
    zero = (f <= 0.0).astype(np.int64)
    logs = np.log(np.where(zero > 0, 1.0, f))
    before = np.cumsum(logs) - logs
    zeros: NDArray[np.int64] = np.cumsum(zero) - zero
    log_prod = before - before[starts] if f.shape[0] else before
    n_zero: NDArray[np.int64] = zeros - zeros[starts] if f.shape[0] else zeros
    return np.asarray(np.where(n_zero > 0, 0.0, np.exp(log_prod)), dtype=np.float64)


def _query_sums(values: NDArray[np.float64], offsets: NDArray[np.int64]) -> NDArray[np.float64]:
    sizes = np.diff(offsets)
    query = row_queries(offsets)
    return np.asarray(np.bincount(query, weights=values, minlength=sizes.shape[0]), dtype=np.float64)


def examination_probability(
    model: UserModel, grades: NDArray[np.integer], ranks: NDArray[np.integer], offsets: NDArray[np.int64]
) -> NDArray[np.float64]:
    """Per row, the exact probability that the user examines it when each query is shown in the
    order of ``ranks`` (PBM: ``e(rank)``; cascade and DBN: the product over the prefix)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    ranks = np.asarray(ranks, dtype=np.int64)
    sizes = np.diff(offsets)
    if model.kind == "pbm":
        return np.asarray(model.examination(int(sizes.max(initial=1)))[ranks], dtype=np.float64)
    order = _rank_order(ranks, offsets)
    g = np.asarray(grades)[order]
    a = model.attractiveness(g)
    c1, c0 = model.continues(g)
    out = np.empty(order.shape[0])
    out[order] = prefix_products(a * c1 + (1.0 - a) * c0, offsets)
    return out


def exact_metrics(
    model: UserModel, grades: NDArray[np.integer], scores: NDArray[np.floating], offsets: NDArray[np.int64], *, k: int | None
) -> dict[str, NDArray[np.float64]]:
    """Per query, the exact expected ``ctr`` (a click on the top ``k``), ``clicks_at_<k>`` and
    ``purchase_rate`` (a purchase on the top ``k``) of the ranking by descending ``scores`` (ties
    in row order), under ``model`` (module docstring). ``k=None``: the whole list (keys
    ``ctr``, ``clicks``, ``purchase_rate``). Average over queries for the metric of a log.

    >>> m = exact_metrics(UserModel(eta=1.0, click_noise=0.5, click_max=0.5), np.array([0, 0]),
    ...     np.array([1.0, 0.0]), np.array([0, 2]), k=2)
    >>> m["clicks_at_2"].tolist(), m["ctr"].tolist()  # 0.5 + 0.25; 1 - 0.5 * 0.75
    ([0.75], [0.625])
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    ranks = rank_within_queries(np.asarray(scores, dtype=np.float64), offsets).astype(np.int64)
    order = _rank_order(ranks, offsets)
    g = np.asarray(grades)[order]
    r = ranks[order]
    top = r < (k if k is not None else np.iinfo(np.int64).max)
    a, b = model.attractiveness(g), model.purchase(g)
    clicks_key = f"clicks_at_{k}" if k is not None else "clicks"
    if model.kind == "pbm":
        e = model.examination(int(np.diff(offsets).max(initial=1)))[r]
        p = np.where(top, e * a, 0.0)
        q = np.where(top, e * a * b, 0.0)
        with np.errstate(divide="ignore"):
            miss = _query_sums(np.log1p(-np.minimum(p, 1.0)), offsets)
            miss_buy = _query_sums(np.log1p(-np.minimum(q, 1.0)), offsets)
        return {"ctr": -np.expm1(miss), clicks_key: _query_sums(p, offsets), "purchase_rate": -np.expm1(miss_buy)}
    c1, c0 = model.continues(g)
    examined = prefix_products(a * c1 + (1.0 - a) * c0, offsets)
    no_click = prefix_products((1.0 - a) * c0, offsets)
    no_buy = prefix_products(a * (1.0 - b) * c1 + (1.0 - a) * c0, offsets)
    return {
        "ctr": _query_sums(np.where(top, no_click * a, 0.0), offsets),
        clicks_key: _query_sums(np.where(top, examined * a, 0.0), offsets),
        "purchase_rate": _query_sums(np.where(top, no_buy * a * b, 0.0), offsets),
    }


def simulate_sessions(
    model: UserModel, grades: NDArray[np.integer], ranks: NDArray[np.integer], offsets: NDArray[np.int64], rng: np.random.Generator
) -> tuple[NDArray[np.int32], NDArray[np.int32]]:
    """One session per query shown in the order of ``ranks``: per row, the click and the
    purchase (0/1), drawn from ``rng`` (three uniforms per row, in rank order)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    ranks = np.asarray(ranks, dtype=np.int64)
    order = _rank_order(ranks, offsets)
    g = np.asarray(grades)[order]
    n = order.shape[0]
    u_click, u_go, u_buy = rng.random(n), rng.random(n), rng.random(n)
    a = model.attractiveness(g)
    if model.kind == "pbm":
        clicked = u_click < model.examination(int(np.diff(offsets).max(initial=1)))[ranks[order]] * a
    else:
        c1, c0 = model.continues(g)
        attracted = u_click < a
        stops = ~np.where(attracted, u_go < c1, u_go < c0)
        sizes = np.diff(offsets)
        starts = np.repeat(offsets[:-1], sizes)
        before = np.cumsum(stops) - stops
        examined = (before - before[starts] == 0) if n else np.zeros(0, dtype=bool)
        clicked = attracted & examined
    bought = clicked & (u_buy < model.purchase(g))
    clicks, purchases = np.empty(n, dtype=np.int32), np.empty(n, dtype=np.int32)
    clicks[order], purchases[order] = clicked, bought
    return clicks, purchases


@dataclass(frozen=True)
class LogSpec:
    """The shape of a simulated log.

    ``list_lengths``: each query's list length is uniform in ``[low, high]``; ``logger_noise``:
    the logging ranker sorts by ``grade + logger_noise * N(0, 1)`` (None: uniformly at random);
    ``shuffled_share``: the share of sessions shown in a uniformly random order instead;
    ``nan_share``: the share of feature cells that are NaN."""

    n_queries: int = 1000
    list_lengths: tuple[int, int] = (4, 20)
    n_features: int = 5
    nan_share: float = 0.0
    logger_noise: float | None = 1.0
    shuffled_share: float = 0.0
    model: UserModel = field(default_factory=UserModel)

    def __post_init__(self) -> None:
        low, high = self.list_lengths
        if not 1 <= low <= high:
            raise ValueError(f"list_lengths={self.list_lengths} must satisfy 1 <= low <= high")
        if self.n_queries < 1 or self.n_features < 2:
            raise ValueError("a log needs at least 1 query and 2 features")
        if not (0 <= self.nan_share < 1 and 0 <= self.shuffled_share <= 1):
            raise ValueError("nan_share must lie in [0, 1), shuffled_share in [0, 1]")
        if self.logger_noise is not None and not self.logger_noise >= 0:
            raise ValueError(f"logger_noise={self.logger_noise} must be >= 0 (None: a random logger)")


@dataclass(frozen=True)
class SimulatedLog:
    """A simulated click log and its truth (rows grouped by query, ``offsets``).

    ``positions``: the logged 0-based positions; ``clicks`` / ``purchases``: 0/1 per row;
    ``features``: float64 (n_rows, n_features), NaN cells kept; ``grades``: the true grades;
    ``shuffled``: per query, shown in a random order; ``query_ids`` / ``doc_ids``: text ids."""

    spec: LogSpec
    offsets: NDArray[np.int64]
    positions: NDArray[np.int64]
    clicks: NDArray[np.int32]
    purchases: NDArray[np.int32]
    features: NDArray[np.float64]
    grades: NDArray[np.int32]
    shuffled: NDArray[np.bool_]
    query_ids: NDArray[np.object_]
    doc_ids: NDArray[np.object_]

    @property
    def model(self) -> UserModel:
        return self.spec.model

    @property
    def n_queries(self) -> int:
        return int(self.offsets.shape[0] - 1)

    @property
    def query_index(self) -> NDArray[np.int64]:
        """Each row's query index ``0..n_queries-1``."""
        return row_queries(self.offsets)

    def frame(self) -> pd.DataFrame:
        """The log as a user's table: ``query``, ``doc_id``, ``position`` (0-based), ``click``,
        ``purchase``, ``f0..f{n-1}`` (NaN kept) and ``label`` (the true grade)."""
        out = pd.DataFrame({
            "query": self.query_ids[self.query_index], "doc_id": self.doc_ids, "position": self.positions,
            "click": self.clicks, "purchase": self.purchases,
        })  # fmt: skip
        for j in range(self.features.shape[1]):
            out[f"f{j}"] = self.features[:, j]
        out["label"] = self.grades
        return out

    def ranking_data(self, queries: NDArray[np.integer] | None = None, *, name: str = "simulated") -> RankingData:
        """The rows of ``queries`` (indices, default all) as a split of a click log: true grades
        as labels, the logged positions, behaviours ``click`` and ``purchase``, doc ids."""
        q = np.arange(self.n_queries) if queries is None else np.asarray(queries, dtype=np.int64)
        sizes = np.diff(self.offsets)[q]
        rows = np.repeat(self.offsets[:-1][q], sizes) + (np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes))
        return RankingData(
            features=np.ascontiguousarray(self.features[rows], dtype=np.float32),
            labels=self.grades[rows].astype(np.int32),
            qids=q.astype(np.int64),
            offsets=np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
            feature_names=tuple(f"f{j}" for j in range(self.features.shape[1])),
            name=name,
            positions=self.positions[rows].astype(np.int32),
            behaviours={"click": self.clicks[rows].astype(np.float64), "purchase": self.purchases[rows].astype(np.float64)},
            doc_ids=self.doc_ids[rows],
        )

    def exact(self, scores: NDArray[np.floating], *, k: int | None) -> dict[str, NDArray[np.float64]]:
        """Per query, the exact metrics of the ranking by ``scores`` (:func:`exact_metrics`)."""
        return exact_metrics(self.model, self.grades, scores, self.offsets, k=k)

    def true_propensities(self, n_positions: int) -> NDArray[np.float64] | None:
        """The PBM's examination of positions ``1..n_positions`` relative to position 1, the
        curve a propensity estimate targets; None for the cascade and DBN models (no such curve)."""
        return self.model.examination(n_positions) if self.model.kind == "pbm" else None

    def logged_examination(self, n_positions: int) -> NDArray[np.float64]:
        """Per position ``1..n_positions``, the mean exact examination probability of the rows the
        log showed there, relative to position 1 (the PBM: its curve; the sequential models: what
        a position-based estimate would hope to find); NaN at a position no row reached."""
        e = examination_probability(self.model, self.grades, self.positions, self.offsets)
        keep = self.positions < n_positions
        total = np.bincount(self.positions[keep], weights=e[keep], minlength=n_positions)[:n_positions]
        count = np.bincount(self.positions[keep], minlength=n_positions)[:n_positions]
        mean = np.divide(total, count, out=np.full(n_positions, np.nan), where=count > 0)
        return np.asarray(mean / mean[0], dtype=np.float64)


def simulate_log(spec: LogSpec, *, seed: int) -> SimulatedLog:
    """A seeded log of ``spec`` (bit-identical for a seed).

    Features: ``f0 = grade + N(0, 1)``, ``f1 = grade / 2 + N(0, 1.5)``, ``f2`` a popularity
    ``N(0, 1)`` the logger also favours (``0.5 *`` it in its score), the rest ``N(0, 1)`` noise;
    a share ``nan_share`` of all cells then NaN. Grades drawn with :data:`GRADE_SHARES`.

    >>> log = simulate_log(LogSpec(n_queries=3, list_lengths=(2, 2)), seed=0)
    >>> log.offsets.tolist(), sorted(log.positions[:2].tolist())
    ([0, 2, 4, 6], [0, 1])
    """
    rng = np.random.default_rng([seed, 0x5105])
    low, high = spec.list_lengths
    sizes = rng.integers(low, high + 1, spec.n_queries).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(offsets[-1])
    grades = rng.choice(MAX_GRADE + 1, size=n, p=np.asarray(GRADE_SHARES)).astype(np.int32)
    features = rng.standard_normal((n, spec.n_features))
    features[:, 0] += grades
    features[:, 1] = grades / 2.0 + 1.5 * features[:, 1]
    if spec.nan_share > 0:
        features[rng.random((n, spec.n_features)) < spec.nan_share] = np.nan
    popularity = np.nan_to_num(features[:, 2]) if spec.n_features > 2 else np.zeros(n)
    shuffled = rng.random(spec.n_queries) < spec.shuffled_share
    noise = rng.standard_normal(n)
    uniform = rng.random(n)
    if spec.logger_noise is None:
        logger = uniform
    else:
        logger = grades + 0.5 * popularity + spec.logger_noise * noise
    score = np.where(np.repeat(shuffled, sizes), uniform, logger)
    positions = rank_within_queries(score, offsets).astype(np.int64)
    clicks, purchases = simulate_sessions(spec.model, grades, positions, offsets, np.random.default_rng([seed, 0xC11C]))
    query_ids = np.array([f"q{q}" for q in range(spec.n_queries)], dtype=object)
    within = np.arange(n) - np.repeat(offsets[:-1], sizes)
    doc_ids = np.char.add("d", within.astype(str)).astype(object)
    return SimulatedLog(spec, offsets, positions, clicks, purchases, features, grades, shuffled, query_ids, doc_ids)


def candidate_scores(log: SimulatedLog, *, noise: float, seed: int, salt: int = 0) -> NDArray[np.float64]:
    """A candidate ranking of the log's rows: ``grade + noise * N(0, 1)`` (seeded by ``seed``, ``salt``)."""
    rng = np.random.default_rng([seed, 0xCA4D, salt])
    return np.asarray(log.grades + noise * rng.standard_normal(log.grades.shape[0]), dtype=np.float64)

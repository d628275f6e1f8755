"""Two label sets of the same (query, document) pairs, side by side: a label audit.

When the labelling changes (a new vendor, new guidelines), NDCG can move although the model did
not. `label_agreement` measures how far the labels moved: exact agreement, Cohen's kappa with
quadratic weights (scikit-learn's ``cohen_kappa_score(weights="quadratic")``: a shift of two
grades weighs four times a shift of one), the confusion matrix and the shift per grade.
`ndcg_under_both` scores one fixed ranking under each label set, overall and per list-length
stratum: "same ranking, the labels moved nDCG@10 by X".

Examples
--------
>>> a = label_agreement(np.array([0, 1, 2, 2]), np.array([0, 1, 2, 3]))
>>> a.exact, a.confusion.tolist()
(0.75, [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 1], [0, 0, 0, 0]])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.metrics import cohen_kappa_score

from ltr.metrics.conventions import MetricConventions
from ltr.metrics.strata import Strata
from ltr.metrics.summary import summarize
from ltr.metrics.table import per_query_table

_DEFAULT_CONVENTIONS = MetricConventions()
_DEFAULT_STRATA = Strata()


@dataclass(frozen=True, slots=True)
class LabelAgreement:
    """How two labellings of the same pairs agree.

    Attributes
    ----------
    n_pairs : number of (query, document) pairs
    exact : share of pairs with the same label
    kappa : Cohen's kappa, quadratic weights (1: identical; 0: chance level); NaN when both
        sides use a single grade (scikit-learn's 0/0)
    grades : the grades of either side, ascending (rows and columns of ``confusion``)
    confusion : int64, (len(grades), len(grades)); ``[i, j]`` pairs with grade ``grades[i]``
        in A and ``grades[j]`` in B
    shift : per grade of A: pairs, mean of ``B - A``, shares moved down / kept / moved up
    """

    n_pairs: int
    exact: float
    kappa: float
    grades: tuple[int, ...]
    confusion: NDArray[np.int64]
    shift: dict[int, dict[str, float]]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "n_pairs": self.n_pairs,
            "exact_agreement": self.exact,
            "kappa_quadratic": None if np.isnan(self.kappa) else self.kappa,
            "grades": list(self.grades),
            "confusion": self.confusion.tolist(),
            "shift": {str(g): v for g, v in self.shift.items()},
        }


def label_agreement(labels_a: NDArray[np.integer], labels_b: NDArray[np.integer]) -> LabelAgreement:
    """Agreement of two label arrays of the same pairs (same order), see `LabelAgreement`."""
    a = np.asarray(labels_a, dtype=np.int64)
    b = np.asarray(labels_b, dtype=np.int64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"label sets have shapes {a.shape} and {b.shape}; give one label per pair on each side")
    if a.size == 0:
        raise ValueError("no pairs to compare")
    grades = np.union1d(a, b)
    ia = np.searchsorted(grades, a)
    ib = np.searchsorted(grades, b)
    confusion = np.zeros((grades.size, grades.size), dtype=np.int64)
    np.add.at(confusion, (ia, ib), 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = float(cohen_kappa_score(a, b, weights="quadratic")) if grades.size > 1 else float("nan")
    shift: dict[int, dict[str, float]] = {}
    for g in np.unique(a):
        d = b[a == g] - g
        shift[int(g)] = {
            "n": float(d.size),
            "mean_shift": float(d.mean()),
            "down": float(np.mean(d < 0)),
            "same": float(np.mean(d == 0)),
            "up": float(np.mean(d > 0)),
        }
    return LabelAgreement(
        n_pairs=int(a.size), exact=float(np.mean(a == b)), kappa=kappa,
        grades=tuple(int(g) for g in grades), confusion=confusion, shift=shift,
    )  # fmt: skip


def ndcg_under_both(
    qids: NDArray[Any],
    labels_a: NDArray[np.integer],
    labels_b: NDArray[np.integer],
    scores: NDArray[np.floating],
    *,
    ks: Sequence[int] = (10,),
    conventions: MetricConventions = _DEFAULT_CONVENTIONS,
    strata: Strata = _DEFAULT_STRATA,
) -> dict[str, dict[str, float]]:
    """The summary (:func:`ltr.metrics.summarize` keys) of one ranking under each label set and
    their difference: ``{"a": ..., "b": ..., "b_minus_a": ...}`` (the difference for every
    measure key both sides have; counts are left out of it).

    Rows may come in any order; they are grouped by ``qid`` (stable), so each query's rows are
    ranked by ``scores`` and its IDCG comes from its own labels on each side.
    """
    q = np.asarray(qids)
    order = np.argsort(q, kind="stable")
    q_sorted = q[order]
    starts = np.flatnonzero(np.r_[True, q_sorted[1:] != q_sorted[:-1]])
    offsets = np.r_[starts, q_sorted.shape[0]].astype(np.int64)
    s = np.asarray(scores, dtype=np.float64)[order]
    out: dict[str, dict[str, float]] = {}
    for side, labels in (("a", labels_a), ("b", labels_b)):
        table = per_query_table(
            np.asarray(labels, dtype=np.int64)[order], s, offsets, q_sorted[starts],
            ks=ks, conventions=conventions, strata=strata,
        )  # fmt: skip
        out[side] = summarize(table, strata=strata)
    out["b_minus_a"] = {
        key: out["b"][key] - out["a"][key]
        for key in out["a"]
        if key in out["b"] and not key.startswith(("n_queries", "no_result_rate", "n_skipped"))
    }
    return out


def sample_queries(qids: NDArray[Any], n: int, *, seed: int) -> NDArray[np.bool_]:
    """Rows of ``n`` queries drawn without replacement (seeded); all rows when ``n`` >= the
    number of queries.

    Examples
    --------
    >>> int(sample_queries(np.array([1, 1, 2, 3, 3, 3]), 2, seed=0).sum()) in (3, 4, 5)
    True
    """
    q = np.asarray(qids)
    unique = np.unique(q)
    if n >= unique.size:
        return np.ones(q.shape[0], dtype=bool)
    chosen = np.random.default_rng(seed).choice(unique, size=n, replace=False)
    mask: NDArray[np.bool_] = np.isin(q, chosen)
    return mask

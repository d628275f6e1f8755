"""One query's explanation: its documents in the run's order with each one's top features, and
why one document is above another.

A document is named as ``ltr predict --trec-run`` names it: its document id when the data has
one, else ``{qid}-{i}`` with ``i`` its 0-based place in the query in the input.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ltr.errors import LtrUserError


@dataclass(frozen=True)
class QueryRows:
    """The rows of one query, in input order: ``docs`` (names), ``labels`` (None: unlabelled
    data), the model's ``scores``, the run's final-order scores ``ranked_by`` (the model's scores,
    or the re-ranked order), ``contributions`` and ``centred`` (shape ``(n_docs, n_features)``)."""

    qid: str
    docs: tuple[str, ...]
    labels: NDArray[np.int32] | None
    scores: NDArray[np.float64]
    ranked_by: NDArray[np.float64]
    contributions: NDArray[np.float64]
    centred: NDArray[np.float64]
    feature_names: tuple[str, ...]

    @property
    def order(self) -> NDArray[np.int64]:
        """Row indices in the run's order (ties: input order, as the TREC run lists them)."""
        return np.lexsort((np.arange(len(self.docs)), -self.ranked_by)).astype(np.int64)

    def index(self, doc: str) -> int:
        """The row of document ``doc``; one line naming the query's documents when none is."""
        try:
            return self.docs.index(doc)
        except ValueError:
            shown = ", ".join(self.docs[:5]) + (", ..." if len(self.docs) > 5 else "")
            raise LtrUserError(f"--pair: query {self.qid} has no document {doc!r}; its documents: {shown}") from None

    def top_features(self, row: int, top: int) -> list[tuple[str, float]]:
        """The ``top`` features that move document ``row`` most within its list (largest
        absolute centred contribution first; ties: model order), with their centred values."""
        values = self.centred[row]
        picked = np.argsort(-np.abs(values), kind="stable")[:top]
        return [(self.feature_names[j], float(values[j])) for j in picked]


@dataclass(frozen=True)
class PairView:
    """Why ``above`` is ranked relative to ``below`` by the model: ``differences[j]`` is feature
    ``j``'s contribution to ``above`` minus to ``below``; they sum to ``score_difference``
    (``expected_value`` cancels)."""

    first: str
    second: str
    first_rank: int
    second_rank: int
    first_score: float
    second_score: float
    differences: NDArray[np.float64]
    feature_names: tuple[str, ...]

    @property
    def score_difference(self) -> float:
        return self.first_score - self.second_score

    def top(self, n: int) -> tuple[list[tuple[str, float]], float]:
        """The ``n`` features of largest absolute difference (ties: model order) and the sum of
        the others' differences: together they sum to the features' total."""
        picked = np.argsort(-np.abs(self.differences), kind="stable")[:n]
        rest = np.ones(self.differences.size, dtype=bool)
        rest[picked] = False
        return [(self.feature_names[j], float(self.differences[j])) for j in picked], float(self.differences[rest].sum())


def pair_view(rows: QueryRows, first: str, second: str) -> PairView:
    """The :class:`PairView` of documents ``first`` and ``second`` of ``rows``' query."""
    if first == second:
        raise LtrUserError(f"--pair names document {first!r} twice; give two documents of query {rows.qid}")
    i, j = rows.index(first), rows.index(second)
    rank = np.empty(len(rows.docs), dtype=np.int64)
    rank[rows.order] = np.arange(1, len(rows.docs) + 1)
    return PairView(
        first, second, int(rank[i]), int(rank[j]), float(rows.scores[i]), float(rows.scores[j]),
        rows.contributions[i] - rows.contributions[j], rows.feature_names,
    )  # fmt: skip


def doc_names(qid: str, doc_ids: Sequence[str] | None, n: int) -> tuple[str, ...]:
    """The names of a query's ``n`` documents (module docstring)."""
    if doc_ids is not None:
        return tuple(str(d) for d in doc_ids)
    return tuple(f"{qid}-{i}" for i in range(n))

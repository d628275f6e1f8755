"""Feature importance of a ranking: what moves documents within their lists, overall and per
list-length stratum.

The importance of feature ``j`` over a set of queries is the **mean over queries** of each
query's mean absolute centred contribution of ``j`` (:func:`ltr.explain.contributions.query_importance`):
every query counts once, as in the mean nDCG, so the overall value is the mean of the strata's
values weighted by their query counts (as every metric of a run is). A one-document query
counts with 0: nothing moves a document that has no neighbour. Strata are the run's
(:class:`ltr.metrics.strata.Strata`, by the number of documents of the query in the data).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ltr.explain.contributions import query_importance
from ltr.metrics.strata import Strata

#: The key and label of the group of every query (beside the strata's ``len_1-10`` ...).
ALL = "all"
#: What the importance values are, as ``importance.json`` says it.
MEASURE = (
    "mean over queries of the mean absolute within-query centred contribution to the model's score "
    "(exact TreeSHAP, LightGBM pred_contrib)"
)


@dataclass(frozen=True)
class Group:
    """The importance of every feature over one group of queries (``all``, or a stratum)."""

    key: str
    label: str
    n_queries: int
    n_documents: int
    values: NDArray[np.float64]  # shape (n_features,)


@dataclass(frozen=True)
class Importance:
    """Feature importance overall (``groups[0]``, key ``all``) and per stratum, in the order of
    the run's strata; ``feature_names`` gives the columns of every group's ``values``."""

    feature_names: tuple[str, ...]
    groups: tuple[Group, ...]
    meta: Mapping[str, Any] = field(default_factory=dict)

    @property
    def overall(self) -> Group:
        return self.groups[0]

    def group(self, key: str) -> Group | None:
        return next((g for g in self.groups if g.key == key), None)

    def ranked(self, key: str = ALL) -> list[str]:
        """The feature names by importance in group ``key``, largest first (ties: model order)."""
        group = self.group(key) or self.overall
        return [self.feature_names[i] for i in np.argsort(-group.values, kind="stable")]

    def to_dict(self) -> dict[str, Any]:
        """The JSON of ``explain/importance.json``: the measure, the features by overall
        importance, and per group (``all``, then each stratum) its counts and values by feature."""
        return {
            "measure": MEASURE,
            **dict(self.meta),
            "features": self.ranked(),
            "groups": [
                {
                    "key": g.key, "label": g.label, "n_queries": g.n_queries, "n_documents": g.n_documents,
                    "importance": {name: float(v) for name, v in zip(self.feature_names, g.values.tolist(), strict=True)},
                }
                for g in self.groups
            ],
        }  # fmt: skip

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Importance:
        """The importance :meth:`to_dict` wrote (a run's ``explain/importance.json``)."""
        groups = list(data["groups"])
        names = tuple(str(n) for n in groups[0]["importance"])
        built = tuple(
            Group(
                str(g["key"]), str(g["label"]), int(g["n_queries"]), int(g["n_documents"]),
                np.array([float(g["importance"].get(n, 0.0)) for n in names], dtype=np.float64),
            )
            for g in groups
        )  # fmt: skip
        meta = {k: v for k, v in data.items() if k not in ("measure", "features", "groups")}
        return cls(names, built, meta)


class ImportanceSums:
    """Sums of per-query importance per stratum, added batch by batch (whole queries each);
    :meth:`result` gives the :class:`Importance` of everything added."""

    def __init__(self, feature_names: Sequence[str], strata: Strata) -> None:
        self.feature_names = tuple(feature_names)
        self.strata = strata
        self.sums = np.zeros((strata.n_strata, len(self.feature_names)), dtype=np.float64)
        self.n_queries = np.zeros(strata.n_strata, dtype=np.int64)
        self.n_documents = np.zeros(strata.n_strata, dtype=np.int64)

    def add(self, centred: NDArray[np.float64], offsets: NDArray[np.int64], *, overwrite: bool = False) -> None:
        """Add the queries of one batch: ``centred`` contributions (shape ``(n_rows,
        n_features)``) and their ``offsets``; ``overwrite``: ``centred`` may be overwritten
        (its absolute values, in place)."""
        per_query = query_importance(centred, offsets, overwrite=overwrite)
        sizes = np.diff(offsets)
        stratum = self.strata.assign(sizes)
        for s in range(self.strata.n_strata):  # a handful of strata, not queries
            member = stratum == s
            self.sums[s] += per_query[member].sum(axis=0)
            self.n_queries[s] += int(member.sum())
            self.n_documents[s] += int(sizes[member].sum())

    def result(self, meta: Mapping[str, Any] | None = None) -> Importance:
        """The importance of the queries added (a group without queries has values 0)."""

        def mean(sums: NDArray[np.float64], n: int) -> NDArray[np.float64]:
            return sums / n if n else np.zeros_like(sums)

        total = int(self.n_queries.sum())
        groups = [Group(ALL, ALL, total, int(self.n_documents.sum()), mean(self.sums.sum(axis=0), total))]
        for s, (key, label) in enumerate(zip(self.strata.keys, self.strata.labels, strict=True)):
            groups.append(Group(key, label, int(self.n_queries[s]), int(self.n_documents[s]), mean(self.sums[s], int(self.n_queries[s]))))
        return Importance(self.feature_names, tuple(groups), dict(meta or {}))

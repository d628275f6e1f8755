"""What changed between two runs' explanations: per group (every query, then each list-length
stratum), the features whose importance differs most between a baseline and another run.

``delta`` is the other run's importance minus the baseline's (:mod:`ltr.explain.importance`);
features are ranked by ``|delta|`` (ties: the baseline's feature order). A feature one model
does not have counts with importance 0 in it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ltr.explain.importance import Importance


@dataclass(frozen=True)
class DifferenceRow:
    group: str  # the group's label: all, 1-10, ...
    feature: str
    baseline: float
    other: float

    @property
    def delta(self) -> float:
        return self.other - self.baseline


@dataclass(frozen=True)
class ImportanceDifference:
    """The ``top`` features of largest importance change per group, ``other`` against ``baseline``."""

    baseline: str
    other: str
    rows: tuple[DifferenceRow, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "other": self.other,
            "rows": [
                {"group": r.group, "feature": r.feature, "baseline": r.baseline, "other": r.other, "delta": r.delta}
                for r in self.rows
            ],
        }

    def to_markdown(self) -> str:
        """A markdown table: group, feature, the two importances, the change."""
        lines = [
            f"### Feature importance: {self.other} vs {self.baseline} (mean |centred contribution|)",
            "",
            f"| stratum | feature | {self.baseline} | {self.other} | delta |",
            "|---|---|---:|---:|---:|",
        ]
        lines += [f"| {r.group} | {r.feature} | {r.baseline:.4f} | {r.other:.4f} | {r.delta:+.4f} |" for r in self.rows]
        return "\n".join(lines) + "\n"


def importance_difference(
    baseline: Importance, other: Importance, *, baseline_label: str, other_label: str, top: int = 5
) -> ImportanceDifference:
    """Per group of ``baseline`` (``all``, then its strata), the ``top`` features of largest
    absolute importance change from ``baseline`` to ``other``."""
    names = list(dict.fromkeys([*baseline.feature_names, *other.feature_names]))
    rows: list[DifferenceRow] = []
    for group in baseline.groups:
        theirs = other.group(group.key)
        a = _values(baseline, group.key, names)
        b = _values(other, group.key, names) if theirs is not None else np.zeros(len(names))
        for j in np.argsort(-np.abs(b - a), kind="stable")[:top]:
            rows.append(DifferenceRow(group.label, names[j], float(a[j]), float(b[j])))
    return ImportanceDifference(baseline_label, other_label, tuple(rows))


def _values(importance: Importance, key: str, names: list[str]) -> np.ndarray[Any, np.dtype[np.float64]]:
    group = importance.group(key)
    by_name = dict(zip(importance.feature_names, [] if group is None else group.values.tolist(), strict=False))
    return np.array([by_name.get(n, 0.0) for n in names], dtype=np.float64)

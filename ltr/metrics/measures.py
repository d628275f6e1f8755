"""Measures as small values: a display name (``nDCG@10``) and a key (``ndcg_at_10``).

The one vocabulary of metric names: tables, MLflow keys, ``ltr evaluate``, ``ltr compare`` and
reports all name a measure through `Measure`. Names follow ir_measures: ``nDCG@k``, ``ERR@k``,
``P@k``, ``DCG@k``, ``IDCG@k``, ``RR`` (reciprocal rank of the first relevant row; its mean
over queries is what other tools call MRR) and ``RR@k`` (the same, 0 when that row ranks below
``k``: ir_measures' ``RR@k``, ranx's ``mrr@k``).
"""

from __future__ import annotations

from dataclasses import dataclass

_DISPLAY = {
    "ndcg": "nDCG", "dcg": "DCG", "idcg": "IDCG", "err": "ERR", "p": "P", "rr": "RR",
    "ild": "ILD", "coverage": "Coverage", "alpha_ndcg": "alpha-nDCG", "tail": "Tail exposure",
}  # fmt: skip
#: Measures of the order's diversity (:mod:`ltr.metrics.diversity`), columns of runs that re-rank.
DIVERSITY_MEASURES = ("ild", "coverage", "alpha_ndcg")


@dataclass(frozen=True, slots=True)
class Measure:
    """One column of the per-query table.

    Examples
    --------
    >>> Measure("ndcg", 10).key, Measure("ndcg", 10).display
    ('ndcg_at_10', 'nDCG@10')
    >>> Measure.from_key("rr").display
    'RR'
    """

    name: str
    k: int | None = None

    def __post_init__(self) -> None:
        if self.name not in _DISPLAY:
            raise ValueError(f"measure {self.name!r} is not one of {', '.join(_DISPLAY)}")
        if self.k is None and self.name != "rr":
            raise ValueError(f"measure {self.name!r} needs a k")

    @property
    def key(self) -> str:
        """Column name and MLflow key (``@`` is not allowed there)."""
        return self.name if self.k is None else f"{self.name}_at_{self.k}"

    @property
    def display(self) -> str:
        return _DISPLAY[self.name] if self.k is None else f"{_DISPLAY[self.name]}@{self.k}"

    @classmethod
    def from_key(cls, key: str) -> Measure:
        """Parse ``ndcg_at_10`` / ``rr`` back into a `Measure`."""
        name, sep, k = key.partition("_at_")
        if not sep:
            return cls(name)
        if not k.isdigit():
            raise ValueError(f"{key!r} is not a measure key like 'ndcg_at_10'")
        return cls(name, int(k))


def table_measures(ks: list[int] | tuple[int, ...]) -> list[Measure]:
    """The measures of a per-query table built with ``ks``, in a reading order for reports."""
    out: list[Measure] = []
    for name in ("ndcg", "err", "p", "rr", "dcg", "idcg"):
        out += [Measure(name, k) for k in ks]
    return [*out, Measure("rr")]

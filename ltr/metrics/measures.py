"""Measures as small values: a display name (``nDCG@10``) and a key (``ndcg_at_10``).

The one vocabulary of metric names: tables, MLflow keys, ``ltr evaluate``, ``ltr compare`` and
reports all name a measure through `Measure`. Names follow ir_measures: ``nDCG@k``, ``ERR@k``,
``P@k``, ``DCG@k``, ``IDCG@k``, ``RR`` (reciprocal rank of the first relevant row; its mean
over queries is what other tools call MRR) and ``RR@k`` (the same, 0 when that row ranks below
``k``: ir_measures' ``RR@k``, ranx's ``mrr@k``), ``R@k`` (recall: relevant rows in the top
``k`` over the query's relevant judgments; trec_eval's ``recall_k``), ``AP@k`` (average precision
cut at ``k``, divided by all relevant judgments as trec_eval's ``map_cut_k``) and ``AP`` (over the
whole list; trec_eval's ``map`` per query, its mean is MAP).
"""

from __future__ import annotations

from dataclasses import dataclass

_DISPLAY = {
    "ndcg": "nDCG", "dcg": "DCG", "idcg": "IDCG", "err": "ERR", "p": "P", "rr": "RR",
    "recall": "R", "ap": "AP", "ild": "ILD", "coverage": "Coverage", "alpha_ndcg": "alpha-nDCG", "tail": "Tail exposure",
}  # fmt: skip
#: Measures defined without a cut-off too (over the whole list).
UNCUT_MEASURES = ("rr", "ap")
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
        if self.k is None and self.name not in UNCUT_MEASURES:
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


#: trec_eval's name of a measure at cut-off ``{k}`` (the ``trec_eval`` preset reproduces them).
_TREC_EVAL = {
    "ndcg": "ndcg_cut_{k}", "p": "P_{k}", "recall": "recall_{k}", "ap": "map_cut_{k}",
}  # fmt: skip
_TREC_EVAL_UNCUT = {"rr": "recip_rank", "ap": "map"}


def trec_eval_name(measure: Measure) -> str | None:
    """trec_eval's name of ``measure`` (its mean over topics), or None when it has none.

    Examples
    --------
    >>> trec_eval_name(Measure("recall", 10)), trec_eval_name(Measure("ap", 5)), trec_eval_name(Measure("ap"))
    ('recall_10', 'map_cut_5', 'map')
    """
    if measure.k is None:
        return _TREC_EVAL_UNCUT.get(measure.name)
    name = _TREC_EVAL.get(measure.name)
    return None if name is None else name.format(k=measure.k)


def table_measures(ks: list[int] | tuple[int, ...]) -> list[Measure]:
    """The measures of a per-query table built with ``ks``, in a reading order for reports."""
    out: list[Measure] = []
    for name in ("ndcg", "err", "p", "recall", "ap", "rr", "dcg", "idcg"):
        out += [Measure(name, k) for k in ks]
    return [*out, Measure("rr"), Measure("ap")]

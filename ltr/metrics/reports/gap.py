"""Why our NDCG differs from a library's own NDCG for the same scores: an exact decomposition.

Each library's ``ndcg@k`` is our NDCG under its conventions (:data:`LIBRARIES`, the presets of
:data:`ltr.metrics.PRESETS`). Going from our conventions to the library's one knob at a time
splits the difference into parts, one per knob, in this order:

- ``zero_idcg``: queries with nothing relevant (IDCG@k = 0) score as the library scores them (1)
  instead of as ours do (0, or left out of the mean);
- ``ties``: tied scores are ordered by the library's rule (LightGBM, XGBoost: input row order;
  CatBoost: the lower label first) instead of by our tie policy;
- ``gain``: the library's gain of a label (``2^label - 1``; the label itself for CatBoost and
  for XGBoost with ``ndcg_exp_gain=false``) instead of ours;
- ``discount``: the library's position discount (``1 / log2(rank + 1)`` for the three) instead
  of ours.

A part is 0 where the two conventions agree on its knob. The parts add up to the library's
value minus ours (to rounding). LightGBM's gap keeps gain and discount as one part (``gain and
discount``) and a run logs its ``zero_idcg`` and ``ties``; of XGBoost's and CatBoost's it logs
every part (:attr:`Library.logged`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ltr.metrics.conventions import PRESETS, MetricConventions
from ltr.metrics.offsets import row_queries
from ltr.metrics.table import per_query_table

#: The fields of :class:`MetricConventions` each knob sets to the library's.
KNOBS: dict[str, tuple[str, ...]] = {
    "zero_idcg": ("zero_idcg",),
    "ties": ("ties",),
    "gain": ("gain", "label_gain"),
    "discount": ("discount", "discount_base"),
}


@dataclass(frozen=True, slots=True)
class Library:
    """A library's own NDCG: its ``name`` (the metric keys' ``{name}_gap``), ``title`` (the
    notes'), ``conventions``, the ``parts`` of its gap to ours (part name -> the knobs of
    :data:`KNOBS` it sets, in order) and the parts a run logs as metrics (``logged``)."""

    name: str
    title: str
    conventions: MetricConventions
    parts: tuple[tuple[str, tuple[str, ...]], ...]
    logged: tuple[str, ...]

    def steps(self, ours: MetricConventions) -> list[MetricConventions]:
        """Ours, then ours with each part's knobs set to the library's in turn; the last is the
        library's conventions (with our ``rel_threshold``)."""
        out = [ours]
        for _, knobs in self.parts:
            fields = {name: getattr(self.conventions, name) for knob in knobs for name in KNOBS[knob]}
            out.append(replace(out[-1], **fields))
        return out


_EACH_KNOB = tuple((knob, (knob,)) for knob in KNOBS)
#: LightGBM's ``ndcg@k``: its gain and discount are one part, and a run logs zero_idcg and ties.
LIGHTGBM = Library(
    "lightgbm", "LightGBM", PRESETS["lightgbm"],
    (("zero_idcg", ("zero_idcg",)), ("ties", ("ties",)), ("gain", ("gain", "discount"))), ("zero_idcg", "ties"),
)  # fmt: skip
#: The libraries whose own NDCG a run explains (XGBoost's as with ``ndcg_exp_gain=true``: :func:`library_of`).
LIBRARIES: dict[str, Library] = {
    "lightgbm": LIGHTGBM,
    "xgboost": Library("xgboost", "XGBoost", PRESETS["xgboost"], _EACH_KNOB, tuple(KNOBS)),
    "catboost": Library("catboost", "CatBoost", PRESETS["catboost"], _EACH_KNOB, tuple(KNOBS)),
}


def library_of(name: str, params: dict[str, Any] | None = None) -> Library:
    """The :class:`Library` whose NDCG a model of library ``name`` trained with ``params`` (the
    library's parameters) reports: XGBoost's gain is the label when ``ndcg_exp_gain`` is false."""
    library = LIBRARIES[name]
    if name == "xgboost" and params is not None and str(params.get("ndcg_exp_gain", True)).lower() in ("false", "0"):
        return replace(library, conventions=replace(library.conventions, gain="linear"))
    return library


_TIES = {"stable": "keeps row order", "pessimistic": "puts the lower label first"}
_ZERO = {"one": "1", "zero": "0", "skip": "as missing"}


@dataclass(frozen=True, slots=True)
class LibraryGap:
    """Mean NDCG@k under ours (``ours``) and a library's conventions (``theirs``), and the parts
    of the difference (``parts``: part name -> its share of theirs minus ours, in
    :attr:`Library.parts` order)."""

    library: Library
    k: int
    ours: float
    theirs: float
    parts: dict[str, float]
    n_queries: int
    n_zero_idcg: int
    n_single_doc: int
    n_tied_queries: int

    @property
    def from_zero_idcg(self) -> float:
        return self.parts["zero_idcg"]

    @property
    def from_ties(self) -> float:
        return self.parts["ties"]

    @property
    def from_gain(self) -> float:
        return self.parts["gain"]

    def metrics(self, split: str) -> dict[str, float]:
        """The logged parts, ``{split}/{library}_gap/ndcg_at_{k}/{part}``."""
        return {f"{split}/{self.library.name}_gap/ndcg_at_{self.k}/{part}": self.parts[part] for part in self.library.logged}

    def explain(self, split: str) -> str:
        title, theirs = self.library.title, self.library.conventions
        text = (
            f"{split} nDCG@{self.k}: ours {self.ours:.4f}, {title}'s conventions {self.theirs:.4f} "
            f"(difference {self.theirs - self.ours:+.4f}). "
            f"{self.n_zero_idcg} of {self.n_queries} queries have nothing relevant in their labels "
            f"({title} scores them {_ZERO[theirs.zero_idcg]}): {self.from_zero_idcg:+.4f}. "
            f"{self.n_tied_queries} queries have tied scores ({title} {_TIES.get(theirs.ties, theirs.ties)}): {self.from_ties:+.4f}. "
        )
        if "discount" not in self.parts:  # LightGBM's: gain and discount in one part
            text += f"Gain and discount: {self.from_gain:+.4f}. " if self.from_gain else ""
        else:
            gain = {"linear": "the label", "exp": "2^label - 1"}.get(theirs.gain, theirs.gain)
            text += f"Gain ({title}'s: {gain}): {self.from_gain:+.4f}. " if self.from_gain else ""
            text += f"Discount: {self.parts['discount']:+.4f}. " if self.parts["discount"] else ""
        return text + f"{self.n_single_doc} single-document queries score 1 under both if relevant."


#: The gap to LightGBM's NDCG is a :class:`LibraryGap` of :data:`LIGHTGBM`.
LightgbmGap = LibraryGap


def gap_parts(
    labels: NDArray[np.integer],
    scores: NDArray[np.float64],
    offsets: NDArray[np.int64],
    qids: NDArray[np.generic],
    k: int,
    ours: MetricConventions,
    library: Library = LIGHTGBM,
) -> pd.DataFrame:
    """Per query what :func:`library_gap` needs: NDCG@k under each of :meth:`Library.steps`
    (``step_0``: ours, ..., ``step_n``: the library's), whether IDCG@k under the library's
    conventions is 0, whether the list has one row and whether it has tied scores.

    Queries are independent, so the parts of a split (e.g. Dask partitions) can be computed
    separately, concatenated and passed to :func:`gap_from_parts`.
    """
    col = f"ndcg_at_{k}"
    steps = library.steps(ours)
    out: dict[str, NDArray[Any]] = {}
    table: pd.DataFrame | None = None
    for i, conventions in enumerate(steps):
        if table is None or conventions != steps[i - 1]:  # a knob on which both agree moves nothing
            table = per_query_table(labels, scores, offsets, qids, ks=(k,), conventions=conventions, full_ap=False)
        out[f"step_{i}"] = table[col].to_numpy(dtype=np.float64)
    assert table is not None
    out["zero_idcg"] = table[f"idcg_at_{k}"].to_numpy() == 0
    out["single_doc"] = np.diff(np.asarray(offsets, dtype=np.int64)) == 1
    out["tied"] = tied_queries(np.asarray(scores, dtype=np.float64), np.asarray(offsets, dtype=np.int64))
    return pd.DataFrame(out)


def gap_from_parts(parts: pd.DataFrame, k: int, library: Library = LIGHTGBM) -> LibraryGap:
    """The :class:`LibraryGap` of the queries in ``parts`` (rows of :func:`gap_parts` of ``library``)."""
    means = [float(np.nanmean(parts[f"step_{i}"].to_numpy(dtype=np.float64))) for i in range(len(library.parts) + 1)]
    return LibraryGap(
        library=library,
        k=k,
        ours=means[0],
        theirs=means[-1],
        parts={name: means[i + 1] - means[i] for i, (name, _) in enumerate(library.parts)},
        n_queries=len(parts),
        n_zero_idcg=int(parts["zero_idcg"].sum()),
        n_single_doc=int(parts["single_doc"].sum()),
        n_tied_queries=int(parts["tied"].sum()),
    )


def tied_queries(scores: NDArray[np.float64], offsets: NDArray[np.int64]) -> NDArray[np.bool_]:
    """Per query: has it at least two rows of equal score (vectorised, no per-query loop)."""
    sizes = np.diff(offsets)
    query = row_queries(offsets)
    order = np.lexsort((scores, query))
    same = (query[order][1:] == query[order][:-1]) & (scores[order][1:] == scores[order][:-1])
    out = np.zeros(len(sizes), dtype=bool)
    out[query[order][1:][same]] = True
    return out


def library_gap(
    labels: NDArray[np.integer],
    scores: NDArray[np.float64],
    offsets: NDArray[np.int64],
    qids: NDArray[np.generic],
    k: int,
    ours: MetricConventions,
    library: Library = LIGHTGBM,
) -> LibraryGap:
    """Decompose ``library``'s NDCG@k minus ours for ``scores`` (flat arrays, query offsets)."""
    return gap_from_parts(gap_parts(labels, scores, offsets, qids, k, ours, library), k, library)


def lightgbm_gap(
    labels: NDArray[np.integer],
    scores: NDArray[np.float64],
    offsets: NDArray[np.int64],
    qids: NDArray[np.generic],
    k: int,
    ours: MetricConventions,
) -> LibraryGap:
    """Decompose LightGBM-convention NDCG@k minus ours for ``scores`` (flat arrays, query offsets)."""
    return library_gap(labels, scores, offsets, qids, k, ours, LIGHTGBM)

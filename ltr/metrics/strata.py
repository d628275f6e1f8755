"""`Strata`: buckets of queries by list length (number of ranked docs)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

#: Stratum index of a query with no ranked docs (judged, nothing retrieved). Such queries belong
#: to no length stratum: they count in the overall means (with score 0) and in
#: ``no_result_rate``; `summarize` reports them under the label ``EMPTY_LABEL`` / key ``EMPTY_KEY``.
EMPTY: int = -1
EMPTY_LABEL: str = "empty"
EMPTY_KEY: str = "len_empty"


@dataclass(frozen=True, slots=True)
class Strata:
    """List-length strata given by their lower edges.

    Stratum ``i`` holds lengths ``lower_edges[i] .. lower_edges[i + 1] - 1``; the last one is
    open. The first edge must be 1, so every non-empty list has a stratum. Length 0 gets
    `EMPTY` (-1).

    Examples
    --------
    >>> s = Strata()
    >>> s.labels, s.keys
    (('1-10', '11-50', '51+'), ('len_1-10', 'len_11-50', 'len_51_plus'))
    >>> s.assign(np.array([0, 1, 10, 11, 50, 51, 1250])).tolist()
    [-1, 0, 0, 1, 1, 2, 2]
    """

    lower_edges: tuple[int, ...] = (1, 11, 51)

    def __post_init__(self) -> None:
        edges = tuple(int(e) for e in self.lower_edges)
        object.__setattr__(self, "lower_edges", edges)
        if not edges:
            raise ValueError("Strata needs at least one lower edge, e.g. (1, 11, 51)")
        if edges[0] != 1:
            raise ValueError(
                f"the first lower edge must be 1 (so every non-empty list has a stratum), got {edges[0]}"
            )
        if any(b <= a for a, b in itertools.pairwise(edges)):
            raise ValueError(f"lower_edges must be strictly increasing, got {edges}")

    @property
    def n_strata(self) -> int:
        return len(self.lower_edges)

    @property
    def labels(self) -> tuple[str, ...]:
        """Display labels, e.g. ``("1-10", "11-50", "51+")``."""
        out = []
        for i, lo in enumerate(self.lower_edges):
            if i + 1 == len(self.lower_edges):
                out.append(f"{lo}+")
            else:
                hi = self.lower_edges[i + 1] - 1
                out.append(f"{lo}" if hi == lo else f"{lo}-{hi}")
        return tuple(out)

    @property
    def keys(self) -> tuple[str, ...]:
        """MLflow key suffixes, e.g. ``("len_1-10", "len_11-50", "len_51_plus")`` (no ``+``)."""
        return tuple("len_" + lab.replace("+", "_plus") for lab in self.labels)

    def assign(self, list_lens: NDArray[np.integer]) -> NDArray[np.int64]:
        """Stratum index of every query; `EMPTY` (-1) for length 0."""
        lens = np.asarray(list_lens)
        if lens.size and int(lens.min()) < 0:
            raise ValueError(f"list length {int(lens.min())} is negative")
        edges = np.asarray(self.lower_edges, dtype=np.int64)
        return (np.searchsorted(edges, lens, side="right") - 1).astype(np.int64)

    def label_of(self, index: NDArray[np.int64]) -> NDArray[np.object_]:
        """Display label of every stratum index (``"empty"`` for `EMPTY`)."""
        table = np.array((EMPTY_LABEL, *self.labels), dtype=object)
        return table[np.asarray(index) + 1]

"""`exposure_report`: where the attention of a click log ends, and the cut-off K it suggests.

A click log shows each query's documents at 0-based positions and records clicks. Per position
``p`` (displayed 1-based, ``k = p + 1``):

- clicks: the clicks logged at ``p``;
- estimated examinations: ``impressions(p) * propensity(p)``, the number of times a user looked
  at position ``p`` under the propensity model in use (the examination curve the data was made
  with, ``eval.clicks.propensities``, or one estimated from the log).

The report gives the share of each at positions ``<= k`` (cumulative), the smallest ``k`` that
covers 50 / 80 / 95 % of them, and advice on the cut-off of NDCG@k: the first NDCG guide picks
K as the position that covers 80 % of the effective exposure instead of a habitual 10. A cut-off
beyond the 95 % point scores positions users barely see; one well inside the 80 % point (below
half of it) ignores positions users do see.

Examples
--------
>>> r = exposure_report(np.array([0, 1, 2, 0, 1, 2]), np.array([1, 1, 0, 1, 0, 0]),
...                     np.array([1.0, 0.5, 0.25]))
>>> r.exam_share.round(4).tolist(), r.k_for("exam", 80), r.k_for("click", 50)
([0.5714, 0.8571, 1.0], 2, 1)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

#: The coverage levels (percent) a report gives the smallest k for.
COVERAGES: tuple[int, ...] = (50, 80, 95)


@dataclass(frozen=True, slots=True)
class ExposureReport:
    """Clicks and estimated examinations per position, cumulated.

    Attributes
    ----------
    impressions, clicks : int64, shape (n_positions,); index ``p`` = 0-based position
    examinations : float64, shape (n_positions,); ``impressions * propensities``
    propensities : float64, shape (n_positions,); the propensity model in use
    click_share, exam_share : float64, shape (n_positions,); share at positions ``<= p + 1``
    propensity_source : what the propensities are (``"configured"``, ``"estimated"``, ...)
    """

    impressions: NDArray[np.int64]
    clicks: NDArray[np.int64]
    examinations: NDArray[np.float64]
    propensities: NDArray[np.float64]
    click_share: NDArray[np.float64]
    exam_share: NDArray[np.float64]
    propensity_source: str

    def k_for(self, what: str, percent: int) -> int:
        """The smallest k (1-based) whose share of ``what`` (``"click"`` or ``"exam"``) at
        positions ``<= k`` reaches ``percent`` %; the deepest position when there is nothing."""
        share = self.click_share if what == "click" else self.exam_share
        if what not in ("click", "exam"):
            raise ValueError(f"what={what!r} is not one of 'click', 'exam'")
        # a tolerance so that a share of exactly 80 % (in float) counts as reaching 80 %
        hit = np.flatnonzero(share >= percent / 100.0 - 1e-12)
        return int(hit[0]) + 1 if hit.size else int(share.shape[0])

    def metrics(self) -> dict[str, float]:
        """``exposure_k50``, ``exposure_k80``, ``exposure_k95`` (estimated examinations) and
        ``click_k50`` ... (clicks): the keys a run logs under ``data/``."""
        out: dict[str, float] = {}
        for pct in COVERAGES:
            out[f"exposure_k{pct}"] = float(self.k_for("exam", pct))
        for pct in COVERAGES:
            out[f"click_k{pct}"] = float(self.k_for("click", pct))
        return out

    def rows(self, ks: list[int] | None = None) -> list[tuple[int, float, float]]:
        """``(k, click share, examination share)`` at the cut-offs ``ks`` (default: 1, 2, 3, 5,
        10, 20, 50, ... up to the deepest position, and the 50/80/95 % points)."""
        n = int(self.exam_share.shape[0])
        if ks is None:
            base = [1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000]
            points = [self.k_for(w, pct) for w in ("click", "exam") for pct in COVERAGES]
            ks = sorted({k for k in [*base, *points] if k <= n} | {n})
        return [(k, float(self.click_share[k - 1]), float(self.exam_share[k - 1])) for k in ks if 1 <= k <= n]

    def advice(self, k: int) -> str | None:
        """One line when the cut-off ``k`` lies beyond the 95 % point of the estimated
        examinations or well inside (below half of) the 80 % point; else None."""
        k80, k95 = self.k_for("exam", 80), self.k_for("exam", 95)
        share = float(self.exam_share[min(k, self.exam_share.shape[0]) - 1])
        if k > k95:
            return (
                f"eval.k {k} lies beyond the 95 % exposure point (k={k95}): positions "
                f"{k95 + 1}..{k} get under 5 % of the examinations; K={k80} covers 80 %"
            )
        if 2 * k < k80:
            return (
                f"eval.k {k} covers {share * 100:.0f} % of the examinations, well inside the 80 % "
                f"point (k={k80}): users look further down than NDCG@{k} scores; consider K={k80}"
            )
        return None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (lists and Python numbers)."""
        return {
            "propensity_source": self.propensity_source,
            "impressions": [int(v) for v in self.impressions],
            "clicks": [int(v) for v in self.clicks],
            "propensities": [float(v) for v in self.propensities],
            "click_share": [float(v) for v in self.click_share],
            "exam_share": [float(v) for v in self.exam_share],
            **self.metrics(),
        }


def exposure_report(
    positions: NDArray[np.integer],
    clicks: NDArray[np.integer],
    propensities: NDArray[np.float64],
    *,
    propensity_source: str = "given",
) -> ExposureReport:
    """Build the `ExposureReport` of a click log.

    Parameters
    ----------
    positions : int array, shape (n_rows,)
        0-based position every row was shown at (one impression per row).
    clicks : int array, shape (n_rows,)
        Clicks on the row (0 or 1; counts are summed).
    propensities : float array
        Examination probability per 0-based position; positions past its end take its last
        value (as :func:`ltr.metrics.clicks.ips.propensity_table`).
    propensity_source : str
        What the propensities are, for the report's text.
    """
    pos = np.asarray(positions, dtype=np.int64)
    clk = np.asarray(clicks, dtype=np.int64)
    if pos.shape != clk.shape or pos.ndim != 1:
        raise ValueError(f"positions {pos.shape} and clicks {clk.shape} must be 1-D of one length")
    if pos.size == 0:
        raise ValueError("the click log has no rows")
    if int(pos.min()) < 0:
        raise ValueError(f"position {int(pos.min())} is negative; positions are 0-based")
    if int(clk.min()) < 0:
        raise ValueError(f"click count {int(clk.min())} is negative")
    n = int(pos.max()) + 1
    props = np.asarray(propensities, dtype=np.float64)
    if props.ndim != 1 or props.size == 0 or not np.all(np.isfinite(props)) or np.any(props < 0):
        raise ValueError("propensities must be a non-empty list of finite numbers >= 0")
    table = np.full(n, props[-1])
    table[: min(n, props.size)] = props[:n]
    impressions = np.bincount(pos, minlength=n).astype(np.int64)
    per_pos_clicks = np.bincount(pos, weights=clk, minlength=n).astype(np.int64)
    exams = impressions * table
    return ExposureReport(
        impressions=impressions,
        clicks=per_pos_clicks,
        examinations=exams,
        propensities=table,
        click_share=_cumulative_share(per_pos_clicks.astype(np.float64)),
        exam_share=_cumulative_share(exams),
        propensity_source=propensity_source,
    )


def _cumulative_share(values: NDArray[np.float64]) -> NDArray[np.float64]:
    total = float(values.sum())
    cum = np.cumsum(values)
    if total <= 0:
        return np.ones_like(cum)  # nothing at all: every cut-off "covers" it
    out: NDArray[np.float64] = cum / total
    out[-1] = 1.0  # exactly: the last position covers everything
    return out

"""The position-bias curve a training learned, beside the run's propensities and the truth.

A click-log run logs ``data/position_bias.json`` (and its figure): per 1-based position, the
curve the training learned normalised to position 1, the run's examination propensities
(:class:`ltr.metrics.clicks.propensity.PropensityEstimate`) and, on a synthetic log, the true
examination curve. What each training learns, and how it is read:

- LightGBM (``model.position_bias=true``): one additive score offset ``b_p`` per position value
  (its ``pos_biases_``), which the library only writes to its debug log; read from there after
  the last round trained, normalised as ``exp(b_p - b_1)``.
- XGBoost (``model.lambdarank_unbiased=true``): ``ti+`` (the examination bias of a clicked
  document per position, ``ti+[0] == 1``) from ``Booster.save_config()``; positions XGBoost does
  not track (past its ``ti+`` array, or a position no row had: 0 there) are null.
- Training without a position-bias treatment (plain lambdarank, CatBoost) learns no curve; the
  JSON says so in ``learned_note`` rather than showing one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ltr.metrics.clicks.propensity import PropensityEstimate


@dataclass(frozen=True, slots=True)
class LearnedBias:
    """A library's learned position bias: ``raw[p]`` as the library holds it for 0-based position
    ``p`` (NaN where it holds none), ``relative[p]`` the same normalised to position 1
    (``relative[0] == 1``), ``transform`` how ``relative`` follows from ``raw``, ``source`` where
    ``raw`` was read."""

    library: str
    raw: NDArray[np.float64]
    relative: NDArray[np.float64]
    transform: str
    source: str


def lightgbm_bias(factors: dict[int, float]) -> LearnedBias:
    """LightGBM's bias factors (position value -> additive score offset) as a curve over
    positions ``0..max``; ``relative = exp(b_p - b_0)``."""
    n = max(factors) + 1
    raw = np.full(n, np.nan)
    for position, value in factors.items():
        raw[position] = value
    return LearnedBias(
        "lightgbm", raw, np.exp(raw - raw[0]), "exp(b_p - b_1), b LightGBM's score offsets",
        "LightGBM's debug log of its position bias factors after the last round trained",
    )  # fmt: skip


def xgboost_bias(ti_plus: list[float]) -> LearnedBias:
    """XGBoost's ``ti+`` (0 where it tracks no position) as a curve; already relative to position 1."""
    raw = np.asarray(ti_plus, dtype=np.float64)
    raw = np.where(raw > 0, raw, np.nan)
    return LearnedBias("xgboost", raw, raw / raw[0], "ti+[p] / ti+[1]", "Booster.save_config(): ti+")


def _clean(values: NDArray[np.float64], n: int) -> list[float | None]:
    out: list[float | None] = [None] * n
    for i, v in enumerate(np.asarray(values, dtype=np.float64)[:n]):
        out[i] = float(v) if np.isfinite(v) else None
    return out


def position_bias_report(
    propensity: PropensityEstimate,
    learned: LearnedBias | None,
    *,
    training: str,
    truth: NDArray[np.float64] | None = None,
    note: str = "",
) -> dict[str, Any]:
    """The JSON of ``data/position_bias.json``: ``positions`` 1..K (K the propensity curve's
    positions), ``learned`` (normalised to position 1, null where the library holds none, or
    null with ``learned_note`` saying why there is no curve), ``learned_raw``, ``propensity``
    (the run's curve and its method) and ``truth`` (the synthetic log's examination curve
    relative to position 1, else null)."""
    n = propensity.n_positions
    return {
        "positions": list(range(1, n + 1)),
        "training": training,
        "learned": None if learned is None else _clean(learned.relative, n),
        "learned_raw": None if learned is None else _clean(learned.raw, n),
        "learned_library": None if learned is None else learned.library,
        "learned_transform": None if learned is None else learned.transform,
        "learned_source": None if learned is None else learned.source,
        "learned_note": note or None,
        "propensity": _clean(propensity.propensities, n),
        "propensity_method": propensity.method,
        "truth": None if truth is None else _clean(np.asarray(truth, dtype=np.float64) / float(truth[0]), n),
    }

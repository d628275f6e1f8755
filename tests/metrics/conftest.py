"""Shared helpers of the metrics tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ltr.metrics import MetricConventions, per_query_table

# the repo and shared/ are siblings: <root>/main/tests/metrics/conftest.py -> <root>/shared/data
SHARED_DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"

LOG2_3 = float(np.log2(3.0))
LOG2_5 = float(np.log2(5.0))
LOG2_6 = float(np.log2(6.0))


def one_query(
    labels: list[int],
    scores: list[float] | None = None,
    *,
    k: int = 5,
    **conv: object,
) -> pd.Series:
    """The table row of one query; ``scores`` default to descending (rank = list order)."""
    lab = np.asarray(labels, dtype=np.int64)
    sc: NDArray[np.float64] = (
        np.arange(len(labels), 0, -1, dtype=np.float64)
        if scores is None
        else np.asarray(scores, dtype=np.float64)
    )
    t = per_query_table(
        lab, sc, np.array([0, len(labels)], dtype=np.int64), np.array([1]),
        ks=[k], conventions=MetricConventions(**conv),  # type: ignore[arg-type]
    )  # fmt: skip
    return t.iloc[0]

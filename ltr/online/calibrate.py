"""Calibrate offline metrics against past A/B tests: the line of online delta on offline delta.

A table (CSV, TSV or Parquet) holds one past experiment a row: the offline delta of a logged
metric (``ndcg_at_10`` of the treatment minus the control's), the online delta the A/B test
measured (CTR, GMV, in the table's own unit: a percentage if the column holds percentages) and
optionally each test's sample size, the weights of a weighted fit. :func:`calibrate` fits the line
(:func:`ltr.online.ols.fit_line`: slope, its 95 % interval and p-value) and says it as a team
reads it: ``each +0.1 ndcg_at_10 ≈ +1.2 % GMV [+0.4, +2.0] (p = 0.004, 8 experiments)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ltr.data.feedback.click_file import read_table_file
from ltr.errors import DataError, LtrUserError
from ltr.online.ols import LineFit, fit_line
from ltr.tracking.lifecycle import tracked_run


@dataclass(frozen=True)
class Calibration:
    """The fitted line of ``online`` on ``offline`` over ``table`` (the columns used)."""

    fit: LineFit
    table: pd.DataFrame
    offline: str
    online: str
    weights: str | None
    unit: str
    step: float = 0.1

    def sentence(self) -> str:
        """``each +0.1 <offline> ≈ +x <unit> [lo, hi] (p = ..., n experiments)``.

        Examples
        --------
        >>> c = calibrate_frame(pd.DataFrame({"d": [0.0, 0.1, 0.2], "g": [0.0, 1.0, 2.2]}), "d", "g", unit="% GMV")
        >>> c.sentence()
        'each +0.1 d ≈ +1.1 % GMV [+0.37, +1.8] (p = 0.0334, 3 experiments, R² 1.00)'
        """
        f, s = self.fit, self.step
        interval = "[n/a]" if math.isnan(f.low) else f"[{_num(f.low * s)}, {_num(f.high * s)}]"
        p = "n/a" if math.isnan(f.p_value) else f"{f.p_value:.3g}"
        r2 = "n/a" if math.isnan(f.r2) else f"{f.r2:.2f}"
        return (
            f"each +{s:g} {self.offline} ≈ {_num(f.slope * s)} {self.unit} {interval} "
            f"(p = {p}, {f.n} experiments, R² {r2})"
        )

    def to_dict(self) -> dict[str, Any]:
        f = self.fit
        return {
            "offline": self.offline, "online": self.online, "weights": self.weights, "unit": self.unit,
            "slope": f.slope, "intercept": f.intercept, "r2": f.r2, "n": f.n, "se": f.se,
            "slope_low": f.low, "slope_high": f.high, "p_value": f.p_value, "level": f.level,
            "per_step": f.slope * self.step, "per_step_low": f.low * self.step, "per_step_high": f.high * self.step,
            "step": self.step, "sentence": self.sentence(),
        }  # fmt: skip


def _num(value: float) -> str:
    """Signed, 2 significant figures (3 above 10): ``+1.2``, ``-0.034``, ``+120``."""
    return f"{value:+.0f}" if abs(value) >= 10 else f"{value:+.2g}"


def check_columns(offline: str, online: str) -> None:
    """Refuse an offline and an online column that are the same column (``--offline x --online
    x``): a column fitted on itself has a slope of exactly 1 and p = 0, whatever it holds."""
    if offline == online:
        raise LtrUserError(
            f"--offline and --online are both the column {offline!r}: a column fitted on itself gives a slope of exactly 1; "
            "give the offline delta's column and the online delta's"
        )


def calibrate_frame(
    frame: pd.DataFrame, offline: str, online: str, *, weights: str | None = None, unit: str | None = None, where: str = "the table"
) -> Calibration:
    """Fit ``online ≈ slope * offline + intercept`` over ``frame``'s rows (see the module docstring).

    Raises
    ------
    DataError
        A missing column, a value that is not a number, fewer than 3 rows, or every offline delta equal.
    LtrUserError
        The offline and the online column are the same column.
    """
    check_columns(offline, online)
    columns = list(dict.fromkeys([offline, online, *([weights] if weights else [])]))
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise DataError(f"{where} has no column {missing[0]!r} (it has: {', '.join(map(str, frame.columns))})")
    values = {}
    for column in columns:
        v = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=np.float64)
        bad = np.flatnonzero(~np.isfinite(v) | ((v <= 0) if column == weights else False))
        if bad.size:
            need = "a number > 0" if column == weights else "a number"
            raise DataError(f"{where}, row {int(bad[0]) + 1}: {column} {frame[column].iloc[int(bad[0])]!r} is not {need}")
        values[column] = v
    if len(frame) < 3:
        raise DataError(f"{where} has {len(frame)} experiments; a line with an interval needs at least 3")
    try:
        fit = fit_line(values[offline], values[online], weights=values[weights] if weights else None, where=where)
    except ValueError as exc:
        raise DataError(str(exc)) from None
    return Calibration(fit, frame[columns].copy(), offline, online, weights, unit or online)


def calibrate(path: Path, offline: str, online: str, *, weights: str | None = None, unit: str | None = None) -> Calibration:
    """:func:`calibrate_frame` of a CSV / TSV / Parquet file (numbers read as text, then parsed)."""
    check_columns(offline, online)
    columns = list(dict.fromkeys([offline, online, *([weights] if weights else [])]))
    frame = read_table_file(path, columns)
    return calibrate_frame(frame, offline, online, weights=weights, unit=unit, where=str(path))


def calibration_figure(cal: Calibration) -> Any:
    """The experiments (marker area by weight) and the fitted line with its 95 % band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from scipy import stats

    x = cal.table[cal.offline].to_numpy(dtype=np.float64)
    y = cal.table[cal.online].to_numpy(dtype=np.float64)
    f = cal.fit
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    sizes = 40.0 if cal.weights is None else 20 + 180 * cal.table[cal.weights].to_numpy(np.float64) / float(cal.table[cal.weights].max())
    ax.scatter(x, y, s=sizes, color="C0", alpha=0.8, label="past A/B tests")
    grid = np.linspace(float(x.min()), float(x.max()), 100)
    ax.plot(grid, f.intercept + f.slope * grid, color="C3", label=f"fit: slope {f.slope:.3g}")
    if not math.isnan(f.se) and f.n > 2:
        w = np.ones_like(x) if cal.weights is None else cal.table[cal.weights].to_numpy(np.float64)
        mean_x = float(w @ x / w.sum())
        sxx = float(w @ (x - mean_x) ** 2)
        s2 = f.se**2 * sxx
        half = float(stats.t.ppf(0.975, f.n - 2)) * np.sqrt(s2 * (1 / w.sum() + (grid - mean_x) ** 2 / sxx))
        ax.fill_between(grid, f.intercept + f.slope * grid - half, f.intercept + f.slope * grid + half, color="C3", alpha=0.15, label="95 % band of the line")
    ax.axhline(0, color="0.6", linewidth=0.8)
    ax.axvline(0, color="0.6", linewidth=0.8)
    ax.set_xlabel(f"offline delta: {cal.offline}")
    ax.set_ylabel(f"online delta: {cal.online}")
    ax.set_title(cal.sentence(), fontsize="small", wrap=True)
    ax.legend(fontsize="small", loc="best")
    fig.tight_layout()
    return fig


def log_calibration(cal: Calibration, *, uri: str, experiment: str, source: Path, figure: Any = None) -> str:
    """Log the calibration as its own FINISHED run (``ltr.kind=calibration``) in ``experiment``:
    metrics ``calibration/slope`` (+ ``_low``, ``_high``), ``p_value``, ``intercept``, ``r2``,
    ``n``, ``per_step``; the table (``calibration/experiments.csv``), every number
    (``calibration/calibration.json``) and the figure (``figures/calibration.png``). Returns its id."""
    from ltr.tracking.mlflow_tracker import MlflowTracker

    data = cal.to_dict()
    tracker = MlflowTracker(uri, experiment)
    name = f"calibration: {cal.online} on {cal.offline}"[:250]
    with tracked_run(tracker, name, {"ltr.kind": "calibration", "mlflow.note.content": cal.sentence()}) as run_id:
        tracker.log_params({"offline": cal.offline, "online": cal.online, "weights": cal.weights or "", "unit": cal.unit, "table": str(source)})
        keys = ("slope", "slope_low", "slope_high", "p_value", "intercept", "r2", "se", "n", "per_step", "per_step_low", "per_step_high")
        tracker.log_metrics({f"calibration/{k}": float(data[k]) for k in keys if math.isfinite(float(data[k]))})
        tracker.log_dict(data, "calibration/calibration.json")
        tracker.log_text(cal.table.to_csv(index=False), "calibration/experiments.csv")
        if figure is not None:
            tracker.log_figure(figure, "figures/calibration.png")
    assert run_id is not None  # an MlflowTracker's run
    return run_id

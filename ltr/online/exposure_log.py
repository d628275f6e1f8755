"""``ltr exposure``'s work: a click log file's exposure report under a chosen propensity model.

:func:`exposure_of_log` reads the log (:mod:`ltr.data.feedback.click_file`: columns query,
position, click; optional feature and randomized-session columns), takes or estimates the
examination propensities (a given curve, ``(1 / rank) ** eta``, or estimated from the log by the
CTR ratio, EM or the randomized sessions, with a bootstrap interval where one is earned), and
builds the exposure report (:mod:`ltr.metrics.clicks.exposure`) on them. A user error raises
:class:`ltr.errors.LtrUserError` in one line naming the file or the option.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from ltr.data.feedback.click_file import read_click_file
from ltr.data.feedback.clicks import examination_curve
from ltr.errors import LtrUserError
from ltr.metrics.clicks.exposure import ExposureReport, exposure_report
from ltr.metrics.clicks.ips import estimate_propensities
from ltr.metrics.clicks.propensity import (
    MIN_POSITION_CLICKS,
    PropensityEstimate,
    estimate_propensity,
    interval_note,
    randomized_queries,
)
from ltr.online.propensity_check import check_position_based


@dataclass(frozen=True)
class ExposureOptions:
    """What ``ltr exposure`` was asked: the log's file and columns, and the propensity model
    (``curve`` given, else ``eta``, else estimated by ``method``: ``ctr``, ``em`` or ``randomized``)."""

    log: Path
    query_column: str = "query"
    position_column: str = "position"
    click_column: str = "click"
    first_position: int = 0
    eta: float | None = None
    curve: list[float] | None = None
    method: str = "ctr"
    features: tuple[str, ...] = ()
    randomized_column: str | None = None
    min_propensity: float = 0.01
    bootstrap: int = 50
    seed: int = 0

    def __post_init__(self) -> None:
        """Each option's rule, checked before the log is read: one line naming the option."""
        if not 0 < self.min_propensity <= 1:
            raise LtrUserError(f"--min-propensity {self.min_propensity} must be in (0, 1]")
        if self.eta is not None and not (math.isfinite(self.eta) and self.eta >= 0):
            raise LtrUserError(f"--eta {self.eta} must be a finite number >= 0")
        if self.method == "em" and not self.features:
            raise LtrUserError(
                "--propensity em needs the rows' features (its attractiveness model's inputs): give --features COL,COL,... "
                f"naming feature columns of {self.log}; a log of query, position and click alone can use --propensity ctr"
            )
        if self.method == "randomized" and not self.randomized_column:
            raise LtrUserError(
                f"--propensity randomized needs --randomized-column COL: the column of {self.log} that is 1 on the rows of "
                "a session shown in random order (0 elsewhere)"
            )
        if self.bootstrap < 0:
            raise LtrUserError(f"--bootstrap {self.bootstrap} must be >= 0")
        if self.seed < 0:
            raise LtrUserError(f"--seed {self.seed} must be an integer >= 0")


@dataclass(frozen=True)
class LogExposure:
    """The report, the propensity estimate behind it (with its interval, if any), the curve the
    report used (``used[i]``: position ``i + 1``, clipped and extended), and the one line saying
    why the estimate has no interval (None when it has one, or the curve was given)."""

    report: ExposureReport
    estimate: PropensityEstimate
    used: NDArray[np.float64]
    note: str | None


def exposure_of_log(o: ExposureOptions) -> LogExposure:
    """The exposure report of the click log ``o.log`` under the propensity model of ``o``."""
    flag_column = [o.randomized_column] if o.randomized_column else []
    log = read_click_file(
        o.log, query_column=o.query_column, position_column=o.position_column, click_column=o.click_column,
        first_position=o.first_position, feature_columns=[*o.features, *flag_column] or None,
    )  # fmt: skip
    flags = None
    if flag_column and log.features is not None:  # the flag column is read as the last "feature"
        flags = log.features[:, -1]
        log = dataclasses.replace(log, features=log.features[:, :-1] if o.features else None)
    n_positions = int(log.positions.max()) + 1
    clicks = np.minimum(log.clicks, 1)
    estimate: PropensityEstimate
    if o.curve is not None:
        estimate, source = estimate_propensity(method="given", given=o.curve, n_positions=n_positions), "given"
        return _report(log.positions, log.clicks, estimate, estimate.propensities, source, note=None)
    if o.eta is not None:
        props = examination_curve(n_positions, eta=float(o.eta))
        estimate = estimate_propensity(method="given", given=props.tolist())
        return _report(log.positions, log.clicks, estimate, props, f"eta={o.eta:g}", note=None)
    order, offsets = log.grouped()
    if flags is not None:
        try:
            randomized_queries(flags[order], offsets, names=log.qids[order][offsets[:-1]])
        except ValueError as exc:
            raise LtrUserError(f"{o.log}: --randomized-column {o.randomized_column!r}: {exc}") from None
    try:
        estimate = estimate_propensity(
            clicks[order], log.positions[order], offsets, method=o.method, n_positions=n_positions,
            features=None if log.features is None else log.features[order], n_bootstrap=o.bootstrap, seed=o.seed,
            randomized=None if flags is None else flags[order],
        )  # fmt: skip
    except ValueError as exc:
        raise LtrUserError(f"{o.log}: {exc}; give --eta or --propensities") from None
    estimate = check_position_based(estimate, clicks[order], log.positions[order], offsets)
    if o.method in ("em", "randomized") and not np.isfinite(estimate.propensities[1:]).any():
        randomized = o.method == "randomized"
        raise LtrUserError(
            f"{o.log}: no position below the first has {MIN_POSITION_CLICKS} clicks or more"
            f"{' among the randomized sessions' if randomized else ''}: {'randomized' if randomized else 'EM'} cannot "
            f"identify a propensity from {'the randomized sessions of this log' if randomized else 'this log'}; "
            "give --eta or --propensities"
        )
    if o.method == "ctr":  # the curve training's eval.clicks.propensity=estimated uses for its exposure
        try:
            props = estimate_propensities(clicks, log.positions, n_positions=n_positions, min_propensity=o.min_propensity)
        except ValueError as exc:
            raise LtrUserError(f"{o.log}: {exc}; give --eta or --propensities") from None
        source = "estimated"
    else:  # as training's eval.clicks.propensity=em / randomized: the last identified value extends
        source = "estimated by EM" if o.method == "em" else "estimated on the randomized sessions"
        props = estimate.table(n_positions, min_propensity=o.min_propensity)
    note = interval_note(estimate, "--randomized-column", "--propensity randomized")
    return _report(log.positions, log.clicks, estimate, props, source, note=note)


def _report(
    positions: NDArray[np.int64], clicks: NDArray[np.int64], estimate: PropensityEstimate,
    props: NDArray[np.float64], source: str, *, note: str | None,
) -> LogExposure:  # fmt: skip
    report = exposure_report(positions, clicks, props, propensity_source=source)
    return LogExposure(report=report, estimate=estimate, used=np.asarray(props, dtype=np.float64), note=note)


#: Positions the printed propensity curve shows at least (all of them up to ``--k`` when deeper).
CURVE_POSITIONS = 20


def curve_lines(estimate: PropensityEstimate, used: NDArray[np.float64], k: int | None = None) -> list[str]:
    """The propensity curve as printed: one line per position (value and interval, "no
    interval" where the estimate withholds it, or "not identified"; and the value the report
    used where that differs: clipped, extended), the first :data:`CURVE_POSITIONS` (or down to
    ``k``), then one line for the rest."""

    n = estimate.n_positions
    shown = min(n, max(CURVE_POSITIONS, k or 0))
    interval = estimate.n_bootstrap > 0 and estimate.method != "given"
    lines = []
    for i in range(shown):
        value = float(estimate.propensities[i])
        if not np.isfinite(value):
            lines.append(f"{i + 1:>5}  not identified")
        elif i == 0 and estimate.method != "given":
            lines.append(f"{i + 1:>5}  {value:.3f}  (the reference: every value is relative to position 1)")
        elif interval and np.isfinite(estimate.low[i]):
            lines.append(f"{i + 1:>5}  {value:.3f}  [{float(estimate.low[i]):.3f}, {float(estimate.high[i]):.3f}]")
        elif interval:
            lines.append(f"{i + 1:>5}  {value:.3f}  no interval")
        else:
            lines.append(f"{i + 1:>5}  {value:.3f}")
        if not (np.isfinite(value) and abs(float(used[i]) - value) < 5e-4):
            lines[-1] += f"  (the report uses {float(used[i]):.3f})"
    if shown < n:
        missing = int(np.isnan(estimate.propensities[shown:]).sum())
        what = "given" if estimate.method == "given" else f"estimated, {missing} not identified"
        lines.append(f"positions {shown + 1}-{n}: {n - shown - missing} {what} (--json has every one)")
    return lines

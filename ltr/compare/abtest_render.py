"""The text of an A/B simulation: a Markdown report (terminal, MLflow description) and the power figure.

matplotlib is imported lazily (figures are plain ``Figure``s, no pyplot state).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ltr.compare.abtest import AbTestResult, Difference, Interleaving, power_curves, verdict
from ltr.metrics.plots import title_top, wrap_title

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _n(value: float) -> str:
    return "never (no effect)" if not math.isfinite(value) else f"{value:,.0f}"


def _days(value: float) -> str:
    return "never (no effect)" if not math.isfinite(value) else f"{value:.1f}"


def _rate(value: float, low: float, high: float, sign: str = "") -> str:
    """``0.4500 [0.4433, 0.4537]``; ``0.4500 (no interval)`` when the interval is withheld (NaN)."""
    if math.isnan(low) or math.isnan(high):
        return f"{value:{sign}.4f} (no interval)"
    return f"{value:{sign}.4f} [{low:{sign}.4f}, {high:{sign}.4f}]"


def _diff_row(name: str, d: Difference) -> str:
    p = "-" if math.isnan(d.p_value) else f"{d.p_value:.3g}"
    return (
        f"| {name} | {_rate(d.a.value, d.a.low, d.a.high)} | {_rate(d.b.value, d.b.low, d.b.high)} "
        f"| {_rate(d.diff, d.low, d.high, '+')} | {p} | {_n(d.sessions_needed)} | {_days(d.days_needed)} |"
    )


def _il_row(name: str, il: Interleaving) -> str:
    return (
        f"| {name} | {il.wins_a:,} | {il.wins_b:,} | {il.ties:,} | {il.win_rate:.4f} | {il.p_value:.3g} "
        f"| {_n(il.sessions_needed)} | {_days(il.days_needed)} |"
    )


def to_markdown(result: AbTestResult, label_a: str, label_b: str, *, split: str) -> str:
    """The report: both arms, the difference with its interval and p-value, the sessions and
    days for 80 % power, the interleaving result, then the same per stratum of list length; a
    fitted click model (``result.anchoring``) adds what its CTR rows rest on and a one-line
    verdict."""
    per_day = result.sessions_per_day * result.traffic_share
    head = "| | A (CTR, 95 %) | B (CTR, 95 %) | B - A [95 %] | p | sessions for 80 % power | days |"
    rule = "|---|---:|---:|---:|---:|---:|---:|"
    il_head = "| | A wins | B wins | ties | B win rate | p | sessions for 80 % power | days |"
    il_rule = "|---|---:|---:|---:|---:|---:|---:|---:|"
    lines = [
        f"# Simulated A/B test: A = {label_a}, B = {label_b} ({split} queries)", "",
        f"{result.n_sessions:,} sessions: {result.days:g} days at {result.sessions_per_day:,.0f} sessions/day x "
        f"{result.traffic_share:g} traffic share ({per_day:,.0f} a day in the experiment, half per arm), seed {result.seed}. "
        f"Exact expected CTR{' under the fitted click model' if result.anchoring is not None else ''}: "
        f"A {result.expected_ctr_a:.4f}, B {result.expected_ctr_b:.4f} "
        f"(B - A {result.expected_ctr_b - result.expected_ctr_a:+.4f}).", "",
        "## A/B test", "", head, rule, _diff_row("CTR", result.ctr),
    ]  # fmt: skip
    if result.purchases is not None:
        lines.append(_diff_row("purchase rate", result.purchases))
    fit, anchoring = result.fit, result.anchoring
    if anchoring is not None:
        sim = anchoring.simulated
        if anchoring.anchored:
            text = (
                f"The CTR rows are anchored on the log: each ranking's CTR on the {anchoring.n_queries:,} {split} queries "
                f"is the fitted click model's, corrected by every logged click's IPS residual (doubly robust), under "
                f"{anchoring.reason}; the 95 % intervals resample the queries and the examination, and hold when the "
                f"examination is right and the clicks position-based. Sessions for 80 % power over the interval: "
                f"{_n(anchoring.sessions_low)} to {_n(anchoring.sessions_high)}."
            )
        else:
            text = (
                "The CTR rows are the simulation under the fitted click model, with no interval: a model's forecast "
                "(the verdict says why)."
            )
        spread = (
            f" Over {fit.n_refits} refits on resampled queries the model's own B - A has a standard deviation of {fit.sd:.4f}."
            if fit is not None and math.isfinite(fit.sd) else ""
        )
        lines += [
            "",
            text + f" The simulated sessions under the fitted model: B - A {sim.diff:+.4f}." + spread,
            "",
            f"Verdict: {verdict(result)}.",
        ]  # fmt: skip
    elif fit is not None:
        lines += [
            "",
            f"The click model is fitted to the log: the CTR intervals and p-values hold its uncertainty, "
            f"{fit.n_refits} refits on resampled queries (standard deviation of the exact B - A {fit.sd:.4f}; "
            f"the simulated sessions' own {fit.simulation_se:.4f}). Sessions for 80 % power over the interval: "
            f"{_n(fit.sessions_low)} to {_n(fit.sessions_high)}.",
            "",
            f"Verdict: {verdict(result)}.",
        ]  # fmt: skip
    lines += ["", "## Team-draft interleaving (the same sessions)", "", il_head, il_rule, _il_row("all", result.interleaving)]
    if fit is not None or anchoring is not None:
        lines += ["", "(Its p-value holds the simulated sessions' noise under the fitted click model only, not the model's error.)"]
    ab, il = result.ctr.sessions_needed, result.interleaving.sessions_needed
    if math.isfinite(ab) and math.isfinite(il) and il > 0:
        lines += ["", f"Interleaving needs {il:,.0f} sessions for 80 % power, the A/B test {ab:,.0f}: {ab / il:.1f}x fewer."]
    lines += ["", "## Per stratum of list length", "", head.replace("| |", "| stratum (sessions) |"), rule]
    lines += [_diff_row(f"{s.stratum} ({s.n_sessions:,})", s.ctr) for s in result.strata]
    lines += ["", il_head.replace("| |", "| stratum |"), il_rule]
    lines += [_il_row(s.stratum, s.interleaving) for s in result.strata]
    return "\n".join(lines) + "\n"


def power_figure(result: AbTestResult, label_a: str, label_b: str) -> Figure:
    """Power against sessions of the A/B test of CTR and of interleaving, at the observed effects,
    with the sessions each needs for 80 % power marked."""
    from matplotlib.figure import Figure

    top = max(x for x in (result.ctr.sessions_needed, result.interleaving.sessions_needed, 1000.0) if math.isfinite(x))
    sessions = np.geomspace(10, 4 * top, 200)
    ab, il = power_curves(result, sessions)
    title = wrap_title(
        f"A = {label_a}, B = {label_b}\nCTR B - A = {result.ctr.diff:+.4f}, interleaving win rate of B = "
        f"{result.interleaving.win_rate:.3f}", 7.2, left=0.1, right=0.97, fontsize_pt=9.0,
    )  # fmt: skip
    fig = Figure(figsize=(7.2, 4.6))
    fig.subplots_adjust(left=0.1, right=0.97, top=title_top(title, 4.6, fontsize_pt=9.0), bottom=0.12)
    ax = fig.add_subplot()
    ax.plot(sessions, ab, color="C0", label=f"A/B test of CTR (80 % at {_n(result.ctr.sessions_needed)} sessions)")
    ax.plot(sessions, il, color="C3", label=f"team-draft interleaving (80 % at {_n(result.interleaving.sessions_needed)})")
    ax.axhline(0.8, color="0.6", linewidth=0.8, linestyle="--")
    for x, color in ((result.ctr.sessions_needed, "C0"), (result.interleaving.sessions_needed, "C3")):
        if math.isfinite(x):
            ax.axvline(x, color=color, linewidth=0.8, linestyle=":")
    ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("sessions in the experiment (both arms)")
    ax.set_ylabel("power (alpha = 0.05)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize="small", loc="lower right")
    return fig

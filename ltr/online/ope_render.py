"""What ``ltr ope`` prints: the table and the ``--json`` document of one run's off-policy
estimates (:func:`estimates_lines`, :func:`estimates_json`), and of the paired difference of two
runs (:func:`paired_lines`, :func:`paired_json`), with the verdict line.

The interval column shows ``(model, no interval)`` for a model's guess (dm, rips, cascade_dr) and
``(not PBM, no interval)`` for a position-based estimator whose interval is withheld on clicks that
look like a cascade; in JSON both are ``"low": null, "high": null`` with the reason.
"""

from __future__ import annotations

from typing import Any

from ltr.online.ope import (
    NO_INTERVAL_REASON,
    NO_INTERVAL_VERDICT,
    NOT_POSITION_BASED_REASON,
    WITHHELD_VERDICT,
)

#: The printed order of the metrics (by their first letters): CTR, clicks@k, purchase rate.
_ORDER = ("ctr", "clic", "purc")


def _rank(metric: str) -> int:
    return _ORDER.index(metric[:4]) if metric[:4] in _ORDER else len(_ORDER)


#: The interval column of an estimate without one: a model's guess (dm, rips, cascade_dr), or a
#: position-based estimator's on a log whose clicks look like a cascade.
NO_INTERVAL_CELL = "(model, no interval)"
WITHHELD_CELL = "(not PBM, no interval)"


def _interval(e: Any, signed: bool = False) -> str:
    if not e.has_interval:
        return WITHHELD_CELL if e.reason == NOT_POSITION_BASED_REASON else NO_INTERVAL_CELL
    return f"[{e.low:+.4f}, {e.high:+.4f}]" if signed else f"[{e.low:.4f}, {e.high:.4f}]"


def _bounds_json(e: Any) -> dict[str, Any]:
    """``low`` and ``high`` (``null`` with ``no_interval``, the reason, when the estimate has none)."""
    if e.has_interval:
        return {"low": e.low, "high": e.high}
    return {"low": None, "high": None, "no_interval": e.reason or NO_INTERVAL_REASON}


def _estimates_json(result: Any) -> dict[str, Any]:
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for (estimator, metric), e in result.estimates.items():
        out.setdefault(estimator, {})[metric] = {"value": e.value, **_bounds_json(e), "ess": e.ess}
    return {
        "estimates": out, "max_weight": result.max_weights, "coverage": result.coverage, "n_queries": result.n_queries,
        "n_rows": result.n_rows, "n_clipped": result.n_clipped, "notes": result.notes,
    }  # fmt: skip


def training_json(training: Any, line: str) -> dict[str, Any]:
    """The ``training_queries`` block: how many of the log's queries the runs trained on, left out or kept."""
    return {"n_left_out": training.n_left_out, "n_logged": training.n_logged, "included": training.included, "line": line}


def estimates_json(ope: Any, first: str) -> dict[str, Any]:
    """``ltr ope RUN --json``: the run, its training queries and every estimate."""
    return {"run": ope.run.label, "training_queries": training_json(ope.training, first), **_estimates_json(ope.result)}


def estimates_lines(ope: Any) -> list[str]:
    """``ltr ope RUN``'s table (after its first line): the header, one row per estimator and metric, the notes."""
    r = ope.result
    clip = "none" if r.clip is None else f"{r.clip:g} ({r.n_clipped} weights clipped)"
    lines = [
        f"off-policy estimates of run {ope.run.label} on {ope.log_path}: {r.n_queries} queries, "
        f"{ope.matched_rows} of {ope.log_rows} impressions scored ({ope.unlogged_scored_rows} scored documents never logged); "
        f"propensities {ope.propensities}, top k={r.k}, clip {clip}, support coverage {r.coverage:.3f}",
        f"{'estimator':<10} {'metric':<16} {'value':>9} {'95 % interval':>22} {'ESS':>9} {'max weight':>11}",
    ]
    for (estimator, metric), e in sorted(r.estimates.items(), key=lambda item: _rank(item[0][1])):
        weight = f"{r.max_weights[estimator]:.3g}" if estimator in r.max_weights else ""
        lines.append(f"{estimator:<10} {metric:<16} {e.value:>9.4f} {_interval(e):>22} {e.ess:>9.1f} {weight:>11}")
    return lines + [f"note: {note}" for note in r.notes]


def _verdict(r: Any) -> tuple[list[tuple[str, str]], tuple[str, str] | None, bool, str]:
    """The difference's keys in print order, the key the verdict line reads (DR's CTR, the
    steadiest CTR, else the CTR of the first estimator with an interval; never a model's guess
    nor a withheld interval), whether intervals were withheld, and the verdict."""
    keys = sorted(r.difference, key=lambda key: _rank(key[1]))
    judged = [key for key in keys if r.difference[key].has_interval]
    main_key = ("dr", "ctr") if ("dr", "ctr") in judged else next((key for key in judged if key[1] == "ctr"), judged[0] if judged else None)
    withheld = any(r.verdict(key) == WITHHELD_VERDICT for key in keys)
    verdict = r.verdict(main_key) if main_key is not None else WITHHELD_VERDICT if withheld else NO_INTERVAL_VERDICT
    return keys, main_key, withheld, verdict


def paired_json(ope: Any, first: str) -> dict[str, Any]:
    """``ltr ope A B --json``: the difference per estimator and metric, each run's estimates, the verdict."""
    r = ope.result
    _, main_key, _, verdict = _verdict(r)
    difference: dict[str, dict[str, dict[str, Any]]] = {}
    for (estimator, metric), d in r.difference.items():
        difference.setdefault(estimator, {})[metric] = {"value": d.value, **_bounds_json(d), "verdict": r.verdict((estimator, metric))}
    return {
        "difference": difference,
        "runs": {"A": {"run": ope.run_a.label, **_estimates_json(r.a)}, "B": {"run": ope.run_b.label, **_estimates_json(r.b)}},
        "verdict": {"estimator": None if main_key is None else main_key[0],
                    "metric": None if main_key is None else main_key[1], "verdict": verdict},
        "training_queries": training_json(ope.training, first), "propensities": ope.propensities,
    }  # fmt: skip


def paired_lines(ope: Any) -> list[str]:
    """``ltr ope A B``'s table (after its first line): the header, A, B and B - A with its
    interval and verdict per estimator and metric, the verdict line, the notes (a note of the
    log, not of a run, once)."""
    r = ope.result
    keys, main_key, withheld, verdict = _verdict(r)
    clip = "none" if r.a.clip is None else f"{r.a.clip:g}"
    lines = [
        f"paired off-policy estimates, A = run {ope.run_a.label}, B = run {ope.run_b.label}, on {ope.log_path}: "
        f"{r.a.n_queries} queries, {ope.matched_rows} of {ope.log_rows} impressions scored by both; propensities "
        f"{ope.propensities}, top k={r.a.k}, clip {clip}, support coverage A {r.a.coverage:.3f}, B {r.b.coverage:.3f}",
        f"{'estimator':<10} {'metric':<16} {'A':>9} {'B':>9} {'B - A':>9} {'95 % interval':>22}  verdict",
    ]
    for key in keys:
        d = r.difference[key]
        lines.append(f"{key[0]:<10} {key[1]:<16} {r.a.estimates[key].value:>9.4f} {r.b.estimates[key].value:>9.4f} "
                     f"{d.value:>+9.4f} {_interval(d, signed=True):>22}  {r.verdict(key)}")  # fmt: skip
    if main_key is None:
        guesses = list(dict.fromkeys(key[0] for key in keys))
        lines.append("verdict: none, the intervals of ips, snips and dr are withheld: the clicks are not position-based (the note)"
                     if withheld else f"verdict: none, {', '.join(guesses)} {'has' if len(guesses) == 1 else 'have'} no interval "
                     "(a model's guess; ask for ips, snips or dr too)")  # fmt: skip
    else:
        lines.append(f"verdict at 95 % ({main_key[0]} {main_key[1]}): {verdict}")
    for note in dict.fromkeys([*r.a.notes, *r.b.notes]):
        tag = "" if note in r.a.notes and note in r.b.notes else " (A)" if note in r.a.notes else " (B)"
        lines.append(f"note{tag}: {note}")
    return lines

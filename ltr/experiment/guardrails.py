"""Guardrails of a sweep (``sweep.constraints``): which jobs may count as its best.

A constraint is one line, ``"<metric key> <op> <bound>"``:

- ``<metric key>``: a key every job logs (``valid/ild_at_10``, ``valid/ndcg_at_10/len_51_plus``);
- ``<op>``: ``>=``, ``<=``, ``>`` or ``<``;
- ``<bound>``: a number, or ``baseline``: the same key's value in the baseline run
  (``sweep.baseline``: a named run; by default the sweep's first job, job 0).

A job is *feasible* when it meets every constraint; a job that does not log a constrained key,
or whose value is NaN, fails that constraint. The sweep's best is the best feasible job (for a
grid and an Optuna search alike; :mod:`ltr.sweeper.record` tags the jobs). For Optuna's
constraints (``Trial.set_constraint``) each constraint is also a number that is ``<= 0`` exactly when it is met
(:meth:`Constraint.violation`): ``bound - value`` for ``>=`` / ``>``, ``value - bound`` for
``<=`` / ``<``; a strict bound hit exactly, or a missing value, counts as violated.

Examples
--------
>>> c = parse_constraint("valid/ild_at_10 >= 0.30")
>>> c.met({"valid/ild_at_10": 0.31}), c.met({"valid/ild_at_10": 0.29}), c.met({})
(True, False, False)
>>> parse_constraint("valid/ndcg_at_10/len_51_plus >= baseline").needs_baseline
True
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ltr.config.schema import SweepConfig
from ltr.errors import LtrUserError

_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt,
}  # fmt: skip
_CONSTRAINT = re.compile(r"^\s*(?P<key>\S+)\s*(?P<op>>=|<=|>|<)\s*(?P<bound>\S+)\s*$")
BASELINE = "baseline"


@dataclass(frozen=True, slots=True)
class Constraint:
    """``key op bound``; ``bound`` None means the baseline run's value of ``key``."""

    key: str
    op: str
    bound: float | None
    text: str

    @property
    def needs_baseline(self) -> bool:
        return self.bound is None

    def threshold(self, baseline: Mapping[str, float] | None) -> float:
        """The number the key is compared with (NaN: a baseline without the key, or none)."""
        if self.bound is not None:
            return self.bound
        return float((baseline or {}).get(self.key, math.nan))

    def met(self, metrics: Mapping[str, float], baseline: Mapping[str, float] | None = None) -> bool:
        """True when ``metrics`` (a job's logged metrics) meet the constraint; a missing or NaN
        value, or a baseline that lacks the key, fails it."""
        value = metrics.get(self.key)
        bound = self.threshold(baseline)
        if value is None or math.isnan(value) or math.isnan(bound):
            return False
        return _OPS[self.op](value, bound)

    def violation(self, metrics: Mapping[str, float], baseline: Mapping[str, float] | None = None) -> float:
        """Optuna's constraint value, ``<= 0`` exactly when :meth:`met`: the gap to the bound;
        a strict bound hit exactly is violated by the least positive float, a missing or NaN
        value (or baseline) by 1.0."""
        value = metrics.get(self.key)
        bound = self.threshold(baseline)
        if value is None or math.isnan(value) or math.isnan(bound):
            return 1.0
        gap = bound - value if self.op in (">=", ">") else value - bound
        if not self.met(metrics, baseline):
            return max(gap, 5e-324)  # a strict bound met with equality: violated, by the least
        return min(gap, 0.0)


def parse_constraint(text: str, *, where: str = "sweep.constraints") -> Constraint:
    """One constraint from its line (see the module docstring); a ``LtrUserError`` naming
    ``where`` otherwise."""
    match = _CONSTRAINT.match(str(text))
    if match is None:
        raise LtrUserError(
            f"{where}: cannot read {text!r}; write '<metric key> <op> <number or baseline>' with op one of "
            ">= <= > <, e.g. 'valid/ild_at_10 >= 0.30'"
        )
    raw = match["bound"]
    if raw == BASELINE:
        bound = None
    else:
        try:
            bound = float(raw)
        except ValueError:
            raise LtrUserError(f"{where}: {text!r} compares with {raw!r}, which is neither a number nor 'baseline'") from None
        if math.isnan(bound):
            raise LtrUserError(f"{where}: {text!r} compares with NaN, which no value meets")
    return Constraint(match["key"], match["op"], bound, " ".join(text.split()))


def parse_constraints(texts: Sequence[str], *, known_keys: Sequence[str] | None = None) -> tuple[Constraint, ...]:
    """Every constraint of ``sweep.constraints``; with ``known_keys`` (the metric keys a job
    logs), a key outside them is refused, naming the constraint."""
    out = []
    for i, text in enumerate(texts):
        constraint = parse_constraint(text, where=f"sweep.constraints[{i}]")
        if known_keys is not None and constraint.key not in set(known_keys):
            raise LtrUserError(
                f"sweep.constraints[{i}]: {constraint.key!r} is not a metric the jobs log "
                "(keys as in optimized_metric, e.g. valid/ndcg_at_10 or valid/ndcg_at_10/len_51_plus)"
            )
        out.append(constraint)
    return tuple(out)


def failed_constraints(
    constraints: Sequence[Constraint], metrics: Mapping[str, float], baseline: Mapping[str, float] | None = None
) -> list[Constraint]:
    """The constraints ``metrics`` do not meet, in order (empty: the job is feasible)."""
    return [c for c in constraints if not c.met(metrics, baseline)]


def check_sweep(sweep: SweepConfig, objectives: Sequence[str], logged: Sequence[str]) -> tuple[str, ...]:
    """The sweep's rules of a ``ltr train`` config (the last of :mod:`ltr.experiment.checks`):
    ``sweep.directions`` (one per objective; default: maximise each) and the grammar and keys
    of ``sweep.constraints`` (each a key of ``logged``); returns the directions."""
    directions = tuple(str(d) for d in sweep.directions) if sweep.directions is not None else ("maximize",) * len(objectives)
    if len(directions) != len(objectives):
        raise LtrUserError(
            f"sweep.directions={list(directions)} has {len(directions)} entries but optimized_metric has "
            f"{len(objectives)} ({', '.join(objectives)}): give one direction per key"
        )
    parse_constraints(list(sweep.constraints), known_keys=logged)
    return directions

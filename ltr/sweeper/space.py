"""Search spaces: Hydra's sweep syntax (``hydra.sweeper.params`` and command-line overrides) as
Optuna distributions, and a trial's values as overrides.

The grammar is Hydra's, as hydra-optuna-sweeper read it:

- ``interval(0.01, 0.2)`` -> ``FloatDistribution``; ``int(interval(7, 127))`` or integer ends ->
  ``IntDistribution``; ``tag(log, interval(...))`` -> the same, on a log scale;
- ``range(1, 10, 2)`` -> ``IntDistribution`` with that step (a float step -> ``FloatDistribution``
  with a step; the end is excluded, as Python's ``range``), ``shuffle(range(...))`` a categorical;
- ``choice(a, b, c)`` (or ``a,b,c``) -> ``CategoricalDistribution``;
- anything else (``model.name=lambdarank``) is a fixed value every trial gets.

Examples
--------
>>> space, fixed = search_space(["model.num_leaves=int(interval(7, 31))", "model=lambdarank"])
>>> space["model.num_leaves"], fixed
(IntDistribution(high=31, log=False, low=7, step=1), {'model': 'lambdarank'})
>>> format_value(0.012345678901234)
'0.01235'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import (
    ChoiceSweep,
    IntervalSweep,
    Override,
    RangeSweep,
    Transformer,
)
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)

from ltr.errors import LtrUserError

#: Significant digits of a float a trial's override (and so its run name) carries.
FLOAT_DIGITS = 4


def format_value(value: Any) -> str:
    """A trial's value as an override value: floats to :data:`FLOAT_DIGITS` significant digits
    (``0.01235``, not ``0.012345678901234``), the rest as ``str``."""
    if isinstance(value, float):
        return f"{value:.{FLOAT_DIGITS}g}"
    return str(value)


def _choices(override: Override) -> CategoricalDistribution:
    choices: list[str | int | float | bool | None] = []
    for choice in override.sweep_iterator(transformer=Transformer.encode):
        if not isinstance(choice, str | int | float | bool | type(None)):
            raise LtrUserError(f"{override.input_line}: a choice must be a str, number, bool or null, got {choice!r}")
        choices.append(choice)
    return CategoricalDistribution(choices)


def distribution(override: Override) -> BaseDistribution:
    """The Optuna distribution of one sweep override (see the module docstring)."""
    value = override.value()
    if override.is_choice_sweep():
        assert isinstance(value, ChoiceSweep)
        return _choices(override)
    if override.is_range_sweep():
        assert isinstance(value, RangeSweep)
        if value.shuffle:
            return _choices(override)
        start, stop, step = value.start, value.stop, value.step
        assert start is not None
        assert stop is not None
        if isinstance(start, float) or isinstance(stop, float) or isinstance(step, float):
            n = int((stop - start) / step)  # values start, start + step, ... < stop
            return FloatDistribution(float(start), float(start + (n - 1) * step), step=float(step))
        last = int(start) + ((int(stop) - int(start) - 1) // int(step)) * int(step)
        return IntDistribution(int(start), last, step=int(step))
    if override.is_interval_sweep():
        assert isinstance(value, IntervalSweep)
        assert value.start is not None
        assert value.end is not None
        log = "log" in value.tags
        if isinstance(value.start, int) and isinstance(value.end, int):
            return IntDistribution(int(value.start), int(value.end), log=log)
        return FloatDistribution(float(value.start), float(value.end), log=log)
    raise LtrUserError(f"{override.input_line}: the Optuna sweeper cannot search this sweep (use interval, range or choice)")


def search_space(overrides: Sequence[str]) -> tuple[dict[str, BaseDistribution], dict[str, str]]:
    """``key=sweep`` overrides -> (key -> distribution, key -> fixed value); a later override
    of a key replaces an earlier one (the command line after ``hydra.sweeper.params``)."""
    space: dict[str, BaseDistribution] = {}
    fixed: dict[str, str] = {}
    for override in OverridesParser.create().parse_overrides(list(overrides)):
        key = override.get_key_element()
        space.pop(key, None)
        fixed.pop(key, None)
        if override.is_sweep_override():
            space[key] = distribution(override)
        else:
            fixed[key] = override.get_value_element_as_str()
    return space, fixed


def params_overrides(params: Mapping[str, Any] | None, prefix: str = "") -> list[str]:
    """``hydra.sweeper.params`` (key -> sweep string) as overrides; a nested entry (what
    ``+hydra.sweeper.params.rerank.alpha=...`` on the command line makes) by its dotted key."""
    out: list[str] = []
    for key, value in (params or {}).items():
        if isinstance(value, Mapping):
            out += params_overrides(value, f"{prefix}{key}.")
        else:
            out.append(f"{prefix}{key}={value}")
    return out


def trial_overrides(values: Mapping[str, Any], fixed: Mapping[str, str]) -> tuple[str, ...]:
    """One job's overrides: the trial's values (:func:`format_value`) and the fixed ones."""
    return tuple(f"{key}={format_value(value)}" for key, value in values.items()) + tuple(
        f"{key}={value}" for key, value in fixed.items()
    )

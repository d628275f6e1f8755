"""Allowed values of config fields, declared where each field is defined.

Every field of a config dataclass (:mod:`ltr.config.schema`, :mod:`ltr.config.groups.data`) that is not a
``bool`` or an Enum (Hydra refuses other values of those while composing) carries an
:class:`Allowed` in its metadata::

    num_leaves: int = field(default=31, metadata=allowed(ge=2, le=131072))

:func:`check_allowed` applies them all, over a whole composed config, before any data is read
or any run exists (:func:`ltr.experiment.checks.check_config`), and refuses the first value out of
range in one line naming the key. Ranges are the ones the code below can take: LightGBM's C
``int`` (:data:`INT32_MAX`), numpy's seeds (:data:`SEED_MAX`), fractions, ... ``None`` is
allowed wherever the field's type allows it (it means "not set" or "the default").
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The largest value of a C ``int``: LightGBM's integer parameters and ``eval_at``.
INT32_MAX = 2**31 - 1
#: numpy's seeds are 32-bit unsigned integers.
SEED_MAX = 2**32 - 1
#: The metadata key under which a field declares its :class:`Allowed`.
KEY = "allowed"


@dataclass(frozen=True, slots=True)
class Allowed:
    """What a field accepts.

    ``ge`` / ``gt`` / ``le`` / ``lt``: bounds of a number (a list's items for a list field);
    numbers must be finite. ``min_len``: the fewest items of a list, or characters of a string.
    ``choices``: the values a string (or a list's items) may take. ``exists``: a path that must
    exist (file or folder). ``free``: a map of free keys (LightGBM parameters by their own name,
    composite metrics), checked where it is used. ``note``: what the bounds mean (``0: off``).
    """

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    min_len: int | None = None
    choices: tuple[str, ...] | None = None
    exists: bool = False
    free: bool = False
    note: str = ""

    def describe(self) -> str:
        """The allowed values in words: ``>= 2 and <= 131072``."""
        parts = [f"{op} {_num(v)}" for op, v in ((">=", self.ge), (">", self.gt), ("<=", self.le), ("<", self.lt)) if v is not None]
        if self.choices:
            parts.append(f"one of {', '.join(self.choices)}")
        text = " and ".join(parts) or "valid"
        return f"{text} ({self.note})" if self.note else text

    def item_problem(self, value: Any) -> str | None:
        """Why one number or string is not allowed, or None."""
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            return f"{value!r} is not a {'string' if self.choices else 'number'}"
        if isinstance(value, str):
            if self.choices is not None and value not in self.choices:
                return f"{value!r} is not one of {', '.join(self.choices)}"
            return None
        if not math.isfinite(value):
            return f"{value} is not finite"
        bounds = ((self.ge, value >= (self.ge or 0)), (self.gt, value > (self.gt or 0)),
                  (self.le, value <= (self.le or 0)), (self.lt, value < (self.lt or 0)))
        if any(bound is not None and not ok for bound, ok in bounds):
            return f"{_num(value)} is out of range: it must be {self.describe()}"
        return None

    def problem(self, value: Any) -> str | None:
        """Why ``value`` (a field's value, not None) is not allowed, or None."""
        if self.free:
            return None if isinstance(value, Mapping) else f"{value!r} is not a map of key: value"
        if isinstance(value, str):
            if self.min_len is not None and len(value.strip()) < self.min_len:
                return "is empty"
            if self.exists and not Path(value).expanduser().exists():
                return f"{value} does not exist" + (f" ({self.note})" if self.note else "")
            return self.item_problem(value) if self.choices else None
        if isinstance(value, Sequence):
            if self.min_len is not None and len(value) < self.min_len:
                return f"{list(value)} has fewer than {self.min_len} item{'s' * (self.min_len != 1)}"
            for item in value:
                problem = self.item_problem(item)
                if problem:
                    return f"{list(value)}: {problem}"
            return None
        return self.item_problem(value)


def _num(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e18 else f"{value:g}"


def allowed(
    *,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    lt: float | None = None,
    min_len: int | None = None,
    choices: Sequence[str] | None = None,
    exists: bool = False,
    free: bool = False,
    note: str = "",
) -> dict[str, Allowed]:
    """Field metadata declaring the allowed values: ``field(default=..., metadata=allowed(ge=1))``."""
    return {KEY: Allowed(ge, gt, le, lt, min_len, None if choices is None else tuple(choices), exists, free, note)}


def allowed_of(f: dataclasses.Field[Any]) -> Allowed | None:
    """The :class:`Allowed` a dataclass field declares, or None."""
    found = f.metadata.get(KEY)
    return found if isinstance(found, Allowed) else None


def problems(config: Any, prefix: str = "", *, paths: bool = True) -> list[str]:
    """``key=value: why`` of every field of the dataclass instance ``config`` (nested ones
    included, keys dotted from ``prefix``) whose value its :class:`Allowed` refuses.
    ``paths=False``: a path that does not exist (``exists``) is not a problem (a logged run's
    settings, whose data files may be gone: ``ltr predict --data``)."""
    out: list[str] = []
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        key = f"{prefix}{f.name}"
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            out += problems(value, f"{key}.", paths=paths)
            continue
        rule = allowed_of(f)
        if rule is None or value is None:
            continue
        if rule.exists and not paths:
            rule = dataclasses.replace(rule, exists=False)
        problem = rule.problem(value)
        if problem:
            shown = list(value) if isinstance(value, Sequence) and not isinstance(value, str) else value
            shown = _num(shown) if isinstance(shown, int | float) and not isinstance(shown, bool) else shown
            if problem.startswith(str(shown)):
                out.append(f"{key}={problem}")
            elif problem == "is empty":
                out.append(f"{key} is empty")
            else:
                out.append(f"{key}={shown}: {problem}")
    return out

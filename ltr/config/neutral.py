"""Config fields that change how a run goes (what it shows, where it keeps its caches), never what
it computes: every value of such a field gives the same metrics and model, bit for bit.

A neutral field says so next to its definition, with its allowed values if it has any::

    show_progress: bool = field(default=True, metadata=neutral())
    cache_max_mb: int | None = field(default=2048, metadata=neutral(allowed(ge=0)))

Run names and figure titles are made of the overrides that say what a run computes
(:func:`ltr.experiment.names.shown_overrides`): overrides of neutral fields are left out, as
``tracking``'s and Hydra's are, so ``fit.show_progress=false`` does not rename a run.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Mapping
from typing import Any

#: The metadata key of a neutral field.
KEY = "neutral"


def neutral(metadata: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A field's metadata (``metadata``, e.g. its :func:`ltr.config.allowed.allowed`) marked neutral."""
    return {**(metadata or {}), KEY: True}


def fields_where(cls: type, keep: Callable[[type, dataclasses.Field[Any]], bool], prefix: str = "") -> list[str]:
    """The dotted names (after ``prefix``) of the fields ``f`` of the config dataclass ``cls``, and
    of the dataclasses its fields default to (``eval.clicks``, ``cv``, ``sweep``), for which
    ``keep(owner, f)`` is true (``owner``: the dataclass that declares ``f``)."""
    out: list[str] = []
    for f in dataclasses.fields(cls):
        if keep(cls, f):
            out.append(f"{prefix}{f.name}")
        factory = f.default_factory
        if isinstance(factory, type) and dataclasses.is_dataclass(factory):
            out += fields_where(factory, keep, f"{prefix}{f.name}.")
    return out


def neutral_fields(cls: type, prefix: str = "") -> list[str]:
    """The dotted names (after ``prefix``) of the neutral fields of the config dataclass ``cls``
    and of the dataclasses its fields default to (``eval.clicks``, ``cv``, ``sweep``)."""
    return fields_where(cls, lambda _, f: bool(f.metadata.get(KEY)), prefix)


def list_fields(cls: type, prefix: str = "") -> list[str]:
    """The dotted names (after ``prefix``) of the fields of ``cls`` (and of its sections) that hold
    a list (``list[int]``, ``list[str] | None``, ...): set whole, ``eval.k=[5,10]``."""

    def holds_list(owner: type, f: dataclasses.Field[Any]) -> bool:
        hint = typing.get_type_hints(owner)[f.name]
        return any(typing.get_origin(t) is list for t in (hint, *typing.get_args(hint)))

    return fields_where(cls, holds_list, prefix)


__all__ = ["KEY", "fields_where", "list_fields", "neutral", "neutral_fields"]

"""Config fields that change how a run goes (what it shows, where it keeps its caches), never what
it computes: every value of such a field gives the same metrics and model, bit for bit.

A neutral field says so next to its definition, with its allowed values if it has any::

    show_progress: bool = field(default=True, metadata=neutral())
    cache_max_mb: int | None = field(default=2048, metadata=neutral(allowed(ge=0)))

Run names and figure titles are made of the overrides that say what a run computes
(:func:`ltr.experiment.record.shown_overrides`): overrides of neutral fields are left out, as
``tracking``'s and Hydra's are, so ``fit.show_progress=false`` does not rename a run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

#: The metadata key of a neutral field.
KEY = "neutral"


def neutral(metadata: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A field's metadata (``metadata``, e.g. its :func:`ltr.config.allowed.allowed`) marked neutral."""
    return {**(metadata or {}), KEY: True}


def neutral_fields(cls: type, prefix: str = "") -> list[str]:
    """The dotted names (after ``prefix``) of the neutral fields of the config dataclass ``cls``
    and of the dataclasses its fields default to (``eval.clicks``, ``cv``, ``sweep``)."""
    out: list[str] = []
    for f in dataclasses.fields(cls):
        if f.metadata.get(KEY):
            out.append(f"{prefix}{f.name}")
        factory = f.default_factory
        if isinstance(factory, type) and dataclasses.is_dataclass(factory):
            out += neutral_fields(factory, f"{prefix}{f.name}.")
    return out


__all__ = ["KEY", "neutral", "neutral_fields"]

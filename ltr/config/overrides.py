"""What a command-line override sets: the key part of ``[+|~|++]key=value``."""

from __future__ import annotations

__all__ = ["override_key"]


def override_key(override: str) -> str:
    """The config key or group an override sets, without Hydra's ``+``/``++``/``~`` prefix:
    ``model.num_leaves=7`` -> ``model.num_leaves``, ``+model.params.x=1`` -> ``model.params.x``,
    ``model=pointwise`` -> ``model``, ``~model.params.x`` -> ``model.params.x``."""
    return override.lstrip("+~").split("=", 1)[0]

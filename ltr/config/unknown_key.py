"""The one line a config key or group option that does not exist gets.

A key is found missing by Hydra while it composes (``model.num_leafs=7``) or by ltr's schema
check after it (``+model.num_leafs=7``): :func:`unknown_key_message` names the key, the closest
key beside it (``did you mean model.num_leaves?``), and, for a key of another ``data`` option
(``data.cache_dir`` of file data on ``data=synthetic``), the options that have it. An option of
a group (``model=lambdarnk``) gets :func:`unknown_option_message`: the closest option and the
group's options.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Sequence
from typing import Any

from omegaconf import DictConfig, OmegaConf

from ltr.config.allowed import allowed_of
from ltr.config.groups.data import DATA_OPTIONS


def data_options_with(name: str) -> list[str]:
    """The ``data`` options whose schema has a field ``name``."""
    return [option for option, cls in DATA_OPTIONS.items() if name in {f.name for f in dataclasses.fields(cls)}]


def data_option_of(schema: type | None) -> str | None:
    """The ``data`` option whose schema is ``schema`` (None: no option's)."""
    return next((option for option, cls in DATA_OPTIONS.items() if cls is schema), None)


def unknown_key_message(key: str, known: Sequence[str], *, data_option: str | None = None) -> str:
    """The line for the dotted ``key`` that its config node lacks; ``known``: the keys of that node;
    ``data_option``: the ``data`` option in use, when the node is ``data``.

    >>> unknown_key_message("model.num_leafs", ["num_leaves", "max_depth"])
    'model.num_leafs is not a config key; did you mean model.num_leaves? (ltr train --cfg job lists them)'
    >>> unknown_key_message("data.cache_dir", ["n_queries"], data_option="synthetic")
    'data.cache_dir is not a key of data=synthetic; data=letor, svmlight, parquet, mq2008 have it (ltr train --cfg job lists them)'
    """
    prefix, _, name = key.rpartition(".")
    elsewhere = data_options_with(name) if prefix == "data" and data_option is not None else []
    if elsewhere:
        return (
            f"{key} is not a key of data={data_option}; "
            f"data={', '.join(elsewhere)} {'has' if len(elsewhere) == 1 else 'have'} it (ltr train --cfg job lists them)"
        )
    close = difflib.get_close_matches(name, [str(k) for k in known], n=1)
    hint = f"; did you mean {prefix + '.' if prefix else ''}{close[0]}?" if close else ""
    return f"{key} is not a config key{hint} (ltr train --cfg job lists them)"


def unknown_option_message(group: str, name: str, options: Sequence[str]) -> str:
    """The line for ``group=name`` when ``group`` has no option ``name``; ``options``: the group's
    (Hydra's list; the schemas it stores as ``<option>_schema`` left out).

    >>> unknown_option_message("model", "lambdarnk", ["lambdarank", "model_schema", "pointwise"])
    'model=lambdarnk is not an option of model; did you mean model=lambdarank? (options: lambdarank, pointwise)'
    """
    shown = [o for o in options if not o.endswith("_schema")]
    close = difflib.get_close_matches(name, shown, n=1)
    hint = f"; did you mean {group}={close[0]}?" if close else ""
    return f"{group}={name} is not an option of {group}{hint} (options: {', '.join(shown)})"


__all__ = ["data_option_of", "data_options_with", "unknown_key_message", "unknown_option_message"]


def unknown_keys(node: Any, prefix: str = "") -> list[tuple[str, list[str]]]:
    """``(dotted key, the known keys beside it)`` of every key of ``node`` (a composed config)
    that its dataclass does not define; free maps (``allowed(free=True)``) are not looked into."""
    if not isinstance(node, DictConfig):
        return []
    schema = OmegaConf.get_type(node)
    if not dataclasses.is_dataclass(schema):
        return []
    fields = {f.name: f for f in dataclasses.fields(schema)}
    out: list[tuple[str, list[str]]] = []
    for key in node:
        name = str(key)
        f = fields.get(name)
        if f is None:
            out.append((f"{prefix}{name}", list(fields)))
            continue
        rule = allowed_of(f)
        if rule is not None and rule.free:
            continue
        out += unknown_keys(node._get_node(name), f"{prefix}{name}.")
    return out

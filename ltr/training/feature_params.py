"""LightGBM parameters that speak of the data's features, checked against its feature count.

LightGBM takes some parameters per feature, in the data's column order (``monotone_constraints``,
``feature_contri``, ``cegb_penalty_feature_lazy``, ``cegb_penalty_feature_coupled``,
``max_bin_by_feature``), some as 0-based feature indices (``interaction_constraints``,
``categorical_feature``), and two as JSON files that name features by index
(``forcedsplits_filename``, ``forcedbins_filename``). It checks them unevenly: a list of the
wrong length fails only once the data set is built (with a C++ line on the console), while an
index beyond the data, a flat ``interaction_constraints`` list or a missing or unreadable
forced-splits file is ignored without a word. :func:`check_feature_params` refuses each of those
in one line that names the key as given, and is called wherever the count is known: from the
config before any data is read (:func:`ltr.data.formats.width.configured_width`), once the data is read
(:func:`ltr.training.config_rules.check_data`), and when a model is fitted
(:func:`ltr.training.local.fit_ranker`). Without a count it checks what needs none (the values,
the files).

Importing this module imports no LightGBM; the alias table is looked up only when
``model.params`` has keys (:func:`ltr.training.settings.lightgbm_names`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ltr.errors import LtrUserError
from ltr.training.settings import lightgbm_names

#: Per-feature lists: LightGBM's name -> (the rule every entry follows, as words; the test).
PER_FEATURE: dict[str, tuple[str, Callable[[float], bool]]] = {
    "monotone_constraints": ("one of -1, 0, 1 (decreasing, none, increasing)", lambda v: v in (-1, 0, 1)),
    # LightGBM fails while training on a negative one (its docs promise max(0, value))
    "feature_contri": ("a number >= 0 (0 keeps the feature out of splits)", lambda v: v >= 0),
    "cegb_penalty_feature_lazy": ("a number", math.isfinite),
    "cegb_penalty_feature_coupled": ("a number", math.isfinite),
    "max_bin_by_feature": ("an integer >= 2", lambda v: v >= 2 and v == int(v)),
}
#: Lists of feature indices (``interaction_constraints``: a list of lists of them).
FEATURE_INDICES = frozenset({"interaction_constraints", "categorical_feature"})
#: JSON files that name features by index: LightGBM's name -> the JSON it expects, as words.
FEATURE_FILES: dict[str, str] = {
    "forcedsplits_filename": 'an object {"feature": i, "threshold": x, "left": {...}, "right": {...}}',
    "forcedbins_filename": 'an array of objects {"feature": i, "bin_upper_bound": [...]}',
}
#: Every parameter this module checks.
FEATURE_PARAMS = frozenset(PER_FEATURE) | FEATURE_INDICES | frozenset(FEATURE_FILES)


def feature_param_keys(params: Mapping[str, Any]) -> dict[str, str]:
    """The keys of ``params`` (as given: ``mc``, ``feature_penalty``) that name one of
    :data:`FEATURE_PARAMS`, each with LightGBM's own name. Looks LightGBM's aliases up only when
    ``params`` has keys."""
    if not params:
        return {}
    names = lightgbm_names()
    return {key: names[key] for key in params if names.get(key) in FEATURE_PARAMS}


def check_feature_params(
    params: Mapping[str, Any], n_features: int | None, *, source: str = "", files: bool = True
) -> None:
    """Refuse a per-feature parameter of ``params`` (``model.params``) that does not fit data of
    ``n_features`` columns (None: not known yet; only the values and files are checked).

    ``source``: where the count comes from, for the message (``data.n_features``). An empty list
    is LightGBM's "not set" and passes, and so does None (``null``). ``files=False``: the files a parameter names
    (``forcedsplits_filename``) are not read (a logged run's settings, read to score new data:
    the trained model needs them no more).

    Raises
    ------
    LtrUserError
        One line naming ``model.params.<key>``, the given length or index, and the data's
        feature count.
    """
    for key, name in feature_param_keys(params).items():
        value = params[key]
        if value is None:  # null: not set (LightGBM's Python package skips a None parameter)
            continue
        if name in PER_FEATURE:
            _check_per_feature(key, name, value, n_features, source)
        elif name == "interaction_constraints":
            for group in _constraint_groups(key, value):
                _check_indices(key, group, n_features, source)
        elif name == "categorical_feature":
            if not (isinstance(value, str) and value.strip().startswith("name:")):  # by column name
                _check_indices(key, _entries(value), n_features, source)
        elif files:
            _check_feature_file(key, name, value, n_features, source)


def _where(n_features: int, source: str) -> str:
    return f"the data has {n_features} features" + (f" ({source})" if source else "")


def _entries(value: Any) -> list[Any]:
    """A list-valued parameter as its entries: LightGBM takes a list or a comma-separated string."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",")] if value.strip() else []
    if isinstance(value, Sequence):  # a list, a tuple, OmegaConf's ListConfig
        return list(value)
    return [value]


def _number(key: str, position: int, entry: Any) -> float:
    try:
        if isinstance(entry, bool):
            raise ValueError
        return float(entry)
    except (TypeError, ValueError):
        raise LtrUserError(f"model.params.{key}: entry {position} is {entry!r}, not a number") from None


def _check_per_feature(key: str, name: str, value: Any, n_features: int | None, source: str) -> None:
    entries = _entries(value)
    if not entries:
        return
    rule, ok = PER_FEATURE[name]
    for position, entry in enumerate(entries):
        number = _number(key, position, entry)
        if not (math.isfinite(number) and ok(number)):
            raise LtrUserError(f"model.params.{key}: entry {position} is {entry!r}; each entry must be {rule}")
    if n_features is not None and len(entries) != n_features:
        raise LtrUserError(
            f"model.params.{key} has {len(entries)} entries but {_where(n_features, source)}; "
            "give one entry per feature, in the data's column order"
        )


def _index(key: str, entry: Any) -> int:
    if isinstance(entry, int) and not isinstance(entry, bool):
        return entry
    try:
        number = float(entry) if not isinstance(entry, bool) else math.nan
    except (TypeError, ValueError):
        number = math.nan
    if not number.is_integer():  # nan and inf are not
        raise LtrUserError(f"model.params.{key}: {entry!r} is not a feature index (0-based, an integer)")
    return int(number)


def _check_indices(key: str, entries: list[Any], n_features: int | None, source: str) -> None:
    for entry in entries:
        index = _index(key, entry)
        if index < 0:
            raise LtrUserError(f"model.params.{key}: feature index {index} is negative (indices are 0-based)")
        if n_features is not None and index >= n_features:
            raise LtrUserError(
                f"model.params.{key}: feature index {index} is beyond the data's {n_features} features "
                f"(0-based: 0..{n_features - 1}{'; ' + source if source else ''})"
            )


def _constraint_groups(key: str, value: Any) -> list[list[Any]]:
    """``interaction_constraints`` as its groups: a list of lists, or LightGBM's string form
    ``"[0,1],[2,3]"``. A flat list, which LightGBM ignores without a word, is refused."""
    if isinstance(value, str):
        groups = re.findall(r"\[([^\[\]]*)\]", value)
        if value.strip() and not groups:
            raise LtrUserError(f"model.params.{key}={value!r} has no group; write it as [[0,1],[2,3]]")
        return [_entries(group) for group in groups]
    if isinstance(value, Sequence):  # a list, a tuple, OmegaConf's ListConfig
        if not all(isinstance(group, Sequence) and not isinstance(group, str) for group in value):
            raise LtrUserError(
                f"model.params.{key}={list(value)} is not a list of lists (LightGBM would ignore it); "
                "give groups of feature indices that may interact, e.g. [[0,1],[2,3]]"
            )
        return [list(group) for group in value]
    raise LtrUserError(f"model.params.{key}={value!r} is not a list of lists of feature indices, e.g. [[0,1],[2,3]]")


def _check_feature_file(key: str, name: str, value: Any, n_features: int | None, source: str) -> None:
    """The file exists and holds the JSON LightGBM reads, every ``feature`` in it a valid index."""
    if not isinstance(value, str) or not value.strip():
        return  # "": not set
    path = Path(value).expanduser()
    if not path.is_file():
        what = "is a directory, not a file" if path.is_dir() else "does not exist"
        raise LtrUserError(f"model.params.{key}={value}: the file {what} (LightGBM would ignore the setting without a word)")
    try:
        content = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LtrUserError(f"model.params.{key}={value} is not a JSON file LightGBM can read: {exc}") from None
    expected = FEATURE_FILES[name]
    shape_ok = isinstance(content, dict) if name == "forcedsplits_filename" else isinstance(content, list)
    if not shape_ok:
        raise LtrUserError(f"model.params.{key}={value}: LightGBM expects {expected} in it")
    _check_indices(key, list(_features_named(content)), n_features, source)


def _features_named(node: Any) -> list[Any]:
    """Every ``feature`` value in a forced-splits tree or forced-bins array."""
    out: list[Any] = []
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if "feature" in item:
                out.append(item["feature"])
            stack.extend(v for k, v in item.items() if k in ("left", "right"))
        elif isinstance(item, list):
            stack.extend(item)
    return out

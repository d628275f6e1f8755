"""Label recipes: a grade for every row from what users did with it (behaviour columns).

A recipe (:class:`ltr.config.groups.data.LabelRecipeConfig`) is one of two kinds:

- ``rules``: an ordered list of ``(column, min, grade)``; a row gets the grade of the *first* rule
  whose column is ``>= min``, else ``default``. "purchase ? 4 : cart ? 3 : long dwell ? 2 :
  click ? 1 : 0" is four rules.
- ``weighted``: the score ``sum_c weights[c] * column_c`` cut at increasing ``thresholds``: a row
  gets grade ``g`` = the number of thresholds ``<=`` its score (0 below the first).

Everything is numpy over the flat row arrays. Behaviour columns are float64, one value per row
(:attr:`ltr.data.ranking_data.RankingData.behaviours`). A recipe names only columns the data has:
:func:`check_recipe` says which is missing, before any data is read when the columns are known.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ltr.data.ranking_data import RankingData
from ltr.errors import DataError

#: Label sources every click log has besides its recipes: the true grades and the clicks.
BUILTIN_SOURCES = ("relevance", "clicks")
#: The label source a Parquet / CSV table has besides its recipes: its label column.
TABLE_SOURCES = ("label",)


def check_recipe(name: str, recipe: Any, columns: Iterable[str] | None = None) -> None:
    """Raise `DataError` (one line naming ``data.label_recipes.<name>``) for a recipe that cannot
    grade: no rule or weight, a negative grade, thresholds not increasing, or (with ``columns``)
    a column the data does not have."""
    where = f"data.label_recipes.{name}"
    known = None if columns is None else sorted(columns)
    if str(recipe.kind) == "rules":
        if not recipe.rules:
            raise DataError(f"{where}: kind=rules needs at least one rule (column, min, grade)")
        used = [str(r.column) for r in recipe.rules]
        grades = [int(r.grade) for r in recipe.rules] + [int(recipe.default)]
        if min(grades) < 0:
            raise DataError(f"{where}: grade {min(grades)} is negative; grades are 0, 1, 2, ...")
    else:
        if not recipe.weights:
            raise DataError(f"{where}: kind=weighted needs weights (column: weight)")
        thresholds = [float(t) for t in recipe.thresholds]
        if not thresholds or any(b <= a for a, b in itertools.pairwise(thresholds)):
            raise DataError(f"{where}.thresholds={thresholds} must be a non-empty increasing list (grade g from the g-th)")
        used = [str(c) for c in recipe.weights]
    if known is not None:
        missing = [c for c in used if c not in known]
        if missing:
            raise DataError(f"{where}: column {missing[0]!r} is not a behaviour column of the data ({', '.join(known)})")


def apply_recipe(recipe: Any, behaviours: Mapping[str, NDArray[np.float64]], *, name: str = "recipe") -> NDArray[np.int32]:
    """The grade of every row under ``recipe`` (see the module docstring).

    Parameters
    ----------
    recipe : a :class:`ltr.config.groups.data.LabelRecipeConfig` (or anything with its fields)
    behaviours : the behaviour columns, each float64 of shape (n_rows,)
    name : the recipe's name, for error messages

    Returns
    -------
    int32 array, shape (n_rows,)

    Examples
    --------
    >>> from ltr.config.groups.data import LabelRecipeConfig, LabelRuleConfig
    >>> cols = {"click": np.array([1., 1., 0., 1.]), "purchase": np.array([1., 0., 0., 0.]),
    ...         "dwell": np.array([5., 40., 0., 3.])}
    >>> rules = LabelRecipeConfig(rules=[LabelRuleConfig("purchase", 1, 4), LabelRuleConfig("dwell", 30, 2),
    ...                                  LabelRuleConfig("click", 1, 1)])
    >>> apply_recipe(rules, cols).tolist()
    [4, 2, 0, 1]
    >>> weighted = LabelRecipeConfig(kind="weighted", weights={"click": 1.0, "dwell": 0.05},
    ...                              thresholds=[1.0, 2.0, 3.0])
    >>> apply_recipe(weighted, cols).tolist()  # scores 1.25, 3.0, 0.0, 1.15
    [1, 3, 0, 1]
    """
    check_recipe(name, recipe, behaviours.keys())
    n_rows = len(next(iter(behaviours.values()))) if behaviours else 0
    if str(recipe.kind) == "rules":
        grades = np.full(n_rows, int(recipe.default), dtype=np.int32)
        decided = np.zeros(n_rows, dtype=np.bool_)
        for rule in recipe.rules:
            hit = ~decided & (behaviours[str(rule.column)] >= float(rule.min))
            grades[hit] = int(rule.grade)
            decided |= hit
        return grades
    score = np.zeros(n_rows, dtype=np.float64)
    for column, weight in recipe.weights.items():
        score += float(weight) * behaviours[str(column)]
    thresholds = np.asarray([float(t) for t in recipe.thresholds], dtype=np.float64)
    return np.searchsorted(thresholds, score, side="right").astype(np.int32)


def with_recipe(data: RankingData, recipe: Any, *, name: str) -> RankingData:
    """``data`` with its labels replaced by the grades of ``recipe`` (same arrays otherwise)."""
    if data.behaviours is None:
        raise DataError(f"data.label_recipes.{name}: the data {data.name!r} has no behaviour columns")
    return dataclasses.replace(data, labels=apply_recipe(recipe, data.behaviours, name=name))


def grade_counts(labels: NDArray[np.integer], *, n_grades: int | None = None) -> list[int]:
    """Rows per grade ``0..max`` (or ``0..n_grades-1``).

    Examples
    --------
    >>> grade_counts(np.array([0, 2, 2, 0, 0]))
    [3, 0, 2]
    """
    labels = np.asarray(labels)
    size = int(labels.max()) + 1 if labels.size else 0
    counts = np.bincount(labels.astype(np.int64), minlength=max(size, n_grades or 0))
    return [int(c) for c in counts]

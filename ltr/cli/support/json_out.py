"""The ``--json`` output of the ``ltr`` verbs: counts as integers.

The numbers a verb reports are floats where they are averaged or logged to MLflow (``n_queries``
is a metric there); in the JSON a script reads, a count is an integer (``"n_queries": 3``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any


def is_count(key: str) -> bool:
    """A key that names a count: ``n``, ``n_*`` and its strata (``n_queries/len_1-10``).

    >>> [is_count(k) for k in ("n", "n_queries/len_1-10", "n_skipped_zero_idcg", "ndcg_at_10", "no_result_rate")]
    [True, True, True, False, False]
    """
    return key == "n" or key.split("/")[0].startswith("n_")


def counts_as_ints(value: Any, counts: Callable[[str], bool] = is_count) -> Any:
    """``value`` (nested dicts and lists) with every whole float under a key ``counts`` accepts
    made an ``int``; everything else as it was.

    >>> counts_as_ints({"n_queries": 3.0, "ndcg_at_10": 1.0, "shift": {"0": {"n": 12.0}}, "rows": [{"n": 2.5}]})
    {'n_queries': 3, 'ndcg_at_10': 1.0, 'shift': {'0': {'n': 12}}, 'rows': [{'n': 2.5}]}
    """
    if isinstance(value, dict):
        return {
            key: int(item) if isinstance(item, float) and item.is_integer() and counts(str(key)) else counts_as_ints(item, counts)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [counts_as_ints(item, counts) for item in value]
    return value


def dumps(value: Any, counts: Callable[[str], bool] = is_count, *, allow_nan: bool = False) -> str:
    """The JSON text of ``value`` (indented by 2; NaN and inf refused unless ``allow_nan``), counts as integers."""
    return json.dumps(counts_as_ints(value, counts), indent=2, allow_nan=allow_nan)

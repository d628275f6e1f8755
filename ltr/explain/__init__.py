"""Explanations of a run's ranking: exact per-document feature contributions (LightGBM's
TreeSHAP), centred per query, feature importance overall and per list-length stratum, one
query's and one pair's view, and what changed between two runs.

Conventions are written once, in :mod:`ltr.explain.contributions` (shapes, centring) and
:mod:`ltr.explain.importance` (the importance measure); ``ltr explain`` (:mod:`ltr.cli.explain`)
parses and prints, ``ltr compare --explain`` adds :mod:`ltr.explain.difference`.
"""

from __future__ import annotations

from ltr.explain.contributions import centre, contributions, query_importance, query_means
from ltr.explain.difference import ImportanceDifference, importance_difference
from ltr.explain.importance import ALL, Importance, ImportanceSums
from ltr.explain.runner import Explanation, explain_input, run_importance
from ltr.explain.views import PairView, QueryRows, pair_view

__all__ = [
    "ALL",
    "Explanation",
    "Importance",
    "ImportanceDifference",
    "ImportanceSums",
    "PairView",
    "QueryRows",
    "centre",
    "contributions",
    "explain_input",
    "importance_difference",
    "pair_view",
    "query_importance",
    "query_means",
    "run_importance",
]

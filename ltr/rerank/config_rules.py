"""The re-ranking's rules of a ``ltr train`` config (``rerank``), and of the data it re-ranks
(the columns it reads, integer categories).

A concern's rules of :mod:`ltr.experiment.checks`: :func:`check_config` (its ``ConfigRules``:
before any data is read) and :func:`check_data` (its ``DataRules``); each raises
:class:`ltr.errors.LtrUserError` at the first rule broken.
"""

from __future__ import annotations

import numpy as np

from ltr.config.choices import RerankKind, Similarity
from ltr.config.schema import RerankConfig, TrainConfig
from ltr.data.splits import Splits
from ltr.errors import LtrUserError


def check_config(config: TrainConfig, *, paths: bool = True) -> None:
    """``rerank.alpha``'s range for the re-ranker, the data a re-ranker needs, and
    ``similarity=category``'s column. ``paths``: unused (no rule reads a file)."""
    rerank = config.rerank
    if rerank.alpha > 1 and rerank.kind != RerankKind.uncertainty:
        raise LtrUserError(
            f"rerank.alpha={rerank.alpha:g} is out of range: it must be <= 1 for rerank=diversify "
            "(score x (1 - alpha x similarity)); only rerank=uncertainty's bonus weight may exceed 1"
        )
    if rerank.kind == RerankKind.none:
        return
    if config.data.read_by_workers:
        raise LtrUserError(
            f"rerank={rerank.kind} needs the rows in this process: data={config.data.kind} is "
            "evaluated on the Dask workers (use rerank=none, or an in-memory data option)"
        )
    if rerank.kind == RerankKind.uncertainty:
        # rerank.alpha's range (>= 0) is declared on the field (ltr.config.allowed): a bonus weight
        if getattr(config.data, "popularity_feature", None) is None:
            raise LtrUserError("rerank=uncertainty needs data.popularity_feature (the column of the items' popularity)")
        return
    if rerank.similarity == Similarity.category and rerank.category_feature is None:
        raise LtrUserError("rerank.similarity=category needs rerank.category_feature (the column holding categories)")


def check_data(config: TrainConfig, splits: Splits | None, *, n_features: int | None = None) -> None:
    """The columns ``rerank`` names lie within the training data's features, and a category
    column holds categories (nothing to check without ``splits``: partitioned data is not
    re-ranked; ``n_features`` unused)."""
    rerank = config.rerank
    if splits is not None and rerank.kind != RerankKind.none:
        width = splits.train.n_features
        columns = [("features", c) for c in rerank.features or []]
        if rerank.category_feature is not None:
            columns.append(("category_feature", rerank.category_feature))
        for name, col in columns:
            if col >= width:
                raise LtrUserError(f"rerank.{name}: column {col} is beyond the data's {width} features (0-based)")
        _check_categories(rerank, splits)


def _check_categories(rerank: RerankConfig, splits: Splits) -> None:
    """Categories are integer codes: a column of other values needs ``rerank.category_bins``
    (else every distinct value is its own category and ``similarity=category`` re-ranks nothing)."""
    col = rerank.category_feature
    if col is None or rerank.category_bins is not None:
        return
    values = splits.train.features[:, col]
    fractional = values[np.isfinite(values) & (values != np.rint(values))]
    if fractional.size:
        raise LtrUserError(
            f"rerank.category_feature={col}: column {col} holds non-integer values (e.g. {fractional[0]:.6g}), "
            "so each value would be a category of its own; set rerank.category_bins=N to cut it into N "
            "quantile bins, or pick a column of integer categories"
        )

"""The data's rules of a ``ltr train`` config: label sources and recipes, a click log's options,
``data.tail_quantile``; and, once the data is read, the column of ``data.popularity_feature``.

A concern's rules of :mod:`ltr.experiment.checks`: :func:`check_config` (its ``ConfigRules``:
before any data is read) and :func:`check_data` (its ``DataRules``); each raises
:class:`ltr.errors.LtrUserError` at the first rule broken.
"""

from __future__ import annotations

from typing import Any

from ltr.config.schema import TrainConfig
from ltr.data.feedback.clicks import BEHAVIOURS
from ltr.data.feedback.recipes import BUILTIN_SOURCES, TABLE_SOURCES, check_recipe
from ltr.data.ranking_data import RankingData
from ltr.data.splits import Splits
from ltr.errors import DataError, LtrUserError


def check_config(config: TrainConfig, *, paths: bool = True) -> None:
    """The rules of the labels, then of the click log. ``paths``: unused (the readers check the files)."""
    _check_labels(config)
    _check_click_log(config)


def check_data(config: TrainConfig, splits: Splits | None, *, n_features: int | None = None) -> None:
    """``data.popularity_feature`` names a feature of the training data (nothing to check
    without ``splits``: partitioned data, ``n_features`` unused)."""
    if splits is not None:
        popularity_column(config.data, splits.train)


def popularity_column(data_cfg: Any, data: RankingData) -> int | None:
    """The feature column of ``data.popularity_feature`` (None when unset); a one-line error
    naming the feature names when the data has no such feature."""
    name = getattr(data_cfg, "popularity_feature", None)
    if name is None:
        return None
    if str(name) not in data.feature_names:
        shown = ", ".join(data.feature_names[:8]) + (", ..." if len(data.feature_names) > 8 else "")
        raise LtrUserError(f"data.popularity_feature={name!r} is not a feature of the data ({shown})")
    return data.feature_names.index(str(name))


def _check_labels(config: TrainConfig) -> None:
    """Label sources name a built-in source or a recipe of ``data.label_recipes``, and every recipe
    can grade the data's behaviour columns (``data=synthetic_clicks``: click, dwell, cart, purchase)."""
    data = config.data
    quantile = getattr(data, "tail_quantile", None)
    if quantile is not None and not 0.0 < quantile < 1.0:
        raise LtrUserError(f"data.tail_quantile={quantile} must lie in (0, 1) (null: 0.8)")
    if not hasattr(data, "train_labels"):
        return
    recipes = dict(getattr(data, "label_recipes", None) or {})
    clicks = str(data.kind) == "synthetic_clicks"
    known = [*(BUILTIN_SOURCES if clicks else TABLE_SOURCES), *recipes]
    for role in ("train", "valid", "eval"):
        value = str(getattr(data, f"{role}_labels"))
        if value not in known:
            raise LtrUserError(
                f"data.{role}_labels={value!r} is not one of: {', '.join(known)} (define a recipe in data.label_recipes)"
            )
    columns = BEHAVIOURS if clicks else [str(c) for c in getattr(data, "behaviour_columns", None) or []]
    for name, recipe in recipes.items():
        try:
            check_recipe(str(name), recipe, columns)
        except DataError as exc:
            if clicks:
                raise
            raise LtrUserError(f"{exc}; a table's recipes grade the columns listed in data.behaviour_columns") from None


def _check_click_log(config: TrainConfig) -> None:
    """A click log's options fit together (:mod:`ltr.data.feedback.click_log`): a user's log
    (``data.click_column``) needs ``data.position_column`` and propensities it can have; each
    propensity method needs its columns; the simulator's log has no logged propensities or
    rankers. One line each, before any data is read."""
    data, clicks = config.data, config.eval.clicks
    method = str(clicks.propensity)
    simulated = str(data.kind) == "synthetic_clicks"
    user_log = getattr(data, "click_column", None) is not None
    for key in ("propensity_column", "logger_column", "query_column", "randomized_column"):
        if getattr(data, key, None) is not None and not user_log:
            raise LtrUserError(f"data.{key} is a column of a click log: set data.click_column too (the column of clicks)")
    if method == "randomized" and getattr(data, "randomized_column", None) is None:
        raise LtrUserError(
            "eval.clicks.propensity=randomized needs data.randomized_column (0/1 per row: 1 for a session shown in random "
            "order); data=synthetic_clicks has none: write it with ltr data write synthetic_clicks data.randomized_share=0.3 "
            "and train on the files (data=parquet)"
            if simulated else
            "eval.clicks.propensity=randomized needs data.randomized_column (0/1 per row: 1 for a session shown in random order)"
        )  # fmt: skip
    if not user_log:
        if simulated and method in ("harvest", "column"):
            raise LtrUserError(
                f"eval.clicks.propensity={method} needs a logged "
                f"{'ranker id per row (several logging rankers)' if method == 'harvest' else 'propensity per row'}, which "
                "data=synthetic_clicks has not; use config, estimated or em"
            )
        return
    if getattr(data, "position_column", None) is None:
        raise LtrUserError(f"data.click_column={data.click_column!r} needs data.position_column (the logged 0-based positions)")
    if method == "config" and clicks.propensities is None:
        raise LtrUserError(
            "a click log (data.click_column) has no known examination curve: give eval.clicks.propensities=[1,0.6,...] "
            "or estimate it: eval.clicks.propensity=em (or estimated, harvest with data.logger_column, column with "
            "data.propensity_column)"
        )
    if method == "column" and getattr(data, "propensity_column", None) is None:
        raise LtrUserError("eval.clicks.propensity=column needs data.propensity_column (the logged propensity of every row)")
    if method == "harvest":
        if getattr(data, "logger_column", None) is None:
            raise LtrUserError("eval.clicks.propensity=harvest needs data.logger_column (the id of the ranker that showed each list)")
        if getattr(data, "doc_id_column", None) is None:
            raise LtrUserError("eval.clicks.propensity=harvest needs data.doc_id_column (the same document under several rankers)")

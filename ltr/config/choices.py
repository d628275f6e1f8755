"""Fixed choices of the configs as Enums: Hydra refuses any other value when it composes.

OmegaConf matches an Enum by member *name*, so every member's name is its value (``exp``,
``average``, ...). The members are ``StrEnum``s: they compare equal to, print as and are logged as
their value. The metric conventions' own choices (:mod:`ltr.metrics.conventions`) are the source
of ``Gain``, ``Ties``, ``ZeroIdcg``, ``Discount`` and ``Preset``; a test keeps them equal.
"""

from __future__ import annotations

from enum import StrEnum


class Estimator(StrEnum):
    """``ranker``: ``LGBMRanker``; ``regressor``: a pointwise LightGBM regressor."""

    ranker = "ranker"
    regressor = "regressor"


class TrainerKind(StrEnum):
    """Where training runs: this process, or a Dask cluster."""

    local = "local"
    dask = "dask"


class Gain(StrEnum):
    """``exp``: ``2**label - 1``; ``linear``: ``label``; ``value``: a real label is the gain
    (``ltr evaluate --gain value``; ``ltr train`` refuses it: LightGBM trains on integer grades)."""

    exp = "exp"
    linear = "linear"
    value = "value"


class Ties(StrEnum):
    """Order within a block of equal scores (``docno_desc`` needs docnos: ``ltr evaluate`` only)."""

    average = "average"
    stable = "stable"
    pessimistic = "pessimistic"
    optimistic = "optimistic"


class ZeroIdcg(StrEnum):
    """NDCG of a query whose IDCG@k is 0: 0, 1, or left out of means."""

    zero = "zero"
    one = "one"
    skip = "skip"


class Discount(StrEnum):
    """Position discount: ``log2_rank_plus_1`` (``1 / log2(rank + 1)``) or ``jarvelin``
    (Järvelin and Kekäläinen's ``1 / max(1, log_b(rank))``, base ``eval.discount_base``)."""

    log2_rank_plus_1 = "log2_rank_plus_1"
    jarvelin = "jarvelin"


class Preset(StrEnum):
    """A peer's NDCG conventions (:data:`ltr.metrics.PRESETS`); explicit ``eval.*`` fields win."""

    lightgbm = "lightgbm"
    sklearn = "sklearn"
    xgboost = "xgboost"
    xgboost_minus = "xgboost_minus"
    catboost = "catboost"


class Propensity(StrEnum):
    """Click propensities: from ``eval.clicks.propensities`` / the data (``config``), click-through
    rate by position (``estimated``), regression EM (``em``), intervention harvesting over several
    logging rankers (``harvest``), a logged propensity column (``column``), or click-through rate
    by position on the sessions ``data.randomized_column`` marks as shown in random order
    (``randomized``); :mod:`ltr.metrics.clicks.propensity`."""

    config = "config"
    estimated = "estimated"
    em = "em"
    harvest = "harvest"
    column = "column"
    randomized = "randomized"


class RerankKind(StrEnum):
    """What happens to a model's ranking before it is evaluated (``rerank=...``)."""

    none = "none"
    diversify = "diversify"
    uncertainty = "uncertainty"


class Similarity(StrEnum):
    """How alike two items are, for the diversity re-ranker (:mod:`ltr.rerank.similarity`)."""

    cosine = "cosine"
    category = "category"


class ClickLabels(StrEnum):
    """The built-in label sources of a click log (a label recipe's name is the third kind)."""

    clicks = "clicks"
    relevance = "relevance"


class RecipeKind(StrEnum):
    """How a label recipe turns behaviour columns into grades (:mod:`ltr.data.feedback.recipes`)."""

    rules = "rules"
    weighted = "weighted"


class FileFormat(StrEnum):
    """Format of explicit split files (``auto``: by extension and content)."""

    auto = "auto"
    letor = "letor"
    svmlight = "svmlight"
    lightgbm = "lightgbm"
    parquet = "parquet"
    csv = "csv"


class Direction(StrEnum):
    """Which way a sweep optimises one ``optimized_metric`` key."""

    maximize = "maximize"
    minimize = "minimize"

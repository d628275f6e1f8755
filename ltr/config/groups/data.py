"""Structured configs of the ``data`` and ``split`` groups.

Each option of the ``data`` group is a dataclass registered under ``group="data"`` by
:func:`ltr.config.store.register_configs`; ``kind`` tells :func:`ltr.data.load.load_splits` which
reader to use.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from ltr.config.allowed import INT32_MAX, SEED_MAX, allowed
from ltr.config.choices import FileFormat, RecipeKind
from ltr.config.neutral import neutral


def default_cache_dir() -> Path:
    """Where ``ltr`` keeps what it can rebuild (parsed data, binned data, an empty MLflow store to
    copy): ``$LTR_CACHE_DIR`` if set, else ``~/.cache/ltr/data`` (``data.cache_dir`` overrides it
    for a run's data)."""
    env = os.environ.get("LTR_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "ltr" / "data"


#: The experiment's seed when none is set (``TrainConfig.seed``), which a data option's or the
#: split's ``seed: null`` falls back to; here, not in the schema, so that ``ltr partition``'s
#: parser reads it without importing OmegaConf.
DEFAULT_SEED = 42


@dataclass
class DataConfig:
    """Fields every data option has."""

    #: Its rows are read by Dask workers, never by this process: needs ``trainer=dask``.
    read_by_workers: ClassVar[bool] = False

    kind: str = field(default="synthetic", metadata=allowed(min_len=1))
    name: str = field(default="synthetic", metadata=allowed(min_len=1))
    # long-tail exposure: the feature whose values are the items' popularity (null: not measured);
    # items below its tail_quantile (null: 0.8) in a split are the tail (ltr.metrics.tail)
    popularity_feature: str | None = field(default=None, metadata=allowed(min_len=1))
    tail_quantile: float | None = field(default=None, metadata=allowed(gt=0, lt=1))


@dataclass
class SyntheticDataConfig(DataConfig):
    """The built-in seeded generator (``ltr.data.synthetic``); nothing is downloaded."""

    kind: str = field(default="synthetic", metadata=allowed(min_len=1))
    name: str = field(default="synthetic", metadata=allowed(min_len=1))
    n_queries: int = field(default=3000, metadata=allowed(ge=3, le=10**8, note="one per split at least"))
    n_informative: int = field(default=8, metadata=allowed(ge=1, le=10**5))
    n_noise: int = field(default=8, metadata=allowed(ge=0, le=10**5))
    # list lengths: share of queries in 1-10, 11-50 and 51-max_list_len (must sum to 1)
    short_share: float = field(default=0.45, metadata=allowed(ge=0, le=1))
    medium_share: float = field(default=0.40, metadata=allowed(ge=0, le=1))
    long_share: float = field(default=0.15, metadata=allowed(ge=0, le=1))
    max_list_len: int = field(default=200, metadata=allowed(ge=51, le=10**6, note="covers the 51+ stratum"))
    all_zero_share: float = field(default=0.08, metadata=allowed(ge=0, le=1))
    noise: float = field(default=1.0, metadata=allowed(ge=0))
    seed: int | None = field(default=None, metadata=allowed(ge=0, le=SEED_MAX))  # None: the experiment's seed


@dataclass
class LabelRuleConfig:
    """One rule of a ``rules`` recipe: rows whose behaviour ``column`` is ``>= min`` get ``grade``."""

    column: str = field(default="???", metadata=allowed(min_len=1))  # a behaviour column: click, dwell, cart, purchase (synthetic_clicks)
    min: float = field(default=1.0, metadata=allowed())
    grade: int = field(default=1, metadata=allowed(ge=0, le=INT32_MAX))


@dataclass
class LabelRecipeConfig:
    """A grade for every row from its behaviour columns (:mod:`ltr.data.feedback.recipes`).

    ``kind: rules``: the first rule of ``rules`` whose column is ``>= min`` gives the grade, else
    ``default``. ``kind: weighted``: the score ``sum(weights[c] * column c)`` is cut at the
    increasing ``thresholds``: grade ``g`` when ``thresholds[g-1] <= score < thresholds[g]``
    (0 below the first threshold).
    """

    kind: RecipeKind = RecipeKind.rules
    rules: list[LabelRuleConfig] = field(default_factory=list, metadata=allowed())
    default: int = field(default=0, metadata=allowed(ge=0, le=INT32_MAX))
    weights: dict[str, float] = field(default_factory=dict, metadata=allowed(free=True))
    thresholds: list[float] = field(default_factory=list, metadata=allowed())


def _default_recipes() -> dict[str, LabelRecipeConfig]:
    rule = LabelRuleConfig
    return {
        # purchase ? 4 : cart ? 3 : dwell >= 30 s ? 2 : click ? 1 : 0
        "purchase_first": LabelRecipeConfig(
            rules=[rule("purchase", 1.0, 4), rule("cart", 1.0, 3), rule("dwell", 30.0, 2), rule("click", 1.0, 1)]
        ),
        # 1 per click + 0.02 per second of dwell + 2 per add-to-cart + 4 per purchase, cut into 0..4
        "engagement": LabelRecipeConfig(
            kind=RecipeKind.weighted,
            weights={"click": 1.0, "dwell": 0.02, "cart": 2.0, "purchase": 4.0},
            thresholds=[1.0, 1.6, 3.0, 6.0],
        ),
        "purchases": LabelRecipeConfig(rules=[rule("purchase", 1.0, 1)]),
    }


@dataclass
class SyntheticClicksDataConfig(SyntheticDataConfig):
    """A seeded synthetic click log (``ltr.data.feedback.clicks``): true relevance, logged positions, clicks,
    and the behaviours after a click (dwell, add-to-cart, purchase).

    Label sources (``train_labels``, ``valid_labels``, ``eval_labels``): ``relevance`` (the true
    grades), ``clicks``, or the name of a recipe in ``label_recipes`` (a grade from the behaviour
    columns ``click``, ``dwell``, ``cart``, ``purchase``). ``train_labels``: what the ranker is
    trained on (default ``clicks``). ``valid_labels``: what early stopping watches (default
    ``relevance``: a small judged validation set, so model selection is not biased towards the
    logged order). ``eval_labels``: what the run's metrics of valid and test judge (default
    ``relevance``); ``data.eval_labels=purchases`` judges a click-trained model on purchases.

    Click model (position-based): examination at 0-based position ``p`` is
    ``(1 / (p + 1)) ** examination_eta``; an examined document of grade ``g`` is clicked with
    probability ``click_noise + (click_max - click_noise) * (2**g - 1) / 15``. The logging ranker
    orders by ``grade + logger_popularity * popularity + logger_noise * N(0, 1)``; a share
    ``randomized_share`` of sessions is shown in random order. After a click (:mod:`ltr.data.feedback.clicks`):
    dwell seconds ``exp(N(log(dwell_seconds) + dwell_per_grade * g, dwell_sigma))``; add-to-cart
    with probability ``cart_base + (cart_max - cart_base) * (2**g - 1) / 15``; after a cart, a
    purchase with probability ``purchase_base + (purchase_max - purchase_base) * g / 4``.
    """

    kind: str = field(default="synthetic_clicks", metadata=allowed(min_len=1))
    name: str = field(default="synthetic_clicks", metadata=allowed(min_len=1))
    # relevance | clicks | a name in label_recipes (checked against label_recipes in ltr.data.config_rules)
    train_labels: str = field(default="clicks", metadata=allowed(min_len=1, note="a label source: relevance, clicks or a name in label_recipes"))
    valid_labels: str = field(default="relevance", metadata=allowed(min_len=1, note="a label source: relevance, clicks or a name in label_recipes"))
    eval_labels: str = field(default="relevance", metadata=allowed(min_len=1, note="a label source: relevance, clicks or a name in label_recipes"))
    label_recipes: dict[str, LabelRecipeConfig] = field(default_factory=_default_recipes, metadata=allowed(free=True))
    popularity_feature: str | None = field(default="popularity", metadata=allowed(min_len=1))
    examination_eta: float = field(default=1.0, metadata=allowed(ge=0))
    click_noise: float = field(default=0.05, metadata=allowed(ge=0, le=1))
    click_max: float = field(default=1.0, metadata=allowed(ge=0, le=1))
    logger_popularity: float = field(default=2.0, metadata=allowed(ge=0))
    logger_noise: float = field(default=0.5, metadata=allowed(ge=0))
    randomized_share: float = field(default=0.0, metadata=allowed(ge=0, le=1))
    dwell_seconds: float = field(default=8.0, metadata=allowed(gt=0))  # median dwell of a grade-0 click
    dwell_per_grade: float = field(default=0.5, metadata=allowed(ge=-100, le=100))  # log-seconds added per grade
    dwell_sigma: float = field(default=0.6, metadata=allowed(ge=0))
    cart_base: float = field(default=0.01, metadata=allowed(ge=0, le=1))  # cart_base <= cart_max
    cart_max: float = field(default=0.5, metadata=allowed(ge=0, le=1))
    purchase_base: float = field(default=0.1, metadata=allowed(ge=0, le=1))  # purchase_base <= purchase_max
    purchase_max: float = field(default=0.7, metadata=allowed(ge=0, le=1))


@dataclass
class FileDataConfig(DataConfig):
    """Options every file-based data option shares: validation policies and the binary cache.

    ``max_label``: grades above it are an error naming the fix (LightGBM's default label_gain
    covers 0..30); null: no limit. ``integer_labels``: ranking objectives need integer grades.
    ``max_list_len``: LightGBM's ndcg limit of 10,000 documents per query; null: no limit.
    ``n_features``: fixed feature width (null: the largest index in any split).
    ``cache``: keep parsed files in ``cache_dir`` (null: ``$LTR_CACHE_DIR`` or ``~/.cache/ltr/data``).
    ``cache_max_mb``: size limit of that cache in MiB, least recently used entries evicted first
    (null: no limit; ``$LTR_CACHE_MAX_MB`` overrides it). ``binned_cache``: with ``cache`` on,
    also keep LightGBM's binned data sets in ``<cache_dir>/binned`` for later processes (at most
    ``binned_cache_max_mb`` MiB, least recently used evicted first; null: no limit).
    ``progress``: progress bar while parsing (null: only on a terminal, for large files).
    """

    integer_labels: bool = True
    max_label: int | None = field(default=30, metadata=allowed(ge=0, le=INT32_MAX))
    max_list_len: int | None = field(default=10000, metadata=allowed(ge=1, le=INT32_MAX))
    n_features: int | None = field(default=None, metadata=allowed(ge=1, le=INT32_MAX))
    cache: bool = field(default=True, metadata=neutral())
    cache_dir: str | None = field(default=None, metadata=neutral(allowed(min_len=1)))
    cache_max_mb: int | None = field(default=2048, metadata=neutral(allowed(ge=0, le=2**40)))
    binned_cache: bool = field(default=True, metadata=neutral())
    binned_cache_max_mb: int | None = field(default=4096, metadata=neutral(allowed(ge=0, le=2**40)))
    progress: bool | None = field(default=None, metadata=neutral())


@dataclass
class LetorDataConfig(FileDataConfig):
    """A LETOR fold folder: ``train.txt``, ``vali.txt``, ``test.txt`` (``.gz`` allowed).

    ``root`` is the folder; with ``fold: N`` the files are read from ``root/FoldN`` (the layout of
    MSLR-WEB10K/30K, MQ2007/2008 and Istella). A missing ``vali`` or ``test`` file is replaced by a
    query-level split of train (the ``split`` group's fractions).
    """

    kind: str = field(default="letor", metadata=allowed(min_len=1))
    name: str = field(default="letor", metadata=allowed(min_len=1))
    root: str = field(default="???", metadata=allowed(min_len=1, exists=True))
    fold: int | None = field(default=None, metadata=allowed(ge=1, le=1000))


@dataclass
class SvmlightDataConfig(FileDataConfig):
    """Explicit split files in any supported format (LETOR/SVMlight text, LightGBM text + .query,
    Parquet, CSV; chosen by extension and content). Only ``train`` is required; missing splits are
    cut from train by query."""

    kind: str = field(default="svmlight", metadata=allowed(min_len=1))
    name: str = field(default="svmlight", metadata=allowed(min_len=1))
    train: str = field(default="???", metadata=allowed(min_len=1, exists=True))
    valid: str | None = field(default=None, metadata=allowed(min_len=1, exists=True))
    test: str | None = field(default=None, metadata=allowed(min_len=1, exists=True))
    format: FileFormat = FileFormat.auto


@dataclass
class ParquetDataConfig(SvmlightDataConfig):
    """Parquet or CSV tables with a qid column, a label column and feature columns.

    ``feature_columns`` null: every column but the qid, label and position columns (all must be
    numeric). ``position_column``: a column of logged 0-based positions (0 = shown first, one
    integer >= 0 per row) for ``model.position_bias=true``; never a feature. Null: no positions.
    ``doc_id_column``: a column naming every row's document (kept as text, never a feature; the
    per-query tables then name each query's top-ranked document). Null: no doc ids.
    ``behaviour_columns``: numeric columns of what users did (never features) that the recipes of
    ``label_recipes`` grade, with the syntax of ``data=synthetic_clicks``'s recipes; the label
    sources ``train_labels`` / ``valid_labels`` / ``eval_labels`` are ``label`` (the
    ``label_column``) or a recipe's name.
    """

    kind: str = field(default="parquet", metadata=allowed(min_len=1))
    name: str = field(default="parquet", metadata=allowed(min_len=1))
    qid_column: str = field(default="qid", metadata=allowed(min_len=1))
    label_column: str = field(default="label", metadata=allowed(min_len=1))
    feature_columns: list[str] | None = field(default=None, metadata=allowed(min_len=1))
    delimiter: str | None = field(default=None, metadata=allowed(min_len=1))  # CSV only; null: tab for .tsv, else comma
    position_column: str | None = field(default=None, metadata=allowed(min_len=1))
    doc_id_column: str | None = field(default=None, metadata=allowed(min_len=1))  # null: no doc ids; else a column naming each row's document
    # behaviour columns kept for label recipes (never features): clicks, dwell seconds, purchases, ...
    behaviour_columns: list[str] = field(default_factory=list, metadata=allowed(note="column names of the table"))
    # label | a name in label_recipes (a grade from behaviour_columns); "label" is label_column
    train_labels: str = field(default="label", metadata=allowed(min_len=1, note="a label source: label or a name in label_recipes"))
    valid_labels: str = field(default="label", metadata=allowed(min_len=1, note="a label source: label or a name in label_recipes"))
    eval_labels: str = field(default="label", metadata=allowed(min_len=1, note="a label source: label or a name in label_recipes"))
    label_recipes: dict[str, LabelRecipeConfig] = field(default_factory=dict, metadata=allowed(free=True))
    # a click log (docs/guide/click-logs.md): the column of clicks (0/1) of every row, with
    # position_column; the run then logs the click estimates, exposure and propensities of
    # data=synthetic_clicks. Optional: a logged propensity per row (eval.clicks.propensity=column),
    # the logging ranker's id and, when every list is one session (qid_column the session id),
    # the query of each session (eval.clicks.propensity=harvest), the randomization flag of each
    # session (0/1, constant within a session: eval.clicks.propensity=randomized). Numeric
    # columns, never features.
    click_column: str | None = field(default=None, metadata=allowed(min_len=1))
    propensity_column: str | None = field(default=None, metadata=allowed(min_len=1))
    logger_column: str | None = field(default=None, metadata=allowed(min_len=1))
    query_column: str | None = field(default=None, metadata=allowed(min_len=1))
    randomized_column: str | None = field(default=None, metadata=allowed(min_len=1))


def _mq_parts() -> list[str]:
    return [f"S{i}.txt.gz" for i in range(1, 6)]


@dataclass
class LetorPartsDataConfig(FileDataConfig):
    """A data set shipped as parts with a fold rotation (LETOR 4.0 MQ2007/MQ2008: S1..S5).

    Fold ``k`` (1-based) of ``n`` parts: train = parts k, k+1, ..., k+n_train-1, vali = the next
    part, test = the one after (indices mod n). For MQ2008 this is ``folds_readme.txt``:
    Fold1 train = S1+S2+S3, vali = S4, test = S5; Fold2 train = S2+S3+S4, vali = S5, test = S1; ...
    """

    kind: str = field(default="letor_parts", metadata=allowed(min_len=1))
    name: str = field(default="letor_parts", metadata=allowed(min_len=1))
    root: str = field(
        default="???",
        metadata=allowed(min_len=1, exists=True, note="set data.root, or LTR_SHARED_DATA to the folder of the shared data sets"),
    )
    fold: int = field(default=1, metadata=allowed(ge=1, le=1000))
    parts: list[str] = field(default_factory=_mq_parts, metadata=allowed(min_len=2))
    n_train_parts: int = field(default=3, metadata=allowed(ge=1, le=1000))


@dataclass
class ParquetPartitionsDataConfig(DataConfig):
    """Splits stored as directories of Parquet files of whole queries, read by Dask workers.

    ``root`` holds ``train/``, ``valid/`` and ``test/``, each written by ``ltr partition``
    (or :func:`ltr.data.query_parts.write_query_partitions`; one partition per file). Needs
    ``trainer=dask``: the client reads only the files' footers, the workers read the rows.
    The directory must be readable under the same path by every worker.
    """

    #: Its rows are read by Dask workers, never by this process: needs ``trainer=dask``.
    read_by_workers: ClassVar[bool] = True

    kind: str = field(default="parquet_partitions", metadata=allowed(min_len=1))
    name: str = field(default="parquet_partitions", metadata=allowed(min_len=1))
    root: str = field(default="???", metadata=allowed(min_len=1, exists=True))
    qid_column: str = field(default="qid", metadata=allowed(min_len=1))
    label_column: str = field(default="label", metadata=allowed(min_len=1))
    # the column of document ids (``ltr partition`` writes it when the data has them); files
    # without it have none; null: no column is read as doc ids
    doc_id_column: str | None = field(default="doc_id", metadata=allowed(min_len=1))


@dataclass
class SplitConfig:
    """Query-level split of one pool of queries into train / valid / test (seeded).

    With ``n_folds`` set, a seeded k-fold by query is used instead: fold ``fold`` (1-based) is the
    test split, and ``valid_fraction`` of the remaining queries is held out for validation. When a
    data option gives train and test but no valid file (or train and valid but no test), the
    missing split is held out of train with ``valid_fraction`` (or ``test_fraction``).
    """

    valid_fraction: float = field(default=0.2, metadata=allowed(gt=0, lt=1))
    test_fraction: float = field(default=0.2, metadata=allowed(gt=0, lt=1))
    seed: int | None = field(default=None, metadata=allowed(ge=0, le=SEED_MAX))  # None: the experiment's seed
    n_folds: int | None = field(default=None, metadata=allowed(ge=2, le=10**6))
    fold: int = field(default=1, metadata=allowed(ge=1, le=10**6))


#: Options of the ``data`` config group and their schemas; ``ltr.config.store.register_configs``
#: stores each as ``{name}_schema``, and ``ltr/conf/data/{name}.yaml`` extends it.
DATA_OPTIONS: dict[str, type[DataConfig]] = {
    "synthetic": SyntheticDataConfig,
    "synthetic_clicks": SyntheticClicksDataConfig,
    "letor": LetorDataConfig,
    "svmlight": SvmlightDataConfig,
    "parquet": ParquetDataConfig,
    "mq2008": LetorPartsDataConfig,
    "parquet_partitions": ParquetPartitionsDataConfig,
}


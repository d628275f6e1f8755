"""Turn a ``data`` config into train / valid / test `RankingData`, validated, before any run starts.

``data_cfg.kind`` selects the source:

- ``synthetic``: the seeded generator, cut by query with the ``split`` group;
- ``synthetic_clicks``: the seeded click log (:mod:`ltr.data.feedback.clicks`), cut the same way; train
  carries ``data.train_labels``, valid ``data.valid_labels``, test ``data.eval_labels`` (true
  grades, clicks or a label recipe's grades), and every split the logged positions and behaviour
  columns (:func:`load_click_splits` gives every view);
- ``letor``: a fold folder ``root[/FoldN]`` with ``train.txt``, ``vali.txt``, ``test.txt``;
- ``svmlight`` / ``parquet``: explicit ``train`` / ``valid`` / ``test`` files (any format
  :func:`ltr.data.formats.readers.read_ranking_file` reads);
- ``letor_parts``: parts with a fold rotation (MQ2007/MQ2008 ``S1..S5``).

Sources with fewer files than splits are completed by query-level splits of train (seeded; a
query never lands in two splits). All splits share one feature width, and a qid found in both
train and test is warned about.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray
from omegaconf.errors import MissingMandatoryValue

from ltr.config.groups.data import (
    DataConfig,
    LetorPartsDataConfig,
    SplitConfig,
    SyntheticClicksDataConfig,
    SyntheticDataConfig,
    default_cache_dir,
)
from ltr.data.cache import DEFAULT_MAX_MB
from ltr.data.feedback.click_log import check_click_columns, extra_behaviours, is_click_log
from ltr.data.feedback.clicks import examination_curve, generate_click_log
from ltr.data.feedback.recipes import BUILTIN_SOURCES, with_recipe
from ltr.data.formats.readers import read_split_files
from ltr.data.ranking_data import RankingData
from ltr.data.splits import Splits, holdout_queries, kfold_split, split_queries
from ltr.data.synthetic import generate_synthetic
from ltr.data.validate import check_split_set
from ltr.errors import DataError

logger = logging.getLogger(__name__)

#: File names tried for each split of a LETOR fold folder (each also with ``.gz``).
LETOR_FILES: dict[str, tuple[str, ...]] = {
    "train": ("train.txt",),
    "valid": ("vali.txt", "valid.txt", "validation.txt"),
    "test": ("test.txt",),
}


def load_splits(data_cfg: DataConfig, split_cfg: SplitConfig, *, seed: int, cache_in_background: bool = False) -> Splits:
    """Read (or generate) the data named by ``data_cfg`` and return its three splits.

    ``cache_in_background``: parsed files' cache entries are written while the caller goes on
    (:func:`ltr.data.cache.store_later`); the caller waits for them with
    :func:`ltr.data.cache.wait_for_stores`.

    ``data_cfg.kind`` selects the reader. Sources with a single pool of queries are cut by
    :func:`ltr.data.splits.split_queries` (or :func:`ltr.data.splits.kfold_split` when
    ``split_cfg.n_folds`` is set); the split seed defaults to ``seed``.

    Raises
    ------
    DataError
        any problem with the files or the configuration, in one line.
    """
    split_seed = seed if split_cfg.seed is None else int(split_cfg.seed)
    kind = data_cfg.kind
    if kind == "synthetic":
        synthetic = cast(SyntheticDataConfig, data_cfg)
        data_seed = seed if synthetic.seed is None else int(synthetic.seed)
        pool = generate_synthetic(synthetic, seed=data_seed)
        return _complete({"train": pool}, split_cfg, split_seed)
    if kind == "synthetic_clicks":
        click_log = cast(SyntheticClicksDataConfig, data_cfg)
        views = load_click_splits(click_log, split_cfg, seed=seed)
        return views.training_view(str(click_log.train_labels), str(click_log.valid_labels), str(click_log.eval_labels))
    files: Mapping[str, str | Path | Sequence[str | Path] | None]
    if kind == "letor":
        files = letor_fold_files(_required(data_cfg, "root"), _get(data_cfg, "fold"))
    elif kind in ("svmlight", "parquet"):
        files = {
            "train": _required(data_cfg, "train"),
            "valid": _optional(data_cfg, "valid"),
            "test": _optional(data_cfg, "test"),
        }
        if is_click_log(data_cfg):
            check_click_columns(data_cfg, files)
    elif kind == "letor_parts":
        parts = cast(LetorPartsDataConfig, data_cfg)
        files = letor_parts_files(
            _required(parts, "root"), list(parts.parts), fold=int(parts.fold), n_train_parts=int(parts.n_train_parts),
        )
    else:
        raise DataError(
            f"unknown data.kind {kind!r}; use synthetic, synthetic_clicks, letor, svmlight, parquet or letor_parts"
        )
    splits = read_split_files(files, **reader_options(data_cfg), cache_in_background=cache_in_background)
    sources = {
        split: " + ".join(str(p) for p in ([spec] if isinstance(spec, str | Path) else spec))
        for split, spec in files.items()
        if spec
    }
    return _complete(splits, split_cfg, split_seed, sources=sources)


@dataclass(frozen=True, slots=True)
class ClickSplits:
    """Views of the same query-level splits of a click log (same queries, rows and positions).

    ``relevance``: labels are the true grades (what evaluation uses by default). ``clicks``:
    labels are the clicks (what a ranker learns from in practice). ``recipes[name]``: labels are
    the grades of the label recipe ``name`` (:mod:`ltr.data.feedback.recipes`). ``clicks.test`` also
    feeds the click / IPS estimates of :mod:`ltr.metrics.clicks.ips`.
    """

    relevance: Splits
    clicks: Splits
    examination: NDArray[np.float64]  # the configured examination curve, per 0-based position
    recipes: Mapping[str, Splits] = field(default_factory=dict)
    #: ``examination`` is the log's true curve (a synthetic log), not a placeholder
    examination_known: bool = True

    def view(self, source: str, *, key: str = "data.eval_labels") -> Splits:
        """The splits labelled by ``source``: ``relevance``, ``clicks`` or a recipe's name (the
        same object on every call, so views of one source are identical)."""
        if source == "relevance":
            return self.relevance
        if source == "clicks":
            return self.clicks
        if source in self.recipes:
            return self.recipes[source]
        known = ", ".join([*BUILTIN_SOURCES, *self.recipes])
        raise DataError(f"{key}={source!r} is not one of: {known} (a recipe is defined in data.label_recipes)")

    def sources(self) -> dict[str, Splits]:
        """Every view by its name: relevance, clicks, then the recipes."""
        return {"relevance": self.relevance, "clicks": self.clicks, **self.recipes}

    def training_view(self, train_labels: str, valid_labels: str = "relevance", eval_labels: str = "relevance") -> Splits:
        """The splits a trainer sees: train with ``train_labels``, valid with ``valid_labels``,
        test with ``eval_labels`` (the labels the run's metrics judge).

        ``valid_labels="relevance"`` (default) stands for a small editorially judged validation
        set, as teams that train on clicks usually keep: model selection (early stopping) is then
        not biased towards reproducing the logged order. ``"clicks"`` selects on the click log.
        """
        train = self.view(train_labels, key="data.train_labels")
        valid = self.view(valid_labels, key="data.valid_labels")
        test = self.view(eval_labels, key="data.eval_labels")
        return Splits(train=train.train, valid=valid.valid, test=test.test)


def load_click_splits(data_cfg: SyntheticClicksDataConfig, split_cfg: SplitConfig, *, seed: int) -> ClickSplits:
    """Generate the click log of ``data_cfg`` (kind ``synthetic_clicks``) and split it by query.

    Every view is cut with the same split seed from pools of the same queries, so their splits
    hold the same queries in the same order; a recipe's view relabels the relevance view's splits.
    """
    split_seed = seed if split_cfg.seed is None else int(split_cfg.seed)
    data_seed = seed if data_cfg.seed is None else int(data_cfg.seed)
    log = generate_click_log(data_cfg, seed=data_seed)
    relevance = _complete({"train": log.data}, split_cfg, split_seed)
    clicks = _complete({"train": log.click_data()}, split_cfg, split_seed)
    for (split, a), (_, b) in zip(relevance.items(), clicks.items(), strict=True):
        if not np.array_equal(a.qids, b.qids):  # pragma: no cover - split_queries is deterministic
            raise DataError(f"the {split} splits of relevance and clicks differ; report this as a bug")
    recipes = {
        str(name): Splits(*(with_recipe(part, recipe, name=str(name)) for _, part in relevance.items()))
        for name, recipe in (getattr(data_cfg, "label_recipes", None) or {}).items()
    }
    n_positions = int(log.data.group_sizes.max())
    return ClickSplits(relevance, clicks, examination_curve(n_positions, eta=float(data_cfg.examination_eta)), recipes)


def reader_options(data_cfg: Any) -> dict[str, Any]:
    """Keyword options of :func:`ltr.data.formats.readers.read_ranking_file` from a data config."""
    opts: dict[str, Any] = {"name": str(getattr(data_cfg, "name", "data"))}
    for key in ("integer_labels", "max_label", "max_list_len", "n_features", "progress",
                "qid_column", "label_column", "delimiter", "position_column", "doc_id_column",
                "behaviour_columns"):
        if hasattr(data_cfg, key):
            opts[key] = getattr(data_cfg, key)
    if "behaviour_columns" in opts:  # a click log's columns are read as behaviours (never features)
        opts["behaviour_columns"] = [*(str(c) for c in opts["behaviour_columns"] or []), *extra_behaviours(data_cfg)]
    if getattr(data_cfg, "format", None) is not None:
        opts["format"] = str(data_cfg.format)
    columns = getattr(data_cfg, "feature_columns", None)
    if columns is not None:
        opts["feature_columns"] = [str(c) for c in columns]
    if getattr(data_cfg, "cache", False):
        cache_dir = getattr(data_cfg, "cache_dir", None)
        opts["cache_dir"] = Path(cache_dir) if cache_dir else default_cache_dir()
        opts["cache_max_mb"] = getattr(data_cfg, "cache_max_mb", DEFAULT_MAX_MB)
    return opts


def letor_fold_files(root: str | Path, fold: int | None) -> dict[str, Path | None]:
    """The train / valid / test files of a LETOR fold folder (None where a split has no file)."""
    folder = Path(str(root)).expanduser()
    if fold is not None:
        folder = folder / f"Fold{int(fold)}"
    if not folder.is_dir():
        raise DataError(
            f"data.root folder {folder} does not exist; point data.root at the folder holding "
            "train.txt / vali.txt / test.txt (or its FoldN folders, with data.fold=N)"
        )
    out: dict[str, Path | None] = {}
    for split, names in LETOR_FILES.items():
        found = [folder / f"{n}{gz}" for n in names for gz in ("", ".gz") if (folder / f"{n}{gz}").is_file()]
        out[split] = found[0] if found else None
    if out["train"] is None:
        raise DataError(f"no train.txt (or train.txt.gz) in {folder}; check data.root and data.fold")
    return out


def letor_parts_files(
    root: str | Path, parts: Sequence[str], *, fold: int, n_train_parts: int = 3
) -> dict[str, list[Path]]:
    """The files of fold ``fold`` (1-based) of a parts-with-rotation data set (LETOR 4.0 MQ2008).

    Raises
    ------
    DataError
        a missing folder or part, or a fold outside ``1..len(parts)``.
    """
    order = letor_parts_rotation(len(parts), fold=fold, n_train_parts=n_train_parts)
    folder = Path(str(root)).expanduser()
    if not folder.is_dir():
        raise DataError(
            f"data.root folder {folder} does not exist; set data.root (or the LTR_SHARED_DATA "
            "environment variable) to the folder holding the parts"
        )
    files = {split: [folder / parts[i] for i in idx] for split, idx in order.items()}
    for paths in files.values():
        for p in paths:
            if not p.is_file():
                raise DataError(f"data part {p} does not exist; check data.root and data.parts")
    return files


def letor_parts_rotation(n_parts: int, *, fold: int, n_train_parts: int = 3) -> dict[str, list[int]]:
    """Part indices (0-based) of each split for fold ``fold`` of the LETOR rotation.

    Examples
    --------
    >>> letor_parts_rotation(5, fold=1)
    {'train': [0, 1, 2], 'valid': [3], 'test': [4]}
    >>> letor_parts_rotation(5, fold=2)
    {'train': [1, 2, 3], 'valid': [4], 'test': [0]}
    """
    if n_train_parts < 1 or n_train_parts + 2 > n_parts:
        raise DataError(
            f"{n_parts} parts cannot hold {n_train_parts} training parts plus one validation and "
            "one test part; check data.parts and data.n_train_parts"
        )
    if not 1 <= fold <= n_parts:
        raise DataError(f"data.fold={fold} must lie in 1..{n_parts}")
    k = fold - 1
    return {
        "train": [(k + i) % n_parts for i in range(n_train_parts)],
        "valid": [(k + n_train_parts) % n_parts],
        "test": [(k + n_train_parts + 1) % n_parts],
    }


def _complete(
    splits: Mapping[str, RankingData], split_cfg: SplitConfig, seed: int, *, sources: Mapping[str, str] | None = None
) -> Splits:
    """Fill in missing valid / test splits by query from train, then check the set."""
    train = splits["train"]
    valid, test = splits.get("valid"), splits.get("test")
    n_folds = getattr(split_cfg, "n_folds", None)
    if valid is None and test is None:
        if n_folds is not None:
            out = kfold_split(
                train, n_folds=int(n_folds), fold=int(getattr(split_cfg, "fold", 1)),
                valid_fraction=float(split_cfg.valid_fraction), seed=seed,
            )
        else:
            out = split_queries(
                train, valid_fraction=float(split_cfg.valid_fraction),
                test_fraction=float(split_cfg.test_fraction), seed=seed,
            )
    else:
        if valid is None:
            train, valid = holdout_queries(train, fraction=float(split_cfg.valid_fraction), seed=seed, what="validation")
            logger.info("no validation file: held out %d queries of train for validation", valid.n_queries)
        if test is None:
            train, test = holdout_queries(train, fraction=float(split_cfg.test_fraction), seed=seed, what="test")
            logger.info("no test file: held out %d queries of train for test", test.n_queries)
        out = Splits(train=train, valid=valid, test=test)
    check_split_set(dict(out.items()), sources=sources)
    return out


def _get(cfg: Any, key: str) -> Any:
    """``cfg.key``, or None if absent or a missing mandatory value (``???``)."""
    try:
        value = getattr(cfg, key, None)
    except MissingMandatoryValue:
        return None
    return None if value == "???" else value


def _required(cfg: Any, key: str) -> str:
    value = _get(cfg, key)
    if value in (None, ""):
        raise DataError(f"data.{key} is not set; give it on the command line, e.g. data.{key}=PATH")
    return str(value)


def _optional(cfg: Any, key: str) -> str | None:
    value = _get(cfg, key)
    return None if value in (None, "") else str(value)

"""LightGBM's binned data sets, kept for the next job of a sweep in this process.

Building a ``lgb.Dataset`` (finding the bins of every feature and binning every row) is most of
a small job's fixed cost, and a sweep (the basic launcher, Optuna) runs its jobs one after the
other in one process on the same data. :func:`binned_datasets` keeps the last train / valid /
test data sets and hands them to the next job when its data (the content fingerprint) and every
parameter that can shape the binned data are the same; otherwise it builds new ones.

What may differ for a reuse is an allow-list of parameters that only training reads
(:data:`TRAINING_ONLY`: ``num_leaves``, ``learning_rate``, regularisation, sampling, ...); any
other parameter, including one LightGBM adds later, keys the data. ``min_child_samples`` is
training-only only with ``feature_pre_filter=false``: by default LightGBM drops features that
cannot split under it while binning. A reused data set gives the model a fresh build would,
bit for bit (``tests/test_binned_reuse.py``). One entry is kept (the last data), so memory stays
what one job needs. Jobs in other processes (the joblib launcher, a later ``ltr train``) find the
data sets on disk when a :class:`ltr.training.binned_store.BinnedStore` is given (file data with
its parse cache on); otherwise they bin again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Literal

import lightgbm as lgb
import numpy as np

from ltr.data.cache import discard_entry, write_later
from ltr.data.splits import Splits
from ltr.training.binned_store import BinnedStore

log = logging.getLogger(__name__)

#: Parameters that only training reads, never the binned data: they may vary between reuses.
TRAINING_ONLY = frozenset(
    {
        "objective", "learning_rate", "num_leaves", "max_depth", "min_child_weight",
        "subsample", "subsample_freq", "colsample_bytree", "reg_alpha", "reg_lambda",
        "lambdarank_truncation_level", "lambdarank_norm", "label_gain", "metric", "eval_at",
        "n_jobs", "num_threads", "verbosity", "deterministic", "force_col_wise",
    }
)
#: Parameters that LightGBM's feature pre-filter reads while binning (when it is on).
PRE_FILTER = frozenset({"min_child_samples"})


@dataclasses.dataclass(frozen=True, slots=True)
class _Binned:
    key: tuple[Any, ...]
    train: lgb.Dataset
    evals: tuple[lgb.Dataset, ...]
    entry: Path | None = None  # the store entry they were read from (None: built here)
    store: BinnedStore | None = None  # built here for this store: written there once trained on
    writing: Future[None] | None = None  # that write (:func:`keep_built`), once started


#: The data sets of the last job in this process (one entry).
_last: list[_Binned] = []


def binning_key(data_key: str, params: dict[str, Any], *, position_bias: bool) -> tuple[Any, ...]:
    """What must be equal for two jobs to share binned data: the data's fingerprint, whether the
    train set carries positions, and every parameter outside :data:`TRAINING_ONLY` (plus
    :data:`PRE_FILTER` unless ``feature_pre_filter`` is false); a parameter naming a file
    (``forcedbins_filename``) by its path and its content, so a file edited in place is a new key."""
    pre_filter = params.get("feature_pre_filter", True) is not False
    free = TRAINING_ONLY if pre_filter else TRAINING_ONLY | PRE_FILTER
    shaping = tuple(sorted((k, _shaping_value(k, v)) for k, v in params.items() if k not in free))
    return (data_key, position_bias, shaping)


def _shaping_value(name: str, value: Any) -> str:
    """``repr(value)``; for a ``*_filename`` parameter naming a readable file, with the sha256
    of its bytes (LightGBM reads the file when it bins)."""
    if name.endswith("_filename") and isinstance(value, str) and value:
        try:
            digest = hashlib.sha256(Path(value).expanduser().read_bytes()).hexdigest()
        except OSError:
            return repr(value)
        return f"{value!r} sha256:{digest}"
    return repr(value)


def binned_datasets(
    splits: Splits,
    params: dict[str, Any],
    *,
    position_bias: bool,
    data_key: str | None,
    store: BinnedStore | None = None,
) -> tuple[lgb.Dataset, tuple[lgb.Dataset, ...], Path | None]:
    """The train set and the valid and test sets (binned like train) for ``params``: the last
    job's when :func:`binning_key` matches (``data_key``: the data's content fingerprint; None
    never reuses), else ``store``'s entry of that key, else new ones (then kept in ``store``).

    Returns ``(train, (valid, test), entry)``: ``entry`` is the store entry the sets were read
    from (here or by the job that handed them on), None when they were binned in this process.
    Sets binned here go to ``store`` once trained on: the caller calls :func:`keep_built` then.
    An entry whose sets disagree with ``splits`` (row and feature counts, labels, query sizes:
    a file changed after its checksums were written) is removed with a warning and the data
    binned again; :func:`drop_entry` does the same for an entry LightGBM fails on later.
    """
    key = None if data_key is None else binning_key(data_key, params, position_bias=position_bias)
    if key is not None and _last and _last[0].key == key:
        if _last[0].writing is not None:  # this job trains on the very sets being written
            _last[0].writing.result()
        log.info("binned data: reused from the previous job (same data %s and binning parameters)", data_key)
        return _last[0].train, _last[0].evals, _last[0].entry
    on_disk = store if key is not None and not position_bias else None
    if on_disk is not None and key is not None:
        loaded = on_disk.load(key, params)
        if loaded is not None:
            entry = on_disk.directory / on_disk.entry_name(key)
            disagreement = _disagreement(splits, loaded[0], loaded[1])
            if disagreement is None:
                _last[:] = [_Binned(key, *loaded, entry=entry)]
                return loaded[0], loaded[1], entry
            drop_entry(entry, disagreement)
    train, valid, test = splits.train, splits.valid, splits.test
    names: list[str] | Literal["auto"] = list(train.feature_names) if train.feature_names else "auto"
    # raw data kept: LightGBM rebuilds a data set itself if a later job's parameters need it
    # built with the training parameters: a data set constructed with LightGBM's defaults (to be
    # stored) and trained with a smaller min_data_in_leaf makes LightGBM print "[Fatal] Reducing
    # `min_data_in_leaf` ..." and rebuild it
    train_set = lgb.Dataset(
        train.features, train.labels, group=train.group_sizes, params=dict(params),
        position=train.positions if position_bias else None, feature_name=names, free_raw_data=False,
    )
    evals = tuple(
        lgb.Dataset(
            d.features, d.labels, group=d.group_sizes, reference=train_set, feature_name=names, free_raw_data=False,
            params=dict(params),
        )
        for d in (valid, test)
    )
    if key is not None:
        _last[:] = [_Binned(key, train_set, evals, store=on_disk)]
        on = "" if on_disk is None else f", and in {on_disk.directory} for later processes"
        log.info("binned data: built (kept for the next job with the same data %s and binning parameters%s)", data_key, on)
    if on_disk is not None:
        train_set.construct()  # here, not in lgb.train: binning is the run's "datasets" phase
        for dataset in evals:
            dataset.construct()
    return train_set, evals, None


def keep_built() -> None:
    """Write the data sets the last :func:`binned_datasets` built for a store to that store, in
    the background thread of the cache writes (:func:`ltr.data.cache.write_later`; the run waits
    for it with :func:`ltr.data.cache.wait_for_stores` as it ends): called once training on them
    is over, so the write reads sets nothing changes any more, and is off the path to the first
    round. Nothing to do when they were loaded from the store or are written already."""
    kept = _last[0] if _last else None
    if kept is None or kept.store is None or kept.writing is not None:
        return
    _last[0] = dataclasses.replace(kept, writing=write_later(kept.store.save, kept.key, kept.train, kept.evals))


def drop_entry(entry: Path, reason: str) -> None:
    """Remove the store ``entry`` (and the sets read from it kept for the next job) and log one
    warning naming it and ``reason``: the next :func:`binned_datasets` bins the data again."""
    _last.clear()
    discard_entry(entry)
    log.warning(
        "removed the binned-data cache entry %s (%s); binning the data again (ltr cache clear removes every entry)",
        entry, " ".join(reason.split()),
    )


def _disagreement(splits: Splits, train: lgb.Dataset, evals: tuple[lgb.Dataset, ...]) -> str | None:
    """Why the loaded sets are not ``splits`` (row or feature count, labels, query sizes), or None."""
    for name, dataset, data in zip(("train", "valid", "test"), (train, *evals), (splits.train, splits.valid, splits.test), strict=True):
        if dataset.num_data() != data.n_rows or dataset.num_feature() != data.n_features:
            return (
                f"{name} has {dataset.num_data()} rows x {dataset.num_feature()} features, "
                f"the data {data.n_rows} x {data.n_features}"
            )
        if not np.array_equal(np.asarray(dataset.get_label(), dtype=np.float64), data.labels.astype(np.float64)):
            return f"{name}'s labels differ from the data's"
        if not np.array_equal(np.asarray(dataset.get_group()), np.diff(data.offsets)):
            return f"{name}'s query sizes differ from the data's"
    return None

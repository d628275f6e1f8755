"""Query-level splits: a query's rows always land together in exactly one split."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ltr.data.ranking_data import RankingData
from ltr.errors import DataError


@dataclass(frozen=True, slots=True)
class Splits:
    """The three splits an experiment uses; ``valid`` drives early stopping."""

    train: RankingData
    valid: RankingData
    test: RankingData

    def items(self) -> tuple[tuple[str, RankingData], ...]:
        return (("train", self.train), ("valid", self.valid), ("test", self.test))


def check_fractions(valid_fraction: float, test_fraction: float) -> None:
    """Both fractions in (0, 1) and their sum below 1 (`DataError` otherwise): checked before
    any data is read where the fractions come from the user (``ltr partition``)."""
    if not (0.0 < valid_fraction < 1.0 and 0.0 < test_fraction < 1.0):
        raise DataError(
            f"split fractions must lie in (0, 1): valid={valid_fraction}, test={test_fraction}"
        )
    if valid_fraction + test_fraction >= 1.0:
        raise DataError(
            f"split.valid_fraction + split.test_fraction = {valid_fraction + test_fraction} "
            "leaves no training queries; make their sum < 1"
        )


def split_queries(
    data: RankingData, *, valid_fraction: float, test_fraction: float, seed: int
) -> Splits:
    """Shuffle the queries with ``seed`` and cut them into train / valid / test.

    Each split keeps its queries in their original relative order, so the result does not
    depend on anything but the data, the fractions and the seed.
    """
    check_fractions(valid_fraction, test_fraction)
    n = data.n_queries
    n_valid = round(n * valid_fraction)
    n_test = round(n * test_fraction)
    if min(n_valid, n_test, n - n_valid - n_test) < 1:
        raise DataError(
            f"{n} queries in {data.name!r} are too few to split into train / valid / test "
            f"with fractions valid={valid_fraction}, test={test_fraction}"
        )
    order = np.random.default_rng(seed).permutation(n)
    valid_idx = np.sort(order[:n_valid])
    test_idx = np.sort(order[n_valid : n_valid + n_test])
    train_idx = np.sort(order[n_valid + n_test :])
    return Splits(
        train=data.take_queries(train_idx, name=data.name),
        valid=data.take_queries(valid_idx, name=data.name),
        test=data.take_queries(test_idx, name=data.name),
    )


def holdout_queries(
    data: RankingData, *, fraction: float, seed: int, what: str = "held-out"
) -> tuple[RankingData, RankingData]:
    """Split off a seeded random ``fraction`` of the queries: returns ``(rest, held_out)``.

    Used when a data set comes with fewer files than splits (e.g. train and test but no
    validation file). Both parts keep the original relative order of their queries.
    """
    if not 0.0 < fraction < 1.0:
        raise DataError(f"the {what} fraction must lie in (0, 1), got {fraction}")
    n = data.n_queries
    n_held = round(n * fraction)
    if min(n_held, n - n_held) < 1:
        raise DataError(
            f"{n} queries in {data.name!r} are too few to hold out a {what} fraction of {fraction}"
        )
    order = np.random.default_rng(seed).permutation(n)
    held = np.sort(order[:n_held])
    rest = np.sort(order[n_held:])
    return data.take_queries(rest), data.take_queries(held)


def kfold_query_folds(n_queries: int, *, n_folds: int, seed: int) -> list[NDArray[np.int64]]:
    """Seeded k-fold by query: ``n_folds`` disjoint sorted arrays of query indices covering all.

    Fold sizes differ by at most one.
    """
    if n_folds < 2:
        raise DataError(f"k-fold needs split.n_folds >= 2, got {n_folds}")
    if n_queries < n_folds:
        raise DataError(f"{n_queries} queries are too few for {n_folds} folds")
    order = np.random.default_rng(seed).permutation(n_queries)
    return [np.sort(part) for part in np.array_split(order, n_folds)]


def kfold_split(
    data: RankingData, *, n_folds: int, fold: int, valid_fraction: float, seed: int
) -> Splits:
    """Fold ``fold`` (1-based) of a seeded k-fold by query is the test split.

    The other folds are the training pool, from which a seeded ``valid_fraction`` of queries is
    held out for validation (early stopping). Over ``fold = 1..n_folds`` every query is tested
    exactly once.
    """
    if not 1 <= fold <= n_folds:
        raise DataError(f"split.fold={fold} must lie in 1..{n_folds} (split.n_folds)")
    folds = kfold_query_folds(data.n_queries, n_folds=n_folds, seed=seed)
    test_idx = folds[fold - 1]
    pool_idx = np.sort(np.concatenate([f for i, f in enumerate(folds) if i != fold - 1]))
    pool = data.take_queries(pool_idx)
    train, valid = holdout_queries(pool, fraction=valid_fraction, seed=seed + fold, what="validation")
    return Splits(train=train, valid=valid, test=data.take_queries(test_idx))

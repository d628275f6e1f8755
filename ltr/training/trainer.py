"""The `Trainer` interface: train a LightGBM ranker on in-memory splits, return a `TrainResult`.

Implementations: :class:`ltr.training.local.LocalTrainer` (this process) and
:class:`ltr.dask.trainer.DaskTrainer` (a Dask cluster). The runner picks one by
``trainer.kind`` and never branches on which it has.
"""

from __future__ import annotations

from typing import Protocol

from ltr.data.splits import Splits
from ltr.training.local import TrainResult


class Trainer(Protocol):
    """Trains on ``splits.train``; records LightGBM's ``ndcg@k`` on valid and test every round."""

    def fit(self, splits: Splits, *, eval_at: list[int], seed: int, data_key: str | None = None) -> TrainResult:
        """Train; ``eval_at`` are the cut-offs of the recorded curves, ``seed`` LightGBM's seed,
        ``data_key`` the data's content fingerprint (what may be cached against it)."""
        ...

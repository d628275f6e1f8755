"""`DaskTrainer`: the :class:`ltr.training.trainer.Trainer` of ``trainer=dask``.

In-memory splits are sent to the cluster as whole-query partitions (:func:`ltr.dask.train.fit_dask`);
data the workers read themselves (``data=parquet_partitions``) is trained, predicted and
tabulated on the cluster by :meth:`DaskTrainer.fit_partitioned_tables`.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ltr.config.schema import FitConfig, ModelConfig, TrainConfig, TrainerConfig
from ltr.data.splits import Splits
from ltr.metrics import MetricConventions, Strata
from ltr.metrics.reports.gap import LightgbmGap
from ltr.training.local import TrainResult


@dataclass(frozen=True, slots=True)
class DaskTrainer:
    """Train data-parallel (:mod:`ltr.dask.network`) on the cluster ``trainer`` describes."""

    model: ModelConfig
    fit_config: FitConfig
    cluster: TrainerConfig
    conventions: MetricConventions | None = None  # of our per-round curves (None: defaults)

    def fit(self, splits: Splits, *, eval_at: list[int], seed: int, data_key: str | None = None) -> TrainResult:
        """Train on the cluster; ``data_key`` is not used (the workers bin their own partitions)."""
        from ltr.dask.train import fit_dask

        return fit_dask(
            splits, self.model, self.fit_config, self.cluster, eval_at=eval_at, seed=seed, conventions=self.conventions
        )

    def fit_partitioned_tables(
        self,
        config: TrainConfig,
        *,
        ks: list[int],
        table_ks: list[int],
        strata: Strata,
        conventions: MetricConventions,
    ) -> tuple[TrainResult, dict[str, pd.DataFrame], dict[str, LightgbmGap], dict[str, float]]:
        """Read ``config.data`` (``parquet_partitions``) on the workers, train, and build the
        per-query tables and LightGBM gaps of ``config.eval.splits`` there
        (:func:`ltr.dask.partitioned.fit_partitioned_tables`)."""
        from ltr.dask.partitioned import fit_partitioned_tables

        result: TrainResult
        result, tables, gaps, timings = fit_partitioned_tables(
            config, ks=ks, table_ks=table_ks, strata=strata, conventions=conventions
        )
        return result, tables, gaps, timings

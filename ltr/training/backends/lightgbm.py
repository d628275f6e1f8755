"""``model=lambdarank`` / ``rank_xendcg`` / ``pointwise``: LightGBM, today's path
(:mod:`ltr.training.local`, ``lgb.train`` with our nDCG as its ``feval``), behind the backends'
interface."""

from __future__ import annotations

from typing import Any

from ltr.config.choices import RerankKind
from ltr.config.schema import FitConfig, ModelConfig
from ltr.training.settings import check_model_config


def check(model: ModelConfig, fit: FitConfig, *, seed: int) -> None:
    """LightGBM's settings rules that need no data (:func:`ltr.training.settings.check_model_config`)."""
    check_model_config(model)


def trainer(spec: Any, binned_store: Any = None) -> Any:
    """The local LightGBM trainer of a checked spec (:class:`ltr.training.local.LocalTrainer`)."""
    from ltr.training.local import LocalTrainer  # LightGBM, once the config is checked

    return LocalTrainer(
        spec.config.model, spec.config.fit, spec.conventions, spec.table_ks, binned_store,
        model_order=spec.config.rerank.kind != RerankKind.none,
    )  # fmt: skip

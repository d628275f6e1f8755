"""`ExperimentSpec`: a composed ``ltr train`` config, typed and checked, with what follows from it.

Built only by :func:`ltr.experiment.checks.check_config`, before any data is read or any run
exists. Everything downstream reads the spec, never the raw config: ``spec.config`` is the
:class:`ltr.config.schema.TrainConfig` dataclass (``spec.config.data`` one of the
:data:`ltr.config.groups.data.DATA_OPTIONS` dataclasses), and the derived values are resolved once here
(metric conventions from ``eval.preset`` and explicit fields, cut-offs, strata, composites, the
early-stopping metric, the objective key a sweeper maximises).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig

from ltr.config.choices import RerankKind
from ltr.config.schema import RerankConfig, TrainConfig
from ltr.metrics import MetricConventions, Strata
from ltr.metrics.measures import table_measures

Composites = dict[str, dict[str, float]]


@dataclass(frozen=True)
class ExperimentSpec:
    """A checked experiment.

    ``ks``: ``eval.k`` in config order; ``table_ks``: those plus the cut-offs the composites need
    (the columns of the per-query tables). ``optimized_metric``: the logged metric key the app
    returns (``valid/ndcg_at_10``; the first of ``objectives`` when a search has several, each
    with its ``maximize`` / ``minimize`` in ``directions``); ``early_stopping_metric``: the metric
    early stopping watches on valid (ours ``ndcg_at_10``, or LightGBM's ``ndcg@10``). ``raw``: the config as composed (logged as
    ``config/config.yaml``).
    """

    config: TrainConfig
    raw: DictConfig
    ks: tuple[int, ...]
    table_ks: tuple[int, ...]
    strata: Strata
    conventions: MetricConventions
    composites: Composites
    optimized_metric: str
    early_stopping_metric: str
    #: every ``optimized_metric`` key (the first is ``optimized_metric``) and its direction
    objectives: tuple[str, ...] = ()
    directions: tuple[str, ...] = ()

    @property
    def seed(self) -> int:
        return self.config.seed

    def params(self) -> dict[str, Any]:
        """The config as flat MLflow params (``model.num_leaves``), conventions resolved; settings
        left unset (None) are not logged (the MLflow UI shows "-" for them, not "None"), nor the
        re-ranking settings of a run that does not re-rank (only ``rerank.kind=none``)."""
        flat = _flatten(dataclasses.asdict(self.config))
        if self.config.rerank.kind == "none":
            flat = {key: value for key, value in flat.items() if not key.startswith("rerank.") or key == "rerank.kind"}
        conventions = self.conventions
        flat |= {
            "eval.gain": conventions.gain,
            "eval.ties": conventions.ties,
            "eval.zero_idcg": conventions.zero_idcg,
            "eval.discount": conventions.discount if isinstance(conventions.discount, str)
            else "weights " + ",".join(f"{w:g}" for w in conventions.discount),
            "fit.early_stopping_metric": self.early_stopping_metric,
            "optimized_metric": ",".join(self.objectives) or self.optimized_metric,
        }
        flat = {key: value for key, value in flat.items() if not (key.startswith("sweep.") and value in (None, []))}
        return {key: str(value) if isinstance(value, str) else value for key, value in flat.items() if value is not None}


def _flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts to ``{"model.num_leaves": 31, ...}``; lists stay values."""
    out: dict[str, Any] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flatten(value, f"{name}."))
        else:
            out[name] = value
    return out


def diversity_measures(cfg: RerankConfig) -> tuple[str, ...]:
    """The diversity measures a run with this ``rerank`` config reports (none without re-ranking)."""
    if cfg.kind in (RerankKind.none, RerankKind.uncertainty):
        return ()
    return ("ild",) if cfg.category_feature is None else ("ild", "coverage", "alpha_ndcg")


def metric_keys(spec: ExperimentSpec) -> list[str]:
    """The per-split measure keys a run of ``spec`` logs (``valid/ndcg_at_10``, ``.../len_1-10``)."""
    names = [m.key for m in table_measures(list(spec.table_ks))] + list(spec.composites)
    names += [f"{m}_at_{k}" for m in diversity_measures(spec.config.rerank) for k in spec.ks]
    suffixes = ["", *(f"/{key}" for key in spec.strata.keys)]
    return [f"{split}/{name}{suffix}" for split in spec.config.eval.splits for name in names for suffix in suffixes]

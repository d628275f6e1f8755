"""The metrics' rules of a ``ltr train`` config: ``eval.k``, ``eval.strata``, the conventions,
the composites (of ``eval.composite`` and of ``optimized_metric``), ``eval.splits``; and that
``optimized_metric`` names metrics the run logs.

A concern's rules of :mod:`ltr.experiment.checks` (its ``ConfigRules``): :func:`check_config`
raises :class:`ltr.errors.LtrUserError` at the first rule broken and returns what the metrics
of the run follow from (:class:`MetricChoices`). This part sits beside ``ltr.config``, so the
rules read the config through the fields they use (:class:`RunSettings`), a
:class:`ltr.config.schema.TrainConfig` in practice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from omegaconf import ListConfig

from ltr.errors import LtrUserError
from ltr.metrics.composite_rules import check_composites, composite_ks, parse_composite
from ltr.metrics.conventions import MetricConventions, resolve_conventions
from ltr.metrics.measures import Measure
from ltr.metrics.strata import Strata

Composites = dict[str, dict[str, float]]


class EvalSettings(Protocol):
    """The fields of ``eval`` (:class:`ltr.config.schema.EvalConfig`) the rules read."""

    composite: dict[str, dict[str, float]]

    @property
    def k(self) -> Sequence[int]: ...
    @property
    def strata(self) -> Sequence[int]: ...
    @property
    def splits(self) -> Sequence[str]: ...
    @property
    def preset(self) -> object: ...
    @property
    def gain(self) -> object: ...
    @property
    def ties(self) -> object: ...
    @property
    def zero_idcg(self) -> object: ...
    @property
    def label_gain(self) -> Sequence[float] | None: ...
    @property
    def rel_threshold(self) -> int: ...
    @property
    def discount(self) -> object: ...
    @property
    def discount_base(self) -> float: ...


class RunSettings(Protocol):
    """The fields of a ``ltr train`` config (:class:`ltr.config.schema.TrainConfig`) the rules read."""

    optimized_metric: Any

    @property
    def eval(self) -> EvalSettings: ...


@dataclass(frozen=True)
class MetricChoices:
    """What the run's metrics follow from: ``ks`` (``eval.k`` in config order), ``table_ks``
    (those plus the cut-offs the composites need: the columns of the per-query tables), the
    length strata, the resolved conventions and the composites by name."""

    ks: tuple[int, ...]
    table_ks: tuple[int, ...]
    strata: Strata
    conventions: MetricConventions
    composites: Composites


def check_config(config: RunSettings, *, paths: bool = True) -> MetricChoices:
    """The metrics' rules, in order: cut-offs, strata, conventions, composites, splits. A
    composite written in ``optimized_metric`` is moved to ``eval.composite`` (:func:`objective_composites`).
    ``paths``: unused (no metric rule reads a file)."""
    ks = _check_ks(config.eval)
    strata = _check_strata(config.eval)
    conventions = _check_conventions(config.eval)
    composites = _check_composites(config.eval) | objective_composites(config)
    table_ks = ks + tuple(k for k in composite_ks(composites) if k not in ks)
    _check_splits(config.eval)
    return MetricChoices(ks=ks, table_ks=table_ks, strata=strata, conventions=conventions, composites=composites)


def check_optimized_metric(optimized_metric: Any, splits: Sequence[str], ks: Sequence[int], logged: Sequence[str]) -> tuple[str, ...]:
    """The keys of ``optimized_metric`` (one, or a list: several objectives), or
    ``(valid/ndcg_at_<max k>,)``; each must be one of the ``logged`` keys, none twice."""
    if optimized_metric is None:
        if "valid" not in splits:
            raise LtrUserError(
                f"eval.splits={list(splits)} has no valid split to optimise on: "
                "add it, or set optimized_metric (e.g. optimized_metric=test/ndcg_at_10)"
            )
        return (f"valid/{Measure('ndcg', max(ks)).key}",)
    raw = optimized_metric
    keys = tuple(str(k) for k in raw) if isinstance(raw, list | tuple | ListConfig) else (str(raw),)
    if not keys:
        raise LtrUserError("optimized_metric=[] names no metric; give a key (valid/ndcg_at_10) or a list of keys")
    for key in keys:
        if key not in logged:
            examples = ", ".join(f"{s}/{Measure('ndcg', max(ks)).key}" for s in splits)
            raise LtrUserError(
                f"optimized_metric={key!r} is not a metric this run logs; use a measure of eval.splits "
                f"at a cut-off of eval.k, e.g. {examples} (or .../len_1-10 for a stratum)"
            )
    if len(set(keys)) != len(keys):
        raise LtrUserError(f"optimized_metric={list(keys)} names a key twice")
    if len(keys) > 2:
        raise LtrUserError(f"optimized_metric={list(keys)}: a sweep optimises one key or two (a front of two objectives)")
    return keys


def _check_ks(eval_cfg: EvalSettings) -> tuple[int, ...]:
    ks = tuple(int(k) for k in eval_cfg.k)
    if len(set(ks)) != len(ks):
        raise LtrUserError(f"eval.k={list(ks)} repeats a cut-off")
    return ks


def _check_strata(eval_cfg: EvalSettings) -> Strata:
    try:
        return Strata(tuple(int(e) for e in eval_cfg.strata))
    except ValueError as exc:
        raise LtrUserError(f"eval.strata={list(eval_cfg.strata)}: {exc} (e.g. eval.strata=[1,11,51])") from exc


def _check_conventions(eval_cfg: EvalSettings) -> MetricConventions:
    weights = getattr(eval_cfg, "position_weights", None)
    if weights is not None and str(eval_cfg.discount) != "log2_rank_plus_1":
        raise LtrUserError(
            f"eval.position_weights replaces eval.discount={eval_cfg.discount}: set one of them"
        )
    if weights is not None and len(weights) and not any(float(w) > 0 for w in weights):
        raise LtrUserError(
            f"eval.position_weights=[{','.join(f'{float(w):g}' for w in weights)}]: every weight is 0, so every DCG and "
            "nDCG would be 0; give at least one weight > 0"
        )
    if eval_cfg.gain is not None and str(eval_cfg.gain) == "value":
        raise LtrUserError(
            "eval.gain=value: ltr train evaluates the labels it trains on, and LightGBM's lambdarank "
            "needs integer grades; train on grades and evaluate the real values (revenue, margin) with "
            "ltr evaluate --gain value --data FILE --scores PREDS (ltr predict writes the scores)"
        )
    try:
        conventions = resolve_conventions(
            None if eval_cfg.preset is None else str(eval_cfg.preset),
            gain=None if eval_cfg.gain is None else str(eval_cfg.gain),
            ties=None if eval_cfg.ties is None else str(eval_cfg.ties),
            zero_idcg=None if eval_cfg.zero_idcg is None else str(eval_cfg.zero_idcg),
            label_gain=eval_cfg.label_gain,
            rel_threshold=int(eval_cfg.rel_threshold),
            discount=str(eval_cfg.discount) if weights is None else tuple(float(w) for w in weights),
            discount_base=float(eval_cfg.discount_base),
        )
    except ValueError as exc:
        raise LtrUserError(f"eval: {exc}") from exc
    return conventions


def _check_composites(eval_cfg: EvalSettings) -> Composites:
    composites = {
        str(name): {str(part): float(weight) for part, weight in parts.items()}
        for name, parts in (eval_cfg.composite or {}).items()
    }
    check_composites(composites)
    return composites


def objective_composites(config: RunSettings) -> Composites:
    """Composites defined in ``optimized_metric`` (a sweep's objectives), in the syntax of ``ltr
    evaluate --composite``: ``valid/blend=0.4*ndcg_at_3+0.6*ndcg_at_10`` is the key
    ``valid/blend`` of the composite ``eval.composite.blend={ndcg_at_3: 0.4, ndcg_at_10: 0.6}``.
    The key is rewritten to ``valid/blend`` and the composite added to ``eval.composite`` (so the
    run logs it as every composite); a name ``eval.composite`` defines with other weights is an
    error."""
    raw = config.optimized_metric
    if raw is None:
        return {}
    many = isinstance(raw, list | tuple | ListConfig)
    keys = [str(k) for k in raw] if many else [str(raw)]
    found: dict[str, dict[str, float]] = {}
    rewritten = []
    for key in keys:
        split, slash, rest = key.partition("/")
        if not slash or "=" not in rest:
            rewritten.append(key)
            continue
        one = parse_composite(rest, where=f"optimized_metric={key!r}:")
        name, parts = next(iter(one.items()))
        known = (config.eval.composite or {}).get(name)
        if known is not None and {str(p): float(w) for p, w in known.items()} != parts:
            raise LtrUserError(f"optimized_metric={key!r}: eval.composite.{name} has other weights; give the composite another name")
        found[name] = parts
        rewritten.append(f"{split}/{name}")
    if found:
        config.optimized_metric = rewritten if many else rewritten[0]
        config.eval.composite = {**(config.eval.composite or {}), **found}
    return found


def _check_splits(eval_cfg: EvalSettings) -> None:
    splits = list(eval_cfg.splits)
    if len(set(splits)) != len(splits):
        raise LtrUserError(f"eval.splits={splits} repeats a split")

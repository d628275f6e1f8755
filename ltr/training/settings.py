"""The rules of ``model`` and ``fit`` settings that need no data, without importing LightGBM.

:mod:`ltr.training.config_rules` applies them to every ``ltr train`` config before any data is read;
they live apart from :mod:`ltr.training.local` (which imports LightGBM, and with it scikit-learn
and scipy) so that a config error and ``ltr train --help`` answer in a blink. Only
:func:`lightgbm_names` (behind :func:`check_extra_params`) asks LightGBM, and only when
``model.params`` has keys. The names of our per-round curves are here too (the checks read
them; :mod:`ltr.training.round_metric` computes the curves).
"""

from __future__ import annotations

import difflib
import functools
from typing import Any

from ltr.config.schema import FitConfig, ModelConfig
from ltr.errors import LtrUserError

#: Our curve names: ``ndcg_at_10`` (LightGBM names its own ``ndcg@10``).
CURVE_PREFIX = "ndcg_at_"
#: Our curves of the model's strict order in a re-ranked run: ``pre_rerank/ndcg_at_10``.
PRE_RERANK_PREFIX = "pre_rerank/"


def curve_name(k: int) -> str:
    """Our per-round key of NDCG@k, as logged under ``iter/{split}/``."""
    return f"{CURVE_PREFIX}{k}"


def is_our_curve(name: str) -> bool:
    """True for the names :class:`RoundNdcg` reports (LightGBM's own are ``ndcg@k``)."""
    return name.removeprefix(PRE_RERANK_PREFIX).startswith(CURVE_PREFIX)


#: LightGBM objectives that rank (``model.estimator=ranker``).
RANKING_OBJECTIVES = frozenset({"lambdarank", "rank_xendcg"})
#: Set by ltr itself (from fit.* and seed); overriding them through model.params is refused.
RESERVED = frozenset(
    {"num_iterations", "seed", "deterministic", "num_threads", "verbosity", "metric", "eval_at"}
)


@functools.cache
def lightgbm_names() -> dict[str, str]:
    """Every name LightGBM knows (each parameter and each of its aliases) -> the parameter's own
    name (``mc`` -> ``monotone_constraints``). Imports LightGBM: call it only with keys to look up
    (module docstring)."""
    import lightgbm as lgb  # only with keys to look up (module docstring)

    known = lgb.basic._ConfigAliases._get_all_param_aliases()
    return {alias: name for name, aliases in known.items() for alias in (name, *aliases)}


def check_extra_params(params: dict[str, Any]) -> None:
    """Refuse keys of ``model.params`` that LightGBM does not know (it only warns on typos).

    LightGBM is imported only when there are keys to check: its import (~0.7 s, with
    scikit-learn and scipy) is what a config error or ``ltr train --help`` would otherwise pay.
    """
    if not params:
        return
    canonical = lightgbm_names()
    for key in params:
        if key not in canonical:
            close = difflib.get_close_matches(key, canonical, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise LtrUserError(f"model.params.{key} is not a LightGBM parameter{hint}")
        if canonical[key] in RESERVED:
            raise LtrUserError(
                f"model.params.{key} is set by ltr (fit.num_boost_round, fit.num_threads, seed, eval.k); "
                "override those settings instead"
            )


def check_model_config(model: ModelConfig) -> None:
    """Refuse, before any work, an estimator / objective mismatch or an unknown LightGBM key."""
    if model.estimator == "ranker":
        if model.objective not in RANKING_OBJECTIVES:
            raise LtrUserError(
                f"model.objective={model.objective!r} is not a ranking objective "
                f"({', '.join(sorted(RANKING_OBJECTIVES))}); for a pointwise model use model=pointwise"
            )
    elif model.estimator == "regressor":
        if model.objective in RANKING_OBJECTIVES:
            raise LtrUserError(f"model.objective={model.objective!r} needs model.estimator=ranker")
    else:
        raise LtrUserError(f"model.estimator={model.estimator!r} is not one of: ranker, regressor")
    if model.position_bias and (
        model.estimator != "ranker" or model.objective != "lambdarank"
    ):
        raise LtrUserError(
            f"model.position_bias=true needs model.objective=lambdarank; {model.objective!r} ignores "
            "the position bias (rank_xendcg accepts positions but learns no bias): use "
            "model=lambdarank, or set model.position_bias=false"
        )
    check_extra_params(dict(model.params))


def watched_metric(fit: FitConfig, eval_at: list[int] | tuple[int, ...]) -> str:
    """The metric early stopping watches on valid: ``fit.early_stopping_metric``, or ours at the
    largest cut-off (``ndcg_at_10``) when it is null. ``ndcg@k`` names LightGBM's own."""
    return fit.early_stopping_metric or curve_name(max(eval_at))


def watchable_metrics(eval_at: list[int] | tuple[int, ...]) -> list[str]:
    """What ``fit.early_stopping_metric`` may name with these cut-offs: ours (``ndcg_at_k``, the
    run's conventions) at each cut-off, then LightGBM's own (``ndcg@k``)."""
    ks = sorted({int(k) for k in eval_at})
    return [curve_name(k) for k in ks] + [f"ndcg@{k}" for k in ks]

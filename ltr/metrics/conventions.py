"""`MetricConventions`: every choice that changes an NDCG number, as one frozen value.

See the package docstring of :mod:`ltr.metrics` for what each knob means.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

GAINS: tuple[str, ...] = ("exp", "linear", "value")
TIES: tuple[str, ...] = ("average", "stable", "pessimistic", "optimistic", "docno_desc")
ZERO_IDCG: tuple[str, ...] = ("zero", "one", "skip")
DISCOUNTS: tuple[str, ...] = ("log2_rank_plus_1", "jarvelin")

#: Presets whose peer tool has no real-valued gains (each refuses ``gain="value"``).
NO_VALUE_GAIN_PRESETS: tuple[str, ...] = ("lightgbm", "sklearn", "trec_eval", "xgboost", "xgboost_minus", "catboost")

#: Label of a ranked row without a judgment (a TREC run's unjudged docno): gain 0 under every
#: convention (every negative label has gain 0) and never relevant (below every allowed
#: ``rel_threshold``), unlike a judged label 0, whose gain an explicit ``label_gain`` may set.
UNJUDGED: int = int(np.iinfo(np.int64).min)

#: Largest label ``gain="exp"`` can represent: ``2**1023 - 1`` is the largest finite
#: ``2**label - 1`` in float64 (exact integers up to label 53; above, it rounds to ``2**label``).
MAX_EXP_LABEL = 1023


@dataclass(frozen=True, slots=True)
class MetricConventions:
    """How labels become gains, how tied scores are ordered, what a query without gain scores.

    Parameters
    ----------
    gain : {"exp", "linear", "value"}
        ``exp``: gain ``2**label - 1`` (LightGBM), for labels up to `MAX_EXP_LABEL` (1023);
        ``linear``: gain ``label`` (sklearn, trec_eval); ``value``: the label is a real value
        (revenue, margin), finite and >= 0, and is the gain itself (no ``2**x``): DCG and IDCG
        over the same values. Binary relevance is then ``value >= rel_threshold``.
    label_gain : tuple of float, optional
        Explicit gain of label value ``0, 1, 2, ...``; overrides ``gain`` when set. Labels at or
        above ``len(label_gain)`` are an error.
    ties : {"average", "stable", "pessimistic", "optimistic", "docno_desc"}
        Order within a block of equal scores. ``docno_desc`` needs ``tie_keys``.
    zero_idcg : {"zero", "one", "skip"}
        NDCG of a query whose IDCG@k is 0: 0, 1, or NaN (left out of means, counted).
    rel_threshold : int
        Binary relevance for P@k, R@k, AP, RR and ``n_relevant``: ``label >= rel_threshold``.
        Must be above `UNJUDGED` (so an unjudged row is never relevant); ``ltr evaluate`` takes
        >= 0.
    discount : {"log2_rank_plus_1", "jarvelin"} or tuple of float
        Position discount of DCG and IDCG. A tuple: an explicit weight per position (``(1.0,
        0.7, 0.5)``: position 1 weighs 1.0, ...), finite and >= 0; positions beyond the tuple
        weigh 0. ``log2_rank_plus_1`` (default): ``1 / log2(rank +
        1)``. ``jarvelin``: Järvelin and Kekäläinen's original (2002), ``1 / log_b(rank)`` from
        rank ``b`` on and no discount above it (``1 / max(1, log_b(rank))``); with ``b = 2``:
        ``DCG = g_1 + sum_{rank >= 2} g_rank / log2(rank)``.
    discount_base : float
        The base ``b`` of ``jarvelin`` (> 1, default 2); ignored by ``log2_rank_plus_1``.

    Examples
    --------
    >>> MetricConventions(gain="linear").ties
    'average'
    >>> MetricConventions(ties="random")
    Traceback (most recent call last):
    ...
    ValueError: ties='random' is not one of 'average', 'stable', 'pessimistic', 'optimistic', 'docno_desc'
    """

    gain: str = "exp"
    label_gain: tuple[float, ...] | None = None
    ties: str = "average"
    zero_idcg: str = "zero"
    rel_threshold: int = 1
    discount: str | tuple[float, ...] = "log2_rank_plus_1"
    discount_base: float = 2.0

    def __post_init__(self) -> None:
        _check_choice("gain", self.gain, GAINS)
        if isinstance(self.discount, str):
            _check_choice("discount", self.discount, DISCOUNTS)
        else:
            object.__setattr__(self, "discount", position_weights(self.discount))
        if self.gain == "value" and self.label_gain is not None:
            raise ValueError("gain='value' takes the gain from the label itself; drop label_gain")
        if isinstance(self.discount_base, bool) or not (
            isinstance(self.discount_base, int | float | np.floating | np.integer)
            and math.isfinite(self.discount_base)
            and self.discount_base > 1
        ):
            raise ValueError(f"discount_base={self.discount_base!r} must be a number > 1")
        _check_choice("ties", self.ties, TIES)
        _check_choice("zero_idcg", self.zero_idcg, ZERO_IDCG)
        if self.label_gain is not None:
            if not isinstance(self.label_gain, tuple):
                # a list from a config is fine; store it as a tuple so the value stays hashable
                object.__setattr__(self, "label_gain", tuple(float(g) for g in self.label_gain))
            assert self.label_gain is not None  # for mypy; set just above
            if len(self.label_gain) == 0:
                raise ValueError("label_gain=() is empty; give one gain per label value 0, 1, ...")
            bad = [g for g in self.label_gain if not (np.isfinite(g) and g >= 0)]
            if bad:
                raise ValueError(f"label_gain has {bad[0]!r}; every gain must be finite and >= 0")
        if isinstance(self.rel_threshold, bool) or not isinstance(
            self.rel_threshold, int | np.integer
        ):
            raise ValueError(f"rel_threshold={self.rel_threshold!r} must be an int")
        if self.rel_threshold <= UNJUDGED:
            raise ValueError(
                f"rel_threshold={self.rel_threshold} would make unjudged rows (label {UNJUDGED}) "
                "relevant; give a larger threshold"
            )

    def gains_of(self, labels: NDArray[np.integer]) -> NDArray[np.float64]:
        """Gain of every label (negative labels have gain 0).

        Raises
        ------
        ValueError
            A label without a gain: above the ``label_gain`` table, or above `MAX_EXP_LABEL`
            with exp gain (``2**label - 1`` is not finite in float64).

        Examples
        --------
        >>> MetricConventions().gains_of(np.array([0, 1, 3, -1])).tolist()
        [0.0, 1.0, 7.0, 0.0]
        """
        labels = np.asarray(labels)
        if self.gain == "value":  # the label is the gain; negative (unjudged) labels: 0
            values: NDArray[np.float64] = np.asarray(labels, dtype=np.float64).copy()
            values[~(values >= 0)] = 0.0
            return values
        if self.label_gain is not None:
            table = np.asarray(self.label_gain, dtype=np.float64)
            if labels.size and int(labels.max()) >= table.shape[0]:
                bad = int(labels.max())
                raise ValueError(
                    f"label {bad} has no entry in label_gain (it has {table.shape[0]} entries, "
                    f"for labels 0..{table.shape[0] - 1})"
                )
            out: NDArray[np.float64] = table[np.clip(labels, 0, None)]
            out[labels < 0] = 0.0
            return out
        clipped: NDArray[np.float64] = np.clip(labels, 0, None).astype(np.float64)
        if self.gain == "exp":
            if labels.size and int(labels.max()) > MAX_EXP_LABEL:
                bad = int(labels.max())
                raise ValueError(
                    f"label {bad} has no exp gain (2**{bad} - 1 is not finite in float64; exp "
                    f"gain covers labels up to {MAX_EXP_LABEL}): use linear gain (--gain=linear) "
                    "or an explicit gain per label (--label-gain)"
                )
            gains: NDArray[np.float64] = np.exp2(clipped) - 1.0
            return gains
        return clipped

    def discounts(self, k_max: int) -> NDArray[np.float64]:
        """The discount of positions ``1..k_max`` (index ``p`` for position ``p + 1``).

        Examples
        --------
        >>> MetricConventions().discounts(3).round(4).tolist()
        [1.0, 0.6309, 0.5]
        >>> MetricConventions(discount="jarvelin").discounts(4).round(4).tolist()
        [1.0, 1.0, 0.6309, 0.5]
        >>> MetricConventions(discount=(1.0, 0.7)).discounts(3).tolist()
        [1.0, 0.7, 0.0]
        """
        if not isinstance(self.discount, str):  # explicit weights; beyond them: 0
            weights: NDArray[np.float64] = np.zeros(k_max, dtype=np.float64)
            given = np.asarray(self.discount[:k_max], dtype=np.float64)
            weights[: given.shape[0]] = given
            return weights
        if self.discount == "log2_rank_plus_1":
            out: NDArray[np.float64] = 1.0 / np.log2(np.arange(2, k_max + 2, dtype=np.float64))
            return out
        ranks = np.arange(1, k_max + 1, dtype=np.float64)
        base = float(self.discount_base)
        logs = np.log2(ranks) if base == 2.0 else np.log(ranks) / math.log(base)
        jarvelin: NDArray[np.float64] = 1.0 / np.maximum(logs, 1.0)
        return jarvelin

    def describe(self) -> dict[str, Any]:
        """The conventions as a flat dict (for logging with a run)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def position_weights(weights: object) -> tuple[float, ...]:
    """Explicit position weights as a tuple of floats: a sequence of numbers, or their text
    (``"1,0.7,0.5"``), each finite and >= 0, at least one, not all 0. Weights in any order are
    taken: IDCG pairs the largest gains with the largest weights (:func:`ltr.metrics.table.rearranged_idcg`).

    Examples
    --------
    >>> position_weights("1, 0.7,0.5")
    (1.0, 0.7, 0.5)
    >>> position_weights([1, -0.5])
    Traceback (most recent call last):
    ...
    ValueError: discount weight -0.5 at position 2 must be finite and >= 0
    """
    items = weights.split(",") if isinstance(weights, str) else weights
    try:
        out = tuple(float(w) for w in items)  # type: ignore[attr-defined]
    except (TypeError, ValueError):
        raise ValueError(f"discount={weights!r} is not one of {', '.join(map(repr, DISCOUNTS))} nor a list of position weights") from None
    if not out:
        raise ValueError("discount=() gives no position weight; give one per position, e.g. 1,0.7,0.5")
    for i, w in enumerate(out):
        if not (math.isfinite(w) and w >= 0):
            raise ValueError(f"discount weight {w:g} at position {i + 1} must be finite and >= 0")
    if not any(w > 0 for w in out):
        shown = ",".join(f"{w:g}" for w in out[:5]) + (",..." if len(out) > 5 else "")
        raise ValueError(f"discount={shown}: every weight is 0, so every DCG and nDCG would be 0; give at least one weight > 0")
    return out


def _check_choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        choices = ", ".join(repr(a) for a in allowed)
        raise ValueError(f"{name}={value!r} is not one of {choices}")


PRESETS: dict[str, MetricConventions] = {
    # LightGBM's ndcg@k: label_gain 2**i - 1, std::stable_sort by score (input order in ties),
    # a query whose max DCG is 0 scores 1.
    "lightgbm": MetricConventions(gain="exp", ties="stable", zero_idcg="one"),
    # sklearn.metrics.ndcg_score: y_true is the gain, ties averaged (ignore_ties=False), 0 for
    # an all-irrelevant query.
    "sklearn": MetricConventions(gain="linear", ties="average", zero_idcg="zero"),
    # trec_eval ndcg / ndcg_cut: gain = relevance level, negative levels count as 0, ties by
    # docno descending, ideal ranking from all judged docs (pass ideal_labels for that).
    "trec_eval": MetricConventions(gain="linear", ties="docno_desc", zero_idcg="zero"),
    # XGBoost's ndcg@k: gain 2**label - 1 (ndcg_exp_gain), a stable sort by score (input order
    # in ties), a query whose max DCG is 0 scores 1; ndcg@k- scores it 0 (xgboost_minus).
    "xgboost": MetricConventions(gain="exp", ties="stable", zero_idcg="one"),
    "xgboost_minus": MetricConventions(gain="exp", ties="stable", zero_idcg="zero"),
    # CatBoost's NDCG:top=k with its defaults (type=Base, denominator=LogPosition): gain = label,
    # the lower label first among tied scores, a query whose max DCG is 0 scores 1.
    "catboost": MetricConventions(gain="linear", ties="pessimistic", zero_idcg="one"),
}


def resolve_conventions(preset: str | None, **overrides: Any) -> MetricConventions:
    """The conventions of ``preset`` (or the defaults), then ``overrides`` that are not None.

    Examples
    --------
    >>> resolve_conventions("lightgbm", zero_idcg="zero")
    MetricConventions(gain='exp', label_gain=None, ties='stable', zero_idcg='zero', rel_threshold=1, discount='log2_rank_plus_1', discount_base=2.0)
    """
    if preset is None:
        base = MetricConventions()
    elif preset in PRESETS:
        base = PRESETS[preset]
    else:
        choices = ", ".join(repr(p) for p in PRESETS)
        raise ValueError(f"preset={preset!r} is not one of {choices}")
    names = {f.name for f in fields(MetricConventions)}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise ValueError(f"unknown convention {unknown[0]!r}; known: {', '.join(sorted(names))}")
    given = {k: v for k, v in overrides.items() if v is not None}
    if preset in NO_VALUE_GAIN_PRESETS and given.get("gain") == "value":
        raise ValueError(f"preset {preset!r} refuses gain='value': {preset} has no real-valued gains")
    if "label_gain" in given:
        given["label_gain"] = tuple(float(g) for g in given["label_gain"])
    return replace(base, **given)

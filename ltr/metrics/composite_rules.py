"""The rules of composite metrics (``eval.composite``): names, parts, weights, cut-offs.

Apart from :mod:`ltr.metrics.composite` (which computes them on a pandas per-query table) so that
``ltr train``'s config checks need no pandas. A composite is a name and weights over measures of
the per-query table: ``{idcg,dcg,ndcg,err,p,recall,ap}_at_{k}``, ``rr`` and ``ap``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from ltr.errors import LtrUserError

_PART = re.compile(r"^(idcg|dcg|ndcg|err|p|recall|ap)_at_([1-9][0-9]*)$")
_UNCUT = ("rr", "ap")
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")

Composites = Mapping[str, Mapping[str, float]]


def check_composites(composites: Composites) -> None:
    """Refuse a bad name, an unknown part or a non-finite weight, in one line naming the fix.

    Examples
    --------
    >>> check_composites({"blend": {"ndcg_at_3": 0.4, "ndcg_at_10": 0.6}})
    >>> check_composites({"blend": {"ndcg@3": 1.0}})
    Traceback (most recent call last):
    ...
    ltr.errors.LtrUserError: eval.composite.blend: 'ndcg@3' is not a measure; use ndcg_at_K, dcg_at_K, idcg_at_K, err_at_K, p_at_K, recall_at_K, ap_at_K, rr or ap
    """
    for name, parts in composites.items():
        if not _NAME.match(str(name)) or _PART.match(str(name)) or name in _UNCUT:
            raise LtrUserError(
                f"eval.composite.{name}: the name must start with a letter, use letters, digits, "
                "_ . - only, and not be a measure's own name"
            )
        if not parts:
            raise LtrUserError(f"eval.composite.{name} has no parts; e.g. {{ndcg_at_3: 0.4, ndcg_at_10: 0.6}}")
        for part, weight in parts.items():
            if part not in _UNCUT and not _PART.match(str(part)):
                raise LtrUserError(
                    f"eval.composite.{name}: {part!r} is not a measure; use ndcg_at_K, dcg_at_K, "
                    "idcg_at_K, err_at_K, p_at_K, recall_at_K, ap_at_K, rr or ap"
                )
            if not math.isfinite(float(weight)):
                raise LtrUserError(f"eval.composite.{name}.{part} = {weight} is not a finite weight")


def composite_ks(composites: Composites) -> list[int]:
    """The cut-offs the parts of ``composites`` need, sorted.

    Examples
    --------
    >>> composite_ks({"blend": {"ndcg_at_3": 0.4, "ndcg_at_10": 0.6, "rr": 1.0}})
    [3, 10]
    """
    ks = {int(m.group(2)) for parts in composites.values() for p in parts if (m := _PART.match(str(p)))}
    return sorted(ks)


_TERM = re.compile(r"^\s*(?:([-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)\s*\*\s*)?([A-Za-z_][A-Za-z0-9_]*)\s*$")


def parse_composite(text: str, *, where: str = "--composite") -> dict[str, dict[str, float]]:
    """One composite from its text, ``name=0.4*ndcg_at_3+0.6*ndcg_at_10``: the one syntax of
    ``ltr evaluate --composite``, ``ltr compare --composite`` and a sweep's objective, the same
    value as ``eval.composite.name={ndcg_at_3: 0.4, ndcg_at_10: 0.6}`` in a config. A term
    without a weight weighs 1; ``-`` subtracts. Checked by :func:`check_composites`.

    Examples
    --------
    >>> parse_composite("blend=0.4*ndcg_at_3+0.6*ndcg_at_10")
    {'blend': {'ndcg_at_3': 0.4, 'ndcg_at_10': 0.6}}
    >>> parse_composite("x = rr - 0.5*p_at_1")
    {'x': {'rr': 1.0, 'p_at_1': -0.5}}
    >>> parse_composite("0.4*ndcg_at_3")
    Traceback (most recent call last):
    ...
    ltr.errors.LtrUserError: --composite '0.4*ndcg_at_3': write name=weight*measure+weight*measure, e.g. blend=0.4*ndcg_at_3+0.6*ndcg_at_10
    """
    example = "write name=weight*measure+weight*measure, e.g. blend=0.4*ndcg_at_3+0.6*ndcg_at_10"
    name, eq, body = text.partition("=")
    if not eq or not name.strip() or not body.strip():
        raise LtrUserError(f"{where} {text!r}: {example}")
    parts: dict[str, float] = {}
    # split on + and - that start a term (not the sign of an exponent, 1e-3)
    terms = re.split(r"(?<![eE*])(?=[+-])", body.strip())
    for term in terms:
        sign = 1.0
        t = term.strip()
        if t.startswith(("+", "-")):
            sign = -1.0 if t[0] == "-" else 1.0
            t = t[1:]
        if not t:
            continue
        m = _TERM.match(t)
        if m is None:
            raise LtrUserError(f"{where} {text!r}: {term.strip()!r} is not weight*measure; {example}")
        weight = sign * (float(m.group(1)) if m.group(1) else 1.0)
        if m.group(2) in parts:
            raise LtrUserError(f"{where} {text!r}: {m.group(2)} appears twice")
        parts[m.group(2)] = weight
    out = {name.strip(): parts}
    check_composites(out)
    return out

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

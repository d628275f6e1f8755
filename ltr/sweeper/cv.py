"""Cross-validated results: every metric's mean and standard deviation over the folds of a sweep.

LETOR papers and benchmarks report the mean over the five folds. :func:`cv_metrics` takes the
metrics each fold's run logged and returns ``cv/{key}/mean``, ``cv/{key}/std`` (sample standard
deviation, ``ddof=1``; NaN for one fold, whose sd is undefined) and ``cv/n_folds``, for every per-split key
(``test/ndcg_at_10``, ``test/ndcg_at_10/len_1-10``, ...). What the sweep's parent run logs:

- :func:`cv_headline`: the headline keys' means under the keys themselves (``test/ndcg_at_10``,
  the runs table's column, as for any run) and their standard deviations as ``{key}/sd`` (none
  with one fold), and ``cv/n_folds``; :func:`cv_columns` orders them for the runs table (the means, then the sds);
- :func:`cv_frame`: every key's mean and sd as one table (the ``report/cv_metrics.json``
  artifact), not hundreds of one-value metrics;
- :func:`cv_table`: the table of the description: per stratum, queries and each nDCG@k as
  ``mean ± sd`` (the mean alone with one fold).

A CV that lacks folds (interrupted, or a fold's job failed) is partial: :func:`cv_coverage`
says so in the words the parent's name, tags and table title use.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ltr.metrics import Strata

#: The per-split keys that are averaged over folds (not curves, timings or counters of the run).
SPLIT_PREFIXES = ("train/", "valid/", "test/")


def cv_metrics(folds: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """``cv/...`` keys from ``folds`` (fold -> its run's metrics); keys every fold has."""
    if not folds:
        return {"cv/n_folds": 0.0}
    keys = set.intersection(*(set(m) for m in folds.values()))
    out: dict[str, float] = {"cv/n_folds": float(len(folds))}
    for key in sorted(k for k in keys if k.startswith(SPLIT_PREFIXES)):
        values = np.array([folds[f][key] for f in sorted(folds)], dtype=np.float64)
        out[f"cv/{key}/mean"] = float(values.mean())
        out[f"cv/{key}/std"] = float(values.std(ddof=1)) if len(values) > 1 else math.nan
    return out


def cv_headline(stats: Mapping[str, float], keys: Sequence[str]) -> dict[str, float]:
    """``key`` -> its fold mean and ``key/sd`` -> its standard deviation, for the ``keys`` that
    :func:`cv_metrics` (``stats``) averaged, and ``cv/n_folds``; no ``key/sd`` where the sd is
    undefined (one fold).

    >>> cv_headline({"cv/n_folds": 1.0, "cv/test/ndcg_at_10/mean": 0.5, "cv/test/ndcg_at_10/std": math.nan}, ["test/ndcg_at_10"])
    {'cv/n_folds': 1.0, 'test/ndcg_at_10': 0.5}
    """
    out = {"cv/n_folds": stats["cv/n_folds"]}
    for key in keys:
        if f"cv/{key}/mean" in stats:
            out[key] = stats[f"cv/{key}/mean"]
            if not math.isnan(stats[f"cv/{key}/std"]):
                out[f"{key}/sd"] = stats[f"cv/{key}/std"]
    return out


def cv_coverage(n_folds: int, n_planned: int | None) -> str:
    """How many folds the CV's result is over: ``5 folds``, or, when some of the ``n_planned``
    are missing, ``2 of 5 folds`` (a partial CV).

    >>> cv_coverage(5, 5), cv_coverage(2, 5), cv_coverage(1, None)
    ('5 folds', '2 of 5 folds', '1 fold')
    """
    if n_planned is not None and n_folds < n_planned:
        return f"{n_folds} of {n_planned} folds"
    return f"{n_folds} fold{'s' * (n_folds != 1)}"


def cv_columns(keys: Sequence[str]) -> list[str]:
    """The runs table's columns of :func:`cv_headline`: the means, then their sds in the same
    order (the means are the columns every run shares; the sds follow, so the headline and
    stratum columns still fit a 1600 px window).

    >>> cv_columns(["valid/ndcg_at_10", "test/ndcg_at_10"])
    ['valid/ndcg_at_10', 'test/ndcg_at_10', 'valid/ndcg_at_10/sd', 'test/ndcg_at_10/sd']
    """
    return [*keys, *(f"{key}/sd" for key in keys)]


def cv_frame(stats: Mapping[str, float]) -> pd.DataFrame:
    """Every averaged key of :func:`cv_metrics` (``stats``) as a row: ``key``, ``mean``, ``sd``,
    ``n_folds``; keys sorted."""
    keys = sorted(k.removeprefix("cv/").removesuffix("/mean") for k in stats if k.endswith("/mean"))
    return pd.DataFrame({
        "key": keys,
        "mean": [stats[f"cv/{k}/mean"] for k in keys],
        "sd": [stats[f"cv/{k}/std"] for k in keys],
        "n_folds": [int(stats["cv/n_folds"])] * len(keys),
    })  # fmt: skip


def cv_table(metrics: Mapping[str, float], *, split: str, ks: Sequence[int], strata: Strata, title: str) -> str:
    """Markdown: per stratum (``all`` first) the mean query count and ``mean ± sd`` of nDCG@k
    (the mean alone where the sd is undefined: one fold)."""
    header = ["stratum", "queries (mean)", *[f"nDCG@{k}" for k in ks]]
    lines = [f"### {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for label, suffix in [("all", ""), *[(lab, f"/{key}") for lab, key in zip(strata.labels, strata.keys, strict=True)]]:
        n = metrics.get(f"cv/{split}/n_queries{suffix}/mean", math.nan)
        cells = [label, "-" if math.isnan(n) else f"{n:.1f}"]
        for k in ks:
            mean = metrics.get(f"cv/{split}/ndcg_at_{k}{suffix}/mean")
            std = metrics.get(f"cv/{split}/ndcg_at_{k}{suffix}/std")
            if mean is None or std is None:
                cells.append("-")
            else:
                cells.append(f"{mean:.4f}" if math.isnan(std) else f"{mean:.4f} ± {std:.4f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"

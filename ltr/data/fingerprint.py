"""A deterministic fingerprint of a data set, for tracking: which data did this run see?

The content hash is sha256 over one line per array of `RankingData` (features, labels, qids,
offsets, plus ``positions`` when the data has them): ``name:dtype:shape:digest``, where digest is
the array's :func:`ltr.data.digest.array_digest` of its little-endian bytes, the checksum the
parse cache stores. So the same data always gives the same hash on any machine, any change to a
value, a label or a query boundary changes it, and data read from the cache (verified there) or
just parsed (hashed for the cache) is not read again for it. The name is not hashed. The hash is
shortened to 16 hex digits; the hash of a split set covers each split's name and lines.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from ltr.data.digest import digest
from ltr.data.ranking_data import RankingData
from ltr.data.splits import Splits
from ltr.metrics.strata import Strata

HASH_HEX_DIGITS = 16
_DEFAULT_STRATA = Strata()


def strata_counts(data: RankingData, strata: Strata = _DEFAULT_STRATA) -> dict[str, int]:
    """Number of queries per list-length stratum, keyed by the stratum's label (``"1-10"``)."""
    counts = np.bincount(strata.assign(data.group_sizes), minlength=strata.n_strata)
    return {name: int(c) for name, c in zip(strata.labels, counts, strict=True)}


def label_histogram(data: RankingData) -> dict[str, int]:
    """Rows per label, keyed by the label as a string (sorted by label)."""
    values, counts = np.unique(data.labels, return_counts=True)
    return {str(int(v)): int(c) for v, c in zip(values, counts, strict=True)}


def content_hash(data: RankingData) -> str:
    """sha256 of the arrays (with dtype and shape), first 16 hex digits."""
    return str(_update(hashlib.sha256(), data).hexdigest()[:HASH_HEX_DIGITS])


def fingerprint(data: RankingData | Splits, *, strata: Strata = _DEFAULT_STRATA) -> dict[str, Any]:
    """Content hash, shape, label histogram and list-length strata of a data set or split set.

    Parameters
    ----------
    data : one `RankingData`, or `Splits` (then each split gets its own entry and the top-level
        hash covers all three in train, valid, test order)
    strata : the list-length strata to count queries in (the metrics' `Strata`)

    Returns
    -------
    dict
        ``sha256`` (16 hex digits), ``shape`` ([n_rows, n_features]), ``n_rows``, ``n_queries``,
        ``n_features``, ``labels``
        (label -> rows), ``strata`` (stratum -> queries); for `Splits` also ``train``, ``valid``,
        ``test`` with the same keys each. JSON-serialisable and deterministic.

    Examples
    --------
    >>> import numpy as np
    >>> d = RankingData.from_group_sizes(np.zeros((3, 2)), np.array([1, 0, 2]), np.array([7, 9]), np.array([2, 1]))
    >>> fp = fingerprint(d)
    >>> fp["n_rows"], fp["labels"], fp["strata"]
    (3, {'0': 1, '1': 1, '2': 1}, {'1-10': 2, '11-50': 0, '51+': 0})
    >>> fp["sha256"] == fingerprint(d)["sha256"]
    True
    """
    if isinstance(data, RankingData):
        return _one(data, strata, content_hash(data))
    parts = {name: _one(d, strata, content_hash(d)) for name, d in data.items()}
    h = hashlib.sha256()
    for name, d in data.items():
        h.update(name.encode())
        _update(h, d)
    labels: dict[str, int] = {}
    counts: dict[str, int] = dict.fromkeys(strata.labels, 0)
    for p in parts.values():
        for k, v in p["labels"].items():
            labels[k] = labels.get(k, 0) + v
        for k, v in p["strata"].items():
            counts[k] += v
    return {
        "sha256": h.hexdigest()[:HASH_HEX_DIGITS],
        "shape": [sum(p["n_rows"] for p in parts.values()), data.train.n_features],
        "n_rows": sum(p["n_rows"] for p in parts.values()),
        "n_queries": sum(p["n_queries"] for p in parts.values()),
        "n_features": data.train.n_features,
        "labels": dict(sorted(labels.items(), key=lambda kv: int(kv[0]))),
        "strata": counts,
        **parts,
    }


def _one(data: RankingData, strata: Strata, digest: str) -> dict[str, Any]:
    return {
        "sha256": digest,
        "shape": [data.n_rows, data.n_features],
        "n_rows": data.n_rows,
        "n_queries": data.n_queries,
        "n_features": data.n_features,
        "labels": label_histogram(data),
        "strata": strata_counts(data, strata),
    }


def _update(h: Any, data: RankingData) -> Any:
    names = ["features", "labels", "qids", "offsets"]
    if data.positions is not None:
        names.append("positions")
    for name in names:
        arr = np.ascontiguousarray(getattr(data, name))
        arr = arr.astype(arr.dtype.newbyteorder("<"), copy=False)
        h.update(f"{name}:{arr.dtype.str}:{arr.shape}:{digest(arr)}\n".encode())
    return h

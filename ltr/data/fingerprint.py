"""A deterministic fingerprint of a data set, for tracking: which data did this run see?

The content hash is sha256 over the arrays of `RankingData` (features, labels, qids, offsets),
each preceded by its dtype and shape (plus ``positions`` when the data has them; data without
positions hashes as before), so the same data always gives the same hash on any machine
(little-endian bytes) and any change to a value, a label or a query boundary changes it. The
name is not hashed. The hash is shortened to 16 hex digits.

The hashes of arrays that cannot change (the parse cache's, see :mod:`ltr.data.frozen`) are
kept: the jobs of a sweep, which share the data, hash it once. A split set's hash and its
splits' hashes read the same bytes in two threads (hashlib releases the GIL).
"""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ltr.data.frozen import remembered
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
    return remembered(_arrays(data), "content_hash", lambda: _update(hashlib.sha256(), data).hexdigest()[:HASH_HEX_DIGITS])


def _split_set_hash(data: Splits) -> str:
    """sha256 over each split's name and arrays, in train, valid, test order (16 hex digits)."""

    def compute() -> str:
        h = hashlib.sha256()
        for name, d in data.items():
            h.update(name.encode())
            _update(h, d)
        return h.hexdigest()[:HASH_HEX_DIGITS]

    return remembered([a for _, d in data.items() for a in _arrays(d)], "split_set_hash", compute)


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
    with ThreadPoolExecutor(max_workers=1) as pool:  # the set's hash beside the splits' hashes
        whole = pool.submit(_split_set_hash, data)
        parts = {name: _one(d, strata, content_hash(d)) for name, d in data.items()}
        sha = whole.result()
    labels: dict[str, int] = {}
    counts: dict[str, int] = dict.fromkeys(strata.labels, 0)
    for p in parts.values():
        for k, v in p["labels"].items():
            labels[k] = labels.get(k, 0) + v
        for k, v in p["strata"].items():
            counts[k] += v
    return {
        "sha256": sha,
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


def _names(data: RankingData) -> list[str]:
    return ["features", "labels", "qids", "offsets"] + (["positions"] if data.positions is not None else [])


def _arrays(data: RankingData) -> list[np.ndarray[Any, Any]]:
    return [getattr(data, name) for name in _names(data)]


def _update(h: Any, data: RankingData) -> Any:
    for name in _names(data):
        arr = np.ascontiguousarray(getattr(data, name))
        arr = arr.astype(arr.dtype.newbyteorder("<"), copy=False)
        h.update(f"{name}:{arr.dtype.str}:{arr.shape}".encode())
        h.update(arr.reshape(-1).view(np.uint8).data)
    return h


#: Tag of the whole data (every split the trainer sees, with its training labels); as before.
WHOLE_TAG = "ltr.data.fingerprint"
#: Tag of what a run is judged on: the queries, documents and grades of its evaluated splits
#: (``eval.splits``, with the evaluation labels: ``data.eval_labels`` on click data).
EVAL_TAG = "ltr.data.eval_fingerprint"
#: Tag of what a run learns from: the train and valid splits with their training labels.
TRAIN_TAG = "ltr.data.train_fingerprint"


def part_fingerprints(training: Splits, evaluation: Splits, eval_splits: list[str]) -> dict[str, str]:
    """The fingerprints of a run's parts, as tags: `EVAL_TAG` over the evaluated splits of
    ``evaluation`` (each split's name and `content_hash`), ``EVAL_TAG + "." + split`` per
    evaluated split, and `TRAIN_TAG` over ``training``'s train and valid splits. Two runs that
    judge on the same data share `EVAL_TAG` whatever labels they trained on (a click log's
    ``data.train_labels``); `WHOLE_TAG` is unchanged and still tells them apart.

    Examples
    --------
    >>> import numpy as np
    >>> d = RankingData.from_group_sizes(np.zeros((3, 2)), np.array([1, 0, 2]), np.array([7, 9]), np.array([2, 1]))
    >>> other = RankingData.from_group_sizes(np.zeros((3, 2)), np.array([0, 0, 1]), np.array([7, 9]), np.array([2, 1]))
    >>> a = part_fingerprints(Splits(d, d, d), Splits(d, d, d), ["test"])
    >>> b = part_fingerprints(Splits(other, other, d), Splits(d, d, d), ["test"])
    >>> a[EVAL_TAG] == b[EVAL_TAG], a[TRAIN_TAG] == b[TRAIN_TAG], sorted(a)
    (True, False, ['ltr.data.eval_fingerprint', 'ltr.data.eval_fingerprint.test', 'ltr.data.train_fingerprint'])
    """
    parts = dict(evaluation.items())
    per_split = {name: content_hash(parts[name]) for name in eval_splits}
    whole_eval = hashlib.sha256("".join(f"{n}:{h};" for n, h in per_split.items()).encode()).hexdigest()[:HASH_HEX_DIGITS]
    train = hashlib.sha256(
        "".join(f"{n}:{content_hash(d)};" for n, d in training.items() if n != "test").encode()
    ).hexdigest()[:HASH_HEX_DIGITS]
    return {EVAL_TAG: whole_eval, **{f"{EVAL_TAG}.{n}": h for n, h in per_split.items()}, TRAIN_TAG: train}

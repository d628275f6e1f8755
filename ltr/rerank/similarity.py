"""Similarity between two items of a ranked list: the building block of the diversity re-ranker.

An item is a row of the flat arrays. Two representations, one per similarity:

``cosine``
    ``features``: float64 matrix, shape (n_rows, d), a chosen subset of feature columns. The
    similarity of rows ``i`` and ``j`` is the cosine of their feature vectors,
    ``x_i . x_j / (|x_i| |x_j|)``, in [-1, 1] ([0, 1] for non-negative features), and 0 when
    either vector is all zero (nothing to compare). Computed as the dot product of unit rows
    (`unit_rows`), clipped to [-1, 1] against rounding, so a row is exactly 1-similar to itself
    or to any positive multiple of itself.
``category``
    ``categories``: int64 codes, shape (n_rows,). Similarity 1 when two rows share a category,
    else 0.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ltr.metrics.diversity import as_categories, unit_rows

#: The similarities the re-ranker knows, by name.
SIMILARITIES: tuple[str, ...] = ("cosine", "category")


def check_similarity(similarity: str) -> None:
    """Raise ValueError unless ``similarity`` is one of `SIMILARITIES`."""
    if similarity not in SIMILARITIES:
        choices = ", ".join(repr(s) for s in SIMILARITIES)
        raise ValueError(f"similarity={similarity!r} is not one of {choices}")


def cosine_similarity(
    features_a: NDArray[np.generic], features_b: NDArray[np.generic] | None = None
) -> NDArray[np.float64]:
    """Cosine similarity of every row of ``features_a`` with every row of ``features_b``.

    Parameters
    ----------
    features_a : float array, shape (n_a, d)
    features_b : float array, shape (n_b, d), optional
        Default: ``features_a`` (the similarity matrix of one list).

    Returns
    -------
    float64 array, shape (n_a, n_b)
        ``[i, j]`` = cosine of row ``i`` of ``a`` and row ``j`` of ``b``, in [-1, 1]; 0 when
        either row is all zero.

    Examples
    --------
    >>> cosine_similarity(np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0]])).round(4).tolist()
    [[1.0, 0.7071, 0.0], [0.7071, 1.0, 0.0], [0.0, 0.0, 0.0]]
    """
    ua = unit_rows(features_a)
    ub = ua if features_b is None else unit_rows(features_b)
    if ua.shape[1] != ub.shape[1]:
        raise ValueError(f"features_a have {ua.shape[1]} columns, features_b {ub.shape[1]}")
    out: NDArray[np.float64] = np.clip(ua @ ub.T, -1.0, 1.0)
    return out


def category_similarity(
    categories_a: NDArray[np.generic], categories_b: NDArray[np.generic] | None = None
) -> NDArray[np.float64]:
    """1.0 where a row of ``categories_a`` and a row of ``categories_b`` share a category, else 0.

    Parameters
    ----------
    categories_a : int array, shape (n_a,)
    categories_b : int array, shape (n_b,), optional
        Default: ``categories_a``.

    Returns
    -------
    float64 array, shape (n_a, n_b)

    Examples
    --------
    >>> category_similarity(np.array([0, 1, 0])).tolist()
    [[1.0, 0.0, 1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 1.0]]
    """
    ca = as_categories(categories_a)
    cb = ca if categories_b is None else as_categories(categories_b)
    out: NDArray[np.float64] = (ca[:, None] == cb[None, :]).astype(np.float64)
    return out

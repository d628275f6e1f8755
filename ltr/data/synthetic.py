"""A seeded synthetic learning-to-rank data set: the default data of ``ltr`` (nothing is downloaded).

What it holds, for a given seed (bit-identical on every run):

- list lengths drawn from three bands (1-10, 11-50, 51-``max_list_len``) in configured shares,
  with single-document lists forced into the short band;
- a latent relevance per document; graded labels 0-4 are its quantiles *within the query*
  shifted by a query-level difficulty, so most documents are 0 and a share of queries
  (``all_zero_share``) has no relevant document at all;
- ``n_informative`` features = latent relevance + Gaussian noise + a query-level offset (so
  absolute values mean little across queries: the ranker must learn the order within a query);
  the last informative feature is rounded to one decimal, which makes exact ties;
- ``n_noise`` features of pure noise, and one query-level feature (constant within a query).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ltr.config.groups.data import SyntheticDataConfig
from ltr.data.ranking_data import RankingData
from ltr.errors import DataError


def _list_lengths(rng: np.random.Generator, cfg: SyntheticDataConfig) -> NDArray[np.int64]:
    shares = np.array([cfg.short_share, cfg.medium_share, cfg.long_share], dtype=np.float64)
    if np.any(shares < 0) or not np.isclose(shares.sum(), 1.0):
        raise DataError(
            f"data.short_share + data.medium_share + data.long_share must be 1, got {shares.sum():.6g}"
        )
    if cfg.max_list_len < 51:
        raise DataError(f"data.max_list_len must be >= 51 to cover the 51+ stratum, got {cfg.max_list_len}")
    band = rng.choice(3, size=cfg.n_queries, p=shares)
    low = np.array([1, 11, 51])[band]
    high = np.array([10, 50, cfg.max_list_len])[band]
    # Long lists skew short within their band (log-uniform), as real result lists do.
    u = rng.random(cfg.n_queries)
    log_uniform = np.floor(np.exp(np.log(low) + u * (np.log(high + 1) - np.log(low))))
    uniform = np.floor(low + u * (high + 1 - low))
    lengths = np.clip(np.where(band == 0, uniform, log_uniform).astype(np.int64), low, high)
    # Guarantee a few single-document lists whatever the draw.
    n_single = max(1, cfg.n_queries // 100)
    short_idx = np.flatnonzero(band == 0)
    lengths[short_idx[:n_single]] = 1
    return np.asarray(lengths, dtype=np.int64)


def generate_synthetic(cfg: SyntheticDataConfig, *, seed: int) -> RankingData:
    """Generate the data set described in the module docstring.

    Parameters
    ----------
    cfg : a :class:`ltr.config.groups.data.SyntheticDataConfig` (or anything with its fields)
    seed : the seed of every random draw

    Returns
    -------
    RankingData with ``cfg.n_informative + cfg.n_noise + 1`` features and qids ``0..n_queries-1``.
    """
    if cfg.n_queries < 3:
        raise DataError(f"data.n_queries must be at least 3 (one per split), got {cfg.n_queries}")
    rng = np.random.default_rng(seed)
    lengths = _list_lengths(rng, cfg)
    n_queries = int(cfg.n_queries)
    n_rows = int(lengths.sum())
    offsets = np.zeros(n_queries + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    row_query = np.repeat(np.arange(n_queries), lengths)

    latent = rng.standard_normal(n_rows)
    # Rank of each document's latent relevance within its query, as a fraction in [0, 1).
    order = np.lexsort((latent, row_query))
    rank_in_query = np.empty(n_rows, dtype=np.int64)
    rank_in_query[order] = np.arange(n_rows) - np.repeat(offsets[:-1], lengths)
    frac = (rank_in_query + rng.random(n_rows)) / np.repeat(lengths, lengths)
    # Query difficulty shifts every label of the query; some queries have nothing relevant.
    difficulty = rng.normal(0.0, 0.08, n_queries)
    all_zero = rng.random(n_queries) < cfg.all_zero_share
    score = frac - np.repeat(difficulty, lengths)
    labels = np.digitize(score, [0.72, 0.86, 0.95, 0.99]).astype(np.int32)
    labels[np.repeat(all_zero, lengths)] = 0

    query_offset = rng.normal(0.0, 2.0, (n_queries, cfg.n_informative))
    signal = (frac - 0.5)[:, None] * 3.0
    informative = (
        signal
        + cfg.noise * rng.standard_normal((n_rows, cfg.n_informative))
        + np.repeat(query_offset, lengths, axis=0)
    )
    if cfg.n_informative > 0:
        informative[:, -1] = np.round(informative[:, -1], 1)
    noise = rng.standard_normal((n_rows, cfg.n_noise))
    query_level = np.repeat(rng.integers(1, 6, n_queries), lengths)[:, None].astype(np.float64)
    features = np.hstack([informative, noise, query_level]).astype(np.float32)
    names = (
        tuple(f"signal_{i}" for i in range(cfg.n_informative))
        + tuple(f"noise_{i}" for i in range(cfg.n_noise))
        + ("query_terms",)
    )
    return RankingData(
        features=np.ascontiguousarray(features),
        labels=labels,
        qids=np.arange(n_queries, dtype=np.int64),
        offsets=offsets,
        feature_names=names,
        name=str(cfg.name),
    )

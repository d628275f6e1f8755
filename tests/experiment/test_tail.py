"""Long-tail exposure: the measure, the uncertainty re-ranker, and a sweep that marks its front."""

from __future__ import annotations

import doctest
import importlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mlflow.tracking import MlflowClient
from omegaconf import DictConfig

from ltr.errors import LtrUserError
from ltr.experiment import run as pipeline
from ltr.metrics.tail import tail_exposure
from ltr.rerank import score_order
from tests.conftest import examples
from tests.test_sweeps import _runs, train_in_process

CLICKS = ("data=synthetic_clicks", "data.n_queries=300", "tracking.enabled=false")



@pytest.mark.parametrize("name", ["ltr.metrics.tail", "ltr.rerank.step"])
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0
    assert result.failed == 0


@settings(max_examples=examples(50), deadline=None)
@given(sizes=st.lists(st.integers(1, 15), min_size=1, max_size=6), k=st.integers(1, 12), seed=st.integers(0, 999))
def test_tail_exposure_matches_a_per_query_reference(sizes: list[int], k: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    offsets = np.r_[0, np.cumsum(sizes)]
    scores, tail = rng.random(offsets[-1]), rng.random(offsets[-1]) < 0.5
    got = tail_exposure(score_order(scores, offsets), offsets, tail, k=k)
    for q in range(len(sizes)):
        rows = np.arange(offsets[q], offsets[q + 1])
        ranked = rows[np.argsort(-scores[rows], kind="stable")][:k]
        w = 1.0 / np.log2(np.arange(ranked.size) + 2.0)
        assert got[q] == pytest.approx((w * tail[ranked]).sum() / w.sum(), abs=1e-12)


def test_the_uncertainty_bonus_raises_the_tail(small_cfg: Callable[..., DictConfig]) -> None:
    plain = pipeline.run(small_cfg(*CLICKS, "rerank=uncertainty", "rerank.alpha=0")).metrics
    raised = pipeline.run(small_cfg(*CLICKS, "rerank=uncertainty", "rerank.alpha=1.0")).metrics
    for split in ("valid", "test"):
        # alpha 0 is the model's own order; a bonus moves the tail up (what it does to nDCG depends:
        # on click data the click-trained model over-ranks popular items, and the bonus undoes some of it)
        assert plain[f"{split}/tail_at_10"] == plain[f"{split}/pre_rerank/tail_at_10"]
        assert raised[f"{split}/pre_rerank/tail_at_10"] == plain[f"{split}/tail_at_10"]
        assert raised[f"{split}/tail_at_10"] > plain[f"{split}/tail_at_10"]
        assert raised[f"{split}/ndcg_at_10"] != plain[f"{split}/ndcg_at_10"]
        assert f"{split}/tail_at_5/len_51_plus" in raised


def test_uncertainty_needs_a_popularity_column(small_cfg: Callable[..., DictConfig]) -> None:
    with pytest.raises(LtrUserError, match=r"data\.popularity_feature"):
        pipeline.run(small_cfg("rerank=uncertainty", "tracking.enabled=false"))
    with pytest.raises(LtrUserError, match="'likes' is not a feature"):
        pipeline.run(small_cfg(*CLICKS, "data.popularity_feature=likes"))


@pytest.mark.slow
def test_an_uncertainty_sweep_marks_the_ndcg_tail_exposure_front(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "mlflow.db"
    proc = train_in_process(tmp_path, capsys, "experiment=tail_tradeoff", "rerank.alpha=0,0.5,2,8", "data.n_queries=300",
                            "fit.num_boost_round=30", "fit.show_progress=false", "tracking.log_model=false",
                            f"tracking.uri=sqlite:///{db}")  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    parent, children = _runs(db)
    point = {c.info.run_id: (c.data.metrics["valid/ndcg_at_10"], c.data.metrics["valid/tail_at_10"]) for c in children}
    marked = [c for c in children if c.data.tags["ltr.pareto"] == "true"]
    assert parent.data.metrics["sweep/tail_front/n_front"] == len(marked) >= 1
    assert len({c.data.metrics["valid/tail_at_10"] for c in children}) == 4  # every alpha moves the tail
    for run in children:
        x, y = point[run.info.run_id]
        dominated = any(ox >= x and oy >= y and (ox > x or oy > y) for ox, oy in point.values())
        assert dominated == (run.data.tags["ltr.pareto"] == "false")
    assert "tail exposure@10" in parent.data.tags["mlflow.note.content"]
    client = MlflowClient(f"sqlite:///{db}")
    assert "figures/tail_front.png" in [a.path for a in client.list_artifacts(parent.info.run_id, "figures")]


@settings(max_examples=examples(50), deadline=None)
@given(sizes=st.lists(st.integers(1, 12), min_size=1, max_size=5), n_members=st.integers(1, 5), seed=st.integers(0, 999))
def test_ensemble_spread_matches_a_per_query_reference_and_ignores_each_members_scale(
    sizes: list[int], n_members: int, seed: int
) -> None:
    """Reference: per query and member, (s - min) / (max - min) (0 for a constant list); the
    std over members per row; divided by the split's largest std. A member's scores moved by a
    positive affine map in one query change nothing."""
    from ltr.rerank.step import ensemble_spread

    rng = np.random.default_rng(seed)
    offsets = np.r_[0, np.cumsum(sizes)]
    members = rng.normal(size=(n_members, offsets[-1]))
    normalised = np.zeros_like(members)
    for q in range(len(sizes)):
        rows = slice(offsets[q], offsets[q + 1])
        for m in range(n_members):
            s = members[m, rows]
            span = s.max() - s.min()
            normalised[m, rows] = (s - s.min()) / span if span > 0 else 0.0
    spread = normalised.std(axis=0)
    expected = spread / spread.max() if spread.max() > 0 else np.zeros_like(spread)
    got = ensemble_spread(members, offsets)
    assert np.allclose(got, expected, rtol=0, atol=1e-12)
    moved = members.copy()
    moved[0, offsets[0] : offsets[1]] = 3.0 * moved[0, offsets[0] : offsets[1]] + 7.0
    assert np.allclose(ensemble_spread(moved, offsets), got, rtol=0, atol=1e-9)

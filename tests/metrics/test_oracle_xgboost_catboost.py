"""Oracle: the ``xgboost`` / ``xgboost_minus`` presets equal XGBoost's own ``ndcg@k`` / ``ndcg@k-``,
and ``catboost`` CatBoost's ``NDCG:top=k``, to 1e-12, on the same scores with many ties."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from ltr.cli.evaluate import main
from ltr.metrics import PRESETS, per_query_table, summarize

xgb = pytest.importorskip("xgboost")
catboost_utils = pytest.importorskip("catboost.utils")

KS = (1, 3, 5, 10, 20)


def _tie_heavy(seed: int) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]]:
    """Labels 0-4, scores of four values (ties everywhere; exact in float32, as XGBoost holds
    them), and group sizes with single-document lists, a long list and all-zero queries."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 30, 150)
    sizes[:3] = [1, 1, 60]
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    labels = rng.integers(0, 5, int(sizes.sum()))
    for q in (0, 3, 4, 7):
        labels[offsets[q] : offsets[q + 1]] = 0
    scores = rng.integers(0, 4, labels.size).astype(np.float64) * 0.25
    return labels, scores, sizes


def _xgboost_values(labels: NDArray[np.int64], scores: NDArray[np.float64], sizes: NDArray[np.int64]) -> dict[str, float]:
    """XGBoost's ``ndcg@k`` and ``ndcg@k-`` of ``scores``: a booster whose one tree adds 0
    (eta=0) to the scores given as base margins."""
    dmat = xgb.DMatrix(np.zeros((labels.size, 1), dtype=np.float32), label=labels.astype(np.float32))
    dmat.set_group(sizes)
    dmat.set_base_margin(scores)
    metrics = [f"ndcg@{k}{minus}" for k in KS for minus in ("", "-")]
    booster = xgb.train({"objective": "rank:ndcg", "eta": 0, "base_score": 0, "eval_metric": metrics, "nthread": 1}, dmat, 1)
    assert np.array_equal(booster.predict(dmat, output_margin=True), scores.astype(np.float32))
    return {part.rpartition(":")[0].removeprefix("eval-"): float(part.rpartition(":")[2]) for part in booster.eval(dmat).split("\t")[1:]}


def _ours(preset: str, labels: NDArray[np.int64], scores: NDArray[np.float64], sizes: NDArray[np.int64]) -> dict[str, float]:
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    table = per_query_table(labels, scores, offsets, np.arange(len(sizes)), ks=KS, conventions=PRESETS[preset])
    return summarize(table)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_xgboost_presets_equal_xgboost_ndcg(seed: int) -> None:
    labels, scores, sizes = _tie_heavy(seed)
    theirs = _xgboost_values(labels, scores, sizes)
    plus, minus = _ours("xgboost", labels, scores, sizes), _ours("xgboost_minus", labels, scores, sizes)
    for k in KS:
        assert plus[f"ndcg_at_{k}"] == pytest.approx(theirs[f"ndcg@{k}"], abs=1e-12)
        assert minus[f"ndcg_at_{k}"] == pytest.approx(theirs[f"ndcg@{k}-"], abs=1e-12)
    # the all-zero queries are what tell the two apart
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    all_zero = int(np.sum(np.maximum.reduceat(labels, offsets[:-1]) == 0))
    assert all_zero >= 4
    assert plus["ndcg_at_10"] - minus["ndcg_at_10"] == pytest.approx(all_zero / len(sizes), abs=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_catboost_preset_equals_catboost_ndcg(seed: int) -> None:
    labels, scores, sizes = _tie_heavy(seed)
    group = np.repeat(np.arange(len(sizes)), sizes)
    ours = _ours("catboost", labels, scores, sizes)
    for k in KS:
        (theirs,) = catboost_utils.eval_metric(labels.astype(np.float64), scores, f"NDCG:top={k}", group_id=group)
        assert ours[f"ndcg_at_{k}"] == pytest.approx(theirs, abs=1e-12)
    # its tie rule is not LightGBM's nor ours: the same scores give other values under those
    assert ours["ndcg_at_10"] < _ours("sklearn", labels, scores, sizes)["ndcg_at_10"]


def test_ltr_evaluate_presets_reproduce_both_libraries(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``ltr evaluate --data FILE --scores FILE --preset xgboost|xgboost_minus|catboost``."""
    labels, scores, sizes = _tie_heavy(5)
    qids = np.repeat(np.arange(1, len(sizes) + 1), sizes)
    data, preds = tmp_path / "data.txt", tmp_path / "scores.txt"
    data.write_text("".join(f"{y} qid:{q} 1:0\n" for y, q in zip(labels, qids, strict=True)))
    preds.write_text("".join(f"{float(s)!r}\n" for s in scores))
    xgboost_values = _xgboost_values(labels, scores, sizes)
    (catboost_value,) = catboost_utils.eval_metric(
        labels.astype(np.float64), scores, "NDCG:top=10", group_id=np.repeat(np.arange(len(sizes)), sizes)
    )
    expected = {"xgboost": xgboost_values["ndcg@10"], "xgboost_minus": xgboost_values["ndcg@10-"], "catboost": catboost_value}
    for preset, value in expected.items():
        assert main(["--data", str(data), "--scores", str(preds), "--preset", preset, "--k", "10", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["ndcg_at_10"] == pytest.approx(value, abs=1e-12)

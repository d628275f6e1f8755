"""The A/B simulation in chunks of sessions: the same result for every chunk size, bounded memory,
and the refusals of ``ltr abtest`` that need no run (one line, exit 2, before anything runs)."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from ltr.cli.main import main as ltr_main
from ltr.compare.abtest import AbTestResult, ClickModel, interleaving_test, simulate_abtest


def _problem() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, ClickModel]:
    """30 queries of 1-59 documents, grades 0-4; A ranks at random, B by grade plus noise."""
    rng = np.random.default_rng(11)
    sizes = rng.integers(1, 60, 30)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(offsets[-1])
    labels = rng.integers(0, 5, n)
    scores_a = rng.normal(size=n)
    scores_b = labels + rng.normal(size=n)
    model = ClickModel(1.0, 0.05, 0.9, np.full(n, 0.3), np.full(n, 0.5))
    return labels, offsets, scores_a, scores_b, model


def _simulate(sessions: float, chunk_sessions: int | None = None) -> AbTestResult:
    labels, offsets, scores_a, scores_b, model = _problem()
    return simulate_abtest(
        labels, offsets, scores_a, scores_b, model, sessions_per_day=sessions, traffic_share=1.0, days=1.0, seed=7,
        chunk_sessions=chunk_sessions,
    )


def test_the_result_is_the_unchunked_simulations() -> None:
    """The counts the simulation gave before it ran in chunks (all sessions at once, commit
    0319e75), for this problem and seed: the draws are the same, in the same order."""
    r = _simulate(5003)
    assert (r.ctr.a.n, r.ctr.b.n) == (2449, 2554)
    assert (round(r.ctr.a.value * r.ctr.a.n), round(r.ctr.b.value * r.ctr.b.n)) == (1879, 2348)
    assert r.purchases is not None
    assert (round(r.purchases.a.value * r.purchases.a.n), round(r.purchases.b.value * r.purchases.b.n)) == (472, 715)
    assert (r.interleaving.wins_a, r.interleaving.wins_b, r.interleaving.ties) == (731, 2805, 1467)
    strata = [(s.stratum, s.n_sessions, s.interleaving.wins_a, s.interleaving.wins_b) for s in r.strata]
    assert strata == [("1-10", 1319, 223, 563), ("11-50", 2669, 322, 1675), ("51+", 1015, 186, 567)]
    assert r.ctr.p_value == 6.450610905972519e-50
    assert r.interleaving.p_value == 5.931696821101435e-284


@pytest.mark.parametrize("chunk", [1, 2, 7, 1000, 4999])
def test_every_chunk_size_gives_the_same_result(chunk: int) -> None:
    assert _simulate(5003, chunk_sessions=chunk).to_dict() == _simulate(5003).to_dict()


def test_memory_is_one_chunks() -> None:
    """40,000 sessions (~1.2M slots): the unchunked simulation held ~100 bytes a slot (>100 MB);
    in chunks of 500 sessions (~15,000 slots) the peak is a few MB, whatever the sessions."""
    _simulate(100, chunk_sessions=500)  # numba's kernel compiled (or loaded) outside the measure
    tracemalloc.start()
    try:
        _simulate(40_000, chunk_sessions=500)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8e6, f"peak {peak / 1e6:.1f} MB"


def test_sessions_needed_is_a_whole_number_rounded_up() -> None:
    # 194 decided sessions needed at a win rate of 0.6; 1000 of 3000 sessions decided: 194 * 3 = 582
    il = interleaving_test(400, 600, 2000, sessions_per_day=1000.0)
    assert il.sessions_needed == 582
    # 1/3 decided: 194 / (1000 / 3001) = 582.19..., rounded up
    assert interleaving_test(400, 600, 2001, sessions_per_day=1000.0).sessions_needed == 583
    out = json.loads(json.dumps(_simulate(5003).to_dict()))
    assert isinstance(out["ctr"]["sessions_needed"], int)
    assert isinstance(out["interleaving"]["sessions_needed"], int)
    assert all(isinstance(s["interleaving"]["sessions_needed"], int) for s in out["strata"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--figure", "/nonexistent/dir/p.png"], "--figure /nonexistent/dir/p.png: the folder /nonexistent/dir does not exist"),
        (["--figure", "{tmp}/a.log/p.png"], "--figure {tmp}/a.log/p.png: {tmp}/a.log is a file, not a folder"),
        (["--figure", "{tmp}"], "--figure {tmp} is a directory; give a file name"),
        (["--seed", "-1"], "--seed=-1 must be an integer >= 0"),
        (["--refits", "-1"], "--refits=-1 must be an integer >= 0"),
    ],
)
def test_refused_before_any_run_is_read(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.log").write_text("a file\n")
    argv = ["abtest", "A", "B", "--tracking-uri", f"sqlite:///{tmp_path / 'none.db'}", *(a.format(tmp=tmp_path) for a in args)]
    assert ltr_main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"ltr: error: {message.format(tmp=tmp_path)}\n"
    assert not (tmp_path / "none.db").exists()  # no store was opened: the runs were never looked up


def test_expected_ctr_of_empty_queries_is_zero_and_the_others_unchanged() -> None:
    """A query with no documents is clicked with probability 0, wherever it lies (first, between,
    last: the last used to index past the end); the other queries' values are those computed
    without the empty ones, bit for bit, and equal 1 - prod(1 - p) by hand."""
    from ltr.compare.abtest import expected_ctr
    from ltr.data.feedback.clicks import attractiveness, examination_curve

    model = ClickModel(eta=1.0, click_noise=0.05, click_max=0.9)
    labels = np.array([2, 0, 1, 3, 0], dtype=np.int64)
    ranks = np.array([0, 1, 0, 1, 2], dtype=np.int32)
    dense = expected_ctr(labels, ranks, np.array([0, 2, 5]), model)
    p = examination_curve(3, eta=model.eta)[ranks] * attractiveness(
        labels, click_noise=model.click_noise, click_max=model.click_max
    )
    assert dense == pytest.approx([1 - (1 - p[0]) * (1 - p[1]), 1 - (1 - p[2]) * (1 - p[3]) * (1 - p[4])])
    with_empty = expected_ctr(labels, ranks, np.array([0, 0, 2, 2, 5, 5]), model)
    assert with_empty.tolist() == [0.0, dense[0], 0.0, dense[1], 0.0]

"""``ltr abtest``: team-draft interleaving, the statistics, and two real click-log runs of a tmp store."""

from __future__ import annotations

import doctest
import importlib
from dataclasses import dataclass
from pathlib import Path

import mlflow
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from ltr.cli.main import main as ltr_main
from ltr.compare._interleave import team_draft
from ltr.compare.abtest import interleaving_test, two_proportions, wilson
from ltr.errors import LtrUserError
from ltr.experiment import run as pipeline
from ltr.models.abtest_run import load_abtest
from tests.conftest import compose_train, examples
from tests.processes import run_ltr

COMMON = ("data=synthetic_clicks", "data.n_queries=400", "fit.num_boost_round=30", "fit.early_stopping_rounds=10",
          "fit.show_progress=false", "model.num_leaves=7", "tracking.log_model=false")  # fmt: skip
#: A: trained on clicks (biased towards the logged, popularity-favouring order); B: on the true grades.
RUNS = {"clicks": ("data.train_labels=clicks",), "relevance": ("data.train_labels=relevance",)}


@pytest.mark.parametrize("name", ["ltr.compare._interleave", "ltr.compare.abtest", "ltr.models.abtest_run"])
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0


@settings(max_examples=examples(60), deadline=None)
@given(n=st.integers(1, 12), seed=st.integers(0, 10_000))
def test_team_draft_makes_a_fair_interleaving_of_both_lists(n: int, seed: int) -> None:
    """Every row shown once; at every prefix the teams differ by at most one pick; each team's
    picks come in its own ranking's order; two equal rankings interleave to that ranking."""
    rng = np.random.default_rng(seed)
    order_a, order_b = rng.permutation(n), rng.permutation(n)
    coins = rng.random(n) < 0.5
    starts, sizes = np.array([0]), np.array([n])
    position, team = team_draft(starts, sizes, order_a, order_b, coins)
    assert sorted(position.tolist()) == list(range(n))
    shown = np.argsort(position)  # rows in interleaved order
    balance = np.cumsum(np.where(team[shown] == 0, 1, -1))
    assert np.all(np.abs(balance) <= 1)
    for mine, t in ((order_a, 0), (order_b, 1)):
        rank = np.argsort(mine)  # rank of each row in that team's list
        picks = shown[team[shown] == t]
        assert np.all(np.diff(rank[picks]) > 0) or picks.size <= 1
    same, _ = team_draft(starts, sizes, order_a, order_a, coins)
    assert np.array_equal(np.argsort(same), order_a)


def test_statistics_match_their_references() -> None:
    d = two_proportions(100, 1000, 130, 1000, sessions_per_day=500.0)
    table = np.array([[100, 900], [130, 870]])
    chi2 = stats.chi2_contingency(table, correction=False)
    assert d.p_value == pytest.approx(chi2.pvalue, rel=1e-9)  # the pooled z-test is the 2x2 chi-square test
    assert d.days_needed == d.sessions_needed / 500.0
    r = wilson(7, 20)
    assert (r.low, r.high) == pytest.approx((0.18119, 0.56714), abs=1e-5)  # Wilson (1927), 7 of 20
    il = interleaving_test(40, 60, 100, sessions_per_day=1.0)
    assert il.p_value == pytest.approx(stats.binomtest(60, 100).pvalue)


@dataclass(frozen=True)
class ClickStore:
    uri: str
    run_ids: dict[str, str]
    metrics: dict[str, dict[str, float]]


@pytest.fixture(scope="module")
def click_store(tmp_path_factory: pytest.TempPathFactory) -> ClickStore:
    root = tmp_path_factory.mktemp("abtest_store")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    ids, metrics = {}, {}
    for name, extra in RUNS.items():
        overrides = [*COMMON, *extra, f"tracking.uri={uri}", f"tracking.run_name={name}"]
        out = pipeline.run(compose_train(overrides), overrides=overrides)
        assert out.run_id is not None
        ids[name], metrics[name] = out.run_id, out.metrics
    return ClickStore(uri, ids, metrics)


def test_abtest_estimates_the_runs_exact_ctr_difference(click_store: ClickStore) -> None:
    loaded = load_abtest("clicks", "relevance", tracking_uri=click_store.uri, days=14.0, seed=3)
    r = loaded.result
    # the re-made rankings are the runs' own: their exact expected CTRs are the logged ones
    assert r.expected_ctr_a == pytest.approx(click_store.metrics["clicks"]["test/online/expected_ctr"], abs=1e-12)
    assert r.expected_ctr_b == pytest.approx(click_store.metrics["relevance"]["test/online/expected_ctr"], abs=1e-12)
    exact = click_store.metrics["relevance"]["test/online/expected_ctr"] - click_store.metrics["clicks"]["test/online/expected_ctr"]
    assert r.ctr.low <= exact <= r.ctr.high
    assert r.n_sessions == 70_000
    assert r.ctr.a.n + r.ctr.b.n == 70_000
    assert r.purchases is not None
    assert 0 < r.purchases.a.value < r.ctr.a.value
    assert sum(s.n_sessions for s in r.strata) == r.n_sessions
    # interleaving is the more sensitive test of the two on the same sessions
    assert r.interleaving.win_rate > 0.5
    assert r.ctr.diff > 0
    assert r.interleaving.sessions_needed < r.ctr.sessions_needed
    again = load_abtest("clicks", "relevance", tracking_uri=click_store.uri, days=14.0, seed=3).result
    assert again.to_dict() == r.to_dict()
    other = load_abtest("clicks", "relevance", tracking_uri=click_store.uri, days=14.0, seed=4).result
    assert other.ctr.a.value != r.ctr.a.value


def test_bad_settings_are_refused(click_store: ClickStore) -> None:
    with pytest.raises(LtrUserError, match="traffic-share"):
        load_abtest("clicks", "relevance", tracking_uri=click_store.uri, traffic_share=0.0)
    with pytest.raises(LtrUserError, match="same run"):
        load_abtest("clicks", click_store.run_ids["clicks"], tracking_uri=click_store.uri)


@pytest.mark.slow
def test_ltr_abtest_command(click_store: ClickStore, tmp_path: Path) -> None:
    """``ltr abtest`` as a command (forked from the fork server: its output, figure and logged run
    are the point, not its process): the report, the figure, one comparison run of its own."""
    figure = tmp_path / "power.png"
    args = ["abtest", "clicks", "relevance", "--tracking-uri", click_store.uri, "--days", "7"]
    proc = run_ltr([*args, "--figure", str(figure), "--log"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    for text in ("A (CTR, 95 %)", "B - A", "days", "purchase rate", "Team-draft interleaving", "51+"):
        assert text in proc.stdout
    assert figure.stat().st_size > 10_000
    mlflow.set_tracking_uri(click_store.uri)
    logged = mlflow.search_runs(experiment_names=["ltr (comparisons)"], filter_string="tags.`ltr.kind` = 'abtest'", output_format="list")
    assert len(logged) == 1
    assert not mlflow.search_runs(experiment_names=["ltr"], filter_string="tags.`ltr.kind` = 'abtest'", output_format="list")
    assert logged[0].data.tags["ltr.compare.run_ids"] == f"{click_store.run_ids['clicks']},{click_store.run_ids['relevance']}"


def test_an_unknown_run_is_one_line_exit_2(click_store: ClickStore, capsys: pytest.CaptureFixture[str]) -> None:
    assert ltr_main(["abtest", "nope", "relevance", "--tracking-uri", click_store.uri]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "no run 'nope'" in err[0]


@pytest.mark.parametrize(
    ("extra", "needle"),
    [(["--randomized-column", "randomized"], "--randomized-column is for runs on your own click log"),
     (["--randomized-column", " "], "--randomized-column needs a column name")],
)  # fmt: skip
def test_a_randomized_column_for_the_simulators_log_is_one_line_exit_2(
    click_store: ClickStore, capsys: pytest.CaptureFixture[str], extra: list[str], needle: str
) -> None:
    """The simulator's log has a known click model: nothing to anchor, the option is refused."""
    assert ltr_main(["abtest", "clicks", "relevance", "--tracking-uri", click_store.uri, *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert needle in err[0]

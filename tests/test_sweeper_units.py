"""ltr's Optuna sweeper, piece by piece: guardrails, search spaces, settings, the job's result."""

from __future__ import annotations

import math
import pickle

import optuna
import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

from ltr.errors import LtrUserError
from ltr.experiment.checks import check_config
from ltr.experiment.guardrails import failed_constraints, parse_constraint, parse_constraints
from ltr.sweeper.link import JobResult
from ltr.sweeper.search import check_settings, sampler_seed
from ltr.sweeper.space import format_value, params_overrides, search_space, trial_overrides
from ltr.sweeper.study_config import check_study_config, config_differences, study_config
from ltr.sweeper.trial_seed import TrialSeeded
from tests.conftest import compose_train


@pytest.mark.parametrize(
    ("text", "metrics", "baseline", "met", "violation"),
    [
        ("valid/ild_at_10 >= 0.30", {"valid/ild_at_10": 0.35}, None, True, 0.30 - 0.35),
        ("valid/ild_at_10 >= 0.30", {"valid/ild_at_10": 0.30}, None, True, 0.0),
        ("valid/ild_at_10 >= 0.30", {"valid/ild_at_10": 0.25}, None, False, 0.30 - 0.25),
        ("valid/ild_at_10 > 0.30", {"valid/ild_at_10": 0.30}, None, False, 5e-324),  # strict, hit exactly
        ("test/ndcg_at_5 <= 0.5", {"test/ndcg_at_5": 0.75}, None, False, 0.75 - 0.5),
        ("test/ndcg_at_5 < 0.5", {"test/ndcg_at_5": 0.25}, None, True, 0.25 - 0.5),
        ("valid/ild_at_10 >= 0.30", {}, None, False, 1.0),  # not logged: fails
        ("valid/ild_at_10 >= 0.30", {"valid/ild_at_10": math.nan}, None, False, 1.0),
        ("valid/a >= baseline", {"valid/a": 0.5}, {"valid/a": 0.25}, True, 0.25 - 0.5),
        ("valid/a >= baseline", {"valid/a": 0.5}, {"valid/a": 0.75}, False, 0.75 - 0.5),
        ("valid/a >= baseline", {"valid/a": 0.5}, {"other": 0.1}, False, 1.0),  # baseline lacks the key
    ],
)
def test_a_constraint_is_met_exactly_when_its_violation_is_not_positive(
    text: str, metrics: dict[str, float], baseline: dict[str, float] | None, met: bool, violation: float
) -> None:
    constraint = parse_constraint(text)
    assert constraint.met(metrics, baseline) is met
    assert constraint.violation(metrics, baseline) == violation
    assert (constraint.violation(metrics, baseline) <= 0) is met


def test_failed_constraints_lists_those_a_job_misses_in_order() -> None:
    constraints = parse_constraints(["valid/x >= 0.5", "valid/y <= 0.1", "valid/x < 0.9"])
    assert [c.text for c in failed_constraints(constraints, {"valid/x": 0.95, "valid/y": 0.2})] == [
        "valid/y <= 0.1", "valid/x < 0.9",
    ]  # fmt: skip
    assert failed_constraints(constraints, {"valid/x": 0.6, "valid/y": 0.0}) == []


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("valid/ild_at_10 => 0.3", "cannot read"),
        ("valid/ild_at_10 >= high", "neither a number nor 'baseline'"),
        ("valid/ild_at_10 >= nan", "NaN"),
        ("valid/ild_at_10", "cannot read"),
    ],
)
def test_a_bad_constraint_is_one_line_naming_it(text: str, says: str) -> None:
    with pytest.raises(LtrUserError, match=says) as info:
        parse_constraints([text])
    assert "sweep.constraints[0]" in str(info.value)
    assert "\n" not in str(info.value)


def test_the_search_space_follows_hydras_sweep_grammar() -> None:
    space, fixed = search_space([
        "model.num_leaves=int(interval(7, 127))", "model.learning_rate=tag(log, interval(0.01, 0.2))",
        "rerank.alpha=interval(0, 1.0)", "model.max_bin=range(15, 64, 16)", "model=choice(lambdarank, rank_xendcg)",
        "fit.num_boost_round=5",
    ])  # fmt: skip
    assert space == {
        "model.num_leaves": IntDistribution(7, 127),
        "model.learning_rate": FloatDistribution(0.01, 0.2, log=True),
        "rerank.alpha": FloatDistribution(0.0, 1.0),
        "model.max_bin": IntDistribution(15, 63, step=16),  # 15, 31, 47, 63: range excludes 64
        "model": CategoricalDistribution(["lambdarank", "rank_xendcg"]),
    }
    assert fixed == {"fit.num_boost_round": "5"}


def test_a_later_override_of_a_key_replaces_the_configs_space() -> None:
    space, fixed = search_space(["model.num_leaves=int(interval(7, 127))", "model.num_leaves=15"])
    assert space == {}
    assert fixed == {"model.num_leaves": "15"}


@pytest.mark.parametrize(
    ("value", "shown"),
    [(0.012345678901234, "0.01235"), (0.1, "0.1"), (0.19999999, "0.2"), (1234.5678, "1235"), (3.2e-7, "3.2e-07"),
     (15, "15"), ("lambdarank", "lambdarank")],
)  # fmt: skip
def test_trial_values_reach_the_job_with_four_significant_digits(value: object, shown: str) -> None:
    assert format_value(value) == shown
    assert trial_overrides({"k": value}, {"f": "1"}) == (f"k={shown}", "f=1")


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        ({"n_trials": 0, "n_jobs": 1}, "hydra.sweeper.n_trials=0 must be"),
        ({"n_trials": -3, "n_jobs": 1}, "hydra.sweeper.n_trials=-3 must be"),
        ({"n_trials": 2, "n_jobs": 0}, "hydra.sweeper.n_jobs=0 must be"),
        ({"n_trials": 2, "n_jobs": 1, "storage": "study.db"}, "not a database URL"),
        ({"n_trials": 2, "n_jobs": 1, "params": {"model.num_leaves": "interval(9, 3)"}}, "hydra.sweeper.params"),
    ],
)
def test_bad_search_settings_are_refused_in_one_line(settings: dict[str, object], says: str) -> None:
    with pytest.raises(LtrUserError, match=says) as info:
        check_settings(settings)
    assert "\n" not in str(info.value)


def test_a_jobs_result_is_its_objective_value_and_survives_pickling() -> None:
    result = JobResult(0.75, {"valid/ndcg_at_10": 0.75, "valid/ild_at_10": 0.5}, pruned_at_round=7)
    back = pickle.loads(pickle.dumps(result))
    assert float(back) == 0.75
    assert back.metrics == {"valid/ndcg_at_10": 0.75, "valid/ild_at_10": 0.5}
    assert back.pruned_at_round == 7


def test_two_objectives_with_directions_and_constraints_are_checked() -> None:
    spec = check_config(compose_train([
        "rerank=diversify", "optimized_metric=[valid/ndcg_at_10,valid/ild_at_10]", "sweep.directions=[maximize,minimize]",
        "sweep.constraints=['valid/ild_at_10 >= 0.3']",
    ]))  # fmt: skip
    assert spec.optimized_metric == "valid/ndcg_at_10"
    assert spec.objectives == ("valid/ndcg_at_10", "valid/ild_at_10")
    assert spec.directions == ("maximize", "minimize")
    assert spec.params()["optimized_metric"] == "valid/ndcg_at_10,valid/ild_at_10"
    default = check_config(compose_train([]))
    assert default.objectives == ("valid/ndcg_at_10",)
    assert default.directions == ("maximize",)
    assert not any(key.startswith("sweep.") for key in default.params()), "an unset sweep config logs no params"


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        (["optimized_metric=[valid/ndcg_at_10,valid/ild_at_10]"], "'valid/ild_at_10' is not a metric this run logs"),
        (["optimized_metric=[valid/ndcg_at_10,valid/ndcg_at_10]"], "names a key twice"),
        (["optimized_metric=[valid/ndcg_at_10,valid/ndcg_at_5,test/ndcg_at_5]"], "one key or two"),
        (["sweep.directions=[maximize,maximize]"], "sweep.directions=.* has 2 entries but optimized_metric has 1"),
        (["sweep.constraints=['valid/ild_at_10 >= 0.3']"], r"sweep.constraints\[0\]: 'valid/ild_at_10' is not a metric"),
    ],
)
def test_bad_objectives_and_constraints_are_refused_before_any_data(overrides: list[str], says: str) -> None:
    with pytest.raises(LtrUserError, match=says):
        check_config(compose_train(overrides))


def test_nested_params_from_the_command_line_read_as_dotted_keys() -> None:
    assert params_overrides({"model.num_leaves": "int(interval(7, 31))", "rerank": {"alpha": "interval(0, 1)"}}) == [
        "model.num_leaves=int(interval(7, 31))", "rerank.alpha=interval(0, 1)",
    ]  # fmt: skip


_SPACE = ["model.num_leaves=int(interval(7, 127))", "model.learning_rate=interval(0.01, 0.2)"]


def _seeded(seed: int) -> TrialSeeded:
    """The sampler the search gives a study: TPE, each trial's seeded from ``seed`` and its number."""
    return TrialSeeded(lambda number: optuna.samplers.TPESampler(seed=sampler_seed(seed, number), n_startup_trials=5))


def _two_trials(study: optuna.Study, seed: int) -> list[dict[str, object]]:
    """One invocation of a search on ``study``: the sampler as the search builds it, 2 trials
    asked and told."""
    study.sampler = _seeded(seed)
    space = search_space(_SPACE)[0]
    params = []
    for _ in range(2):
        trial = study.ask(space)
        study.tell(trial, float(trial.params["model.learning_rate"]))
        params.append(trial.params)
    return params


def test_searches_started_together_on_one_study_draw_distinct_points() -> None:
    """Two hosts' searches, both started on the same (empty) study, their asks interleaved: each
    trial's sampler is seeded by the trial's number, which the storage hands out once, so no
    point is drawn twice (one sampler seeded per search drew the same points on both hosts)."""
    storage = optuna.storages.InMemoryStorage()
    optuna.create_study(storage=storage, study_name="s", direction="maximize")
    hosts = [optuna.load_study(study_name="s", storage=storage, sampler=_seeded(42)) for _ in range(2)]
    space = search_space(_SPACE)[0]
    asked = [host.ask(space) for _ in range(3) for host in hosts]
    assert sorted(t.number for t in asked) == list(range(6))
    assert len({tuple(sorted(t.params.items())) for t in asked}) == 6
    # trial 0 drew the point a lone search's trial 0 draws: the config's seed itself
    alone = optuna.create_study(direction="maximize", sampler=_seeded(42)).ask(space)
    (first,) = [t for t in asked if t.number == 0]
    assert first.params == alone.params


def test_a_resumed_study_draws_new_points_and_the_same_commands_the_same_ones() -> None:
    assert sampler_seed(42, 0) == 42, "a new study: the config's seed itself (its trials as before)"
    assert sampler_seed(42, 2) == sampler_seed(42, 2)
    assert len({sampler_seed(42, 0), sampler_seed(42, 2), sampler_seed(42, 4), sampler_seed(43, 2), sampler_seed(44, 0)}) == 5

    def twice() -> list[dict[str, object]]:
        study = optuna.create_study(direction="maximize")
        return _two_trials(study, 42) + _two_trials(study, 42)

    first = twice()
    assert first[2:] != first[:2], "the second invocation repeated the first's points"
    assert len({tuple(p.items()) for p in first}) == 4
    assert twice() == first, "the same command sequence gives the same trials"


def test_a_studys_config_leaves_out_searched_tracking_and_neutral_keys() -> None:
    spec = check_config(compose_train(["data.n_queries=300", "fit.show_progress=false", "tracking.experiment=x"]))
    config = study_config(spec, ["model.num_leaves", "model.learning_rate"])
    assert config["data.n_queries"] == "300"
    assert config["seed"] == "42"
    assert config["optimized_metric"] == "valid/ndcg_at_10"
    assert "model.num_leaves" not in config
    assert "model.learning_rate" not in config
    assert config["model.name"] == "lambdarank", "a key the search does not vary stays"
    assert not any(key.startswith("tracking.") for key in config)
    assert "fit.show_progress" not in config, "a neutral field never changes a value"
    assert not any(key.startswith("model.") for key in study_config(spec, ["model"])), "a searched group: all of it"


def test_a_study_of_another_config_is_refused_in_one_line_naming_the_keys() -> None:
    stored = {"data.n_queries": "3000", "seed": "42", "model.name": "lambdarank"}
    check_study_config(None, {"seed": "7"}, name="s", storage="sqlite:///study.db")  # a study from before
    check_study_config(stored, dict(stored), name="s", storage="sqlite:///study.db")
    with pytest.raises(LtrUserError) as info:
        check_study_config(stored, {**stored, "data.n_queries": "300"}, name="ltr_lambdarank", storage="sqlite:///study.db")
    message = str(info.value)
    assert "\n" not in message
    assert "Optuna study 'ltr_lambdarank' in sqlite:///study.db was built on another config" in message
    assert "data.n_queries=3000 (this sweep: 300)" in message
    assert "hydra.sweeper.study_name=ltr_lambdarank_2" in message
    current = {"a": "1", "b": "2", "c": "3", "d": "4", "e": "5"}
    assert config_differences({}, current)[0] == "a=<unset> (this sweep: 1)"
    with pytest.raises(LtrUserError, match="; and 2 more"):
        check_study_config({}, current, name="s", storage="sqlite:///study.db")

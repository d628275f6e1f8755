"""A sweep's start checks (:mod:`ltr.cli.sweeps.checks`): every job's config, the search's
settings and its pruner, refused in one line before the parent run exists."""

from __future__ import annotations

import doctest
import math
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

import ltr.cli.sweeps.callback
import ltr.cli.sweeps.checks
import ltr.sweeper.cv
import ltr.sweeper.job_checks
import ltr.sweeper.pruner
import ltr.tracking.sweep_summary
from ltr.cli.sweeps.callback import varying_keys
from ltr.cli.sweeps.checks import SweepPlan, check_sweep_start, grid_jobs, task_config
from ltr.config.compose import CONF_DIR
from ltr.errors import LtrUserError
from ltr.metrics import Strata
from ltr.sweeper.cv import cv_frame, cv_headline, cv_metrics, cv_table


@pytest.fixture
def hydra_loader() -> Iterator[None]:
    """Hydra initialised on ``ltr/conf`` (the sweep checks compose each job with its loader)."""
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        yield


def _multirun(overrides: Sequence[str]) -> DictConfig:
    loader = GlobalHydra.instance().config_loader()
    return loader.load_configuration(config_name="train", overrides=list(overrides), run_mode=RunMode.MULTIRUN)


def _check(*overrides: str) -> SweepPlan:
    shrink = [] if any(o.startswith(("data=", "experiment=")) for o in overrides) else ["debug=default"]
    config = _multirun([*shrink, *overrides])
    return check_sweep_start(config, varying_keys(config))


def _refused(*overrides: str) -> str:
    with pytest.raises(LtrUserError) as info:
        _check(*overrides)
    line = str(info.value)
    assert "\n" not in line
    return line


@pytest.mark.parametrize(
    "module", [ltr.cli.sweeps.checks, ltr.sweeper.job_checks, ltr.cli.sweeps.callback, ltr.sweeper.pruner, ltr.sweeper.cv, ltr.tracking.sweep_summary]
)
def test_doctests(module: object) -> None:
    assert doctest.testmod(module).failed == 0  # type: ignore[arg-type]


@pytest.mark.usefixtures("hydra_loader")
def test_a_grid_is_planned_job_by_job() -> None:
    plan = _check("model.num_leaves=7,15", "seed=1,2,3")
    assert plan.n_jobs == 6
    assert plan.spec is not None
    assert plan.spec.optimized_metric == "valid/ndcg_at_10"


@pytest.mark.usefixtures("hydra_loader")
def test_the_jobs_of_the_last_grid_checked_are_recorded_for_the_sweeper() -> None:
    """What ltr's basic sweeper skips composing again: the jobs the last start check passed, as the
    sweeper batches them; a later sweep's check, refused, leaves none recorded."""
    config = _multirun(["debug=default", "model.num_leaves=7,15"])
    check_sweep_start(config, varying_keys(config))
    jobs = grid_jobs(config)
    assert jobs == [["debug=default", "model.num_leaves=7"], ["debug=default", "model.num_leaves=15"]]
    assert ltr.sweeper.job_checks.were_checked(jobs)
    assert not ltr.sweeper.job_checks.were_checked([["debug=default", "model.num_leaves=31"]])
    _refused("model.num_leaves=1", "seed=1,2")
    assert not ltr.sweeper.job_checks.were_checked(jobs[:1])


@pytest.mark.usefixtures("hydra_loader")
def test_a_mistake_every_job_shares_is_its_own_line() -> None:
    assert _refused("model.num_leaves=1", "seed=1,2") == "model.num_leaves=1 is out of range: it must be >= 2 and <= 131072"


@pytest.mark.usefixtures("hydra_loader")
@pytest.mark.parametrize(
    ("swept", "says"),
    [
        ("model.num_leaves=7,1", "job 1 (model.num_leaves=1): model.num_leaves=1 is out of range"),
        ("model.num_leaves=7,abc", "job 1 (model.num_leaves=abc): Error merging override model.num_leaves=abc"),
        ("model=lambdarank,lambdarnk", "job 1 (model=lambdarnk): "),
    ],
)
def test_a_mistake_only_some_jobs_have_refuses_the_sweep_naming_the_job(swept: str, says: str) -> None:
    line = _refused(swept)
    assert line.startswith(says), line
    assert line.endswith("(1 of 2 jobs refused; no job ran)"), line


@pytest.mark.usefixtures("hydra_loader")
def test_a_repeated_key_is_refused() -> None:
    line = _refused("model.num_leaves=7,15", "model.num_leaves=3,4")
    assert line == (
        "model.num_leaves is given twice (model.num_leaves=7,15 model.num_leaves=3,4): "
        "give it once, with every value (key=a,b,c)"
    )


@pytest.mark.usefixtures("hydra_loader")
def test_a_job_differing_in_values_only_is_the_config_the_launcher_composes() -> None:
    """Job 1 is job 0's config with its values applied (no second composition): equal to composing it."""
    config = _multirun(["debug=default", "model=lambdarank,rank_xendcg", "model.num_leaves=7,15", "eval.k=[5,10],[3]"])
    jobs = grid_jobs(config)
    assert len(jobs) == 8
    loader = GlobalHydra.instance().config_loader()
    from ltr.cli.sweeps.checks import _job_configs

    for number, composed in _job_configs(config, jobs):
        assert isinstance(composed, DictConfig)
        expected = loader.load_sweep_config(config, jobs[number])
        assert OmegaConf.to_container(task_config(composed)) == OmegaConf.to_container(task_config(expected)), jobs[number]


@pytest.mark.usefixtures("hydra_loader")
def test_a_missing_letor_fold_folder_is_refused_up_front(tmp_path: Path) -> None:
    (tmp_path / "Fold1").mkdir()
    (tmp_path / "Fold1" / "train.txt").write_text("0 qid:1 1:0.5\n")
    plan = _check("data=letor", f"data.root={tmp_path}", "data.fold=1", "seed=1,2")
    assert plan.n_jobs == 2
    line = _refused("data=letor", f"data.root={tmp_path}", "data.fold=1,2")
    assert line.startswith(f"job 1 (data.fold=2): data.root folder {tmp_path / 'Fold2'} does not exist"), line


@pytest.mark.usefixtures("hydra_loader")
def test_a_cv_over_a_fold_the_parts_lack_is_refused(tmp_path: Path) -> None:
    for part in ("S1", "S2", "S3", "S4", "S5"):
        (tmp_path / f"{part}.txt.gz").write_bytes(b"")  # never read: the checks only look
    line = _refused("experiment=letor_cv", f"data.root={tmp_path}", "data.fold=1,6")
    assert line == "job 1 (data.fold=6): data.fold=6 must lie in 1..5 (1 of 2 jobs refused; no job ran)"
    line = _refused("experiment=letor_cv", f"data.root={tmp_path / 'nowhere'}")
    assert line.startswith(f"data.root={tmp_path / 'nowhere'} does not exist"), line  # every fold: one line
    assert _check("experiment=letor_cv", f"data.root={tmp_path}").n_jobs == 5


@pytest.mark.usefixtures("hydra_loader")
@pytest.mark.parametrize(
    ("override", "says"),
    [
        ("sweep.constraints=['valid/ndcg_at_11 >= 0.7']", "sweep.constraints[0]: 'valid/ndcg_at_11' is not a metric"),
        ("sweep.constraints=['valid/ndcg_at_10 => 0.7']", "sweep.constraints[0]: cannot read"),
        ("sweep.constraints=['valid/ndcg_at_10 >= high']", "neither a number nor 'baseline'"),
        ("optimized_metric=valid/ndcg_at_11", "optimized_metric='valid/ndcg_at_11' is not a metric"),
        ("sweep.directions=[maximize,minimize]", "sweep.directions=['maximize', 'minimize'] has 2 entries"),
        ("hydra.sweeper.n_trials=0", "hydra.sweeper.n_trials=0 must be a whole number >= 1"),
        ("hydra.sweeper.pruner=median2", "hydra.sweeper.pruner='median2' is not a pruner: pick one with hydra/sweeper/pruner=median or threshold"),
        ("hydra/sweeper/pruner=threshold", "hydra.sweeper.pruner (optuna.pruners.ThresholdPruner): Either lower or upper must be specified; give hydra.sweeper.pruner.lower="),
    ],
)  # fmt: skip
def test_a_search_setting_mistake_is_refused_before_the_parent(override: str, says: str) -> None:
    line = _refused("hparams_search=optuna", "hydra.sweeper.n_trials=2", override)
    assert says in line, line


@pytest.mark.usefixtures("hydra_loader")
def test_a_search_plans_its_trials_and_accepts_a_threshold_pruner_with_a_bound() -> None:
    plan = _check("hparams_search=optuna", "hydra.sweeper.n_trials=3", "hydra/sweeper/pruner=threshold", "hydra.sweeper.pruner.lower=0.1")
    assert plan.n_jobs == 3
    assert _check("hparams_search=optuna", "hydra.sweeper.pruner=null").n_jobs == 20


def test_one_fold_has_a_mean_and_no_sd() -> None:
    """The sample sd of one value is undefined: NaN in the stats, no ``/sd`` key, the mean alone in the table."""
    stats = cv_metrics({"1": {"test/ndcg_at_10": 0.491, "test/n_queries": 157.0}})
    assert stats["cv/test/ndcg_at_10/mean"] == 0.491
    assert math.isnan(stats["cv/test/ndcg_at_10/std"])
    assert cv_headline(stats, ["test/ndcg_at_10"]) == {"cv/n_folds": 1.0, "test/ndcg_at_10": 0.491}
    assert math.isnan(cv_frame(stats).set_index("key").loc["test/ndcg_at_10", "sd"])
    table = cv_table(stats, split="test", ks=(10,), strata=Strata(), title="t")
    assert "| all | 157.0 | 0.4910 |" in table
    two = cv_metrics({"1": {"test/ndcg_at_10": 0.5}, "2": {"test/ndcg_at_10": 0.25}})
    assert cv_headline(two, ["test/ndcg_at_10"])["test/ndcg_at_10/sd"] == math.sqrt(2 * 0.125**2)

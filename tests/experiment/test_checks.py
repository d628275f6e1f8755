"""Config mistakes are found before any data is read or run exists, as one line naming the key."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from ltr.cli.main import main
from ltr.config import choices
from ltr.errors import LtrUserError
from ltr.experiment.checks import check_config
from ltr.experiment.spec import metric_keys
from ltr.metrics import PRESETS, MetricConventions
from ltr.metrics.conventions import DISCOUNTS, GAINS, TIES, ZERO_IDCG
from tests.conftest import compose_train

#: (overrides, what the one-line message must say). The issue's ten mistakes.
TEN_MISTAKES = [
    (["trainer.kind=gpu"], "trainer.kind"),
    (["eval.ties=random"], "eval.ties"),
    (["eval.strata=[2,5]"], "eval.strata"),
    (["eval.gain=log"], "eval.gain"),
    (["model.estimator=tree"], "model.estimator"),
    (["eval.clicks.propensity=foo"], "eval.clicks.propensity"),
    (["data=parquet_partitions", "data.root=."], "trainer=dask"),
    (["eval.k=[]"], "eval.k"),
    (["optimized_metric=valid/ndcg_at_7"], "optimized_metric"),
    (["fit.early_stopping_metric=map@3"], "fit.early_stopping_metric"),
]


@pytest.mark.parametrize(("overrides", "key"), TEN_MISTAKES, ids=[m[0][0] for m in TEN_MISTAKES])
def test_config_mistake_is_one_line_exit_2_and_no_run(
    overrides: list[str], key: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code = main(["train", *overrides, "fit.show_progress=false"])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, err
    assert len(lines) == 1, err
    assert lines[0].startswith("ltr: error: "), lines[0]
    assert key in lines[0], lines[0]
    assert "Traceback" not in err
    # no store, no run folder: nothing was read and nothing was started
    assert not (tmp_path / "mlflow.db").exists()
    assert not (tmp_path / "mlartifacts").exists()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["eval.k=[0,5]"], "eval.k=[0, 5]: 0 is out of range: it must be >= 1"),
        (["eval.k=[5,5]"], "repeats a cut-off"),
        (["eval.splits=[valid,holdout]"], "'holdout' is not one of"),
        (["eval.rel_threshold=-5"], "eval.rel_threshold=-5 is out of range: it must be >= 0"),
        (["fit.num_threads=-3"], "fit.num_threads=-3 is out of range: it must be >= 0"),
        (["fit.num_boost_round=0"], "fit.num_boost_round=0"),
        (["model.learning_rate=-1"], "model.learning_rate=-1 is out of range: it must be > 0"),
        (["model.num_leaves=1"], "model.num_leaves=1 is out of range: it must be >= 2"),
        (["data=letor"], "data.root is required"),
        (["eval.clicks.min_propensity=0"], "eval.clicks.min_propensity=0 is out of range"),
        (["eval.splits=[test]"], "has no valid split to optimise on"),
        (["+eval.composite.blend={ndcg@3: 1.0}"], "'ndcg@3' is not a measure"),
        (["model.position_bias=true", "trainer=dask"], "use trainer=local"),
    ],
)
def test_cross_field_rules(overrides: list[str], message: str) -> None:
    with pytest.raises(LtrUserError, match=message.replace("[", r"\[")):
        check_config(compose_train(overrides))


#: Two mistakes of neighbouring steps of the one pass (ltr.experiment.checks), each with its message:
#: together, the earlier step's is the one reported, whatever order the overrides come in.
EARLIER_STEP_WINS = [
    ("run name, metrics", ["tracking.run_name=" + "x" * 300], "tracking.run_name is 300 characters long", ["eval.k=[5,5]"], "eval.k=[5, 5] repeats a cut-off"),
    ("metrics, training", ["eval.splits=[valid,valid]"], "eval.splits=['valid', 'valid'] repeats a split", ["model.label_gain=[3,1]"], "model.label_gain=[3.0, 1.0] decreases"),
    ("training, rerank", ["model.position_bias=true", "trainer=dask"], "use trainer=local", ["rerank=diversify", "rerank.alpha=2"], "rerank.alpha=2 is out of range"),
    ("rerank, data", ["rerank=diversify", "rerank.similarity=category"], "rerank.similarity=category needs rerank.category_feature", ["data=synthetic_clicks", "data.train_labels=nosuch"], "data.train_labels='nosuch' is not one of"),
    ("data, objectives", ["data=synthetic_clicks", "eval.clicks.propensity=harvest"], "eval.clicks.propensity=harvest needs a logged ranker id", ["optimized_metric=valid/ndcg_at_7"], "optimized_metric='valid/ndcg_at_7' is not a metric"),
    ("objectives, sweep", ["optimized_metric=[valid/ndcg_at_10,valid/ndcg_at_10]"], "names a key twice", ["optimized_metric=[valid/ndcg_at_10,valid/ndcg_at_5]", "sweep.directions=[maximize]"], "sweep.directions=['maximize'] has 1 entries"),
]


@pytest.mark.parametrize(("first", "first_says", "second", "second_says"), [c[1:] for c in EARLIER_STEP_WINS], ids=[c[0] for c in EARLIER_STEP_WINS])
def test_the_earlier_step_of_the_pass_wins(first: list[str], first_says: str, second: list[str], second_says: str) -> None:
    def says(message: str) -> str:
        return message.replace("[", r"\[")

    with pytest.raises(LtrUserError, match=says(second_says)):
        check_config(compose_train(second))
    together = {o.split("=")[0]: o for o in second} | {o.split("=")[0]: o for o in first}  # a key both set: the first's
    for ordered in (list(together.values()), list(together.values())[::-1]):
        with pytest.raises(LtrUserError, match=says(first_says)):
            check_config(compose_train(ordered))


def test_preset_gives_the_peers_conventions_and_explicit_fields_win() -> None:
    assert check_config(compose_train(["eval.preset=sklearn"])).conventions == PRESETS["sklearn"]
    assert check_config(compose_train(["eval=sklearn"])).conventions == PRESETS["sklearn"]
    assert check_config(compose_train(["eval=lightgbm"])).conventions == PRESETS["lightgbm"]
    assert check_config(compose_train([])).conventions == MetricConventions()
    mixed = check_config(compose_train(["eval.preset=sklearn", "eval.gain=exp"])).conventions
    assert (mixed.gain, mixed.ties, mixed.zero_idcg) == ("exp", "average", "zero")
    lightgbm_zero = check_config(compose_train(["eval=lightgbm", "eval.zero_idcg=zero"])).conventions
    assert (lightgbm_zero.gain, lightgbm_zero.ties, lightgbm_zero.zero_idcg) == ("exp", "stable", "zero")


def test_resolved_conventions_are_the_logged_params() -> None:
    params = check_config(compose_train(["eval.preset=sklearn"])).params()
    assert (params["eval.gain"], params["eval.ties"], params["eval.zero_idcg"]) == ("linear", "average", "zero")
    assert params["eval.preset"] == "sklearn"
    assert params["fit.early_stopping_metric"] == "ndcg_at_10"
    assert params["optimized_metric"] == "valid/ndcg_at_10"


def test_objective_and_early_stopping_follow_eval_k() -> None:
    spec = check_config(compose_train(["eval.k=[5,20]"]))
    assert spec.optimized_metric == "valid/ndcg_at_20"
    assert spec.early_stopping_metric == "ndcg_at_20"
    assert spec.config.fit.early_stopping_metric == "ndcg_at_20"
    lightgbm = check_config(compose_train(["eval.k=[5,20]", "fit.early_stopping_metric=ndcg@5"]))
    assert lightgbm.early_stopping_metric == "ndcg@5"
    stratum = check_config(compose_train(["optimized_metric=test/err_at_10/len_51_plus"]))
    assert stratum.optimized_metric == "test/err_at_10/len_51_plus"
    composite = check_config(compose_train(["+eval.composite.blend={ndcg_at_3: 0.5, rr: 0.5}", "optimized_metric=valid/blend"]))
    assert "valid/blend/len_1-10" in metric_keys(composite)
    assert composite.table_ks == (5, 10, 3)


def test_enum_choices_are_the_metric_conventions_choices() -> None:
    assert tuple(choices.Gain) == GAINS
    assert set(choices.Ties) == set(TIES) - {"docno_desc"}  # docno_desc needs docnos: ltr evaluate only
    assert tuple(choices.ZeroIdcg) == ZERO_IDCG
    assert tuple(choices.Discount) == DISCOUNTS
    assert set(choices.Preset) <= set(PRESETS)


def test_train_help_lists_options_not_schemas(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--help"])
    assert exit_info.value.code in (None, 0)
    out = capsys.readouterr().out
    assert "model: catboost, lambdarank, pointwise, rank_xendcg, xgboost" in out
    assert "eval: default, lightgbm, sklearn" in out
    assert "_schema" not in out


def test_non_ascii_paths_need_no_quoting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``data.train=/…/données/train.txt`` unquoted reads the file (Hydra's grammar needs quotes)."""
    folder = tmp_path / "données"
    folder.mkdir()
    rng = np.random.default_rng(0)
    lines = [
        f"{int(rng.integers(0, 3))} qid:{q} " + " ".join(f"{j + 1}:{rng.random():.4f}" for j in range(4))
        for q in range(60)
        for _ in range(8)
    ]
    (folder / "train.txt").write_text("\n".join(lines) + "\n")
    monkeypatch.chdir(tmp_path)
    code = main([
        "train", "data=svmlight", f"data.train={folder / 'train.txt'}", "data.cache=false", "tracking=none",
        "fit.num_boost_round=3", "fit.show_progress=false", "model.min_child_samples=2",
    ])
    assert code == 0


def test_run_names_lead_with_what_varies_and_fit_narrow_columns() -> None:
    from ltr.experiment.names import name_parts
    from ltr.experiment.record import run_name

    spec = check_config(compose_train([]))
    assert run_name(spec, []) == "lambdarank"
    assert run_name(spec, ["model.num_leaves=7", "tracking.uri=sqlite:///x.db"]) == "nl=7 (lambdarank)"
    assert run_name(spec, ["model=rank_xendcg", "seed=3"]) == "seed=3 rank_xendcg"
    # how it is fitted and the presets come after what it computes
    assert run_name(spec, ["debug=default", "fit.num_boost_round=60", "model.learning_rate=0.05"]) == (
        "lr=0.05 nbr=60 debug=default (lambdarank)"
    )
    # a sweep's job: only the keys its sweep varies, whatever else it was given
    assert run_name(spec, ["debug=default", "model.num_leaves=15"], varying=["model.num_leaves"]) == "nl=15"
    # two keys with one abbreviation keep their last parts, with one last part their full
    # names; + and ~ prefixes are kept
    assert name_parts(["data.seed=1", "model.params.seed=2", "+model.params.path_smooth=0.5"]) == [
        "data.seed=1", "model.params.seed=2", "+ps=0.5",
    ]
    assert name_parts(["model.num_leaves=7", "data.n_lists=3"]) == ["num_leaves=7", "n_lists=3"]
    # files by their names (one line in the UI's table); a sweep over files, each; a list as written
    assert name_parts(["data=parquet", "data.train=/home/me/export/train.parquet", "data.test=exports/test.parquet"]) == [
        "train=train.parquet", "test=test.parquet", "data=parquet",
    ]
    assert name_parts(["data.root=/data/MSLR-WEB10K/", "data.train=a/x.txt,b/y.txt", "data.feature_columns=[a/b,c]"]) == [
        "root=MSLR-WEB10K", "train=x.txt,y.txt", "fc=[a/b,c]",
    ]
    named = check_config(compose_train(["tracking.run_name=baseline"]))
    assert run_name(named, ["model.num_leaves=7"]) == "baseline"
    # a sweep's job of a named sweep: what the job varies (its number when unknown), then the name
    assert run_name(named, ["model.num_leaves=7", "seed=2"], varying=["model.num_leaves"], job="1") == "nl=7 (baseline)"
    assert run_name(named, ["seed=2"], varying=[], job="1") == "#1 (baseline)"


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("model.num_leaves=7", "model.num_leaves"),
        ("+model.params.path_smooth=0.5", "model.params.path_smooth"),
        ("++model.params.x=a=b", "model.params.x"),  # the value may hold '='
        ("~model.params.x", "model.params.x"),
        ("model=pointwise", "model"),
        ("eval.k=[5,10]", "eval.k"),
    ],
)
def test_override_key_is_the_key_without_prefix_or_value(override: str, key: str) -> None:
    """Run names, sweep parents and ``ltr rerun`` read an override's key with this one function."""
    from ltr.config.overrides import override_key

    assert override_key(override) == key


def test_run_names_leave_out_the_fields_that_change_no_result() -> None:
    """A progress display, a cache or a heartbeat setting renames no run (:mod:`ltr.config.neutral`); a thread
    count may change LightGBM's sums, so it stays in the name."""
    from ltr.config.neutral import neutral, neutral_fields
    from ltr.config.schema import neutral_keys
    from ltr.experiment.names import shown_overrides
    from ltr.experiment.record import run_name

    assert neutral_keys() == {
        "fit.show_progress", "fit.reuse_binned_data", "data.cache", "data.cache_dir", "data.cache_max_mb",
        "data.binned_cache", "data.binned_cache_max_mb", "data.progress", "tracking.heartbeat_s",
        "tracking.stale_after", "tracking.server_wait_s",
    }  # fmt: skip
    @dataclasses.dataclass
    class Inner:
        quiet: bool = dataclasses.field(default=False, metadata=neutral())
        depth: int = 3

    @dataclasses.dataclass
    class Outer:
        inner: Inner = dataclasses.field(default_factory=Inner)
        shown: bool = dataclasses.field(default=True, metadata=neutral())

    assert neutral_fields(Outer, "g.") == ["g.inner.quiet", "g.shown"]  # nested sections too
    spec = check_config(compose_train([]))
    given = ["fit.show_progress=false", "model.num_leaves=7", "+data.cache_dir=/tmp/c", "fit.reuse_binned_data=false",
             "fit.num_threads=1"]  # fmt: skip
    assert shown_overrides(given) == ["model.num_leaves=7", "fit.num_threads=1"]
    assert run_name(spec, given) == "nl=7 nt=1 (lambdarank)"
    assert run_name(spec, ["fit.show_progress=false"]) == "lambdarank"


def test_a_category_column_of_continuous_values_needs_bins() -> None:
    """Issue 30: rerank.similarity=category on a continuous column re-ranked nothing, silently
    (each distinct value its own category); it is refused unless cut into bins."""
    from ltr.data.load import load_splits
    from ltr.experiment.checks import check_data

    base = ["data.n_queries=60", "rerank=diversify", "rerank.similarity=category", "rerank.category_feature=0"]
    spec = check_config(compose_train(base))
    splits = load_splits(spec.config.data, spec.config.split, seed=spec.seed)
    assert not np.all(splits.train.features[:, 0] == np.rint(splits.train.features[:, 0]))  # continuous
    with pytest.raises(LtrUserError, match=r"rerank.category_feature=0: column 0 holds non-integer values .* rerank.category_bins"):
        check_data(spec, splits)
    check_data(check_config(compose_train([*base, "rerank.category_bins=4"])), splits)  # binned: accepted


def test_settings_that_cannot_take_effect_are_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("WARNING", logger="ltr.experiment.checks"):
        check_config(compose_train(["rerank.alpha=0.5", "trainer.n_workers=4"]))
    assert [r.getMessage() for r in caplog.records] == [
        "ltr: rerank.alpha=0.5 has no effect with rerank=none (add rerank=diversify to re-rank)",
        "ltr: trainer.n_workers=4 has no effect with trainer=local (add trainer=dask)",
    ]

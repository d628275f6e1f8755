"""``ltr promote`` against a real MLflow registry: names and aliases MLflow refuses are refused
before anything is read or written; a failed registration leaves the registry as it was;
promoting the alias's own run again does nothing; a run whose model already has a version gets
the alias moved back there (no duplicate version); the decision is on valid unless ``--split``.

Two runs of the same data (``a-7`` and ``a-31``: 7 and 31 leaves) and one evaluated on test only
(``test-only``) are trained once per module into a store that each test copies, so every test
starts from an empty registry."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from ltr.cli.main import main as ltr_main
from ltr.errors import LtrUserError
from ltr.experiment import run as pipeline
from ltr.models.promote import _undo, apply_promotion, check_names, plan_promotion
from tests.conftest import compose_train

DEBUG = ["debug=default", "fit.show_progress=false"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with three finished runs of the same data: ``a-7``, ``a-31`` and ``test-only``."""
    folder = tmp_path_factory.mktemp("promote")
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    for leaves in (7, 31):
        pipeline.run(compose_train([*DEBUG, f"model.num_leaves={leaves}", f"tracking.uri={uri}", f"tracking.run_name=a-{leaves}"]))
    pipeline.run(compose_train([
        *DEBUG, "eval.splits=[test]", "optimized_metric=test/ndcg_at_10", f"tracking.uri={uri}", "tracking.run_name=test-only",
    ]))
    return folder / "mlflow.db"


@pytest.fixture
def uri(trained: Path, tracking_uri: str) -> str:
    """A copy of the trained store (its artifacts stay where the runs wrote them)."""
    shutil.copyfile(trained, tracking_uri.removeprefix("sqlite:///"))
    return tracking_uri


def _versions(uri: str, name: str = "m") -> list[tuple[int, str]]:
    """(version, run id) of every version of ``name`` the registry lists, oldest first."""
    found = MlflowClient(uri).search_model_versions(f"name = '{name}'")
    return sorted((int(v.version), v.run_id) for v in found)


def _run_id(uri: str, run_name: str) -> str:
    client = MlflowClient(uri)
    (run,) = client.search_runs([client.get_experiment_by_name("ltr").experiment_id], f"tags.mlflow.runName = '{run_name}'")
    return str(run.info.run_id)


def _valid_order(uri: str) -> tuple[str, str]:
    """The run names (worse, better) on valid/ndcg_at_10 (they must differ)."""
    client = MlflowClient(uri)
    values = {name: client.get_run(_run_id(uri, name)).data.metrics["valid/ndcg_at_10"] for name in ("a-7", "a-31")}
    assert values["a-7"] != values["a-31"], values
    worse, better = sorted(values, key=values.__getitem__)
    return worse, better


@pytest.mark.parametrize("name", ["ranker", "ranker.v2", "team-ranker_1", "Ranker_2", "v3", "r2d2", "1st-ranker"])
def test_names_the_rule_allows_pass_the_check(name: str) -> None:
    """The rule refuses numbers, whitespace and control characters, not names that hold digits
    or dots (``v3`` and ``latest`` are reserved aliases, not names)."""
    check_names(name, "champion")


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--alias", "v3", "Version alias name 'v3' is reserved"),
        ("--alias", "V12", "Version alias name 'V12' is reserved"),
        ("--alias", "bad alias", "Names may only contain alphanumerics"),
        ("--alias", "a.b", "Names may only contain alphanumerics"),
        ("--alias", "Latest", "'latest' alias name (case insensitive) is reserved"),
        ("--alias", "7", "not a number"),
        ("--alias", "", "not empty"),
        ("--name", "team/ranker", "Names cannot contain '/' or ':'"),
        ("--name", "a:b", "Names cannot contain '/' or ':'"),
        ("--name", " ", "--name is empty"),
        # ltr's own rules (README, "Ship a model"): no number, no whitespace, no control character
        ("--name", "12", "--name '12' is a number"),
        ("--name", "-3", "--name '-3' is a number"),
        ("--name", "1.5", "--name '1.5' is a number"),
        ("--name", "a b", "--name 'a b' has whitespace"),
        ("--name", "ranker\t2", "has a control character ('\\t')"),
        ("--name", "rank\x1b[31mer", "--name 'rank\\x1b[31mer' has a control character ('\\x1b')"),
        ("--name", "ranker\x07", "has a control character ('\\x07')"),
        ("--alias", "-3", "not a number"),
    ],
)
def test_a_name_or_alias_mlflow_refuses_is_refused_before_anything_is_read(
    uri: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, value: str, says: str
) -> None:
    args = {"--name": "m", "--alias": "champion", option: value}
    assert ltr_main(["promote", "a-7", "--name", args["--name"], "--alias", args["--alias"], "--tracking-uri", uri]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ltr: error: ")
    assert err.strip().count("\n") == 0, err
    assert not any(ord(c) < 32 for c in err.strip()), "no control character reaches the terminal"
    assert says in err
    assert MlflowClient(uri).search_registered_models() == []
    # before the store is even opened: a store that does not exist stays so
    missing = tmp_path / "none" / "mlflow.db"
    with pytest.raises(LtrUserError, match=r"^--(name|alias) "):
        plan_promotion("a-7", name=args["--name"], alias=args["--alias"], tracking_uri=f"sqlite:///{missing}")
    assert not missing.parent.exists()


def test_a_registration_that_fails_after_its_version_was_created_leaves_the_registry_as_it_was(uri: str) -> None:
    """The alias is set after the version is created: an alias the registry refuses (past the
    up-front check, as a store could refuse anything) must not leave a version behind."""
    # the call creates the registered model: it is deleted again, with its version
    plan = plan_promotion("a-7", name="m", tracking_uri=uri, n_resamples=200)
    with pytest.raises(LtrUserError, match=r"cannot register the model of run .* as 'm': Invalid alias name: 'bad alias'") as refused:
        apply_promotion(replace(plan, alias="bad alias"))
    assert "\n" not in str(refused.value)
    assert MlflowClient(uri).search_registered_models() == []
    # the registered model exists: only the new version is deleted, however often it is retried
    first = apply_promotion(plan_promotion("a-7", name="m", tracking_uri=uri, n_resamples=200))
    assert (first.version, first.registered) == ("1", True)
    plan = plan_promotion("a-31", name="m", alias="staging", tracking_uri=uri, n_resamples=200)
    assert plan.existing is None
    for _ in range(2):
        with pytest.raises(LtrUserError, match="Version alias name 'v9' is reserved"):
            apply_promotion(replace(plan, alias="v9"))
    client = MlflowClient(uri)
    assert _versions(uri) == [(1, _run_id(uri, "a-7"))]
    assert str(client.get_model_version_by_alias("m", "champion").version) == "1"
    assert client.get_registered_model("m").aliases == {"champion": 1}


@pytest.mark.parametrize("name", ["m", "it's"])
def test_undoing_a_registration_keeps_the_version_another_promotion_added_meanwhile(uri: str, name: str) -> None:
    """This promotion created the registered model and its version 1; one running beside it added
    version 2; this one then fails: only version 1 goes, the model and version 2 stay. With
    nothing added meanwhile, the model goes too (quotes in the name included)."""
    client = MlflowClient(uri)
    source = f"runs:/{_run_id(uri, 'a-7')}/model"
    client.create_registered_model(name)
    ours = client.create_model_version(name, source)
    theirs = MlflowClient(uri).create_model_version(name, source)  # the other promotion's
    assert _undo(client, name, ours, created_model=True) == ""
    assert [int(v.version) for v in client.search_model_versions(f'name="{name}"')] == [int(theirs.version)]
    client.create_registered_model(name + "2")
    alone = client.create_model_version(name + "2", source)
    assert _undo(client, name + "2", alone, created_model=True) == ""
    assert [m.name for m in client.search_registered_models()] == [name]


def test_promoting_the_run_the_alias_points_to_again_does_nothing(uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--name", "m", "--n-resamples", "200", "--tracking-uri", uri]
    assert ltr_main(["promote", "a-7", *base]) == 0
    capsys.readouterr()
    for _ in range(2):  # a deploy script run again
        assert ltr_main(["promote", "a-7", *base]) == 0
        out = capsys.readouterr()
        assert out.out.strip().count("\n") == 0, out.out
        assert "models:/m@champion already points to version 1, the model of run" in out.out
        assert "nothing to do" in out.out
        assert out.err == ""
    assert _versions(uri) == [(1, _run_id(uri, "a-7"))]


def test_a_run_with_a_version_gets_the_alias_back_without_a_duplicate_version(uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    """worse -> version 1, better -> version 2; the worse run again is refused (on valid, the
    default), and with --force the alias moves back to version 1: no version 3."""
    worse, better = _valid_order(uri)
    base = ["--name", "m", "--n-resamples", "200", "--tracking-uri", uri]
    client = MlflowClient(uri)
    assert ltr_main(["promote", worse, *base]) == 0
    assert ltr_main(["promote", better, *base]) == 0
    assert str(client.get_model_version_by_alias("m", "champion").version) == "2"
    capsys.readouterr()
    assert ltr_main(["promote", worse, *base]) == 2
    refused = capsys.readouterr()
    assert "valid/ndcg_at_10" in refused.err
    assert "--force" in refused.err
    assert "nDCG@10 on valid" in refused.out  # the comparison shown is the one decided on
    assert ltr_main(["promote", worse, *base, "--force"]) == 0
    moved = capsys.readouterr().out.strip().splitlines()[-1]
    assert f"({worse}) is already m version 1" in moved
    assert "models:/m@champion points to it; it was version 2" in moved
    assert str(client.get_model_version_by_alias("m", "champion").version) == "1"
    # another alias on the better run's version: moved there, nothing registered either
    assert ltr_main(["promote", better, *base, "--alias", "staging"]) == 0
    assert client.get_registered_model("m").aliases == {"champion": 1, "staging": 2}
    assert _versions(uri) == [(1, _run_id(uri, worse)), (2, _run_id(uri, better))]


def test_the_decision_is_on_valid_unless_split_says_test(uri: str) -> None:
    client = MlflowClient(uri)
    on_valid = apply_promotion(plan_promotion("a-7", name="m", tracking_uri=uri, n_resamples=200))
    version = client.get_model_version("m", on_valid.version)
    metrics = client.get_run(_run_id(uri, "a-7")).data.metrics
    assert version.tags["ltr.metric"] == "valid/ndcg_at_10"
    assert float(version.tags["ltr.metric.value"]) == metrics["valid/ndcg_at_10"]
    plan = plan_promotion("a-31", name="m", split="test", tracking_uri=uri, n_resamples=200)
    assert plan.metric == "test/ndcg_at_10"
    assert (plan.value, plan.holder_value) == (client.get_run(_run_id(uri, "a-31")).data.metrics["test/ndcg_at_10"], metrics["test/ndcg_at_10"])
    assert plan.comparison is not None
    assert plan.comparison.split == "test"


def test_a_run_without_the_deciding_split_is_refused_naming_the_other_split(uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--name", "m", "--n-resamples", "200", "--tracking-uri", uri]
    assert ltr_main(["promote", "a-7", *base]) == 0
    capsys.readouterr()
    assert ltr_main(["promote", "test-only", *base]) == 2
    err = capsys.readouterr().err
    assert err.strip().count("\n") == 0
    assert (
        "('test-only') logged no per-query table of valid (per_query/valid.parquet): its eval.splits have no valid split; "
        "decide on the other split (--split test)"
    ) in err
    assert ltr_main(["promote", "test-only", *base, "--split", "test", "--force"]) == 0
    assert [run for _, run in _versions(uri)] == [_run_id(uri, "a-7"), _run_id(uri, "test-only")]


def test_a_registered_models_name_resolves_to_its_champion_where_a_run_is_named(
    uri: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``ltr promote R --name ranker``, then ``ltr predict ranker``: the champion's run scores, the
    same bits as ``ltr predict R``; ``ltr compare`` takes the name too. A model without a champion
    alias and a name of nothing are one line each, giving the forms that work."""
    store = ["--tracking-uri", uri]
    assert ltr_main(["promote", "a-31", "--name", "ranker", "--n-resamples", "200", *store]) == 0
    capsys.readouterr()
    by_name, by_run = tmp_path / "by_name.txt", tmp_path / "by_run.txt"
    assert ltr_main(["predict", "ranker", "--split", "test", "--out", str(by_name), *store]) == 0
    said = capsys.readouterr()
    assert f"no run is named 'ranker': models:/ranker@champion is version 1 of 'ranker': the model of run {_run_id(uri, 'a-31')[:8]}" in said.out + said.err
    assert ltr_main(["predict", "a-31", "--split", "test", "--out", str(by_run), *store]) == 0
    assert by_name.read_bytes() == by_run.read_bytes()
    assert len(by_name.read_text().splitlines()) > 100

    from ltr.compare.loading import load_comparison

    loaded = load_comparison(["a-7", "ranker"], tracking_uri=uri, n_resamples=200)
    assert [r.run_name for r in loaded.runs] == ["a-7", "a-31"]

    # a model whose versions carry another alias: the forms that name one, in the one line
    assert ltr_main(["promote", "a-7", "--name", "staged", "--alias", "staging", "--n-resamples", "200", *store]) == 0
    capsys.readouterr()
    assert ltr_main(["predict", "staged", "--split", "test", "--out", str(tmp_path / "x.txt"), *store]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "the registered model 'staged' has no alias 'champion'" in err
    assert "give models:/staged@staging or models:/staged/1" in err
    assert ltr_main(["predict", "nothing-here", "--split", "test", *store]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "no run 'nothing-here'" in err
    assert "models:/NAME@ALIAS or models:/NAME/VERSION" in err

"""A user's config folders, recorded with a run (tag ``ltr.config_dirs``) so ``ltr rerun`` composes
it from them again (``ltr.config.search_path``, ``ltr.config.compose.compose_run``); and the
Python API's argument checks and names. Composing only: no run, no store (unit tier; the runs
are in ``tests/experiment/test_rerun.py``)."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest
from omegaconf import OmegaConf

import ltr.config.search_path
from ltr import api
from ltr.config.compose import compose_run, compose_shipped, compose_train
from ltr.config.search_path import decode, encode, missing, tags
from ltr.errors import LtrUserError


def _wide(folder: Path, leaves: int = 63) -> Path:
    (folder / "model").mkdir(parents=True)
    (folder / "model" / "wide.yaml").write_text(f"defaults:\n  - lambdarank\nnum_leaves: {leaves}\n")
    return folder


def test_docstring_examples() -> None:
    result = doctest.testmod(ltr.config.search_path)
    assert result.attempted >= 5
    assert result.failed == 0


def test_compose_run_says_which_folders_it_composed_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mine, more = _wide(tmp_path / "mine"), tmp_path / "more"
    (more / "local").mkdir(parents=True)
    (more / "local" / "default.yaml").write_text("# @package _global_\nseed: 7\n")
    assert compose_run([]).config_dirs == ()
    composed = compose_run(["model=wide"], config_dirs=[mine])
    assert (composed.config.model.num_leaves, composed.config_dirs) == (63, (str(mine),))
    assert "hydra" not in composed.config  # as compose_train's config
    assert composed.config == compose_train(["model=wide"], config_dir=mine)
    # hydra.searchpath (as on the command line) comes after config_dirs, as after --config-dir
    both = compose_run(["model=wide", f"hydra.searchpath=['file://{more}']"], config_dirs=[mine])
    assert both.config_dirs == (str(mine), str(more))
    assert (both.config.model.num_leaves, both.config.seed) == (63, 7)
    # a relative folder is recorded absolute; ~ is expanded
    monkeypatch.chdir(tmp_path)
    assert compose_run(["model=wide"], config_dirs=["mine"]).config_dirs == (str(mine),)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert compose_run(["model=wide"], config_dirs=["~/mine"]).config_dirs == (str(mine),)
    with pytest.raises(LtrUserError, match="no such directory"):
        compose_run([], config_dirs=[tmp_path / "gone"])


def test_the_shipped_config_is_composed_once_and_each_caller_gets_its_own_copy() -> None:
    """``compose_shipped`` is ``compose_train`` without a user's folder; a caller that changes
    its copy (``ltr.models.logged.run_spec`` lifts the struct flag and merges a run onto it)
    changes nothing another caller gets; a search-path override is refused, not cached."""
    first = compose_shipped(["model=xgboost"])
    assert first == compose_train(["model=xgboost"])
    OmegaConf.set_struct(first, False)
    first.model.max_depth = 99
    first.extra = "mine"
    second = compose_shipped(["model=xgboost"])
    assert second == compose_train(["model=xgboost"])
    assert second is not first
    assert OmegaConf.is_struct(second)
    assert "extra" not in second
    assert OmegaConf.get_type(second) is OmegaConf.get_type(compose_train())
    assert compose_shipped() == compose_train() != second
    with pytest.raises(LtrUserError, match=r"^cannot compose the config: .*hydra\.searchpath"):
        compose_shipped(["hydra.searchpath=[file:///tmp]"])
    with pytest.raises(LtrUserError, match=r"^cannot compose the shipped one: "):
        compose_shipped(["model=nosuch"], what="the shipped one")


def test_the_tag_round_trips_and_says_which_folders_are_gone(tmp_path: Path) -> None:
    mine = _wide(tmp_path / "mine")
    assert tags([]) == {}  # runs of the shipped configs carry no tag
    assert decode(tags([str(mine)])["ltr.config_dirs"]) == [str(mine)]
    assert decode(encode([str(mine), "pkg://x.conf"])) == [str(mine), "pkg://x.conf"]
    assert decode("not json") == decode('{"a": 1}') == []
    assert missing([str(mine), str(tmp_path / "gone"), "pkg://x.conf"]) == [str(tmp_path / "gone")]


def test_api_train_refuses_a_string_of_overrides() -> None:
    with pytest.raises(LtrUserError) as info:
        api.train("debug=default")  # type: ignore[arg-type]  # the mistake under test
    assert str(info.value) == "overrides must be a list of strings, e.g. ['debug=default'], not one string"
    with pytest.raises(LtrUserError, match=r"e.g. \['debug=default', 'model=rank_xendcg'\], not one string"):
        api.train("debug=default model=rank_xendcg")  # type: ignore[arg-type]
    with pytest.raises(LtrUserError, match=r"^overrides=\[3\] is not a list of strings$"):
        api.train([3])  # type: ignore[list-item]


def test_api_errors_name_the_python_arguments_not_the_options(tmp_path: Path) -> None:
    (tmp_path / "q").write_text("q1 0 d1 1\n")
    (tmp_path / "r").write_text("q1 Q0 d1 1 1.0 x\n")
    with pytest.raises(LtrUserError) as info:
        api.evaluate(qrels=tmp_path / "q")
    assert str(info.value) == "give either qrels and run, or data and scores"
    with pytest.raises(LtrUserError) as info:
        api.evaluate(qrels=tmp_path / "q", run=tmp_path / "r", k=[0])
    assert str(info.value) == "k values must be distinct integers from 1 to 1,000,000, got [0]"
    with pytest.raises(LtrUserError) as info:
        api.evaluate(qrels=tmp_path / "q", run=tmp_path / "r", measures=["ndgc"])
    assert str(info.value).startswith("measures 'ndgc' is not a measure; ")
    with pytest.raises(LtrUserError) as info:
        api.compare("a", "b", n_resamples=0)
    assert str(info.value) == (
        "n_resamples=0 is too few for a confidence interval or a p-value: give at least 100 (default 10000)"
    )
    with pytest.raises(LtrUserError) as info:
        api.load_run("a", tracking_uri=f"sqlite:///{tmp_path / 'none.db'}")
    assert str(info.value).endswith("; train a run first or pass tracking_uri=")


def test_the_renaming_keeps_the_error_s_type_and_leaves_other_options() -> None:
    from ltr.api import _python_names
    from ltr.errors import DataError

    @_python_names(metric="metrics")
    def f(*, split: str = "test", force: bool = False, metrics: tuple[str, ...] = (), doc_id_column: str = "") -> None:
        raise DataError(
            f"--split={split!r} is bad; pass --force, --metric, --doc-id-column or --per-query; "
            "not /a--force or x--split"
        )

    with pytest.raises(DataError) as info:
        f(split="tset")
    assert str(info.value) == (
        "split='tset' is bad; pass force=True, metrics, doc_id_column or --per-query; not /a--force or x--split"
    )


def test_ltr_train_records_its_config_dir_and_search_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The folders ``ltr train`` tags a run with, from the sources Hydra lists for the command
    line's ``--config-dir`` and ``hydra.searchpath`` (``--cfg hydra`` prints them; no run)."""
    from omegaconf import OmegaConf

    from ltr.cli.main import main
    from ltr.cli.train import config_dir_tags

    mine, more = _wide(tmp_path / "mine"), _wide(tmp_path / "more")
    assert main(["train", "--config-dir", str(mine), f"hydra.searchpath=['file://{more}']", "model=wide", "--cfg", "hydra"]) == 0
    hydra_cfg = OmegaConf.create(capsys.readouterr().out).hydra
    assert config_dir_tags(hydra_cfg) == {"ltr.config_dirs": encode([str(mine), str(more)])}
    assert main(["train", "--cfg", "hydra"]) == 0
    assert config_dir_tags(OmegaConf.create(capsys.readouterr().out).hydra) == {}

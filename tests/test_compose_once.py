"""``ltr train`` composes a single run's config once (:mod:`ltr.cli.support.compose_once`), with the same
outcome as Hydra's own two compositions: the same one-line error and exit code, the same config
handed to the job. Cross-checked against Hydra's ``get_mode`` itself, in this process."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import hydra
import pytest
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra._internal.hydra import Hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

import ltr.cli.train  # noqa: F401  (installs compose_once, as `ltr train` does)
from ltr.cli.main import main
from ltr.config.compose import CONF_DIR

HYDRAS = {"compose once": Hydra.get_mode, "Hydra's": Hydra.get_mode.original}  # type: ignore[attr-defined]


@pytest.fixture
def compositions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The run mode of each config Hydra composes in this test (a real composition, counted)."""
    seen: list[str] = []
    compose = ConfigLoaderImpl.load_configuration

    def counted(self: ConfigLoaderImpl, *args: Any, **kwargs: Any) -> DictConfig:
        seen.append(str(kwargs.get("run_mode")))
        return compose(self, *args, **kwargs)

    monkeypatch.setattr(ConfigLoaderImpl, "load_configuration", counted)
    return seen


def _train(argv: list[str], get_mode: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with monkeypatch.context() as m:
        m.setattr(Hydra, "get_mode", get_mode)
        code = main(["train", *argv])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "composed"),
    [
        (["model.num_leafs=3"], 1),  # an unknown key: Hydra's composition fails
        (["+model.num_leafs=7"], 1),  # an added key: ltr's check after composing
        (["eval.k=[0]"], 1),  # a bad value: ltr.experiment.checks, in the job
        (["model.num_leaves=7,15"], 2),  # a sweep without -m: Hydra's get_mode composes (a config may allow it)
    ],
    ids=["unknown-key", "plus-key", "bad-value", "sweep-without-m"],
)
def test_a_config_error_composes_once_and_says_what_hydra_says(
    argv: list[str], composed: int, compositions: list[str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    outcomes = {}
    for name, get_mode in HYDRAS.items():
        compositions.clear()
        outcomes[name] = _train(argv, get_mode, monkeypatch, capsys)
        assert len(compositions) == (composed if name == "compose once" else 2), (name, compositions)
    assert outcomes["compose once"] == outcomes["Hydra's"]
    code, err = outcomes["compose once"]
    assert code == 2
    assert err.startswith("ltr: error: "), err
    assert len(err.splitlines()) == 1, err
    assert not (tmp_path / "mlflow.db").exists()


def _composed(argv: list[str], get_mode: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The config (Hydra's node included) a ``@hydra.main`` app of ``ltr/conf/train.yaml`` gets."""
    got: list[str] = []

    @hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="train")
    def app(cfg: DictConfig) -> None:
        whole = OmegaConf.create({"job": cfg, "hydra": HydraConfig.get()})
        got.append(OmegaConf.to_yaml(whole))

    with monkeypatch.context() as m:
        m.setattr(Hydra, "get_mode", get_mode)
        m.setattr(sys, "argv", ["ltr train", *argv, f"hydra.run.dir={tmp_path / 'run'}"])
        app()
    (text,) = got
    return text.replace(str(Path.cwd()), "<cwd>")


@pytest.mark.parametrize("argv", [["tracking=none"], ["hydra.mode=RUN", "model.num_leaves=7"]], ids=["mode-unset", "mode-run"])
def test_a_run_gets_the_config_hydra_composes_twice_after_one_composition(
    argv: list[str], compositions: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    ours = _composed(argv, HYDRAS["compose once"], tmp_path, monkeypatch)
    assert compositions == ["RunMode.RUN"]
    assert ours == _composed(argv, HYDRAS["Hydra's"], tmp_path, monkeypatch)
    assert "hydra.mode=RUN" in ours
    assert "mode: RUN" in ours

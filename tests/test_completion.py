"""Shell completion of ``ltr`` (``ltr completion bash``; ``ltr train -sc install=bash`` prints the
same): verbs, and ``ltr train``'s groups, options and keys from Hydra's engine, no ``*_schema``."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ltr.cli.main import VERBS, main
from ltr.config.completion import train_completions


def query(capsys: pytest.CaptureFixture[str], line: str) -> list[str]:
    assert main(["completion", "query", line]) == 0
    return capsys.readouterr().out.split()


def test_train_mod_offers_the_group_and_its_keys(capsys: pytest.CaptureFixture[str]) -> None:
    assert query(capsys, "ltr train mod") == ["model.", "model="]
    assert query(capsys, ".venv/bin/ltr train seed=3 model=") == ["model=catboost", "model=lambdarank", "model=pointwise", "model=rank_xendcg", "model=xgboost"]
    assert "model.num_leaves=" in query(capsys, "ltr train model.num_")
    assert query(capsys, "ltr train tr") == ["tracking.", "tracking=", "trainer.", "trainer="]


@pytest.mark.parametrize("line", ["ltr train ", "ltr train model=", "ltr train data=", "ltr train tra", "ltr train +", "ltr train ~"])
def test_internal_schemas_are_never_offered(capsys: pytest.CaptureFixture[str], line: str) -> None:
    found = query(capsys, line)
    assert found
    assert not [c for c in found if "_schema" in c]


def test_lists_are_offered_whole_and_hydra_internals_never(capsys: pytest.CaptureFixture[str]) -> None:
    """A list is set whole (``eval.k=[5,10]``): ``eval.k=``, not Hydra's ``eval.k.`` (whose
    element keys lead nowhere for an empty list such as ``sweep.constraints``); the sweeper's
    ``_target_`` keys are Hydra's, not the user's."""
    assert query(capsys, "ltr train sweep.") == ["sweep.baseline=", "sweep.constraints=", "sweep.directions="]
    assert query(capsys, "ltr train eval.k") == ["eval.k="]
    assert "eval.strata=" in query(capsys, "ltr train eval.")
    assert "eval.clicks." in query(capsys, "ltr train eval.")  # a section stays a section
    found = query(capsys, "ltr train hparams_search=optuna hydra.sweeper.")
    assert "hydra.sweeper.n_trials=" in found
    assert not [c for c in found if "._" in c]
    assert query(capsys, "ltr train hparams_search=optuna hydra.sweeper._") == []


@pytest.mark.parametrize("line", ["ltr train ", "ltr train seed=3 model=", "ltr train model=pointwise model.num_", "ltr train eval."])
def test_one_repository_completes_as_hydras_loader_does(line: str) -> None:
    # Reference: Hydra's plugin on its own loader (a repository per question), schemas filtered.
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.plugins.completion_plugin import DefaultCompletionPlugin

    from ltr.config.completion import as_list_key, is_internal
    from ltr.config.compose import CONF_DIR
    from ltr.config.schema import list_keys
    from ltr.config.store import register_configs

    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        plugin = DefaultCompletionPlugin(GlobalHydra.instance().config_loader())
        found = plugin._query(config_name="train", line=line.split(" ", 2)[2])
        reference = sorted({as_list_key(c, list_keys()) for c in found if not is_internal(c)})
    assert reference
    assert train_completions(line) == reference


def test_hydra_sc_install_prints_the_ltr_script(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion", "bash"]) == 0
    script = capsys.readouterr().out
    assert "complete -o nospace -o default -F _ltr_complete ltr" in script
    assert " ".join(VERBS) in script
    assert main(["train", "-sc", "install=bash"]) == 0
    assert capsys.readouterr().out == script
    assert main(["train", "-sc", "query=bash"]) == 2
    assert "ltr completion bash" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_bash_completes_through_the_script(tmp_path: Path) -> None:
    ltr = Path(sys.executable).parent / "ltr"
    if not ltr.exists():
        pytest.skip("no ltr console script beside this interpreter")
    script = subprocess.run([str(ltr), "completion", "bash"], check=True, capture_output=True, text=True, timeout=120).stdout
    (tmp_path / "ltr.bash").write_text(script)

    def complete(*words: str) -> list[str]:
        line = " ".join(words)
        probe = (
            f"source {tmp_path / 'ltr.bash'}\n"
            f"COMP_WORDS=({' '.join(words)}); COMP_CWORD={len(words) - 1}\n"
            f"COMP_LINE='{line}'; COMP_POINT={len(line)}\n"
            "_ltr_complete; printf '%s\\n' \"${COMPREPLY[@]}\"\n"
        )
        out = subprocess.run(["bash", "-c", probe], check=True, capture_output=True, text=True, timeout=120).stdout
        return sorted(out.split())

    assert complete(str(ltr), "tr") == ["train"]
    assert complete(str(ltr), "train", "mod") == ["model.", "model="]
    assert complete(str(ltr), "train", "model=rank") == ["model=rank_xendcg"]

"""Start-up pays only for what the command uses (README "Start-up"): the light paths of ``ltr``
never import the heavy libraries, checked in a fresh interpreter per path (not timed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

#: What no light path may import: the training, tracking and plotting libraries.
NEVER = ("lightgbm", "mlflow", "sklearn", "dask", "distributed", "matplotlib", "optuna", "sqlalchemy", "alembic")
#: What ``ltr train``'s light paths leave out too: the data and metric libraries of a run.
NOT_FOR_TRAIN = (*NEVER, "scipy", "pandas", "pyarrow", "numba", "joblib")
#: The run's config rules: the one pass and each concern's rules.
RULES = ("ltr.experiment.checks", "ltr.config.rules", *(f"ltr.{part}.config_rules" for part in ("metrics", "training", "data", "rerank")))
#: What ``ltr train --help`` and an error Hydra finds while composing leave out too: numpy, the run's
#: config rules (which need it) and the tracking store's network and database modules.
NOT_FOR_COMPOSE = (*NOT_FOR_TRAIN, "numpy", *RULES, "ltr.tracking.store")
#: ``ltr --help`` only prints: not even Hydra.
NOT_FOR_USAGE = (*NOT_FOR_COMPOSE, "hydra", "omegaconf")
#: ``ltr evaluate`` never composes a Hydra config, its JSON and terminal output make no DataFrame
#: (pandas, pyarrow: ``--per-query``), and a small input runs its kernels interpreted: no numba
#: (nor the scipy numba's import loads).
NOT_FOR_EVALUATE = (*NEVER, "hydra", "pandas", "pyarrow", "numba", "llvmlite", "scipy")

PROBE = """
import sys
from ltr.cli.main import main
codes = []
for argv in {argvs!r}:
    try:
        codes.append(main(argv))
    except SystemExit as exc:
        codes.append(exc.code)
sys.stdout.flush()
print("exit", ",".join(map(str, codes)), "heavy:" + ",".join(sorted(m for m in {heavy!r} if m in sys.modules)), file=sys.stderr)
"""


def _probe(argvs: list[list[str]], heavy: tuple[str, ...], cwd: Path) -> tuple[list[int], str, str, str]:
    """Run ``ltr ARGV`` for each of ARGVS, in order, through the dispatcher in one fresh
    interpreter: (their exit codes, the heavy modules imported by then, the other stderr, stdout)."""
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(argvs=argvs, heavy=heavy)],
        capture_output=True, text=True, timeout=300, cwd=cwd,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    *rest, last = out.stderr.strip().splitlines()
    _, codes, heavy_list = last.split(" ", 2)
    return [int(c) for c in codes.split(",")], heavy_list.removeprefix("heavy:"), "\n".join(rest), out.stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    ("argv", "code", "says", "never"),
    [
        (["--help"], 0, "", NOT_FOR_USAGE),
        (["train", "--help"], 0, "", NOT_FOR_COMPOSE),
        (["train", "model.num_leafs=3"], 2, "ltr: error: model.num_leafs is not a config key; did you mean model.num_leaves?", NOT_FOR_COMPOSE),
        (["train", "eval.k=[0]"], 2, "ltr: error: eval.k=[0]: 0 is out of range", NOT_FOR_TRAIN),
        (["train", "fit.early_stopping_metric=ndcg_at_7"], 2, "ltr: error: fit.early_stopping_metric='ndcg_at_7'", NOT_FOR_TRAIN),
    ],
)
def test_help_and_config_errors_import_no_heavy_library(
    argv: list[str], code: int, says: str, never: tuple[str, ...], tmp_path: Path
) -> None:
    got, heavy, stderr, _ = _probe([argv], never, tmp_path)
    assert got == [code]
    assert heavy == "", f"ltr {' '.join(argv)} imports {heavy}"
    assert stderr.startswith(says), stderr
    assert len(stderr.splitlines()) == (1 if says else 0), stderr
    assert not (tmp_path / "mlflow.db").exists()  # refused before any store or run


@pytest.mark.slow
def test_a_config_error_in_model_params_still_names_the_lightgbm_parameter(tmp_path: Path) -> None:
    """The one config rule that needs LightGBM (its parameter names) still holds."""
    got, _, stderr, _ = _probe([["train", "+model.params.num_leafz=3"]], NEVER[1:], tmp_path)
    assert got == [2]
    assert stderr.startswith("ltr: error: model.params.num_leafz is not a LightGBM parameter; did you mean")


@pytest.mark.slow
@pytest.mark.parametrize("output", [["--json"], []], ids=["json", "terminal"])
def test_evaluate_imports_no_training_tracking_or_table_library(output: list[str], tmp_path: Path) -> None:
    (tmp_path / "qrels").write_text("q1 0 d1 1\nq1 0 d2 0\n")
    (tmp_path / "run").write_text("q1 Q0 d1 1 2.0 x\nq1 Q0 d2 2 1.0 x\n")
    argv = ["evaluate", "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"), *output]
    got, heavy, _, _ = _probe([argv], NOT_FOR_EVALUATE, tmp_path)
    assert got == [0]
    assert heavy == "", f"ltr evaluate imports {heavy}"


#: Verb -> what its ``--help`` and argument errors leave out. The verbs that read runs, data or
#: click logs parse their arguments before importing any of their work.
PARSE_ONLY = {
    "compare": NOT_FOR_USAGE,
    "predict": NOT_FOR_USAGE,
    "explain": NOT_FOR_USAGE,
    "promote": NOT_FOR_USAGE,
    "rerun": NOT_FOR_USAGE,
    "abtest": NOT_FOR_USAGE,
    "ope": NOT_FOR_USAGE,
    "calibrate": NOT_FOR_USAGE,
    "labels": NOT_FOR_USAGE,
    "exposure": NOT_FOR_USAGE,
    "cache": NOT_FOR_USAGE,
    "evaluate": (*NEVER, "hydra", "omegaconf", "numba", "scipy", "pandas", "pyarrow"),
    "partition": NOT_FOR_USAGE,
    "data": NOT_FOR_USAGE,
}


@pytest.mark.slow
@pytest.mark.parametrize("verb", sorted(PARSE_ONLY))
def test_every_verbs_help_and_argument_errors_import_none_of_its_work(verb: str, tmp_path: Path) -> None:
    codes, heavy, stderr, stdout = _probe([[verb, "--help"], [verb, "--no-such-flag"]], PARSE_ONLY[verb], tmp_path)
    assert codes == [0, 2], stderr
    assert heavy == "", f"ltr {verb} --help imports {heavy}"
    assert len(stderr.splitlines()) == 1, stderr
    assert stderr.startswith(f"ltr: error: ltr {verb}: "), stderr
    assert f"usage: ltr {verb}" in stdout
    assert not list(tmp_path.iterdir())  # no store, no cache, no output


def test_partitions_light_parser_offers_the_readers_formats_and_the_configs_defaults() -> None:
    """``ltr partition``'s parser reads no reader nor schema (numpy, pyarrow, OmegaConf): its
    formats and defaults are taken from the light config modules and must stay those of
    ``ltr train`` (the readers' formats, the split's fractions, the experiment's seed)."""
    from ltr.cli.partition import build_parser
    from ltr.config.groups.data import SplitConfig
    from ltr.config.schema import TrainConfig
    from ltr.data.formats.readers import FORMATS

    actions = {a.dest: a for a in build_parser()._actions}
    assert list(actions["format"].choices or []) == list(FORMATS)
    assert actions["format"].default == "auto"
    assert actions["seed"].default == TrainConfig.seed == 42
    assert (actions["valid_fraction"].default, actions["test_fraction"].default) == (
        SplitConfig.valid_fraction, SplitConfig.test_fraction,
    )  # fmt: skip


def test_rerun_without_a_run_asks_for_the_run_only(capsys: pytest.CaptureFixture[str]) -> None:
    from ltr.cli.main import main

    assert main(["rerun"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ltr: error: ltr rerun: the following arguments are required: RUN (")  # overrides are optional
    assert len(err.splitlines()) == 1

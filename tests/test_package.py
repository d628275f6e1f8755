"""The wheel works anywhere: built with ``pip wheel``, installed into a fresh venv outside the
repository, run from an empty folder (``ltr train``, ``ltr evaluate``, the Python API's
``train``, ``load_run`` and ``predict``).

The fresh venv gets the wheel alone (``--no-deps``); its dependencies come from this
interpreter's site-packages through a ``.pth`` file that lists that directory (installing them
from the registry takes minutes). A directory named in a ``.pth`` is added to ``sys.path`` after
the venv's own, and its own ``.pth`` files (the editable install's finder) are not run, so the
``ltr`` imported is the wheel's: asserted. Numba's JIT is off in the venv (``NUMBA_DISABLE_JIT``):
its kernels would compile from scratch at the new path (minutes); the metrics are the same.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from importlib.metadata import version
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CONF = REPO / "ltr" / "conf"


def shipped_yaml() -> set[str]:
    """``ltr/conf/**/*.yaml`` of the repository, as wheel paths, without personal settings."""
    return {
        p.relative_to(REPO).as_posix()
        for p in CONF.rglob("*.yaml")
        if p.parent.name != "local"
    }


#: What a copy of the repository for a build leaves out: the environment, caches, runs.
_NOT_SOURCE = shutil.ignore_patterns(
    ".git", ".venv", "__pycache__", "*.pyc", ".hypothesis", ".pytest_cache", ".mypy_cache",
    ".ruff_cache", "*.egg-info", "build", "dist", "site", "mlflow.db*", "mlartifacts", "mlruns",
    "outputs", "multirun", ".ltr_cache",
)  # fmt: skip


def build_release(tmp: Path) -> tuple[Path, Path]:
    """(wheel, sdist) as a release is built: ``python -m build`` on a copy of the repository
    (which stays clean of build/), without build isolation when this venv's setuptools meets the
    build requirement (seconds; in isolation pip fetches setuptools from the registry)."""
    src = tmp / "src"
    shutil.copytree(REPO, src, ignore=_NOT_SOURCE)
    major = int(version("setuptools").split(".")[0])
    no_isolation = ["--no-isolation"] if major >= 77 else []
    subprocess.run(
        [sys.executable, "-m", "build", *no_isolation, "--sdist", "--wheel", "-o", str(tmp / "dist"), str(src)],
        cwd=tmp, check=True, timeout=300, capture_output=True,
    )  # fmt: skip
    (wheel,) = (tmp / "dist").glob("ltr_harness-*.whl")
    (sdist,) = (tmp / "dist").glob("ltr_harness-*.tar.gz")
    return wheel, sdist


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The (wheel, sdist) of this module's tests, built once."""
    tmp = tmp_path_factory.mktemp("release")
    assert REPO not in tmp.parents
    return build_release(tmp)


def make_venv(tmp: Path, wheel: Path) -> Path:
    """A fresh venv with the wheel alone; the dependencies through a ``.pth`` (module docstring)."""
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", str(wheel)],
        check=True, timeout=300, capture_output=True,
    )  # fmt: skip
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True, timeout=60,
    ).stdout.strip()  # fmt: skip
    (Path(purelib) / "_ltr_test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv


@pytest.mark.slow
def test_the_wheel_works_from_an_empty_folder_outside_the_repo(
    tmp_path_factory: pytest.TempPathFactory, release: tuple[Path, Path]
) -> None:
    tmp = tmp_path_factory.mktemp("wheel")
    wheel = release[0]
    names = set(zipfile.ZipFile(wheel).namelist())
    assert shipped_yaml() <= names, f"YAML missing from the wheel: {sorted(shipped_yaml() - names)}"
    assert not [n for n in names if n.startswith("ltr/conf/local/") and n.endswith(".yaml")]
    assert "ltr/api.py" in names

    venv = make_venv(tmp, wheel)
    folder = tmp / "empty"
    folder.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "LTR_TRACKING_URI", "MLFLOW_TRACKING_URI"}}
    env["NUMBA_DISABLE_JIT"] = "1"

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(list(argv), cwd=folder, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{argv}: exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        return done

    ltr = str(venv / "bin" / "ltr")
    trained = run(ltr, "train", "debug=default", "fit.show_progress=false")
    assert "MLflow run " in trained.stdout
    assert (folder / "mlflow.db").is_file()  # the store lands in the folder the command ran in

    # q1: labels by rank 0, 2, 1 (linear gain): DCG@3 = 2/log2(3) + 1/2, IDCG@3 = 2 + 1/log2(3)
    (folder / "qrels").write_text("q1 0 a 0\nq1 0 b 2\nq1 0 c 1\n")
    (folder / "run").write_text("q1 Q0 a 1 3 x\nq1 Q0 b 2 2 x\nq1 Q0 c 3 1 x\n")
    evaluated = run(ltr, "evaluate", "--qrels", "qrels", "--run", "run", "--k", "3", "--gain", "linear", "--json")
    from math import log2

    expected = (2 / log2(3) + 1 / 2) / (2 + 1 / log2(3))
    assert json.loads(evaluated.stdout)["ndcg_at_3"] == pytest.approx(expected, abs=1e-12)

    # the Python API, and a personal config directory layered on the packaged configs
    (folder / "myconf" / "local").mkdir(parents=True)
    (folder / "myconf" / "local" / "default.yaml").write_text("# @package _global_\nfit:\n  num_boost_round: 3\n")
    script = """
import json, sys
import ltr
from ltr import api
out = api.train(["debug=default", "fit.show_progress=false", "tracking.run_name=from-python"], config_dir="myconf")
logged = api.load_run("from-python")
predicted = api.predict(logged, split="test")
print(json.dumps({"ltr": ltr.__file__, "best_iteration": out.best_iteration, "run_id": out.run_id,
                  "logged": logged.run_id, "test": out.metrics["test/ndcg_at_10"],
                  "logged_test": logged.metrics["test/ndcg_at_10"],
                  "predicted_test": predicted.summary["ndcg_at_10"]}))
"""
    result = json.loads(run(str(venv / "bin" / "python"), "-c", script).stdout.strip().splitlines()[-1])
    assert Path(result["ltr"]).resolve().is_relative_to(venv.resolve())  # the wheel's ltr, not the repo's
    assert 1 <= result["best_iteration"] <= 3  # myconf/local/default.yaml's num_boost_round
    assert result["logged"] == result["run_id"]
    assert result["logged_test"] == result["test"]
    assert result["predicted_test"] == result["test"]  # the logged model scores its split as the run did

    # the version, from the wheel's metadata and the command
    shown = run(ltr, "--version").stdout.strip()
    assert shown.startswith(f"ltr {result_version(venv)} (ltr-harness; Python ")
    assert "lightgbm " in shown
    assert "mlflow " in shown

    # a user's script type-checks against the wheel's annotations (py.typed), not as Any
    (folder / "use_api.py").write_text(
        "from ltr import api\n"
        "out = api.train(['debug=default'])\n"
        "reveal_type(out.metrics)\n"
        "reveal_type(api.evaluate)\n"
        "wrong: int = out.run_id\n"
    )
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--follow-imports=silent",
         "--python-executable", str(venv / "bin" / "python"), "use_api.py"],
        cwd=folder, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    out = checked.stdout
    assert re.search(r'Revealed type is "(builtins\.)?dict\[(builtins\.)?str, (builtins\.)?float\]"', out), out
    assert re.search(r'Revealed type is "def \(\*, qrels: .*\) -> ltr\.experiment\.external\.RankingEvaluation"', out), out
    assert re.search(r'use_api\.py:5: error: Incompatible types in assignment \(expression has type "str( \| None)?", variable has type "int"\)', out), out
    assert "missing library stubs or py.typed marker" not in checked.stdout
    assert checked.stdout.count("error:") == 1, checked.stdout  # only the deliberate mistake


def result_version(venv: Path) -> str:
    """The version the wheel installed in ``venv`` declares in its metadata."""
    return subprocess.run(
        [str(venv / "bin" / "python"), "-c", "from importlib.metadata import version; print(version('ltr-harness'))"],
        check=True, capture_output=True, text=True, timeout=60,
    ).stdout.strip()  # fmt: skip


@pytest.mark.slow
def test_release_artifacts_pass_twine_and_carry_their_metadata(release: tuple[Path, Path]) -> None:
    wheel, sdist = release
    checked = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count("PASSED") == 2

    import ltr

    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        info = f"ltr_harness-{ltr.__version__}.dist-info"
        metadata = archive.read(f"{info}/METADATA").decode()
    assert "ltr/py.typed" in names
    assert f"{info}/licenses/LICENSE" in names
    fields = metadata.split("\n\n", 1)[0].splitlines()
    assert "Name: ltr-harness" in fields
    assert f"Version: {ltr.__version__}" in fields
    assert "License-Expression: Apache-2.0" in fields
    assert "Requires-Python: >=3.11" in fields
    assert "Typing :: Typed" in metadata
    assert any(f.startswith("Project-URL: Documentation, ") for f in fields)
    assert any(f.startswith("Author: ") for f in fields)
    assert "ltr = ltr.cli.main:run" in zipfile.ZipFile(wheel).read(f"{info}/entry_points.txt").decode()


@pytest.mark.slow
def test_the_sdist_holds_the_tests_and_they_run_from_it(tmp_path: Path, release: tuple[Path, Path]) -> None:
    sdist = release[1]
    with tarfile.open(sdist) as archive:
        archive.extractall(tmp_path, filter="data")
    (root,) = tmp_path.iterdir()
    shipped = {p.relative_to(root).as_posix() for p in (root / "tests").rglob("*.py")}
    tracked = {p.relative_to(REPO).as_posix() for p in (REPO / "tests").rglob("*.py") if "__pycache__" not in p.parts}
    assert tracked <= shipped, f"test files missing from the sdist: {sorted(tracked - shipped)}"
    for name in ("LICENSE", "Makefile", "mkdocs.yml", "tests/conftest.py", "docs/index.md", "ltr/py.typed"):
        assert (root / name).is_file(), name
    assert not list(root.rglob("__pycache__"))

    # the unpacked sdist's own tests, on its own ltr (its configs and schema): the unit tests
    # that need no compiled kernel (the whole unit tier: `make test-sdist`)
    env = {k: v for k, v in os.environ.items() if k not in {"LTR_TRACKING_URI", "MLFLOW_TRACKING_URI"}}
    env["PYTHONPATH"] = str(root)
    env["LTR_TEST_BUDGET"] = "dev"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-m", "unit", "-q", "-p", "no:cacheprovider", "-n", "0",
         "tests/test_config_schema.py", "tests/test_sweeper_units.py",
         "-o", "addopts=--strict-markers"],
        cwd=root, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    passed = re.search(r"(\d+) passed", done.stdout)
    assert passed is not None
    assert int(passed.group(1)) >= 20
    imported = subprocess.run(
        [sys.executable, "-c", "import ltr; print(ltr.__file__)"], cwd=root, env=env, capture_output=True, text=True, timeout=60
    ).stdout.strip()  # fmt: skip
    assert Path(imported).resolve().is_relative_to(root.resolve())  # the tests ran on the sdist's ltr

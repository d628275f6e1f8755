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
import shutil
import subprocess
import sys
import sysconfig
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


def build_wheel(tmp: Path) -> Path:
    """``pip wheel --no-deps`` of a copy of the package (the repository stays clean of build/)."""
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    shutil.copytree(REPO / "ltr", src / "ltr", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    # this venv's setuptools builds it when it meets the build requirement (seconds); else pip
    # builds in isolation, fetching setuptools from the registry (half a minute)
    major, minor = (int(x) for x in version("setuptools").split(".")[:2])
    no_isolation = ["--no-build-isolation"] if (major, minor) >= (70, 1) else []
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", *no_isolation, "-q", "-w", str(tmp / "dist"), "./src"],
        cwd=tmp, check=True, timeout=300, capture_output=True,
    )  # fmt: skip
    (wheel,) = (tmp / "dist").glob("ltr-*.whl")
    return wheel


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
def test_the_wheel_works_from_an_empty_folder_outside_the_repo(tmp_path_factory: pytest.TempPathFactory) -> None:
    tmp = tmp_path_factory.mktemp("wheel")
    assert REPO not in tmp.parents
    wheel = build_wheel(tmp)
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

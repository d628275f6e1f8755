"""The wheel works anywhere: built with ``pip wheel``, installed into a fresh venv outside the
repository, run from an empty folder (``ltr train``, ``ltr evaluate``, the Python API's
``train``, ``load_run`` and ``predict``).

The fresh venv gets the wheel alone (``--no-deps``); its dependencies come from this
interpreter's site-packages through a ``.pth`` file that lists that directory (installing them
from the registry takes minutes). A directory named in a ``.pth`` is added to ``sys.path`` after
the venv's own, and its own ``.pth`` files (the editable install's finder) are not run, so the
``ltr`` imported is the wheel's: asserted. The wheel carries its kernels' machine code
(:mod:`ltr.compiled.precompiled`, built for this interpreter's numba): the first command loads it, prints
no compile line, no later command compiles, and the metrics are the bits of the kernels
compiled for this machine's CPU.
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
from typing import Any

import pytest

from ltr.compiled.kernel_signatures import MESSAGE

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
    """A fresh venv with the wheel alone; the dependencies through a ``.pth`` (module docstring).
    pip compiles no bytecode (``--no-compile``): Python writes it for the modules it imports."""
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-compile", "-q", str(wheel)],
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
    dropped = {"PYTHONPATH", "LTR_TRACKING_URI", "MLFLOW_TRACKING_URI", "NUMBA_CACHE_DIR", "NUMBA_DISABLE_JIT"}
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env["LTR_CACHE_DIR"] = str(tmp / "ltr-cache")

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(list(argv), cwd=folder, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{argv}: exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        return done

    ltr = str(venv / "bin" / "ltr")
    assert numba_cache(venv) == {}  # no numba cache yet
    trained = run(ltr, "train", "debug=default", "fit.show_progress=false")
    assert "MLflow run " in trained.stdout
    assert (folder / "mlflow.db").is_file()  # the store lands in the folder the command ran in
    assert MESSAGE not in trained.stderr  # the shipped machine code was loaded: nothing compiled
    installed = numba_cache(venv)
    assert installed, "the shipped kernels were not put into numba's cache"

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
    api_run = run(str(venv / "bin" / "python"), "-c", API_SCRIPT)
    assert MESSAGE not in api_run.stderr
    result = json.loads(api_run.stdout.strip().splitlines()[-1])
    assert result["kernel_bits"] == result["interpreted_bits"]  # the shipped code's values, bit for bit
    # the same run with this checkout's ltr (its kernels compiled for this CPU), in this process,
    # where it is imported and its kernels loaded: the same bits
    here = tmp / "here"
    shutil.copytree(folder / "myconf", here / "myconf")
    reference = api_script_outcome(here)
    assert not Path(reference["ltr"]).resolve().is_relative_to(venv.resolve())
    assert len(result["metrics"]) > 50
    differ = {k: (v, reference["metrics"].get(k)) for k, v in result["metrics"].items() if v != reference["metrics"].get(k)}
    assert result["metrics"].keys() == reference["metrics"].keys()
    assert differ == {}  # every metric, every bit
    assert result["kernel_bits"] == reference["kernel_bits"]
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
    # mypy follows ltr's imports (and numpy's, whose types its signatures show) as a user's run
    # does, and reads the other packages as Any: they are not the wheel's annotations, and
    # following them (MLflow, Dask, IPython, ...: 3,000 modules) is five sixths of its time
    # (the stubs of pandas and matplotlib too, which mypy follows unless told: a third of its time);
    # no cache is written (one run)
    (tmp / "mypy.ini").write_text(
        "[mypy]\n[mypy-ltr,ltr.*,numpy,numpy.*]\nfollow_imports = silent\n"
        "[mypy-pandas,pandas.*,matplotlib,matplotlib.*]\nfollow_imports_for_stubs = True\n"
    )
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(tmp / "mypy.ini"), "--strict", "--no-incremental",
         "--cache-dir", os.devnull, "--follow-imports=skip", "--python-executable", str(venv / "bin" / "python"), "use_api.py"],
        cwd=folder, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    out = checked.stdout
    assert re.search(r'Revealed type is "(builtins\.)?dict\[(builtins\.)?str, (builtins\.)?float\]"', out), out
    assert re.search(r'Revealed type is "def \(\*, qrels: .*\) -> ltr\.experiment\.external\.RankingEvaluation"', out), out
    assert re.search(r'use_api\.py:5: error: Incompatible types in assignment \(expression has type "str( \| None)?", variable has type "int"\)', out), out
    assert "missing library stubs or py.typed marker" not in checked.stdout
    assert checked.stdout.count("error:") == 1, checked.stdout  # only the deliberate mistake

    # every later process (ltr evaluate, the API's training run, prediction) compiled nothing:
    # numba's cache is as the first command left it
    assert numba_cache(venv) == installed


#: ``python -c API_SCRIPT`` in a folder with ``myconf/``: a run through the API, its model loaded
#: back and its test split predicted; then the metric kernel's values on generated queries with
#: ties, compiled and interpreted (one source; the interpreted values are the reference). One
#: JSON line; the run's metrics but its timings, as ``repr`` (every bit). Executed as a module
#: (not ``__main__``), it defines ``outcome()``, that line's dict (:func:`api_script_outcome`).
API_SCRIPT = """
import hashlib, json
import numpy as np
import ltr
from ltr import api
from ltr.compiled import kernels
from ltr.experiment.rerun import TIMING_SUFFIX
from ltr.metrics import MetricConventions
from ltr.metrics.table import measure_arrays

rng = np.random.default_rng(44)
offsets = np.concatenate([[0], np.cumsum(rng.integers(1, 40, 300))])
labels = rng.integers(0, 5, offsets[-1])
scores = np.round(rng.normal(size=offsets[-1]), 1)  # many ties


def bits(way):
    digest = hashlib.sha256()
    with kernels.forced(way):
        for ties in ("average", "stable", "pessimistic", "optimistic"):
            m = measure_arrays(labels, scores, offsets, ks=(1, 3, 10), conventions=MetricConventions(ties=ties))
            for name in ("idcg", "dcg", "ndcg", "err", "precision", "rr", "rr_at", "recall", "ap_at", "ap"):
                digest.update(getattr(m, name).tobytes())
    return digest.hexdigest()


def outcome():
    out = api.train(["debug=default", "fit.show_progress=false", "tracking.run_name=from-python"], config_dir="myconf")
    logged = api.load_run("from-python")
    predicted = api.predict(logged, split="test")
    return {"ltr": ltr.__file__, "best_iteration": out.best_iteration, "run_id": out.run_id,
            "logged": logged.run_id, "test": out.metrics["test/ndcg_at_10"],
            "logged_test": logged.metrics["test/ndcg_at_10"],
            "predicted_test": predicted.summary["ndcg_at_10"],
            "metrics": {k: repr(v) for k, v in sorted(out.metrics.items()) if not k.endswith(TIMING_SUFFIX)},
            "kernel_bits": bits("compiled"), "interpreted_bits": bits("interpreted")}


if __name__ == "__main__":
    print(json.dumps(outcome()))
"""


def api_script_outcome(folder: Path) -> dict[str, Any]:
    """What ``python -c API_SCRIPT`` prints in ``folder``, computed in this process (its ``ltr``,
    imported, its kernels compiled for this CPU: numba's JIT is on), as JSON carries it."""
    from numba import config as numba_config

    assert not getattr(numba_config, "DISABLE_JIT", False)  # the compiled kernels, not their interpreted source
    scope: dict[str, Any] = {"__name__": "api_script"}
    exec(compile(API_SCRIPT, "API_SCRIPT", "exec"), scope)
    cwd = Path.cwd()
    os.chdir(folder)
    try:
        found: dict[str, Any] = json.loads(json.dumps(scope["outcome"]()))
    finally:
        os.chdir(cwd)
    return found


def numba_cache(venv: Path) -> dict[str, int]:
    """numba's cache files of the venv's ``ltr`` (beside its sources, not the shipped ones in
    ``ltr/_precompiled``) with their mtimes (ns)."""
    return {
        str(p): p.stat().st_mtime_ns
        for p in venv.rglob("*")
        if p.suffix in {".nbi", ".nbc"} and "_precompiled" not in p.parts
    }


def result_version(venv: Path) -> str:
    """The version the wheel installed in ``venv`` declares in its metadata."""
    return subprocess.run(
        [str(venv / "bin" / "python"), "-c", "from importlib.metadata import version; print(version('ltr-harness'))"],
        check=True, capture_output=True, text=True, timeout=60,
    ).stdout.strip()  # fmt: skip


#: ``python -c GUARDS SHIPPED CACHE``: :func:`ltr.compiled.precompiled.install` from the folder ``SHIPPED``
#: (a copy of a wheel's ``ltr/_precompiled``) into numba's cache ``CACHE``, with the manifest
#: saying another numba, then another source for the first kernel module, then as built. One
#: JSON line: per case, the modules installed and the modules numba's cache then lacks.
GUARDS = """
import json, sys
from pathlib import Path
import ltr.compiled.precompiled as pc
from ltr.compiled.kernel_signatures import SIGNATURES, missing

shipped = Path(sys.argv[1])
pc.FOLDER = shipped
names = list(SIGNATURES)
built = json.loads((shipped / "manifest.json").read_text())
cases = {"another numba": {**built, "tag": {**built["tag"], "numba": "0.1"}},
         "another source": {**built, "sources": {**built["sources"], names[0]: "0" * 64}},
         "as built": built}
out = {}
for case, manifest in cases.items():
    (shipped / "manifest.json").write_text(json.dumps(manifest))
    out[case] = [pc.install(names), missing()]
print(json.dumps(out))
"""


@pytest.mark.slow
def test_shipped_kernels_are_used_only_where_they_fit(tmp_path: Path, release: tuple[Path, Path]) -> None:
    shipped = tmp_path / "shipped"
    with zipfile.ZipFile(release[0]) as archive:
        for name in archive.namelist():
            if name.startswith("ltr/_precompiled/"):
                target = shipped / name.removeprefix("ltr/_precompiled/")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(archive.read(name))
    manifest = json.loads((shipped / "manifest.json").read_text())
    assert manifest["cpu"] == "generic"
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_DISABLE_JIT"}
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "numba-cache")
    done = subprocess.run([sys.executable, "-c", GUARDS, str(shipped)], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert MESSAGE not in done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    from ltr.compiled.kernel_signatures import SIGNATURES

    names = list(SIGNATURES)
    assert out["another numba"] == [[], names]  # nothing written: every module would compile
    assert out["another source"] == [names[1:], names[:1]]  # the edited module alone would compile
    assert out["as built"] == [names, []]  # the first module's too: every kernel is in numba's cache


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
    # that need no compiled kernel (the whole unit tier: `make test-sdist`), but the schema's
    # sweep of every field's bad values (seconds of CPU; the suite runs it on the same sources)
    env = {k: v for k, v in os.environ.items() if k not in {"LTR_TRACKING_URI", "MLFLOW_TRACKING_URI"}}
    env["PYTHONPATH"] = str(root)
    env["LTR_TEST_BUDGET"] = "dev"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-m", "unit", "-q", "-p", "no:cacheprovider", "-n", "0",
         "tests/test_config_schema.py", "tests/test_sweeper_units.py",
         "--deselect", "tests/test_config_schema.py::test_every_field_refuses_bad_values_in_one_line_naming_its_key",
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


#: The pages of the manual: wherever they show a ``pip install`` of ``ltr-harness`` (the release
#: checklist's installs from TestPyPI are a maintainer's step of publishing, not a user's install).
MANUAL = [REPO / "README.md", *sorted(p for p in (REPO / "docs").rglob("*.md") if p.name != "release.md")]
#: What a ``pip install`` command of a page runs to: the end of its inline code, a comment, ``&&``.
_PIP_INSTALL = re.compile(r"pip install ([^`#\n]*?)\s*(?:`|#|&&|$)", re.MULTILINE)
#: What each extra brings, imported in the venv once the command that asks for it has run.
EXTRA_MODULES = {"": "ltr", "dask": "distributed", "notebook": "jupyterlab", "server": "psycopg", "xgboost": "xgboost", "catboost": "catboost"}


def manual_install_commands() -> dict[tuple[str, ...], list[str]]:
    """Each ``pip install`` of ``ltr-harness`` the manual shows (code blocks and inline code) as
    its arguments -> the pages that show it, in the order of first appearance."""
    import shlex

    found: dict[tuple[str, ...], list[str]] = {}
    for page in MANUAL:
        for match in _PIP_INSTALL.finditer(page.read_text()):
            args = tuple(shlex.split(match.group(1)))
            if any(a.startswith("ltr-harness") for a in args):
                found.setdefault(args, []).append(page.relative_to(REPO).as_posix())
    return found


def local_package_sources() -> list[str]:
    """The environment's own package sources, as ``--find-links`` folders: those pip is configured
    with, and the folder of files behind each local (``file://``) index it is configured with."""
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, timeout=60
    ).stdout  # fmt: skip
    sources: list[str] = []
    for line in listed.splitlines():
        key, _, value = line.partition("=")
        if not key.endswith(("find-links", "index-url")):
            continue
        for item in value.strip("'\"").split():
            folder = Path(item.removeprefix("file://"))
            if key.endswith("index-url"):
                folder = folder.parent / "files" if item.startswith("file://") else Path("/nonexistent")
            if folder.is_dir() and str(folder) not in sources:
                sources.append(str(folder))
    return sources


def dependencies_view(tmp: Path, wheel_version: str) -> Path:
    """A folder of links to everything this interpreter's site-packages holds but ``ltr-harness``
    itself (its dist-info, its editable finder): what a fresh venv's ``.pth`` lists, so pip sees
    the dependencies installed and installs ``ltr-harness`` from the wheel (module docstring)."""
    purelib = Path(sysconfig.get_paths()["purelib"])
    view = tmp / "dependencies"
    view.mkdir()
    for entry in purelib.iterdir():
        name = entry.name.lower()
        if name.startswith(("ltr_harness", "__editable__", "_ltr_test")) or name == "ltr" or name.endswith(".pth"):
            continue
        (view / entry.name).symlink_to(entry)
    assert not list(view.glob("ltr_harness-*")), wheel_version
    return view


@pytest.mark.slow
def test_every_install_command_of_the_manual_works_in_a_fresh_venv(
    tmp_path_factory: pytest.TempPathFactory, release: tuple[Path, Path]
) -> None:
    """Every ``pip install`` of ``ltr-harness`` in the README and the manual installs this
    release's wheel (the one ``make dist`` builds) into a fresh venv, run as the manual says,
    from a folder whose ``dist/`` holds the built artifacts, with ``--no-index`` and the
    environment's own package sources (never the package index: the package is not published,
    and a same-named project there must not be what is tested). No page says it is on the index:
    every command takes it from ``dist/``. The dependencies already in this interpreter's
    site-packages are seen through a ``.pth`` (installing them takes minutes); what an extra
    adds beyond them is installed from the local sources, without compiling their bytecode
    (``--no-compile``: Python writes it for the modules it imports). After each command,
    ``ltr --version`` names the release and the extra's module imports."""
    commands = manual_install_commands()
    assert commands, "no pip install of ltr-harness found in the manual"
    claims = {" ".join(args): pages for args, pages in commands.items() if "--find-links" not in args or "dist" not in args}
    assert claims == {}, "pages that install ltr-harness from the package index, where it is not published yet"
    asked = {re.sub(r"^ltr-harness\[?([\w,]*)\]?$", r"\1", a) for args in commands for a in args if a.startswith("ltr-harness")}
    assert {"", "dask", "notebook", "server"} <= asked

    import ltr

    tmp = tmp_path_factory.mktemp("manual")
    here = tmp / "clone"
    here.mkdir()
    (here / "dist").symlink_to(release[0].parent, target_is_directory=True)
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True, timeout=60,
    ).stdout.strip()  # fmt: skip
    (Path(purelib) / "_ltr_test_dependencies.pth").write_text(f"{dependencies_view(tmp, ltr.__version__)}\n")
    sources = [a for folder in local_package_sources() for a in ("--find-links", folder)]
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL"}}
    for args, pages in commands.items():
        assert args[0] != "-e", f"{pages}: an editable install is a clone's, not the wheel's"
        done = subprocess.run(
            [sys.executable, "-m", "pip", "--python", str(python), "install", *args, "--no-index", "--no-compile", *sources],
            cwd=here, env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, f"pip install {' '.join(args)} ({', '.join(pages)}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        extra = re.sub(r"^ltr-harness\[?([\w,]*)\]?$", r"\1", next(a for a in args if a.startswith("ltr-harness")))
        shown = subprocess.run([str(venv / "bin" / "ltr"), "--version"], cwd=tmp, env=env, capture_output=True, text=True, timeout=300)
        assert shown.returncode == 0, shown.stderr[-2000:]
        assert shown.stdout.startswith(f"ltr {ltr.__version__} (ltr-harness; Python "), shown.stdout
        module = EXTRA_MODULES[extra]
        imported = subprocess.run(
            [str(python), "-c", f"import {module}, ltr; print(ltr.__file__)"], cwd=tmp, env=env, capture_output=True, text=True, timeout=300
        )  # fmt: skip
        assert imported.returncode == 0, f"{module} after pip install {' '.join(args)}: {imported.stderr[-1500:]}"
        assert Path(imported.stdout.strip()).resolve().is_relative_to(venv.resolve())  # the wheel's ltr, not the repo's

"""``python -m ltr.warmup`` (run by ``make install``) compiles every numba kernel into numba's
cache, for the argument types the commands pass, and writes the bytecode of ``ltr``'s modules:
after it, a training run and an evaluation compile nothing (no new cache entry appears).

The tests give the commands a numba cache of their own (``NUMBA_CACHE_DIR`` in a temp dir,
numba's documented override): it starts empty, so the first command compiles every kernel
(seconds on an idle machine), and no other test process (``pytest -n``) can write into it
between the compile and the checks.

Three processes, in the module fixture :func:`install`: the first ``ltr train`` of an install
(the cold compile), the warm-up on the cache it compiled, then one fresh process
(:data:`AFTER_WARM_UP`) that runs ``ltr train`` first, as ``python -m ltr`` runs it
(:func:`ltr.cli.main.main`), with no kernel in memory (every kernel it calls is loaded from the
cache or compiled and written into it, as in a process of its own), then ``ltr evaluate``, then
the warm-up again, recording numba's cache after each, then calls the kernels' public paths with
every argument kind real data hands them (:data:`ARGUMENT_KINDS`).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from numba.core.caching import NullCache
from numba.core.registry import CPUDispatcher

import ltr as ltr_package
from ltr.compiled.kernel_signatures import MESSAGE, SIGNATURES
from ltr.warmup import KERNEL_MODULES


def kernel_entries() -> set[str]:
    """``<module file>.<function>-<first line>``, numba's cache index name, of every compiled
    (not ``inline="always"``) kernel defined in :data:`KERNEL_MODULES`."""
    names = set()
    for module_name in KERNEL_MODULES:
        module = importlib.import_module(module_name)
        for value in vars(module).values():
            if not isinstance(value, CPUDispatcher) or value.py_func.__module__ != module_name:
                continue
            assert not isinstance(value._cache, NullCache), f"{module_name}.{value.__name__} is not cache=True"
            if value.targetoptions.get("inline") == "always":  # compiled into its callers only
                continue
            code = value.py_func.__code__
            names.add(f"{module_name.rsplit('.', 1)[1]}.{value.py_func.__qualname__}-{code.co_firstlineno}")
    return names


def cache_state(root: Path) -> dict[str, int]:
    """Every numba index and data file under ``root`` with its modification time (ns)."""
    return {str(p): p.stat().st_mtime_ns for p in root.rglob("*") if p.suffix in {".nbi", ".nbc"}}


#: ``python -c AFTER_WARM_UP+ARGUMENT_KINDS CACHE STATES FOLDER``: ``ltr train``, ``ltr evaluate``
#: and the warm-up in one fresh process, train first (nothing compiled or loaded before it), each
#: followed by a JSON line ``[step, state]`` in the file ``STATES`` (``state`` as
#: :func:`cache_state` gives it for ``CACHE``); then :data:`ARGUMENT_KINDS` in ``FOLDER``.
AFTER_WARM_UP = """
import json, sys
from pathlib import Path

from ltr.cli.main import main
from ltr.warmup import main as warm_up

cache, states, kinds = (Path(arg) for arg in sys.argv[1:4])  # before Hydra rewrites sys.argv


def step(name, code):
    assert code == 0, f"{name} exited {code}"
    state = {str(p): p.stat().st_mtime_ns for p in cache.rglob("*") if p.suffix in {".nbi", ".nbc"}}
    with states.open("a") as out:
        out.write(json.dumps([name, state]) + "\\n")


step("train", main(["train", "debug=default", "tracking=none", "hydra.run.dir=out"]))
step("evaluate", main(["evaluate", "--qrels", "q.txt", "--run", "r.txt"]))
step("warm-up", warm_up())
"""


def sources() -> list[Path]:
    """Every module of ``ltr`` and of its sweeper plugin."""
    plugin = Path(importlib.import_module("hydra_plugins.ltr_sweeper").__file__ or "").parent
    return [*Path(ltr_package.__file__).parent.rglob("*.py"), *plugin.rglob("*.py")]


def fresh_bytecode(py: Path) -> bool:
    """``py``'s cached bytecode exists and records ``py``'s current modification time and size
    (the check Python's import makes before using it)."""
    pyc = Path(importlib.util.cache_from_source(str(py)))
    if not pyc.exists():
        return False
    header = pyc.read_bytes()[:16]
    stat = py.stat()
    return int.from_bytes(header[8:12], "little") == int(stat.st_mtime) & 0xFFFFFFFF and int.from_bytes(
        header[12:16], "little"
    ) == stat.st_size & 0xFFFFFFFF


@dataclass(frozen=True)
class Install:
    """What the module fixture :func:`install` ran and saw, in order."""

    folder: Path
    first: str  # the first ``ltr train``'s stderr (the cold compile)
    compiled: dict[str, int]  # the cache after it
    warmed: subprocess.CompletedProcess[str]  # ``python -m ltr.warmup`` on that cache
    templates: list[Path]  # the empty-store templates after the warm-up
    stale: list[str]  # the modules whose bytecode is not fresh after the warm-up
    after_warmup: dict[str, int]  # the cache after the warm-up
    after: subprocess.CompletedProcess[str]  # the fresh process of AFTER_WARM_UP + ARGUMENT_KINDS
    steps: dict[str, dict[str, int]]  # the cache after each of its steps
    end: dict[str, int]  # the cache after it


@pytest.mark.slow
def test_warmup_on_a_compiled_cache_writes_bytecode_and_the_store_template_and_compiles_nothing(install: Install) -> None:
    """``make install``'s warm-up, on the cache the first command of an install compiled (the same
    :func:`ltr.compiled.kernel_signatures.prepare_all` path; compiling from an empty cache is what
    :func:`test_first_command_compiles_once_on_one_line_and_the_next_compiles_nothing` proves):
    it writes the bytecode and the store template, compiles nothing, and the commands a user
    runs next compile nothing either."""
    warmed, compiled = install.warmed, install.compiled
    assert "compiled or loaded from cache" in warmed.stdout
    assert MESSAGE not in warmed.stderr  # nothing to compile
    # the empty MLflow store every new store is copied from (ltr.tracking.sqlite.template)
    assert len(install.templates) == 1
    assert install.stale == [], "modules whose bytecode the warm-up did not write"
    after_warmup = install.after_warmup
    assert after_warmup == compiled, "the warm-up compiled or rewrote on a compiled cache"
    indexed = {Path(name).name.rsplit(".", 2)[0] for name in after_warmup if name.endswith(".nbi")}
    expected = kernel_entries()
    assert len(expected) >= 30  # the modules' kernels were found at all
    assert expected - indexed == set(), "kernels missing from the cache"

    # a fresh process: the commands a user runs first compile nothing new (every signature they
    # need is cached), and the warm-up again is idempotent (a warm cache gains nothing and
    # nothing is rewritten)
    steps = install.steps
    assert list(steps) == ["train", "evaluate", "warm-up"]
    assert steps["train"] == after_warmup, "ltr train compiled after the warm-up"
    assert steps["evaluate"] == after_warmup, "ltr evaluate compiled after the warm-up"
    assert steps["warm-up"] == after_warmup, "the warm-up compiled or rewrote on a warm cache"
    assert install.end == after_warmup


def test_the_warm_up_compiles_through_the_first_commands_path() -> None:
    """The warm-up from an empty cache compiles what the first command compiles: both call
    :func:`ltr.compiled.kernel_signatures.prepare_all` / ``prepare``, which compile every module the cache
    lacks (the module-level fixture compiles once, through the first command)."""
    import inspect

    import ltr.warmup

    assert "prepare_all()" in inspect.getsource(ltr.warmup)


#: The tail of the :data:`AFTER_WARM_UP` process (in the folder of its third argument): the metric,
#: re-ranking, interleaving and reader paths called with the argument kinds real data hands them
#: (read-only arrays from Parquet, int32 offsets, float32 and float64 labels and scores,
#: non-contiguous slices), compiled; then one JSON line on stdout, its last: per dispatcher of the
#: kernel modules, its signatures and its cache misses (in the whole process, the steps before
#: included).
ARGUMENT_KINDS = """
import json, sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from numba.core.registry import CPUDispatcher

from ltr.compiled import kernels
from ltr.compare.abtest import ClickModel, simulate_abtest
from ltr.data.formats.readers import read_ranking_file
from ltr.data.formats.trec import read_qrels, read_run
from ltr.metrics import MetricConventions
from ltr.metrics.table import measure_arrays
from ltr.rerank.diversify import diversify
from ltr.warmup import KERNEL_MODULES, _letor_text

tmp = kinds  # AFTER_WARM_UP's third argument
pq.write_table(pa.table({"label": [2, 0, 1, 0, 3, 1], "score": [0.5, 0.5, 0.1, 0.9, 0.2, 0.2]}), tmp / "t.parquet")
table = pq.read_table(tmp / "t.parquet")
labels = table.column("label").to_numpy()  # read-only int64, as the Parquet reader gives them
scores = table.column("score").to_numpy()
assert not labels.flags.writeable and not scores.flags.writeable
with kernels.forced("compiled"):
    for lab in (labels, labels.astype(np.int32), labels.astype(np.float32), labels.astype(np.float64)):
        for sc in (scores, scores.astype(np.float32), np.repeat(scores, 2)[::2]):
            for off in (np.array([0, 3, 6]), np.array([0, 3, 6], dtype=np.int32)):
                for ties in ("average", "stable", "pessimistic"):
                    measure_arrays(lab, sc, off, conventions=MetricConventions(ties=ties))
                measure_arrays(lab, sc, off, full_ap=False, ideal_labels=lab[::-1], ideal_offsets=off)
                measure_arrays(lab, sc, off, conventions=MetricConventions(ties="docno_desc"), tie_keys=lab[::-1])
    for sc in (scores, scores.astype(np.float32)):
        diversify(sc, np.array([0, 3, 6], dtype=np.int32), labels, alpha=0.5, similarity="category")
        diversify(sc, np.array([0, 3, 6]), np.repeat(scores, 2).reshape(6, 2).astype(np.float32), alpha=0.5, similarity="cosine")
    model = ClickModel(eta=1.0, click_noise=0.1, click_max=0.9)
    simulate_abtest(labels, np.array([0, 3, 6], dtype=np.int32), scores, scores[::-1], model, sessions_per_day=10.0, traffic_share=1.0, days=1.0)
    (tmp / "t.letor").write_text(_letor_text())
    read_ranking_file(tmp / "t.letor")
    (tmp / "q.txt").write_text("1 0 a 1\\n1 0 b 0\\n2 0 c 2\\n")
    (tmp / "r.txt").write_text("2 Q0 c 1 1.0 x\\n1 Q0 a 1 1.0 x\\n1 Q0 b 2 1.0 x\\n")
    read_qrels(tmp / "q.txt")
    read_run(tmp / "r.txt")
out = {}
for name in KERNEL_MODULES:
    for key, value in vars(sys.modules[name]).items():
        if isinstance(value, CPUDispatcher) and value.py_func.__module__ == name:
            out[f"{name}.{key}"] = [[str(s) for s in value.signatures], sum(value.stats.cache_misses.values())]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def install(tmp_path_factory: pytest.TempPathFactory) -> Install:
    """A fresh numba cache; the first ``ltr train`` of an install in it (it compiles every
    kernel), ``python -m ltr.warmup``, then the fresh process of :data:`AFTER_WARM_UP` and
    :data:`ARGUMENT_KINDS` (the next commands a user runs)."""
    tmp = tmp_path_factory.mktemp("first-run")
    cache = tmp / "numba-cache"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "LTR_CACHE_DIR": str(tmp / "ltr-cache")}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([sys.executable, *args], cwd=tmp, env=env, capture_output=True, text=True, timeout=1800)
        assert done.returncode == 0, done.stderr[-3000:]
        return done

    first = run("-m", "ltr", "train", "debug=default", "tracking=none", "hydra.run.dir=one")
    compiled = cache_state(cache)
    warmed = run("-m", "ltr.warmup")
    templates = list((tmp / "ltr-cache" / "mlflow-stores").glob("empty-*.db"))
    stale = [str(py) for py in sources() if not fresh_bytecode(py)]
    after_warmup = cache_state(cache)
    (tmp / "q.txt").write_text("1 0 a 1\n1 0 b 0\n")
    (tmp / "r.txt").write_text("1 Q0 a 1 1.0 x\n1 Q0 b 2 0.5 x\n")
    states, kinds = tmp / "states.jsonl", tmp / "kinds"
    kinds.mkdir()
    after = run("-c", AFTER_WARM_UP + ARGUMENT_KINDS, str(cache), str(states), str(kinds))
    steps = dict(json.loads(line) for line in states.read_text().splitlines())
    return Install(tmp, first.stderr, compiled, warmed, templates, stale, after_warmup, after, steps, cache_state(cache))


@pytest.mark.slow
def test_first_command_compiles_once_on_one_line_and_the_next_compiles_nothing(install: Install) -> None:
    """The first ``ltr train`` of an install compiles every kernel module, with one progress line;
    the next ``ltr train`` (in :data:`AFTER_WARM_UP`'s process, after a warm-up that left the cache
    as it was) compiles nothing: the cache after it is the cache the first one left."""
    first, second = install.first, install.after.stderr
    after_first, after_second = install.compiled, install.steps["train"]
    lines = [line for line in first.splitlines() if MESSAGE in line]
    assert len(lines) == 1, first[-3000:]
    n = len(KERNEL_MODULES)
    assert lines[0].startswith(MESSAGE)
    assert f" {n}/{n}, done in " in lines[0]
    assert first.count(MESSAGE) == 1
    assert MESSAGE not in second
    assert after_second == after_first, "the second ltr train compiled"
    indexed = {Path(name).name.rsplit(".", 2)[0] for name in after_first if name.endswith(".nbi")}
    assert kernel_entries() - indexed == set(), "kernels the first run did not compile"


@pytest.mark.slow
def test_every_entry_point_has_one_signature_whatever_the_arguments(install: Install) -> None:
    """Every argument kind real data hands the kernels' public paths, in a process on the
    compiled cache, compiles nothing: each entry point keeps its one declared signature."""
    assert MESSAGE not in install.after.stderr
    dispatchers = json.loads(install.after.stdout.strip().splitlines()[-1])
    assert {name: misses for name, (_, misses) in dispatchers.items() if misses} == {}, "compiled in a warm cache"
    for module, entries in SIGNATURES.items():
        for entry in entries:
            assert len(dispatchers[f"{module}.{entry}"][0]) == 1, f"{module}.{entry}: {dispatchers[f'{module}.{entry}'][0]}"
    assert install.end == install.compiled

"""The package layout's rules (README "Code layout"): parts, levels, no cycles, light imports."""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "ltr"

#: Each top-level part of ``ltr`` and its level: a part imports only parts of lower levels.
LEVELS: dict[str, float] = {
    "errors": -1,
    "compiled": 0,  # kernels compiled or interpreted, their signatures, the machine code shipped in the wheel
    "runtime": 0,  # the output layer, stop signals, OpenMP's spinning, numpy's page size
    "__init__": 1,  # imports ltr.runtime.openmp and ltr.runtime.hugepages: both set before anything loads OpenMP or numpy
    "config": 1,
    "metrics": 1,
    "rerank": 2.5,  # the re-ranking step re-orders RankingData: above the data, below training
    "data": 2,
    "tracking": 2,
    "training": 3,
    "compare": 3,
    "online": 3,
    "dask": 4,
    "experiment": 5,
    "models": 6,
    "sweeper": 6,
    "explain": 7,  # explains a logged run's model: above the models
    "api": 7,
    "cli": 8,
    "warmup": 8,  # the install-time warm-up runs the API's commands once: above everything it warms
    "__main__": 9,
}

#: Modules a function may import lazily, and why (README "Imports"); any other import is at the top.
LAZY_ALLOWED = {
    "ltr.cli": "the dispatcher imports a verb's module when it runs, and the sweep callback its parent run's, so `ltr --help` stays fast",
    "ltr.dask": "the dask extra is optional",
    "dask": "the dask extra is optional",
    "distributed": "the dask extra is optional",
    "lightgbm.dask": "the dask extra is optional",
    "xgboost.dask": "the dask extra is optional",
    "numba": "numba's import and cache load (~1 s) only when a kernel runs",
    "ltr.metrics._kernel": "numba's import and cache load (~1 s) only when a kernel runs",
    "ltr.data.formats._text_kernel": "numba's import and cache load (~1 s) only when a kernel runs",
    "ltr.data.formats._trec_kernel": "numba's import and cache load (~1 s) only when a kernel runs",
    "ltr.rerank._kernel": "numba's import and cache load (~1 s) only when a kernel runs",
    "ltr.compare._interleave": "numba's import and cache load (~1 s) only when a kernel runs",
    "ltr.compiled.kernel_signatures": "numba's import and cache load (~1 s) only when a kernel runs",
    "matplotlib": "figures only when a figure is drawn",
    "rich": "terminal output only when printing",
    "mlflow": "tracking=none and the metrics never import MLflow",
    "ltr.tracking.mlflow_tracker": "tracking=none and the metrics never import MLflow",
    "sqlalchemy": "store checks of MLflow's sqlite store, with MLflow",
    "alembic": "store checks of MLflow's sqlite store, with MLflow",
    "psutil": "optional process start times",
    "scipy": "statistics only when a comparison runs",
    "pyarrow": "Parquet and CSV readers only for those formats",
    "ltr.data.formats.readers": "ltr evaluate's TREC input needs none of ltr's file readers (pyarrow for their doc ids)",
    "pandas": "ltr evaluate's JSON and terminal output make no DataFrame: pandas where a per-query table is made or a scores file parsed",
    "ltr.metrics.composite": "its pandas tables only when ltr evaluate is asked for a --composite (issue 31: no DataFrame otherwise)",
    "multiprocessing": "the signal handler asks whether it runs in a launcher worker",
    "socket": "`ltr ui` checks its port",
    "optuna": "searches only: every `ltr train` job imports ltr.sweeper.link, a search's job needs Optuna",
    "ltr.sweeper.search": "searches only: the Optuna sweeper's setting checks import Optuna",
    "ltr.tracking.runs": "a named baseline run is read from the store, with MLflow; ltr predict reads a local finished run without it",
    "lightgbm": "the config checks ask LightGBM for its parameter names only when model.params has keys",
    "ltr.training.local": "the config checks import LightGBM only for the rules that need the data",
    "ltr.experiment.run": "ltr train imports the run (LightGBM, MLflow, pandas) once the config is checked",
    "ltr.api": "ltr labels loads a run's model (MLflow, LightGBM) only with --run",
    "ltr.experiment.checks": "ltr train --help and an error Hydra finds while composing import neither numpy nor the run's config rules",
    "ltr.tracking.store": "importing ltr.tracking (ltr train's stop signals) leaves out the store's ssl, urllib and sqlite3",
    "ltr.training.backends.xgboost": "the xgboost extra is optional: XGBoost is imported when model=xgboost asks for it",
    "ltr.training.backends.catboost": "the catboost extra is optional: CatBoost is imported when model=catboost asks for it",
    "ltr.training.backends": "the config checks import a backend's rules (and its library) only for its model option",
}


#: Verb modules that import their work (data, metrics, tracking, models) inside ``main``, after
#: the arguments are parsed: their ``--help`` and argument errors import none of it
#: (``tests/test_startup.py``).
PARSE_FIRST = frozenset(
    [
        *(f"ltr.cli.{verb}" for verb in ("cache", "compare", "data", "explain", "labels", "partition", "predict", "promote", "rerun")),
        *(f"ltr.cli.online.{verb}" for verb in ("abtest", "calibrate", "exposure", "ope")),
    ]
)



@functools.cache
def _modules() -> dict[str, ast.Module]:
    """Every module of ``ltr`` by name, parsed once for the tests of this file (none mutates it)."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = ".".join(("ltr", *path.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(".__init__")
        out[name] = ast.parse(path.read_text(), filename=str(path))
    return out


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


@functools.cache
def _module_imports() -> dict[str, list[tuple[str, list[str], bool]]]:
    """:func:`_imports` of every module of ``ltr``, computed once for the tests of this file."""
    return {module: _imports(tree, module) for module, tree in _modules().items()}


def _imports(tree: ast.Module, module: str) -> list[tuple[str, list[str], bool]]:
    """(imported module, imported names, inside a function) of every import of ``tree`` (one
    pass over the tree: each node is visited once, with whether a function encloses it)."""
    out = []
    package = module if module.endswith(tuple(("ltr." + p) for p in LEVELS)) else module.rsplit(".", 1)[0]
    in_function: set[int] = set()
    stack: list[tuple[ast.AST, bool]] = [(tree, False)]
    nodes = []
    while stack:
        node, inside = stack.pop()
        nodes.append(node)
        if inside:
            in_function.add(id(node))
        inner = inside or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))
    for node in nodes:
        if isinstance(node, ast.Import):
            out += [(alias.name, [], id(node) in in_function) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            out.append((base, [a.name for a in node.names], id(node) in in_function))
    return out


def test_folders_by_concern() -> None:
    """No package folder holds more than 15 modules, and at most 6 sit at the top of ``ltr/``."""
    crowded = {
        str(folder.relative_to(PACKAGE.parent)): n
        for folder in [PACKAGE, *(p.parent for p in PACKAGE.rglob("__init__.py"))]
        if (n := len(list(folder.glob("*.py")))) > (6 if folder == PACKAGE else 15)
    }
    assert not crowded, f"folders over their module count: {crowded}"


def test_parts_levels_and_no_cycles() -> None:
    modules = _modules()
    parts = {_part(m) for m in modules}
    assert parts <= set(LEVELS), f"parts without a level: {parts - set(LEVELS)}"
    assert len(parts) <= 21  # the parts of docs/contributing/layout.md, one level each
    upward = []
    for module, imports in _module_imports().items():
        for imported, _, _ in imports:
            if imported.startswith("ltr.") and imported != "ltr":
                source, target = _part(module), _part(imported)
                if source != target and LEVELS[target] >= LEVELS[source]:
                    upward.append(f"{module} imports {imported}")
    assert not upward, "imports that go up or sideways:\n" + "\n".join(upward)


def test_no_private_names_from_other_modules() -> None:
    modules = _modules()
    bad = []
    for module, imports in _module_imports().items():
        for imported, names, _ in imports:
            if not imported.startswith("ltr"):
                continue
            for name in names:
                private_module = f"{imported}.{name}" in modules  # a private submodule of a package
                same_package = imported.rsplit(".", 1)[0] == module.rsplit(".", 1)[0] or imported == module.rsplit(".", 1)[0]
                if name.startswith("_") and not (private_module and same_package):
                    bad.append(f"{module}: from {imported} import {name}")
    assert not bad, "\n".join(bad)


def test_function_level_imports_have_a_reason() -> None:
    bad = []
    for module, imports in _module_imports().items():
        for imported, _, lazy in imports:
            if module in PARSE_FIRST:
                continue
            if lazy and not any(imported == key or imported.startswith(key + ".") for key in LAZY_ALLOWED):
                bad.append(f"{module}: import {imported} inside a function")
    assert not bad, "imports inside functions without a reason (move them to the top):\n" + "\n".join(bad)


HEAVY = ("numba", "mlflow", "lightgbm", "hydra", "matplotlib", "dask", "sklearn", "scipy")


@pytest.mark.slow  # a fresh interpreter per case: e2e
@pytest.mark.parametrize(
    "code",
    [
        "import ltr.metrics",
        "import ltr.data.formats.readers",
        "from ltr.cli.main import main; main(['--help'])",
    ],
)
def test_light_imports(code: str) -> None:
    check = f"{code}\nimport sys\nprint('heavy:' + ','.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip().splitlines()[-1] == "heavy:", f"{code!r} imports {out.stdout.strip().splitlines()[-1]}"


def test_no_module_import_cycles() -> None:
    """No cycle among the module-level imports of ltr's modules (a package's ``__init__`` included)."""
    modules = _modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, imports in _module_imports().items():
        for imported, names, lazy in imports:
            if lazy or not imported.startswith("ltr"):
                continue
            targets = [f"{imported}.{n}" for n in names if f"{imported}.{n}" in modules] or [imported]
            graph[module] |= {t for t in targets if t in modules and t != module}
    visiting: list[str] = []
    done: set[str] = set()

    def visit(node: str) -> None:
        if node in done:
            return
        assert node not in visiting, "import cycle: " + " -> ".join([*visiting[visiting.index(node):], node])
        visiting.append(node)
        for nxt in sorted(graph[node]):
            visit(nxt)
        visiting.pop()
        done.add(node)

    for module in sorted(graph):
        visit(module)

"""The manual builds strictly (MkDocs: a broken link, anchor or API reference fails), its pages
follow the example rules of tests/docs/examples.py, and the README stays a front page."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.docs.examples import (
    MASKS,
    REPO,
    OutputCheck,
    api_page_example,
    blocks,
    output_mismatch,
    page_id,
    pages,
    run_page,
)
from tests.docs.pages import FIRST_HALF

#: Block languages a page may use: run (bash, python) or shown (text: output and commands for
#: a clone's terminal; yaml: config files).
LANGUAGES = {"bash", "python", "text", "yaml"}


def test_every_block_is_run_or_marked() -> None:
    problems = []
    for page in pages():
        for block in blocks(page):
            if block.language not in LANGUAGES:
                problems.append(f"{page_id(page)}:{block.line}: ```{block.language} (use one of {sorted(LANGUAGES)})")
            if block.skip and block.language not in {"bash", "python"}:
                problems.append(f"{page_id(page)}:{block.line}: a skip mark on a block that would not run")
    assert not problems, "\n".join(problems)


def test_every_output_block_shows_a_command_run_here() -> None:
    """An output block (``docs-test: output``) is a ```text block right after the ```bash or ```python block
    whose stdout it shows (or after output blocks of it), a block that runs (not skipped, not only
    composed)."""
    problems, n_checked = [], 0
    for page in pages():
        found = blocks(page)
        for before, block in zip([None, *found], found, strict=False):
            if block.output is None:
                continue
            n_checked += 1
            where = f"{page_id(page)}:{block.line}"
            if block.language != "text":
                problems.append(f"{where}: an output mark on a ```{block.language} block")
            while before is not None and before.output is not None:  # output blocks in a row: one stdout
                before = found[found.index(before) - 1] if found.index(before) else None
            if before is None or before.language not in {"bash", "python"} or before.skip or before.compose:
                problems.append(f"{where}: an output block must follow the ```bash or ```python block it shows, run here")
            if set(block.output.masks) - set(MASKS):
                problems.append(f"{where}: unknown masks {sorted(set(block.output.masks) - set(MASKS))}")
    assert not problems, "\n".join(problems)
    assert n_checked >= 5


def test_every_text_block_after_a_command_is_checked_or_says_why_not() -> None:
    """A ```text block after a ```bash or ```python block that runs here shows what it prints: it is checked
    (``docs-test: output``) or marked an illustration with the reason the suite cannot produce
    it (``docs-test: not-run REASON``), never unmarked; and a not-run mark is on a text block."""
    problems = []
    for page in pages():
        found = blocks(page)
        for before, block in zip([None, *found], found, strict=False):
            where = f"{page_id(page)}:{block.line}"
            if block.not_run is not None and (block.language != "text" or block.output is not None):
                problems.append(f"{where}: a not-run mark belongs on a ```text block that is not checked")
            runs = before is not None and before.language in {"bash", "python"} and not before.skip and not before.compose
            if block.language == "text" and runs and block.output is None and block.not_run is None:
                problems.append(f"{where}: a ```text block after a command: mark it <!-- docs-test: output --> or <!-- docs-test: not-run REASON -->")
    assert not problems, "\n".join(problems)


def test_a_cut_stands_for_any_lines_only_where_declared() -> None:
    cut = OutputCheck(masks=("cut",))
    assert output_mismatch("head\n...\nlast", "head\na\nb\nlast", cut) is None
    assert output_mismatch("head\n...\nlast", "head\nlast", cut) is None  # none
    assert output_mismatch("head\n...\nlast", "head\na\nlast\nmore", cut) is not None  # the end is shown
    assert output_mismatch("head\n...\nlast", "other\na\nlast", cut) is not None
    assert output_mismatch("head\n...\nlast", "head\na\nlast", OutputCheck()) is not None  # undeclared: literal
    assert output_mismatch("x\n...", "log\nx\n1\n2", OutputCheck(tail=True, masks=("cut",))) is None
    assert output_mismatch("x\n...\nz", "x\ny\nz\nw\nz", cut) is None  # the cut may reach past a match


def test_shown_output_is_compared_number_for_number() -> None:
    run_id = "0123456789abcdef" * 2
    assert output_mismatch("mean 0.7542\nrun <run-id>", f"\nmean 0.7542  \nrun {run_id}\n\n", OutputCheck(masks=("run-id",))) is None
    diff = output_mismatch("all | 0.5038 ± 0.0362", "all | 0.5045 ± 0.0356", OutputCheck())
    assert diff is not None
    assert "-all | 0.5038 ± 0.0362" in diff
    assert "+all | 0.5045 ± 0.0356" in diff
    assert output_mismatch("run <run-id>", f"run {run_id}", OutputCheck()) is not None  # undeclared: literal
    assert output_mismatch("<run-id>", "0.7542", OutputCheck(masks=("run-id",))) is not None
    assert output_mismatch("took <seconds> s", "took 12.5 s", OutputCheck(masks=("seconds",))) is None
    assert output_mismatch("b\nc", "a\nb\nc", OutputCheck(tail=True)) is None
    assert output_mismatch("b\nc", "a\nb\nc", OutputCheck()) is not None
    assert output_mismatch("a\nc", "a\nb\nc", OutputCheck(tail=True)) is not None


@pytest.mark.slow
def test_a_page_whose_shown_output_differs_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LTR_DOCS_NO_FORKSERVER", "1")
    page = tmp_path / "page.md"
    shown = "<!-- docs-test: output -->\n```text\n0.5038 ± 0.0362\n```\n"
    page.write_text("```bash\necho '0.5045 ± 0.0356'\n```\n\n" + shown)
    with pytest.raises(AssertionError, match=r"page.md:6 \(output block\) is not what the command above it prints"):
        run_page(page, tmp_path / "run")
    page.write_text("```bash\necho '0.5045 ± 0.0356'\n```\n\n" + shown.replace("0.5038 ± 0.0362", "0.5045 ± 0.0356"))
    run_page(page, tmp_path / "run2")


@pytest.mark.slow
@pytest.mark.parametrize("forked", [True, False], ids=["fork-server", "new-interpreter"])
def test_a_python_block_runs_as_a_script_of_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forked: bool) -> None:
    """Forked from the fork server or in a new interpreter, a ```python block is ``python
    block.py`` in the page's folder: ``__main__``, its path in ``sys.argv``, its folder first on
    ``sys.path``; an uncaught exception exits 1 with its traceback, ``sys.exit(N)`` exits N."""
    if not forked:
        monkeypatch.setenv("LTR_DOCS_NO_FORKSERVER", "1")
    page = tmp_path / "page.md"
    script = "import os, sys\nprint(__name__, os.path.basename(sys.argv[0]), sys.path[0] == os.getcwd(), len(sys.argv))\n"
    shown = "<!-- docs-test: output -->\n```text\n__main__ block_1.py True 1\n```\n"
    page.write_text(f"```python\n{script}```\n\n{shown}")
    run_page(page, tmp_path / "run")
    page.write_text(f"```python\n{script}```\n\n{shown}\n```python\nprint('before')\nraise ValueError('boom')\n```\n")
    with pytest.raises(AssertionError, match=r"(?s)page.md:11 \(python block\) exited 1\n--- stdout\nbefore\n.*ValueError: boom"):
        run_page(page, tmp_path / "run2")
    page.write_text("```python\nimport sys\nsys.exit(3)\n```\n")
    with pytest.raises(AssertionError, match=r"page.md:1 \(python block\) exited 3"):
        run_page(page, tmp_path / "run3")


def test_every_page_runs_in_one_example_module() -> None:
    ids = {page_id(p) for p in pages()}
    assert not FIRST_HALF - ids, sorted(FIRST_HALF - ids)
    assert len(ids) >= 15


def test_the_readme_s_table_is_the_checked_one_of_the_first_experiment() -> None:
    """The README shows the default run's table without running it (``make train`` sets up a
    venv first); the first experiment's page runs the same run and checks it."""
    (shown,) = [b for b in blocks(REPO / "README.md") if b.not_run and "lambdarank on synthetic" in b.code]
    (checked,) = [b for b in blocks(REPO / "docs" / "guide" / "first-experiment.md") if b.output]
    assert shown.code.strip("\n") in checked.code, "README.md's table is not docs/guide/first-experiment.md's"


def test_readme_is_a_front_page() -> None:
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    for target in re.findall(r"\]\(((?:docs/|LICENSE)[^)#]*)", readme):
        assert (REPO / target).exists(), f"README links to {target}, which does not exist"


#: The longest a page of the manual may be, in words.
MAX_PAGE_WORDS = 2500

#: Pages over :data:`MAX_PAGE_WORDS` that another change is rewriting: their test is a strict
#: xfail, so it fails (and this entry must go) as soon as the page fits.
OVER_LENGTH_PENDING: dict[str, str] = {}


def page_words(page: Path) -> int:
    """The words of a page as ``wc -w`` counts them: whitespace-separated tokens of the whole
    Markdown file, code blocks, tables and front matter included."""
    return len(page.read_text().split())


def _manual_pages() -> list[Path]:
    return [p for p in pages() if p.parent != REPO]


@pytest.mark.parametrize(
    "page",
    [
        pytest.param(p, marks=pytest.mark.xfail(strict=True, reason=OVER_LENGTH_PENDING[page_id(p)]))
        if page_id(p) in OVER_LENGTH_PENDING
        else p
        for p in _manual_pages()
    ],
    ids=page_id,
)
def test_every_page_of_the_manual_is_under_2500_words(page: Path) -> None:
    """A page reads in one sitting: at most :data:`MAX_PAGE_WORDS` words (``wc -w``, code
    blocks included) on every page of ``docs/`` (the README has its own line limit)."""
    assert page_words(page) <= MAX_PAGE_WORDS, f"{page_id(page)} has {page_words(page)} words; split it by topic"


def test_a_page_s_words_count_code_and_tables(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# A title\n\nOne two,\tthree.\n\n```bash\nltr train  debug=default\n```\n\n| a | b |\n")
    assert page_words(page) == 3 + 3 + 5 + 5  # title, prose, the code block with its fences, the table row


def _figure_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_figures", REPO / "docs" / "make_figures.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve the module's annotations through it
    spec.loader.exec_module(module)
    return module


def test_every_figure_is_made_by_the_figure_script_and_shown() -> None:
    """Each image of docs/images is one docs/make_figures.py draws from the product (the docs
    build runs it: mkdocs.yml's hook), and a page or the README shows it."""
    figures = _figure_script().FIGURES
    images = {p.name for p in (REPO / "docs" / "images").iterdir()}
    assert images == set(figures), f"images no script makes: {sorted(images - set(figures))}; figures not made: {sorted(set(figures) - images)}"
    shown = "\n".join(p.read_text() for p in pages())
    for name, figure in figures.items():
        assert f"images/{name})" in shown, f"no page shows docs/images/{name}"
        assert figure.commands
        assert all(c.startswith("ltr ") for c in figure.commands)
        assert (figure.artifact is None) != (figure.file is None)
    assert "docs/make_figures.py" in (REPO / "mkdocs.yml").read_text().split("hooks:")[1]


def test_your_parquet_file_is_two_clicks_from_home() -> None:
    home = (REPO / "docs" / "index.md").read_text()
    assert "(guide/your-data.md#parquet-and-csv)" in home
    assert re.search(r"^## Parquet and CSV", (REPO / "docs" / "guide" / "your-data.md").read_text(), re.M)


@pytest.mark.slow
def test_the_manual_builds_strictly(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO, capture_output=True, text=True, timeout=600, env={**os.environ, "LTR_DOCS_FIGURES": "0"},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    built = tmp_path / "site"
    assert (built / "index.html").is_file()
    reference = (built / "reference" / "api" / "index.html").read_text()
    assert "ltr.api.train" in reference  # mkdocstrings rendered the API from its docstrings
    assert "LtrUserError" in reference


def _skipped() -> list[tuple[str, str]]:
    return [(f"{page_id(page)}:{block.line}", block.skip) for page in pages() for block in blocks(page) if block.skip]


@pytest.mark.parametrize(("where", "reason"), _skipped(), ids=[w for w, _ in _skipped()])
def test_examples_marked_not_run_here(where: str, reason: str) -> None:
    """Each block marked ``docs-test: skip`` shows in the report as skipped, with its reason."""
    pytest.skip(f"{where}: {reason}")


def test_a_skipped_example_that_another_test_runs_is_that_test_s_code() -> None:
    """The README's example is the per-query comparison page's, and the Python API page's first block
    is the one tests/test_api.py runs with its assertions: a skip that names another runner is
    only honest while the code is the same."""
    readme = next(b for b in blocks(REPO / "README.md") if b.skip)
    comparing = [b for b in blocks(REPO / "docs" / "guide" / "compare.md") if b.language == "bash" and not b.skip]
    assert any(_commands(readme.code) == _commands(b.code) for b in comparing)
    api_page = next(b for b in blocks(REPO / "docs" / "guide" / "api.md") if b.skip)
    assert "tests/test_api.py" in (api_page.skip or "")
    assert api_page_example() == api_page.code
    assert "api_page_example()" in (REPO / "tests" / "test_api.py").read_text()


def _commands(code: str) -> list[str]:
    return [" ".join(line.split("#")[0].split()) for line in code.splitlines() if line.split("#")[0].strip()]


def test_the_api_reference_has_no_raw_sphinx_roles() -> None:
    """The docstrings the API reference renders (``docs/reference/api.md``: ``ltr.api``'s module
    and the functions it lists, ``LtrUserError``) hold Markdown cross-references or code, never
    Sphinx roles (``:func:``, ``:class:``, ``:mod:``), which mkdocstrings prints as they are.
    Read from the source (no import)."""
    import ast

    reference = (REPO / "docs" / "reference" / "api.md").read_text()
    members = set(re.findall(r"^\s+- (\w+)$", reference, flags=re.M))
    assert members
    api = ast.parse((REPO / "ltr" / "api.py").read_text())
    errors = ast.parse((REPO / "ltr" / "errors.py").read_text())
    docs = {"ltr.api": ast.get_docstring(api)}
    docs |= {n.name: ast.get_docstring(n) for n in api.body if isinstance(n, ast.FunctionDef) and n.name in members}
    docs |= {n.name: ast.get_docstring(n) for n in errors.body if isinstance(n, ast.ClassDef) and n.name == "LtrUserError"}
    assert set(docs) == {"ltr.api", "LtrUserError", *members}
    raw = {name: re.findall(r":(?:func|class|mod|meth|data|attr):`[^`]*`", doc or "") for name, doc in docs.items()}
    assert not {name: roles for name, roles in raw.items() if roles}

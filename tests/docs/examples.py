"""Run the examples of the manual as a reader would: every ```bash and ```python block of a page,
top to bottom, in one fresh folder per page.

The rules, which every page of ``docs/`` and the README follow:

- a ```bash block runs with ``bash -euo pipefail`` in the page's folder, ``ltr`` (and this
  environment's ``python``, ``mlflow``) first on ``PATH`` (``ltr`` forked from a process that has
  imported its engines once per test process, :func:`shared_server`: :mod:`tests.docs.forkserver`;
  ``LTR_DOCS_NO_FORKSERVER=1`` runs the console script instead), ``HOME`` a folder of its own (pages
  write ``~/ltr-conf``; it starts with the caches an earlier page made that the commands would
  only make again, :func:`_seeded_caches`), no tracking URI in the environment: it must exit 0;
- a ```python block runs as a script in the same folder, as ``python block.py`` runs it, forked
  from the same server as ``ltr`` (its imports done; :data:`forkserver.SCRIPT_CLIENT`), else in a
  new interpreter: it must exit 0 (no block is about its interpreter's start-up or imports);
- a run's figures are drawn in the command's own process, not in a figure worker of its own
  (:data:`forkserver.INLINE_FIGURES`): the same files, a Python start-up and matplotlib's import less;
- ```text blocks (output, or commands for a terminal the suite cannot have: `make` in a clone) and
  ```yaml blocks are shown, not run;
- a ```bash block that lists ``ltr train`` variants to pick from (one setting each, a menu rather
  than a walk-through) is preceded by ``<!-- docs-test: compose -->``: each of its commands is
  composed and checked as ``ltr train ... --cfg job`` (every key, value and group), not trained;
  a sweep (``-m``, a search space) is checked by its first job (:func:`first_job`);
- a block that cannot run here (a Slurm cluster, another host) is preceded by the comment
  ``<!-- docs-test: skip REASON -->``, and is reported as a skipped test with that reason;
- a ```text block preceded by ``<!-- docs-test: output -->`` is what the ```bash (or ```python)
  block right before it prints: the block's stdout must equal it, numbers and all (:func:`output_mismatch`;
  trailing spaces and blank lines at either end aside). ``output tail`` checks the last lines
  only (a block that trains before the command it shows); ``masks=run-id,seconds,path`` lets
  the placeholders ``<run-id>`` (an MLflow run id, 32 hex digits), ``<run>`` (its first 8), ``<seconds>`` (a number) and
  ``<path>`` (one word) stand for what changes from run to run (:data:`MASKS`). Output blocks
  in a row show parts of the same stdout (each with ``masks=cut``). A page whose
  shown output is not what the command prints fails, with the difference. ``masks=cut`` lets a
  line of ``...`` alone stand for any lines (none or many): a page shows part of a long output;
- a ```text block after a ```bash or ```python block that shows output the suite cannot produce (a cluster,
  a full dataset, minutes of training, a server, an earlier invocation) is preceded by
  ``<!-- docs-test: not-run REASON -->``: an illustration, and the reason says why. A ```text
  block that follows a block that runs carries one of the two marks (tested), so no printed
  table goes unchecked by accident.

Blocks of one page share their folder, so a page can write files (``ltr data write``) and use them
later, as a reader following it does.
"""

from __future__ import annotations

import atexit
import contextlib
import difflib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from tests.docs import forkserver

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"

#: The fenced blocks that run, by their language.
RUNNABLE = ("bash", "python")
_FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
_SKIP = re.compile(r"<!--\s*docs-test:\s*skip\s+(.+?)\s*-->\s*$")
_COMPOSE = re.compile(r"<!--\s*docs-test:\s*compose\s*-->\s*$")
_NOT_RUN = re.compile(r"<!--\s*docs-test:\s*not-run\s+(.+?)\s*-->\s*$")
_OUTPUT = re.compile(r"<!--\s*docs-test:\s*output((?:\s+(?:tail|masks=[\w,-]+))*)\s*-->\s*$")

#: A shown line that stands for any lines of the output, with ``masks=cut``.
CUT = "..."

#: What an output block may mask: the mask's name, its placeholder in the shown text and the
#: pattern the placeholder matches in the real output.
MASKS = {
    "run-id": ("<run-id>", r"[0-9a-f]{32}"),
    "run": ("<run>", r"[0-9a-f]{8}"),  # a run id's first 8 digits, as commands name a run
    "seconds": ("<seconds>", r"[0-9]+(?:\.[0-9]+)?"),
    "path": ("<path>", r"\S+"),
    "cut": (CUT, ""),  # a whole line: any lines, none or many (:func:`output_mismatch`)
}


@dataclass(frozen=True, slots=True)
class OutputCheck:
    """How a shown output block is checked: its last lines only (``tail``) and the masks it
    declares (names of :data:`MASKS`)."""

    tail: bool = False
    masks: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Block:
    """One fenced block of a page: its language, code, first line (1-based), skip reason and
    whether its commands are only composed."""

    language: str
    code: str
    line: int
    skip: str | None
    compose: bool = False
    output: OutputCheck | None = None
    not_run: str | None = None


def pages() -> list[Path]:
    """Every page with examples: the README and each Markdown page of ``docs/`` (drafts in
    ``docs/_incoming`` are not pages)."""
    found = [p for p in sorted(DOCS.rglob("*.md")) if "_incoming" not in p.parts]
    return [REPO / "README.md", *found]


def page_id(page: Path) -> str:
    return page.relative_to(REPO).as_posix() if page.is_relative_to(REPO) else page.name


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page`` in order."""
    text = page.read_text()
    out = []
    for match in _FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        skip = _SKIP.search(before)
        line = text.count("\n", 0, match.start()) + 1
        shown = _OUTPUT.search(before)
        check = None
        if shown:
            words = shown.group(1).split()
            masks = tuple(m for w in words if w.startswith("masks=") for m in w.removeprefix("masks=").split(",") if m)
            check = OutputCheck(tail="tail" in words, masks=masks)
        not_run = _NOT_RUN.search(before)
        out.append(
            Block(
                match.group(1), match.group(2), line, skip.group(1) if skip else None, bool(_COMPOSE.search(before)), check,
                not_run.group(1) if not_run else None,
            )
        )  # fmt: skip
    return out


def _lines(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return lines


def output_mismatch(shown: str, printed: str, check: OutputCheck) -> str | None:
    """``None`` when ``printed`` (a command's stdout) is what the page shows, else a unified diff
    of the two. Lines compare without trailing spaces and without blank lines at either end;
    with ``check.tail`` only the last ``len(shown lines)`` lines of ``printed``; a declared
    mask's placeholder matches its pattern, every other character only itself; with the ``cut``
    mask a shown line of ``...`` matches any lines, none or many (and ``tail`` then means any
    lines before the shown ones).

    >>> output_mismatch("run <run-id>\\nmean 0.75", "run " + "ab" * 16 + "\\nmean 0.75\\n", OutputCheck(masks=("run-id",)))
    >>> print(output_mismatch("mean 0.75", "log\\nmean 0.7542", OutputCheck(tail=True)))
    --- shown on the page
    +++ printed by the command
    @@ -1 +1 @@
    -mean 0.75
    +mean 0.7542
    """
    unknown = sorted(set(check.masks) - set(MASKS))
    if unknown:
        raise ValueError(f"unknown output masks {unknown} (known: {sorted(MASKS)})")
    want, got = _lines(shown), _lines(printed)
    cut = "cut" in check.masks
    if check.tail and cut:
        want = [CUT, *want]
    elif check.tail:
        got = got[-len(want) :] if want else []
    placeholders = {MASKS[m][0]: MASKS[m][1] for m in check.masks if m != "cut"}
    split = re.compile("(" + "|".join(re.escape(p) for p in placeholders) + ")") if placeholders else None

    def matches(pattern_line: str, line: str) -> bool:
        if split is None:
            return pattern_line == line
        parts = split.split(pattern_line)
        regex = "".join(placeholders[part] if part in placeholders else re.escape(part) for part in parts)
        return re.fullmatch(regex, line) is not None

    if cut:
        # reachable[j]: the shown lines so far match the first j printed lines
        reachable = [True] + [False] * len(got)
        for w in want:
            if w == CUT:
                first = reachable.index(True) if any(reachable) else len(got) + 1
                reachable = [j >= first for j in range(len(got) + 1)]
            else:
                reachable = [False] + [reachable[j] and matches(w, got[j]) for j in range(len(got))]
        if reachable[-1]:
            return None
    elif len(want) == len(got) and all(matches(w, g) for w, g in zip(want, got, strict=True)):
        return None
    return "\n".join(difflib.unified_diff(want, got, "shown on the page", "printed by the command", lineterm=""))


def _environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"LTR_TRACKING_URI", "MLFLOW_TRACKING_URI", "PYTHONSTARTUP"}}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["HOME"] = str(home)
    for width in ("COLUMNS", "LINES"):  # tables are as wide as a pipe makes them, not the terminal
        env.pop(width, None)
    env["MLFLOW_DISABLE_TELEMETRY"] = "true"
    env.setdefault("PYTHONPATH", "")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env["PYTHONPATH"]) if p)
    return env


def run_page(page: Path, folder: Path) -> list[str]:
    """Run every runnable, not skipped block of ``page`` in ``folder``; raise AssertionError
    naming the page, the block's line and its output for the first that fails. Returns the
    outputs of the blocks run."""
    home = folder / "home"
    home.mkdir(parents=True, exist_ok=True)
    work = folder / "work"
    work.mkdir(exist_ok=True)
    env = _environment(home)
    server = None
    if not os.environ.get("LTR_DOCS_NO_FORKSERVER"):
        server, client_dir = shared_server()
        env["PATH"] = f"{client_dir}{os.pathsep}{env['PATH']}"
        env[forkserver.INLINE_FIGURES] = "1"
        script_client: Path | None = client_dir / forkserver.SCRIPT_CLIENT
    else:
        script_client = None
    seeded = _seeded_caches(env)
    for name, (folder_of_page, pattern) in seeded.items():
        _copy_files(_SEEDS / name, folder_of_page, pattern)
    try:
        return _run_blocks(page, work, env, script_client)
    finally:
        if server is not None:
            _end_commands(server)
        for name, (folder_of_page, pattern) in seeded.items():
            _copy_files(folder_of_page, _SEEDS / name, pattern)


#: What the pages of this process left in their ``HOME``'s caches that a next page's commands
#: would only make again (:func:`_seeded_caches`), to give each next page (:func:`run_page`).
_SEEDS = Path(tempfile.mkdtemp(prefix="ltr-docs-seeds-"))
atexit.register(shutil.rmtree, _SEEDS, ignore_errors=True)


def _seeded_caches(env: dict[str, str]) -> dict[str, tuple[Path, str]]:
    """The cache files that a page's ``HOME`` starts with, as a reader's who has run ``ltr``
    before: by name, the folder where the commands run with ``env`` look for them and their
    pattern. The empty MLflow store that a new store is copied from
    (:mod:`ltr.tracking.sqlite.template`, in :func:`ltr.config.groups.data.default_cache_dir`),
    else built by MLflow's migrations (most of a second of CPU), and matplotlib's font list
    (a fifth of one). What the commands print and log is the same either way."""
    home = Path(env["HOME"])
    ltr_cache = Path(env["LTR_CACHE_DIR"]) if env.get("LTR_CACHE_DIR") else home / ".cache" / "ltr" / "data"
    seeds = {"mlflow-stores": (ltr_cache / "mlflow-stores", "empty-*.db")}
    if not env.get("MPLCONFIGDIR"):
        xdg_cache = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else home / ".cache"
        seeds["matplotlib"] = (xdg_cache / "matplotlib", "fontlist-*.json")
    return seeds


def _copy_files(source: Path, target: Path, pattern: str) -> None:
    """Copy the files of ``source`` matching ``pattern`` that ``target`` lacks (each written
    whole: a temporary name, then renamed)."""
    if not source.is_dir():
        return
    for file in source.glob(pattern):
        if not (target / file.name).exists():
            target.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(file, target / f".{file.name}.tmp")
            os.replace(target / f".{file.name}.tmp", target / file.name)


#: This process's fork server and the folder of its client (:func:`shared_server`).
_SHARED: list[tuple[subprocess.Popen[bytes], Path]] = []
_SHARED_LOCK = threading.Lock()  # a test's threads (the fault matrix's cases) start one server


def shared_server() -> tuple[subprocess.Popen[bytes], Path]:
    """The fork server of this test process (started by the first page that needs it, ended
    when the process exits) and the folder of its ``ltr`` client: its imports are a few seconds
    of CPU, paid once instead of once a page. Each command is forked from the server's state
    after its imports, never from another command's (:mod:`tests.docs.forkserver`), with the
    page's environment, folder and descriptors; the server's own environment is a page's
    (:func:`_environment`) with a ``HOME`` of its own, which no import reads."""
    with _SHARED_LOCK:
        if _SHARED and _SHARED[0][0].poll() is not None:  # it died (killed from outside): a new one
            _SHARED.clear()
        if not _SHARED:
            folder = Path(tempfile.mkdtemp(prefix="ltr-docs-forkserver-"))
            (folder / "home").mkdir()
            _SHARED.append(forkserver.start(_environment(folder / "home"), folder / "server"))
            atexit.register(_stop_shared, folder)
        return _SHARED[0]


def _stop_shared(folder: Path) -> None:
    forkserver.stop(_SHARED.pop()[0])
    shutil.rmtree(folder, ignore_errors=True)


def _end_commands(server: subprocess.Popen[bytes]) -> None:
    """Kill what a page's commands left running in the server's process group (a command still
    running, a background process), as ending a page's own server did; the server stays."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == server.pid:
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # gone
        if stat[stat.rindex(")") + 2 :].split()[2] == str(server.pid):  # proc(5): state, ppid, pgrp, ...
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry.name), signal.SIGKILL)


def _run_blocks(page: Path, work: Path, env: dict[str, str], script_client: Path | None) -> list[str]:
    """Run the blocks of ``page`` in ``work``; a ```python block with ``script_client`` (the
    fork server's, :data:`forkserver.SCRIPT_CLIENT`), else in a new interpreter."""
    outputs = []
    printed: str | None = None  # the stdout of the block just run, for an output block after it
    for block in blocks(page):
        if block.output is not None:
            where = f"{page_id(page)}:{block.line} (output block)"
            assert printed is not None, f"{where}: an output block follows the block it shows, run here"
            diff = output_mismatch(block.code, printed, block.output)
            assert diff is None, f"{where} is not what the command above it prints:\n{diff}"
            continue  # a next output block shows more of the same stdout
        printed = None
        if block.language not in RUNNABLE or block.skip:
            continue
        if block.compose:
            outputs.extend(_compose_each(block, page, work, env))
            continue
        if block.language == "bash":
            argv = ["bash", "-euo", "pipefail", "-c", block.code]
        else:
            script = work / f"block_{block.line}.py"
            script.write_text(block.code)
            argv = [str(script_client or sys.executable), str(script)]
        done = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        where = f"{page_id(page)}:{block.line} ({block.language} block)"
        assert done.returncode == 0, f"{where} exited {done.returncode}\n--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-4000:]}"
        outputs.append(done.stdout)
        printed = done.stdout
    return outputs


def commands(code: str) -> list[str]:
    """The commands of a shell block: continuation lines joined, comments and blank lines dropped."""
    joined = re.sub(r"\\\n\s*", " ", code)
    out = []
    for line in joined.splitlines():
        command = re.sub(r"(^|\s)#.*$", "", line).strip()
        if command:
            out.append(command)
    return out


#: A Hydra sweep value: a function of the sweep grammar, or a comma-separated list outside brackets.
_SWEEP_FUNCTION = re.compile(r"^(?:int\(|float\()?(?:tag\([^,]*,\s*)?(interval|range|choice)\((.*?)\)+$")


def _first_value(value: str) -> str:
    """The first value of a sweep (``1,2`` -> ``1``, ``int(interval(7,63))`` -> ``7``,
    ``choice(a,b)`` -> ``a``); any other value as it is."""
    match = _SWEEP_FUNCTION.match(value)
    if match:
        first = match.group(2).split(",")[0].strip()
        return str(int(float(first))) if value.startswith("int(") else first
    depth, parts, current = 0, [], ""
    for ch in value:
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    return parts[0] if parts else value


def first_job(command: str) -> str:
    """The first job of a sweep command, as a single-run command: ``-m`` / ``--multirun``
    dropped and every sweep value replaced by its first value.

    >>> first_job("ltr train -m model=lambdarank,rank_xendcg 'model.num_leaves=int(interval(7,63))' 'x=[1,2]'")
    "ltr train model=lambdarank model.num_leaves=7 'x=[1,2]'"
    """
    tokens = shlex.split(command)
    out = []
    for token in tokens:
        if token in {"-m", "--multirun"}:
            continue
        key, eq, value = token.partition("=")
        if eq and not key.startswith("-") and not key.startswith("hydra.sweeper.params"):
            token = f"{key}={_first_value(value)}"
        out.append(token)
    if out == tokens:
        return command  # no sweep: the command as written (its ~ and $VARIABLES expand)
    return shlex.join(out)


def _compose_each(block: Block, page: Path, work: Path, env: dict[str, str]) -> list[str]:
    """Check each ``ltr train`` command of a menu block by composing it (``--cfg job``)."""
    outputs = []
    for command in commands(block.code):
        where = f"{page_id(page)}:{block.line}: {command}"
        assert command.startswith("ltr train "), f"{where}: a compose-checked block holds only ltr train commands"
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", f"{first_job(command)} --cfg job"],
            cwd=work, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert done.returncode == 0, f"{where}\n{done.stderr[-2000:]}"
        assert "ltr: error" not in done.stderr, f"{where}\n{done.stderr[-2000:]}"
        outputs.append(done.stdout)
    return outputs


def api_page_example() -> str:
    """The first ``python`` block of ``docs/guide/api.md``: tests/test_api.py runs it and checks
    its results, so the page marks it as run there."""
    return next(b.code for b in blocks(DOCS / "guide" / "api.md") if b.language == "python")

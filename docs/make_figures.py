"""Make the manual's figures, ``docs/images/*.png``, from the product: each is the figure a real
``ltr`` command draws (a run's or a sweep parent's artifact, or ``ltr abtest --figure``), made
by the commands the pages show, in a fresh folder with a store of its own, then copied into
``docs/images``. No figure is drawn by hand or copied from elsewhere.

    python docs/make_figures.py                  # every figure, into docs/images
    python docs/make_figures.py pareto_front     # one (names: FIGURES' keys without .png)
    python docs/make_figures.py --out /tmp/figs  # somewhere else

The docs build runs it: ``mkdocs.yml`` names this file as a hook, so ``mkdocs build`` (and
``make docs``) regenerates every figure before it renders the pages. It trains what the pages
describe (a default run, the six runs of ``experiment=diversity_tradeoff``, the eight of
``experiment=online_vs_offline`` and two click-log runs for ``ltr abtest``), which takes
minutes; ``LTR_DOCS_FIGURES=0`` builds with the figures as they are (the suite's strict-build
test does, and ``mkdocs serve`` never regenerates them: they live in the folder it watches).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
IMAGES = REPO / "docs" / "images"


@dataclass(frozen=True, slots=True)
class Figure:
    """The commands that draw a figure, and where the figure lands: an artifact path of the
    last run that logged it (``artifact``), or a file the commands write (``file``)."""

    commands: tuple[str, ...]
    artifact: str | None = None
    file: str | None = None
    page: str = ""


#: Each figure of docs/images, by file name: the commands of the page that shows it.
FIGURES = {
    "ndcg_by_stratum.png": Figure(
        ("ltr train",),
        artifact="report/ndcg_by_stratum.png",
        page="README.md (the default run of guide/first-experiment.md)",
    ),
    "pareto_front.png": Figure(
        ("ltr train experiment=diversity_tradeoff",),
        artifact="figures/pareto_front.png",
        page="guide/diversity.md",
    ),
    "online_vs_ndcg.png": Figure(
        ("ltr train experiment=online_vs_offline",),
        artifact="figures/online_vs_ndcg.png",
        page="guide/diversity.md",
    ),
    "abtest_power.png": Figure(
        (  # the default click log, as the page's tables (its quick example shrinks it)
            "ltr train data=synthetic_clicks tracking.run_name=clicks",
            "ltr train data=synthetic_clicks data.train_labels=relevance tracking.run_name=relevance",
            "ltr abtest clicks relevance --figure power.png",
        ),
        file="power.png",
        page="guide/ab-simulation.md",
    ),
}


def _environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"LTR_TRACKING_URI", "MLFLOW_TRACKING_URI"}}
    env["HOME"] = str(home)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    env["MLFLOW_DISABLE_TELEMETRY"] = "true"
    return env


def _newest_artifact(work: Path, artifact: str) -> Path:
    """The artifact ``artifact`` of the run that logged it last in the folder's store."""
    found = sorted(work.glob(f"mlartifacts/**/artifacts/{artifact}"), key=lambda p: p.stat().st_mtime)
    if not found:
        raise SystemExit(f"make_figures: no run in {work} logged {artifact}")
    return found[-1]


def make(name: str, out: Path) -> float:
    """Run ``FIGURES[name]``'s commands in a fresh folder and copy its figure to ``out/name``;
    returns the seconds it took."""
    figure = FIGURES[name]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"ltr-figure-{Path(name).stem}-") as folder:
        work = Path(folder)
        (work / "home").mkdir()
        env = _environment(work / "home")
        for command in figure.commands:
            done = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", command],
                cwd=work, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL,
            )  # fmt: skip
            if done.returncode != 0:
                raise SystemExit(f"make_figures: {name}: `{command}` exited {done.returncode}\n{done.stderr[-3000:]}")
        made = work / figure.file if figure.file else _newest_artifact(work, figure.artifact or "")
        out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(made, out / name)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help=f"figures to make (default: all): {', '.join(Path(n).stem for n in FIGURES)}")
    parser.add_argument("--out", type=Path, default=IMAGES, help="the folder to write into (default: docs/images)")
    args = parser.parse_args(argv)
    names = [f"{n.removesuffix('.png')}.png" for n in args.names] or list(FIGURES)
    unknown = [n for n in names if n not in FIGURES]
    if unknown:
        parser.error(f"unknown figures {unknown}; known: {', '.join(FIGURES)}")
    for name in names:
        seconds = make(name, args.out)
        print(f"{args.out / name}: {FIGURES[name].page} ({seconds:.0f} s)", file=sys.stderr)
    return 0


def on_startup(command: str, dirty: bool) -> None:
    """MkDocs hook: ``mkdocs build`` regenerates every figure first (unless
    ``LTR_DOCS_FIGURES=0``); ``mkdocs serve`` and ``gh-deploy`` leave them as they are."""
    if command == "build" and os.environ.get("LTR_DOCS_FIGURES", "1") != "0":
        main([])


if __name__ == "__main__":
    raise SystemExit(main())

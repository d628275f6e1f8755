"""Who ran what, and where: the git commit of the code that ran (and whether its work tree had
uncommitted changes), the MLflow tags the UI shows as a run's Source, Created by and Git commit,
and the folder the run's relative paths were taken from (:data:`WORKDIR_TAG`)."""

from __future__ import annotations

import functools
import getpass
import subprocess
from pathlib import Path

#: The tag of the folder a run was started in, which its relative data paths (``data.test=te.txt``)
#: were taken from: ``ltr predict RUN --split`` takes them from there too.
WORKDIR_TAG = "ltr.workdir"

#: The ``ltr`` package's folder: its repository is the code that ran.
CODE_DIR = Path(__file__).resolve().parent.parent


def git_state(path: Path) -> tuple[str, bool]:
    """``(commit, dirty)`` of the repository holding ``path``; ``("unknown", False)`` outside git."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=path, capture_output=True, text=True, check=True, timeout=10
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=path, capture_output=True, text=True, check=True, timeout=10,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown", False
    return commit, bool(status.strip())


@functools.cache
def code_state() -> tuple[str, bool]:
    """:func:`git_state` of the ``ltr`` code itself (asked once per process)."""
    return git_state(CODE_DIR)


def workdir_tags() -> dict[str, str]:
    """``{WORKDIR_TAG: the current folder}`` (absolute), for a run starting now."""
    return {WORKDIR_TAG: str(Path.cwd())}


def source_tags(command: str) -> dict[str, str]:
    """MLflow's own tags of a run started by ``command`` (``ltr train``): the UI's Source
    (``mlflow.source.name``, type LOCAL), Created by (``mlflow.user``) and Git commit."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (some containers)
        user = "unknown"
    tags = {"mlflow.source.name": command, "mlflow.source.type": "LOCAL", "mlflow.user": user}
    commit, _ = code_state()
    if commit != "unknown":
        tags["mlflow.source.git.commit"] = commit
    return tags

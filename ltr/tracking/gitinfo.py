"""The git commit of the code that ran, and whether its work tree had uncommitted changes."""

from __future__ import annotations

import subprocess
from pathlib import Path


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

"""What Linux's ``/proc`` tells of a process: its state, start time and command line.

Every reader answers "unknown" (``""`` or None) where ``/proc`` has no answer (another system, a
process gone, another user's process), never an error: callers fall back on what else they know.
"""

from __future__ import annotations

from pathlib import Path


def read_text(path: str) -> str:
    """The stripped text of ``path``; "" when it cannot be read."""
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


def proc_stat(pid: int | str) -> tuple[str, str] | None:
    """(state, start time in clock ticks since boot) of ``pid`` from /proc; None if unknown.
    The state is ``/proc``'s letter: ``R`` running, ``S`` sleeping, ``T`` stopped, ``Z`` zombie, ..."""
    text = read_text(f"/proc/{pid}/stat")
    if not text:
        return None
    fields = text[text.rindex(")") + 2 :].split()  # the command name may hold spaces
    return fields[0], fields[19]


def command_line(pid: int | str) -> str:
    """The arguments ``pid`` was started with, joined by single spaces (newlines in them too); ""
    when unknown."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return " ".join(raw.decode(errors="replace").replace("\0", " ").split())


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (zombies included), from ``/proc``; [] when unknown."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        text = read_text(str(stat))
        if text and text[text.rindex(")") + 2 :].split()[1] == str(pid):
            found.append(int(stat.parent.name))
    return found

"""What Linux's ``/proc`` tells of a process: its state, start time, parent and command line.

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


def stat_fields(pid: int | str) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name: state, ppid, pgrp, session, ...
    (``proc(5)``'s fields 3 on, so field ``n`` is at index ``n - 3``); None if unknown."""
    text = read_text(f"/proc/{pid}/stat")
    if not text:
        return None
    return text[text.rindex(")") + 2 :].split()  # the command name may hold spaces and ")"


def proc_stat(pid: int | str) -> tuple[str, str] | None:
    """(state, start time in clock ticks since boot) of ``pid`` from /proc; None if unknown.
    The state is ``/proc``'s letter: ``R`` running, ``S`` sleeping, ``T`` stopped, ``Z`` zombie, ..."""
    fields = stat_fields(pid)
    return None if fields is None else (fields[0], fields[19])


def command_line(pid: int | str) -> str:
    """The arguments ``pid`` was started with, joined by single spaces (newlines in them too); ""
    when unknown."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return " ".join(raw.decode(errors="replace").replace("\0", " ").split())


def processes() -> list[int]:
    """The ids of the processes ``/proc`` lists now (some may be gone by the time they are read)."""
    return [int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit()]


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (zombies included), from ``/proc``; [] when unknown."""
    return [child for child in processes() if (fields := stat_fields(child)) is not None and fields[1] == str(pid)]

"""A run's explanation in its store: ``explain/importance.json`` and
``explain/importance_by_stratum.png`` logged on the run itself, and read back.

Only artifacts are written (no metric, param or tag changes): every value the run measured
stays as it was. A store that can only be read is refused before any work
(:func:`check_writable`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ltr.errors import LtrUserError, write_failed
from ltr.explain.figure import plot_importance_by_stratum
from ltr.explain.files import ContributionsFile
from ltr.explain.importance import Importance
from ltr.models.logged import LoggedRun
from ltr.runtime.stops import committing
from ltr.tracking.store import read_only_store

#: The artifacts an explanation logs on its run.
IMPORTANCE_JSON = "explain/importance.json"
IMPORTANCE_FIGURE = "explain/importance_by_stratum.png"


def check_writable(uri: str) -> None:
    """Refuse ``--log`` on a store that can only be read, in one line, before any work."""
    db = read_only_store(uri)
    if db is not None:
        raise LtrUserError(f"the store {db} can only be read: the explanation cannot be logged on the run; pass --no-log")


@dataclass
class PendingLog:
    """The explanation's artifacts, made (the store opened, the figure drawn) and not yet
    written: :meth:`write` only sends them, so it can sit in the block that makes the command's
    outputs final (:func:`commit`)."""

    run: LoggedRun
    client: Any
    text: str
    figure: Any

    def write(self) -> list[str]:
        """Log both artifacts on the run; the artifact paths."""
        try:
            self.client.log_text(self.run.run_id, self.text, IMPORTANCE_JSON)
            self.client.log_figure(self.run.run_id, self.figure, IMPORTANCE_FIGURE)
        except OSError as exc:
            raise write_failed(exc, f"cannot log the explanation on run {self.run.label}: {exc.strerror or exc}", path=self.run.uri) from None
        return [IMPORTANCE_JSON, IMPORTANCE_FIGURE]


def pending_log(run: LoggedRun, importance: Importance, *, top: int = 15) -> PendingLog:
    """``importance`` and its figure, ready to be logged on ``run`` (:class:`PendingLog`)."""
    split = importance.meta.get("split")
    on = f"{split} split" if split else "files given"
    figure = plot_importance_by_stratum(importance, top=top, title=f"{run.run_name}\nfeature importance by list length ({on})")
    return PendingLog(run, run.store.client, json.dumps(importance.to_dict(), indent=2), figure)


def commit(out: ContributionsFile | None, log: PendingLog | None) -> tuple[list[Path], list[str]]:
    """Make the command's outputs final together: the ``--out`` file renamed into place and the
    artifacts logged on the run. A stop signal before the block stops the command with neither;
    one during it waits for its end. Returns (files written, artifacts logged)."""
    if out is not None:
        out.close()
    with committing():
        logged = log.write() if log is not None else []
        written = [out.commit()] if out is not None else []
    return written, logged


def logged_importance(run: LoggedRun) -> Importance | None:
    """The importance logged on ``run`` (:data:`IMPORTANCE_JSON`), or None when it has none."""
    text = run.text_artifact(IMPORTANCE_JSON)
    if text is None:
        return None
    try:
        return Importance.from_dict(json.loads(text))
    except (ValueError, KeyError, TypeError, IndexError):
        return None

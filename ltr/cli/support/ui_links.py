"""The store side of ``ltr ui``, run in a short-lived child process: ``python -m ltr.cli.support.ui_links URI BASE``.

It opens the store (checked, rebuilt or refused under its lock, dead runs reaped:
:func:`ltr.tracking.store.open_client`), tags experiments made without ``ltr``'s kind so the
UI opens them on their runs, and prints one JSON object on stdout: ``{"links": [...]}`` (one
``name: link`` line per experiment that holds runs) or ``{"error": "..."}`` (a one-line user
error). ``ltr ui`` itself never imports MLflow: the ~250 MB of it stay in this process, which
ends before the UI is up, and in the server.
"""

from __future__ import annotations

import contextlib
import json
import sys
from typing import Any

from ltr.errors import LtrUserError
from ltr.tracking.mlflow_tracker import mark_model_training
from ltr.tracking.store import open_client
from ltr.tracking.uri import VIEW_KEY, ui_url


def experiment_links(client: Any, base: str) -> list[str]:
    """``name: link to its runs table`` of every experiment that holds runs; an experiment made
    without ``ltr``'s kind tag gets it, so the UI opens it on its runs (when the store is writable)."""
    lines = []
    for experiment in client.search_experiments():
        if not client.search_runs([experiment.experiment_id], max_results=1):
            continue
        with contextlib.suppress(Exception):  # a read-only store: the UI asks the user to pick the mode
            mark_model_training(client, experiment)
        view = f"mlflow.sharedViewState.{VIEW_KEY}" in experiment.tags
        lines.append(f"  {experiment.name}: {ui_url(base, experiment.experiment_id, view=view)}")
    return lines


def main(argv: list[str]) -> int:
    """``URI BASE``: print ``{"links": [...]}`` or ``{"error": ...}``; 0 either way (the parent decides)."""
    uri, base = argv
    try:
        client = open_client(uri, create=False)
        print(json.dumps({"links": experiment_links(client, base)}))
    except LtrUserError as exc:
        print(json.dumps({"error": str(exc)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

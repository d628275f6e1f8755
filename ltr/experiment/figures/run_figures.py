"""The figures a run logs: drawn in a :class:`~ltr.experiment.figures.figure_worker.FigureWorker` while the
run logs the rest, or in this process where the worker cannot.

:meth:`RunFigures.add` hands a figure to the worker at once (it draws while the caller goes on);
:meth:`RunFigures.log_to` logs every figure, in the order added, as the PNG artifact it names. A
figure the worker could not take, failed to draw, or did not draw because it died, is drawn here
and logged with the tracker's ``log_figure``: the artifact is the same file either way (the worker
saves it as ``log_figure`` does), and a real error in a drawing function is raised here, in the
run's process, as it would be without a worker.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from ltr.experiment.figures.figure_worker import FigureWorker
from ltr.tracking import Tracker

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Figure:
    artifact_file: str
    draw: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    saved_at: Path | None = None  # where the worker was asked to save it (None: not sent)


class RunFigures:
    """A run's figures (see the module docstring). Use it as a context manager: on exit the worker
    (if any) is closed, and the folder its files went to is removed.

    ``worker``: the run's worker, or None to draw every figure here, when it is logged.
    """

    def __init__(self, worker: FigureWorker | None) -> None:
        self._worker = worker
        self._folder: Path | None = None
        self._figures: list[_Figure] = []

    def add(self, artifact_file: str, draw: Callable[..., Any], /, *args: Any, **kwargs: Any) -> None:
        """The figure ``draw(*args, **kwargs)`` (a matplotlib ``Figure``) is the artifact
        ``artifact_file`` (a ``/``-separated path ending in ``.png``)."""
        saved_at = None
        if self._worker is not None:
            if self._folder is None:
                self._folder = Path(tempfile.mkdtemp(prefix="ltr-figures-"))
            path = self._folder / artifact_file
            saved_at = path if self._worker.submit(draw, args, kwargs, path) else None
        self._figures.append(_Figure(artifact_file, draw, args, kwargs, saved_at))

    def log_to(self, tracker: Tracker) -> None:
        """Log every figure added, in that order, and forget them."""
        figures, self._figures = self._figures, []
        for figure in figures:
            if figure.saved_at is not None and self._worker is not None:
                problem = self._worker.result()
                if problem is None:
                    parent = str(PurePosixPath(figure.artifact_file).parent)
                    tracker.log_file(figure.saved_at, None if parent == "." else parent)
                    continue
                log.debug("figure worker: %s: %s; drawing it in the run's process", figure.artifact_file, problem)
            tracker.log_figure(figure.draw(*figure.args, **figure.kwargs), figure.artifact_file)

    def close(self) -> None:
        """Close the worker (it writes nothing after), then remove the folder of its files."""
        if self._worker is not None:
            self._worker.close()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None

    def __enter__(self) -> RunFigures:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

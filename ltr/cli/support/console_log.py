"""Log lines of a CLI verb on the terminal, for the verb's duration only: every record of a level
(:func:`console_logging`), or the lines of some loggers, as plain lines (:func:`echo_logs`)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

FORMAT = "[%(asctime)s][%(name)s][%(levelname)s] - %(message)s"


class CurrentStderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """A stream handler writing to whatever ``sys.stderr`` is when a record is emitted (never to a
    stream captured and closed since the handler was made)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:
        pass


@contextmanager
def console_logging(level: int) -> Iterator[None]:
    """In the block, the root logger writes records of ``level`` and above to the current stderr;
    the root's handlers and level are restored after (so an in-process caller, a test or the API,
    keeps its own logging)."""
    root = logging.getLogger()
    handlers, old_level = list(root.handlers), root.level
    handler = CurrentStderrHandler()
    handler.setFormatter(logging.Formatter(FORMAT))
    for old in handlers:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    try:
        yield
    finally:
        root.removeHandler(handler)
        for old in handlers:
            root.addHandler(old)
        root.setLevel(old_level)


class _EchoHandler(logging.Handler):
    """The library's log lines (``parsed FILE: rows, queries, features``, warnings) on stderr."""

    def emit(self, record: logging.LogRecord) -> None:
        prefix = "" if record.levelno < logging.WARNING else f"{record.levelname.lower()}: "
        print(prefix + record.getMessage(), file=sys.stderr, flush=True)


@contextmanager
def echo_logs(*loggers: logging.Logger) -> Iterator[None]:
    """Show the INFO lines and warnings of ``loggers`` (e.g. ``ltr.data``'s: the reading progress)
    on stderr in the block, as plain lines (``warning: `` before a warning's), and only there."""
    handler = _EchoHandler()
    saved = [(logger, logger.level, logger.propagate) for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
    try:
        yield
    finally:
        for logger, level, propagate in saved:
            logger.removeHandler(handler)
            logger.setLevel(level)
            logger.propagate = propagate

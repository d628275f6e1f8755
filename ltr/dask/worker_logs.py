"""One line per log record in the worker processes of the ``LocalCluster`` ``ltr`` starts.

The workers write ``distributed``'s log to the stderr they inherit from the ``ltr`` command. A
record with an exception (``logger.exception``: a worker whose heartbeat meets a scheduler that
is closing, say, as the cluster tears down after a lost worker) would print a traceback among
the command's lines. :func:`dask_setup` runs in each worker (a ``distributed`` preload:
:data:`PRELOAD`) and gives the handlers of the ``distributed`` logger a :class:`OneLineFormatter`:
the record's own line, then ``(ExceptionType: message)`` on that same line.
"""

from __future__ import annotations

import logging
from typing import Any

#: The preload that :func:`ltr.dask.train.dask_client` gives its LocalCluster's workers.
PRELOAD = __name__


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines included) made one space."""
    return " ".join(text.split())


class OneLineFormatter(logging.Formatter):
    """Records as ``inner`` formats them, on one line: the exception (and stack) is named, not traced.

    >>> import sys
    >>> formatter = OneLineFormatter(logging.Formatter("%(levelname)s - %(message)s"))
    >>> try:
    ...     raise OSError("stream\\nclosed")
    ... except OSError:
    ...     record = logging.LogRecord("w", logging.ERROR, __file__, 1, "heartbeat failed", None, sys.exc_info())
    >>> formatter.format(record)
    'ERROR - heartbeat failed (OSError: stream closed)'
    """

    def __init__(self, inner: logging.Formatter | None = None) -> None:
        super().__init__()
        self.inner = inner if inner is not None else logging.Formatter()

    def format(self, record: logging.LogRecord) -> str:
        exc_info, exc_text, stack_info = record.exc_info, record.exc_text, record.stack_info
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        try:
            line = one_line(self.inner.format(record))
        finally:  # other handlers of the record still see it whole
            record.exc_info, record.exc_text, record.stack_info = exc_info, exc_text, stack_info
        if exc_info and exc_info[1] is not None:
            error = exc_info[1]
            detail = one_line(str(error))
            line += f" ({type(error).__name__}: {detail})" if detail else f" ({type(error).__name__})"
        return line


#: The loggers ``distributed`` gives a stderr handler of their own when it is imported.
DISTRIBUTED_LOGGERS = ("distributed", "tornado", "bokeh")


def install(logger: logging.Logger) -> None:
    """Wrap the formatter of every handler of ``logger`` in a :class:`OneLineFormatter` (once)."""
    for handler in logger.handlers:
        if not isinstance(handler.formatter, OneLineFormatter):
            handler.setFormatter(OneLineFormatter(handler.formatter))


def dask_setup(worker: Any) -> None:
    """``distributed``'s preload hook, run in each worker process as it starts."""
    for name in DISTRIBUTED_LOGGERS:
        install(logging.getLogger(name))

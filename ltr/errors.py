"""Errors a user can fix: the CLI prints them as one line and exits non-zero, without a traceback.

And :class:`Terminated`, which a stop signal raises (here, not in :mod:`ltr.tracking.lifecycle`
where it is used, so that ``ltr``'s dispatcher catches it without importing the tracking code)."""

from __future__ import annotations


class LtrUserError(Exception):
    """Bad input or configuration. The message says what is wrong and where (file, line, qid)."""


class DataError(LtrUserError):
    """A data file or data configuration cannot be used as given."""


class Terminated(BaseException):
    """Raised by ``ltr``'s SIGTERM handler so a run ends KILLED, like Ctrl-C (exit 143)."""

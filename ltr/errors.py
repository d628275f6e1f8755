"""Errors a user can fix: the CLI prints them as one line and exits non-zero, without a traceback."""

from __future__ import annotations


class LtrUserError(Exception):
    """Bad input or configuration. The message says what is wrong and where (file, line, qid)."""


class DataError(LtrUserError):
    """A data file or data configuration cannot be used as given."""

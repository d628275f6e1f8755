"""The one output layer of ``ltr``: what reaches a terminal, and what a write to it can fail with.

Text that ``ltr`` prints quotes things it does not control: run names from a store, paths,
topic ids from a file, values from a logged config. A control character in them (ESC, BEL)
would drive the terminal of whoever reads the output (set its title, clear it, hide lines), so
every character of category ``Cc`` but newline and tab is written as its escape (``\\x1b``):

- :class:`OutputStream` wraps ``sys.stdout`` and ``sys.stderr`` for the duration of a command
  (``ltr.cli.main``), so ``print``, log handlers and anything else writing there go through it.
  It records the first error of the stream beneath (a reader that has gone, ``EPIPE``; a full
  device, ``ENOSPC``), so the command can end with the one exit code of that fault even when
  the error was swallowed on the way (a :mod:`logging` handler).
- :func:`console` is rich's console for tables and progress bars: it escapes the text it renders
  and writes its own control sequences (colours, cursor moves of a progress bar) unescaped,
  through the stream's :attr:`OutputStream.rich_proxied_file` (the attribute rich writes to).
"""

from __future__ import annotations

import io
import re
import unicodedata
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from rich.console import Console

#: Control characters but newline and tab (category ``Cc``: C0, DEL, C1).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")



def printable(text: str) -> str:
    """``text`` with all its control characters (ESC, BEL, CR, newlines, ...) written as escapes
    (``\\x1b``): a message quoting a file's content can never drive the terminal nor break the
    one line an error is."""
    return "".join(ch.encode("unicode_escape").decode("ascii") if unicodedata.category(ch) == "Cc" else ch for ch in text)


def visible(text: str) -> str:
    """``text`` with its control characters but newline and tab written as escapes: the
    multi-line output of a command (tables, reports) with nothing that drives a terminal."""
    if _CONTROL.search(text) is None:
        return text
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


class OutputStream(io.TextIOBase):
    """``stream`` with every write escaped by :func:`visible` (unless ``escape`` is false), and
    the first :class:`OSError` of its writes and flushes kept in :attr:`failure` (shared with
    its unescaped view; :meth:`raised_by` tells any of them)."""

    def __init__(self, stream: TextIO, *, escape: bool = True, failures: list[OSError] | None = None) -> None:
        super().__init__()
        self.stream = stream
        self.escape = escape
        self.failures: list[OSError] = [] if failures is None else failures
        self._unescaped = self if not escape else None

    @property
    def failure(self) -> OSError | None:
        """The first error of a write or flush, if any."""
        return self.failures[0] if self.failures else None

    @property
    def rich_proxied_file(self) -> OutputStream:
        """The unescaped view: where rich writes (its console escapes what it renders, :func:`console`)."""
        if self._unescaped is None:
            self._unescaped = OutputStream(self.stream, escape=False, failures=self.failures)
        return self._unescaped

    def _record(self, exc: OSError) -> None:
        exc._ltr_failures = self.failures  # type: ignore[attr-defined]  # for raised_by
        if not self.failures:
            self.failures.append(exc)

    def raised_by(self, exc: BaseException) -> bool:
        """Whether ``exc`` is the error of a write or flush of this stream (or its unescaped view)."""
        return getattr(exc, "_ltr_failures", None) is self.failures

    def write(self, text: str) -> int:
        try:
            self.stream.write(visible(text) if self.escape else text)
        except OSError as exc:
            self._record(exc)
            raise
        return len(text)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except OSError as exc:
            self._record(exc)
            raise

    def fileno(self) -> int:
        return self.stream.fileno()

    def isatty(self) -> bool:
        return self.stream.isatty()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return str(getattr(self.stream, "encoding", None) or "utf-8")

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self.stream, "errors", None)

    @property
    def closed(self) -> bool:
        return bool(self.stream.closed)

    def close(self) -> None:  # the stream beneath is not ours to close
        pass


def unwrapped(stream: Any) -> Any:
    """The stream beneath an :class:`OutputStream` (``stream`` itself otherwise)."""
    return stream.stream if isinstance(stream, OutputStream) else stream


_console_class: type[Console] | None = None


def _safe_console_class() -> type[Console]:
    global _console_class
    if _console_class is None:
        from rich.console import Console
        from rich.segment import Segment

        class SafeConsole(Console):
            """A rich console whose rendered text has its control characters escaped; its own
            control segments (cursor moves) and styles are written as they are."""

            def _render_buffer(self, buffer: Iterable[Segment]) -> str:
                return super()._render_buffer(
                    segment if segment.control else Segment(visible(segment.text), segment.style, segment.control) for segment in buffer
                )

        _console_class = SafeConsole
    return _console_class


def console(*, stderr: bool = False, width: int | None = None) -> Console:
    """Rich's console on stdout (``stderr``: on stderr), escaping the text it prints (a run name
    with ESC and BEL is shown as ``\\x1b`` and ``\\x07``); ``width`` when not a terminal."""
    made = _safe_console_class()(stderr=stderr)
    if width is not None and not made.is_terminal:
        made = _safe_console_class()(stderr=stderr, width=width)
    return made


def guarded(stream: TextIO) -> OutputStream:
    """``stream`` as an :class:`OutputStream` (itself if it already is one)."""
    return stream if isinstance(stream, OutputStream) else OutputStream(stream)


__all__ = ["OutputStream", "console", "guarded", "printable", "unwrapped", "visible"]

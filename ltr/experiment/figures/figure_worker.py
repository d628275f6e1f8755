"""A child process that draws a run's figures to PNG files, so the run's own process never loads matplotlib.

matplotlib's import (about 0.5 s of CPU) and drawing a run's figures (about 0.3 s) are work the
training process does single-threaded, at its start and at its end. A :class:`FigureWorker` started
when the run starts imports matplotlib on the core the run's own start-up leaves idle, and at the
end draws while the run logs its model, tables and metrics.

Protocol (both ends in this module): the parent writes the child's ``sys.path`` (a pickled list)
on its stdin, then one frame per job: an 8-byte little-endian length and the pickled path of a
job file, beside the figure's PNG path, holding the pickle of ``(draw, args, kwargs, path)``
(frames stay a few hundred bytes, so writing one never waits on a busy or stopped child);
``draw(*args, **kwargs)`` returns a matplotlib ``Figure`` and the child saves it with
``figure.savefig(path)``, the call MLflow's ``log_figure`` makes, so the file is byte for byte the
one ``log_figure`` writes (tested). For each job the child answers one frame, the pickle of None
(saved) or of the error's one line. The child reads until its stdin ends (a SIGKILLed parent
leaves no worker behind; a parent done with it ends it with SIGTERM), ignores SIGINT (a Ctrl-C in a terminal
reaches the whole process group; the parent decides what it does) and writes its frames to the
stdout it was started with while anything else printing to stdout goes to stderr.

The worker only ever speeds things up: a job it could not take (an unpicklable argument), a
failed draw, a worker that died, or one that gave no answer within :data:`RESULT_TIMEOUT_S` (it
is killed then) is drawn again in the parent by the caller
(:class:`ltr.experiment.figures.run_figures.RunFigures`), which then meets any real error itself.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import ltr.experiment.figures.charts
import ltr.metrics.plots  # noqa: F401  the run's figures: loaded by the child before its first job

_LENGTH = struct.Struct("<Q")

#: What the child runs: read ``sys.path``, then serve (stdout kept for the frames only).
_BOOT = (
    "# ltr figure worker\n"  # what ps and top show of it
    "import os, pickle, sys\n"
    "sys.path[:] = pickle.load(sys.stdin.buffer)\n"
    "frames = os.fdopen(os.dup(1), 'wb')\n"
    "os.dup2(2, 1)\n"
    "from ltr.experiment.figures.figure_worker import serve\n"
    "serve(sys.stdin.buffer, frames)\n"
    "frames.close()\n"
    "os._exit(0)\n"  # nothing left to write: no teardown of matplotlib's modules for the parent to wait on
)

#: Seconds a closing parent waits for the child to exit before it kills it.
CLOSE_TIMEOUT_S = 5.0
#: Seconds the parent waits for the answer to one job (a figure takes well under one) before it
#: gives up on the worker (a stopped or hung child), kills it and draws the rest itself.
RESULT_TIMEOUT_S = 120.0


def _write_frame(stream: IO[bytes], payload: bytes) -> None:
    stream.write(_LENGTH.pack(len(payload)) + payload)
    stream.flush()


def _read_frame(stream: IO[bytes]) -> bytes | None:
    """The next frame's payload; None at the end of the stream (also in the middle of a frame)."""
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        return None
    (size,) = _LENGTH.unpack(head)
    payload = stream.read(size)
    return payload if len(payload) == size else None


def _read_exactly(fd: int, size: int, deadline: float) -> bytes | None:
    """``size`` bytes of the pipe ``fd``; None at its end or once ``deadline`` (monotonic) passes."""
    chunks: list[bytes] = []
    while size > 0:
        wait = deadline - time.monotonic()
        if wait <= 0 or not select.select([fd], [], [], wait)[0]:
            return None
        chunk = os.read(fd, size)
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def serve(inbox: IO[bytes], outbox: IO[bytes]) -> None:
    """The child's loop: draw and save each job of ``inbox``, answer on ``outbox``, until ``inbox`` ends."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import matplotlib.backends.backend_agg
    import matplotlib.figure  # noqa: F401  loaded before the first job arrives

    while (payload := _read_frame(inbox)) is not None:
        try:
            draw, args, kwargs, path = pickle.loads(Path(pickle.loads(payload)).read_bytes())
            figure = draw(*args, **kwargs)
            figure.savefig(path)  # its folder exists: the job file lies beside it
            answer = None
        except Exception as exc:  # the parent draws this one itself and meets the error there
            answer = f"{type(exc).__name__}: {exc}"
        try:
            _write_frame(outbox, pickle.dumps(answer))
        except OSError:  # the parent closed its end (it is done, or stopping): nothing to answer
            return


class FigureWorker:
    """The parent's end: :meth:`submit` jobs, :meth:`result` of each in order, :meth:`close`.

    Jobs are answered in the order submitted. Use it as a context manager (or call
    :meth:`close`): the child never outlives it. A run refused before it logs anything closes its
    worker at once, whatever the child is doing (still loading matplotlib, say).
    """

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = subprocess.Popen(
            [sys.executable, "-c", _BOOT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, close_fds=True
        )
        self._pending = 0
        self._send(pickle.dumps(list(sys.path)), framed=False)

    @property
    def pid(self) -> int | None:
        """The child's process id (None once closed)."""
        return None if self._process is None else self._process.pid

    def _send(self, payload: bytes, *, framed: bool = True) -> bool:
        if self._process is None or self._process.stdin is None:
            return False
        try:
            if framed:
                _write_frame(self._process.stdin, payload)
            else:
                self._process.stdin.write(payload)
                self._process.stdin.flush()
        except (BrokenPipeError, OSError):  # the child died: every job is drawn by the caller
            self._stop()
            return False
        return True

    def submit(self, draw: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any], path: Path) -> bool:
        """Ask the child to save ``draw(*args, **kwargs)`` at ``path``; False if it cannot take
        the job (arguments that do not pickle, or no child): the caller draws it then."""
        try:
            job = pickle.dumps((draw, tuple(args), dict(kwargs), str(path)))
        except Exception:  # pickle raises several types for what it cannot take
            return False
        job_file = path.with_name(path.name + ".job")
        try:
            job_file.parent.mkdir(parents=True, exist_ok=True)
            job_file.write_bytes(job)
        except OSError:
            return False
        if not self._send(pickle.dumps(str(job_file))):
            return False
        self._pending += 1
        return True

    def result(self) -> str | None:
        """The answer to the oldest unanswered job: None when its file is saved, else why not
        (the error's line, or that the worker is gone or gave no answer within
        :data:`RESULT_TIMEOUT_S`: it is stopped then)."""
        if self._pending <= 0:
            raise RuntimeError("no job is waiting for its result")
        self._pending -= 1
        stdout = None if self._process is None else self._process.stdout
        if stdout is None:
            return "the figure worker ended"
        deadline = time.monotonic() + RESULT_TIMEOUT_S
        head = _read_exactly(stdout.fileno(), _LENGTH.size, deadline)
        payload = None if head is None else _read_exactly(stdout.fileno(), _LENGTH.unpack(head)[0], deadline)
        if payload is None:
            timed_out = time.monotonic() >= deadline
            self._stop(kill=True)
            return f"the figure worker gave no answer in {RESULT_TIMEOUT_S:g} s" if timed_out else "the figure worker ended"
        answer: str | None = pickle.loads(payload)
        return answer

    def _stop(self, *, kill: bool = False) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        if kill:  # a stopped or hung child does not act on SIGTERM
            process.kill()
        else:  # nothing it could still write is wanted: every answer was read, or the run is over
            process.terminate()
        try:
            process.wait(timeout=CLOSE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def close(self) -> None:
        """End the child and wait for it (SIGTERM; SIGKILL after :data:`CLOSE_TIMEOUT_S`): once
        this returns it writes nothing more."""
        self._stop()

    def __enter__(self) -> FigureWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def start_worker() -> FigureWorker | None:
    """A new :class:`FigureWorker`, or None where no child process can be started (the caller
    then draws in its own process)."""
    try:
        return FigureWorker()
    except OSError:
        return None


__all__ = ["CLOSE_TIMEOUT_S", "RESULT_TIMEOUT_S", "FigureWorker", "serve", "start_worker"]

"""Leave the ``ltr`` process without the interpreter's teardown of its modules.

Once MLflow, LightGBM and numba are loaded (any ``ltr train``), Python's own exit spends 1.5-2 s
of a 2-core machine tearing down modules and collecting their objects, after all the work is
done and every output is written: a tenth of the default experiment's wall time. :func:`exit_now`
skips that teardown when nothing can be lost by it:

- every exit handler runs first, in the normal order (``atexit``: logging's flush and close of
  its handlers, e.g. Hydra's job log; multiprocessing's clean-up of its children; the finalizers
  of temporary directories; MLflow's and numba's own handlers);
- stdout and stderr are flushed (a failed flush, e.g. a closed pipe, takes the normal exit, which
  reports it as before);
- a logging handler whose making a stop signal interrupted (registered for logging's exit, but
  without its lock yet: a Ctrl-C during a library's import) is left out of logging's exit
  (:func:`forget_half_made_handlers`), which would otherwise stop at it with a traceback before
  flushing and closing the handlers after it;
- no child process outlives the command (:func:`end_children`): what a stop signal left behind,
  a ``git`` or ``uname`` that a library ran and that the signal's exception interrupted (Python's
  ``subprocess`` gives a child it killed on Ctrl-C only 0.25 s to be reaped), is killed and
  reaped, not left to finish alone after the command has exited;
- every other thread that is not a daemon has ended: they are waited for as the normal exit
  waits for them, first (``threading._shutdown``, with the exit hooks of thread pools: MLflow's
  artifact uploads leave idle workers; a worker that a stop signal kept from its pool's hook is
  released too, :func:`release_unregistered_pool_workers`). Meanwhile the process keeps its own signal handlers
  (a normal exit resets them to the default during its teardown: a SIGTERM there killed it).

Files are closed where they are written (``with`` blocks, atomic renames), never by the teardown;
what a command commits to MLflow's store is committed before it returns. The exit code is the
same either way. In-process callers (tests, the Python API) call :func:`ltr.cli.main.main`,
which returns its code and never exits.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import queue
import signal
import sys
import threading
from concurrent.futures import thread as pools
from typing import NoReturn

from ltr.tracking.liveness.proc_files import children


def others_alive() -> list[str]:
    """The names of the threads a normal exit would wait for (alive, not daemon, not main)."""
    main = threading.main_thread()
    return [t.name for t in threading.enumerate() if t is not main and not t.daemon and t.is_alive()]


def exit_now(code: int) -> NoReturn:
    """Exit with ``code``: after the other threads, the exit handlers and a flush, without the
    module teardown (see the module docstring); through ``sys.exit`` when a stream cannot be
    flushed."""
    forget_half_made_handlers()
    release_unregistered_pool_workers()  # both ways out below join the other threads
    if not _flushed():
        end_children()
        sys.exit(code)
    if others_alive():
        threading._shutdown()  # type: ignore[attr-defined]  # the normal exit's first step: join them
    atexit._run_exitfuncs()  # runs each handler once and clears them, as the normal exit does
    end_children()
    _flushed()  # what the handlers wrote
    os._exit(code)


def release_unregistered_pool_workers() -> None:
    """Let every idle worker of a thread pool that its pool's exit hook cannot reach end.

    ``ThreadPoolExecutor`` starts a worker thread, then registers its queue for the hook that
    ends the workers at exit (``concurrent.futures.thread._python_exit``: it sets the pools'
    shutdown flag and puts one ``None`` on each registered queue). A stop signal whose exception
    lands between the two (a Ctrl-C while MLflow's artifact pool starts a worker) leaves a worker
    waiting on its empty queue forever, and joining it (the normal exit, :func:`exit_now`) hangs.
    Here the pools' shutdown flag is set, as that hook sets it first, and each worker whose queue
    is not registered gets its ``None``: it ends once its current item is done (none, when idle),
    as the registered ones do."""
    workers = [t for t in threading.enumerate() if getattr(t, "_target", None) is pools._worker and t not in pools._threads_queues]
    if not workers:
        return
    with pools._global_shutdown_lock:
        pools._shutdown = True
    for worker in workers:
        for arg in getattr(worker, "_args", ()):
            if isinstance(arg, queue.SimpleQueue):
                arg.put(None)


def forget_half_made_handlers() -> None:
    """Take the logging handlers that have no lock out of the list ``logging.shutdown`` closes at
    exit. ``logging.Handler.__init__`` registers a handler there before it makes its
    lock, so a stop signal's exception between the two leaves one behind (kept alive by the
    exception's traceback); ``logging.shutdown`` then raises at it, and closes none after it."""
    refs = getattr(logging, "_handlerList", None)
    if isinstance(refs, list):
        refs[:] = [ref for ref in refs if (handler := ref()) is None or hasattr(handler, "lock")]


def end_children() -> list[int]:
    """Kill (SIGKILL) and reap every child process still there; their ids. Called as the command
    exits, after its own clean-up (figure worker, Dask cluster, exit handlers) ended the children
    it knows of: what is left was interrupted mid-way and would otherwise outlive the command."""
    _stop_resource_trackers()
    left = children(os.getpid())
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    for pid in left:
        with contextlib.suppress(ChildProcessError, OSError):  # reaped meanwhile, or not ours to wait for
            os.waitpid(pid, 0)
    return left


def _flushed() -> bool:
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe or stream: the normal exit says so, as before
        return False
    return True


#: The modules whose resource tracker (a child process started by multiprocessing, Dask or joblib)
#: ends once its pipe from this process is closed, after unlinking what was left registered.
_RESOURCE_TRACKERS = ("multiprocessing.resource_tracker", "joblib.externals.loky.backend.resource_tracker")


def _stop_resource_trackers() -> None:
    """Stop the resource trackers this process started as they stop at its exit (their pipe closed,
    then waited for), so that :func:`end_children` never kills one before it cleans up."""
    for name in _RESOURCE_TRACKERS:
        module = sys.modules.get(name)
        tracker = getattr(module, "_resource_tracker", None)
        if tracker is not None and getattr(tracker, "_pid", None) is not None:
            with contextlib.suppress(Exception):  # a tracker that died: end_children reaps it
                tracker._stop()

"""LightGBM's own log lines routed to ltr's log, not printed after a run's results.

LightGBM's Python package prints what its C++ library logs (``[LightGBM] [Info] Saving data to
binary file ...`` when the binned data is kept: :mod:`ltr.training.binned_store`) with
``print``, on stdout, whatever the run's ``verbosity``. :func:`install` (run when this module is
imported, by every module of ltr that trains or bins data) registers a logger instead
(``lightgbm.register_logger``): the library's lines go to the ``lightgbm`` logger at DEBUG
(``ltr train hydra.verbose=lightgbm`` shows them), a ``[Warning]`` line of the library at
WARNING; the Python package's own warnings stay Python warnings, as LightGBM issues them. The
``[LightGBM] [Fatal]`` line C++ writes to the terminal itself before an error is not a log line
(:func:`ltr.training.local.native_stderr_held`).

The C++ library keeps its log callback per thread, and LightGBM's package registers it in the
thread that imports it: a thread of ltr's own that calls the library (the background thread
that keeps the binned data) calls :func:`in_this_thread` first, or the library prints there.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Callable, Iterator

import lightgbm as lgb

#: The logger LightGBM's lines go to.
log = logging.getLogger("lightgbm")
#: How a warning line of LightGBM's C++ library starts.
NATIVE_WARNING = "[LightGBM] [Warning]"


class LightgbmLog:
    """What ``lightgbm.register_logger`` calls: ``info`` for every line of the C++ library (and
    the Python package's notes), ``warning`` for the Python package's warnings."""

    def info(self, msg: str) -> None:
        text = str(msg).rstrip()
        if not text:
            return
        for listener in _listeners:
            listener(text)
        if text.startswith(NATIVE_WARNING):
            log.warning("%s", text)
        else:
            log.debug("%s", text)

    def warning(self, msg: str) -> None:
        warnings.warn(str(msg), stacklevel=3)  # as LightGBM's own default logger does


#: Callables that see every line of the library while :func:`listening` (in this process).
_listeners: list[Callable[[str], None]] = []


@contextlib.contextmanager
def listening(listener: Callable[[str], None]) -> Iterator[None]:
    """Call ``listener`` with every line LightGBM logs inside the block (as well as logging it)."""
    _listeners.append(listener)
    try:
        yield
    finally:
        _listeners.remove(listener)


_DEBUG = "[LightGBM] [Debug]"


class BiasFactorLog:
    """Reads LightGBM's position bias factors from its debug log (``verbosity >= 2``): unbiased
    lambdarank logs a ``position bias_factor`` table every round; :attr:`factors` is the last
    complete one (position value -> additive score offset), empty when none was logged."""

    def __init__(self) -> None:
        self.factors: dict[int, float] = {}
        self._table: dict[int, float] | None = None

    def __call__(self, line: str) -> None:
        if not line.startswith(_DEBUG):
            return
        fields = line[len(_DEBUG):].split()
        if fields == ["position", "bias_factor"]:
            self._table = {}
            return
        if self._table is None:
            return
        try:
            position, value = int(fields[0]), float(fields[1])
        except (IndexError, ValueError):  # the table ended
            if self._table:
                self.factors = self._table
            self._table = None
            return
        if len(fields) == 2:
            self._table[position] = value

    def finish(self) -> dict[int, float]:
        """The last complete table (a table still open when training ended counts)."""
        if self._table:
            self.factors, self._table = self._table, None
        return self.factors


def install() -> None:
    """Route LightGBM's log lines to :data:`log` (see the module docstring); idempotent."""
    lgb.register_logger(LightgbmLog())


def in_this_thread() -> None:
    """Register LightGBM's log callback in the calling thread (the C++ library keeps one per
    thread; without it, it prints its lines on stdout); a no-op where the package has no
    callback to register."""
    library = getattr(lgb.basic, "_LIB", None)
    callback = getattr(library, "callback", None)
    if library is not None and callback is not None:
        library.LGBM_RegisterLogCallback(callback)


install()

"""A numba kernel module, compiled or interpreted: one source, two ways to run it.

numba's import and the load of a module's cached kernels cost about a second and 100 MB per
process, more than the whole work of a small input (a two-line TREC run, a hand-made list).
:func:`load` returns the compiled module (numba) unless the caller says the input is small and
numba is not loaded in the process yet; then it returns the same source executed by CPython with
numba stood in for: ``numba.njit(...)`` returns the function itself and ``numba.prange`` is
``range``. The arithmetic is the same IEEE float64 and int64 arithmetic in the same order, so the
values are bit-identical either way (``tests/test_kernels.py`` runs every entry point both ways on
generated inputs and compares the bits).

Two differences of numpy scalars from numba's typed code are bridged at the interpreted module's
entry points (its public functions, names without a leading underscore): ``uint8`` array arguments
(file bytes) are read as int64, so byte arithmetic promotes as numba's does (``buf[i] - 48`` is
negative for a space, not 240), and numpy's integer-overflow warnings are off (the kernels' uint64
hashes wrap, silently in numba). The kernels never write to a ``uint8`` argument.

Callers decide what is small (a size under which the interpreter is faster than numba's load,
measured in ``benchmarks/bench_fixed_costs.py``) and import nothing of numba themselves.
"""

from __future__ import annotations

import builtins
import functools
import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import Any, Literal

import numpy as np

#: The kernel modules that can run interpreted (their imports of each other stay interpreted).
INTERPRETABLE = frozenset({"ltr.metrics._kernel", "ltr.data.formats._trec_kernel", "ltr.data.formats._text_kernel"})

Way = Literal["compiled", "interpreted"]

_interpreted: dict[str, ModuleType] = {}
_forced: list[Way] = []
_ready: set[str] = set()


def load(name: str, *, small: bool) -> ModuleType:
    """Kernel module ``name``: interpreted when ``small`` and numba is not loaded in this process
    (the choice only picks which of two equal computations runs), else compiled (importing numba
    and the module, :func:`compiled`); inside :func:`forced`, the way it names. A module that
    cannot run interpreted (not in :data:`INTERPRETABLE`) is always compiled."""
    way = _forced[-1] if _forced else ("interpreted" if small and "numba" not in sys.modules else "compiled")
    if way == "interpreted" and name in INTERPRETABLE:
        return interpreted(name)
    return compiled(name)


def compiled(name: str) -> ModuleType:
    """Kernel module ``name`` compiled, its entry points ready (:func:`ltr.compiled.kernel_signatures.prepare`:
    loaded from numba's cache, or, the first time after an install, every kernel compiled once
    with one line of progress on stderr), each with its one declared signature."""
    module = importlib.import_module(name)
    if name not in _ready:
        from ltr.compiled.kernel_signatures import prepare  # imports numba

        prepare(name)
        _ready.add(name)
    return module


@contextmanager
def forced(way: Way) -> Iterator[None]:
    """Every :func:`load` in this block (in any thread of the process) returns the module compiled
    or interpreted, whatever the input's size: the install-time warm-up compiles through tiny
    inputs, tests run both ways."""
    if way not in ("compiled", "interpreted"):
        raise ValueError(f"way={way!r} is not 'compiled' or 'interpreted'")
    _forced.append(way)
    try:
        yield
    finally:
        _forced.pop()


def threads(module: ModuleType) -> int:
    """The threads a kernel of ``module`` (from :func:`load`) runs on: numba's thread count when
    compiled, 1 when interpreted."""
    if module not in _interpreted.values():
        import numba  # loaded with the compiled module

        return int(numba.get_num_threads())
    return 1


def interpreted(name: str) -> ModuleType:
    """Kernel module ``name`` executed by CPython, numba stood in for (one per process)."""
    if name not in INTERPRETABLE:
        raise ValueError(f"{name} is not an interpretable kernel module: one of {sorted(INTERPRETABLE)}")
    if name not in _interpreted:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None or spec.loader is None:
            raise ImportError(f"kernel module {name} not found")
        code = spec.loader.get_code(name)  # type: ignore[attr-defined]  # the .pyc when cached
        inner = ModuleType(name)
        inner.__file__ = spec.origin
        inner.__dict__["__builtins__"] = {**vars(builtins), "__import__": _import}
        exec(code, inner.__dict__)
        outer = ModuleType(f"{name} (interpreted)", inner.__doc__)
        for key, value in vars(inner).items():
            if key.startswith("__"):
                continue
            entry = callable(value) and not key.startswith("_") and getattr(value, "__module__", None) == name
            setattr(outer, key, _entry_point(value) if entry else value)
        _interpreted[name] = outer
    return _interpreted[name]


def _entry_point(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def call(*args: Any) -> Any:
        wide = tuple(a.astype(np.int64) if isinstance(a, np.ndarray) and a.dtype == np.uint8 else a for a in args)
        with np.errstate(over="ignore"):
            return fn(*wide)

    return call


def _import(
    name: str,
    globals: Mapping[str, object] | None = None,
    locals: Mapping[str, object] | None = None,
    fromlist: Sequence[str] | None = (),
    level: int = 0,
) -> ModuleType:
    """The import of an interpreted module: numba is the stand-in, another kernel module its
    interpreted twin (whose entry points it calls unwrapped: the caller's arguments are already
    widened), anything else the real module."""
    if level == 0 and name == "numba":
        return _NUMBA
    if level == 0 and name in INTERPRETABLE and fromlist:
        return _Unwrapped(interpreted(name))
    return builtins.__import__(name, globals, locals, fromlist or (), level)


class _Unwrapped(ModuleType):
    """An interpreted module seen from another one: its functions without the entry wrappers."""

    def __init__(self, outer: ModuleType) -> None:
        super().__init__(outer.__name__)
        for key, value in vars(outer).items():
            if not key.startswith("__"):
                setattr(self, key, getattr(value, "__wrapped__", value))


def _njit(*args: Any, **options: Any) -> Any:
    """``numba.njit`` as a decorator (``@njit``) or a decorator factory (``@njit(cache=True)``)."""
    if len(args) == 1 and callable(args[0]) and not options:
        return args[0]
    return lambda fn: fn


_NUMBA = ModuleType("numba (stand-in)", "numba as the interpreted kernels see it: njit is the identity, prange is range")
_NUMBA.njit = _njit  # type: ignore[attr-defined]
_NUMBA.prange = range  # type: ignore[attr-defined]

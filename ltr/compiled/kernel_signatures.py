"""The one signature of every kernel entry point, and the one-time compile of all of them.

An entry point is a numba dispatcher that Python code calls (kernels calling kernels are compiled
into their callers). Each has exactly one signature, declared in :data:`SIGNATURES`: the arrays it
only reads are declared read-only, C-contiguous, so the same machine code takes a writable array
and a read-only one (Parquet columns, file bytes from ``np.frombuffer``); the callers hand every
other array as ``np.ascontiguousarray(a, dtype=...)``. After :func:`prepare`, an entry point
compiles nothing more (``disable_compile``): an argument of any other type is a ``TypeError``,
never a silent compile of a second signature (seconds to a minute each) on the first real-data
run.

:func:`prepare` loads a module's entry points from numba's cache. When numba's cache lacks one
of them (the first ``ltr`` command after ``pip install``, or after an upgrade of ``ltr`` or
numba), it first puts there the machine code a wheel ships, where it fits this install
(:mod:`ltr.compiled.precompiled`: milliseconds, nothing printed); then, if the cache still lacks some
(a clone, another Python or numba than the wheel's build), it compiles every kernel module's
entry points the cache lacks, once, and says so on one line of stderr with its progress::

    ltr: compiling numerical kernels for this install (once): 1/5 2/5 3/5 4/5 5/5, done in 24 s

so that no later command compiles again. The check reads numba's cache index files only
(milliseconds). The metric kernel compiles in the command's process, the others in one helper
process beside it (two cores: the wall time of the metric kernel's compile), which loads the
kernel modules alone (numba and numpy, not their packages). ``python -m ltr.warmup`` (``make
install``) runs the same compile; ``python -m ltr.compiled.kernel_signatures --ship OUT`` the wheel
build's (:func:`ship`).
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO

from numba import config as numba_config
from numba import types as t
from numba.core.registry import CPUDispatcher

from ltr.compiled.precompiled import export, install


def _ro(dtype: Any, ndim: int = 1) -> Any:
    return t.Array(dtype, ndim, "C", readonly=True)


def _rw(dtype: Any, ndim: int = 1) -> Any:
    return t.Array(dtype, ndim, "C")


i64, f64, u64, u8, i32, i8 = t.int64, t.float64, t.uint64, t.uint8, t.int32, t.int8
_BUF = _ro(u8)  # file bytes: read-only (np.frombuffer of bytes or of a read-only mmap) or not

#: Per kernel module, in compile order (the metric kernel first: every training run needs it):
#: entry point -> its argument types.
SIGNATURES: dict[str, dict[str, tuple[Any, ...]]] = {
    "ltr.metrics._kernel": {
        "grouped_kernel": (
            _ro(i64), _ro(f64), _ro(i64), _ro(i64), _ro(i64), _ro(f64), _ro(f64), _ro(i64),  # labels .. label_order
            t.boolean, i64, f64, i64, t.boolean,  # use_hist, rel_threshold, stop_scale, mode, average
            _ro(i64), _ro(f64), i64, i64,  # ks, discount, n_chunks, scratch_len
            _rw(f64, 2), _rw(f64, 2), _rw(f64, 2), _rw(f64, 2), _rw(f64), _rw(f64, 2), _rw(i64),  # idcg .. n_rel
            t.boolean, _rw(f64, 2), _rw(f64, 2), _rw(f64),  # full_ap, rec, ap_at, ap
        ),
    },
    "ltr.data.formats._text_kernel": {
        "scan_head": (_BUF, i64),
        "gather_spans": (_BUF, _rw(i64, 2)),
        "parse_chunk": (
            _BUF, i64, i64, i64, _rw(t.float32, 2), _rw(f64), _rw(i64), _rw(i64), _rw(i64), i64, i64,
            _rw(f64), _rw(i64, 2),
        ),
    },
    "ltr.data.formats._trec_kernel": {
        "fields": (_BUF, i64, i64, i64, i64, _rw(i64, 2), _rw(i64, 2)),
        "rehash_topics": (_rw(u64), i64, _rw(i64)),
        "ingest_qrels": (
            _BUF, i64, i64, i64, _BUF, _rw(i64), _rw(u64), _rw(i8), _rw(i64), _rw(i64), _rw(i64),  # .. topics
            _rw(i32), _rw(i32), _rw(i64), _rw(i32), _rw(u64), _rw(i64), _rw(i64, 2),  # judgments, slow rows
        ),
        "ingest_run": (
            _BUF, i64, i64, i64, _BUF, _rw(i64), _rw(u64), _rw(i8), _rw(i64), _rw(i64), _rw(i64),  # .. topics
            _rw(i32), _rw(i32), _rw(i64), _rw(i32), _rw(u64), _rw(i64), i64,  # judgments, unjudged
            _rw(i32), _rw(i64), _rw(i32), _rw(u64), _rw(f64), _rw(i64), _rw(i64, 2),  # run rows, slow rows
        ),
        "group_positions": (_rw(i32), _rw(i64), _rw(i32)),
        "first_repeat": (_rw(i64), _rw(u64), _rw(i64), _rw(i32), _BUF),
        "tied_rows": (_rw(i64), _rw(f64), _rw(u64)),
    },
    "ltr.rerank._kernel": {
        "diversify_kernel": (
            _ro(f64), _ro(i64), _rw(i64), _ro(f64, 2), _ro(i64), t.boolean, f64, i64, i64, i64, _rw(i64),
        ),
    },
    "ltr.compare._interleave": {
        "_team_draft": (
            _ro(i64), _ro(i64), _ro(i64), _ro(i64), _ro(i64), _ro(t.boolean), _rw(i64), _rw(i8), _rw(t.boolean),
        ),
    },
}

#: Per kernel module, kernels its entry points call (callees first), each with one signature:
#: compiled before the entry points with further compiles disabled, so a call with a constant
#: argument converts it to int64 instead of compiling one more specialisation per constant (the
#: metric kernel's helpers had 29 specialisations, 13 now: a quarter less compile time).
HELPERS: dict[str, dict[str, tuple[Any, ...]]] = {
    "ltr.metrics._kernel": {
        "_gain": (_ro(i64), _ro(f64), i64),
        "_before": (_ro(f64), _ro(i64), _ro(f64), _ro(f64), i64, i64, i64),
        "_sift_down": (_rw(i64), i64, i64, _ro(f64), _ro(i64), _ro(f64), _ro(f64), i64),
        "_top_k": (_ro(f64), _ro(i64), _ro(f64), _ro(f64), i64, i64, i64, i64, _rw(i64)),
        "_block_term": (i64, i64, i64, i64),
        "_block_precision_terms": (i64, i64, i64, i64, _rw(f64), i64),
        "_block_stop_probs": (_rw(f64), i64, i64, f64, _rw(f64), i64),
        "_count_relevant": (_ro(i64), i64, i64, i64),
        "_ap_by_score_blocks": (_ro(f64), _ro(i64), i64, i64, i64, i64, t.boolean),
        "_full_ap_sum": (_ro(f64), _ro(i64), _ro(f64), _ro(f64), i64, t.boolean, i64, i64, i64, i64),
        "_expected_rr": (i64, i64, i64, i64),
        "_set_rr": (i64, _rw(f64), _rw(f64, 2), _ro(i64), i64, i64, i64),
        "_one_query": (
            i64, _ro(i64), _ro(f64), _ro(i64), _ro(i64), _ro(i64), _ro(f64), _ro(f64), _ro(i64),
            t.boolean, i64, f64, i64, t.boolean, _ro(i64), _ro(f64),
            _rw(f64, 2), _rw(f64, 2), _rw(f64, 2), _rw(f64, 2), _rw(f64), _rw(f64, 2), _rw(i64),
            t.boolean, _rw(f64, 2), _rw(f64, 2), _rw(f64), _rw(i64), _rw(f64), _rw(f64), _rw(f64), _rw(f64),
            _rw(f64), _rw(i64),
        ),
    },
    # the readers call these with literal field numbers and sources: one signature instead of
    # six specialisations (4 of next_line, 2 of _intern), a quarter less of this module's compile
    "ltr.data.formats._trec_kernel": {
        "next_line": (_BUF, i64, i64, i64, i64, i64, i64, _rw(i64)),
        "_intern": (
            _BUF, i64, i64, i64, _BUF, _BUF, _rw(i64), _rw(u64), _rw(i8), _rw(i64), _rw(i64), _rw(i64),
        ),
    },
}

MESSAGE = "ltr: compiling numerical kernels for this install (once):"

_lock = threading.RLock()
_checked = False
_prepared: set[str] = set()


def _entries(name: str) -> list[tuple[CPUDispatcher, tuple[Any, ...]]]:
    module: ModuleType = importlib.import_module(name)
    return [(getattr(module, fn), sig) for fn, sig in SIGNATURES[name].items()]


def _compile(name: str) -> None:
    """Compile (or load from numba's cache) module ``name``'s helpers, then its entry points."""
    module = importlib.import_module(name)
    for fn, sig in HELPERS.get(name, {}).items():
        helper = getattr(module, fn)
        helper.compile(sig)
        helper.disable_compile()
    for dispatcher, sig in _entries(name):
        dispatcher.compile(sig)


def is_cached(dispatcher: CPUDispatcher, sig: tuple[Any, ...]) -> bool:
    """True when numba's cache holds ``dispatcher`` compiled for ``sig`` for this source, numba
    version and CPU (the key numba itself looks up; only the index file is read)."""
    if sig in dispatcher.overloads:
        return True
    cache: Any = dispatcher._cache  # type: ignore[attr-defined]  # numba's own lookup, no public API
    key = cache._index_key(sig, dispatcher.targetctx.codegen())  # type: ignore[attr-defined]
    return key in cache._cache_file._load_index()


def missing(names: Sequence[str] = tuple(SIGNATURES)) -> list[str]:
    """The kernel modules of ``names`` with an entry point not in numba's cache."""
    return [name for name in names if not all(is_cached(d, sig) for d, sig in _entries(name))]


def compile_modules(names: Sequence[str], out: TextIO | None = None, *, helper: bool = True) -> None:
    """Compile (or load) every entry point of ``names``; with ``out``, the progress line on it.

    With ``helper`` and more than one module, the first module (the metric kernel, the largest)
    compiles in this process while one helper process (``python -m ltr.compiled.kernel_signatures``)
    compiles the others into the same cache: on two cores the compile takes about as long as the
    metric kernel's alone. Whatever the helper did not compile (it failed) compiles here after."""
    start = time.perf_counter()
    tty = out is not None and out.isatty()
    done = 0

    def step() -> None:
        nonlocal done
        done += 1
        if out is not None:
            out.write(f"\r{MESSAGE} {done}/{len(names)}" if tty else f" {done}/{len(names)}")
            out.flush()

    if out is not None:
        out.write(MESSAGE)
        out.flush()
    rest = list(names[1:])
    child = None
    if helper and rest:
        child = subprocess.Popen(
            [sys.executable, "-m", "ltr.compiled.kernel_signatures", *rest],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
    _compile(names[0])
    step()
    if child is not None:
        assert child.stdout is not None
        for line in child.stdout:
            if line.strip() in rest:
                rest.remove(line.strip())
                step()
        child.wait()
    for name in rest:  # no helper, or what it left
        _compile(name)
        step()
    if out is not None:
        out.write(f", done in {time.perf_counter() - start:.0f} s\n")
        out.flush()


def prepare(name: str, *, out: TextIO | None = None) -> None:
    """Make kernel module ``name``'s entry points ready to call: when numba's cache lacks one of
    them, compile first every module's entry points numba's cache lacks (with the progress line on ``out``,
    stderr by default); then load ``name``'s and disable further compiles of them."""
    global _checked
    with _lock:
        if name in _prepared:
            return
        if getattr(numba_config, "DISABLE_JIT", False):  # NUMBA_DISABLE_JIT=1: the kernels are plain Python functions
            _prepared.add(name)
            return
        # the modules are compiled together: when ``name``'s entries are cached, so are the
        # others' (one module's check, milliseconds); else every module missing any compiles now
        if not _checked and missing([name]):
            install(tuple(SIGNATURES))  # the machine code a wheel ships, where it fits
            todo = missing()
            if todo:
                first = [name] if name in todo else []
                compile_modules([*first, *(m for m in todo if m != name)], sys.stderr if out is None else out)
        _checked = True
        for dispatcher, sig in _entries(name):
            dispatcher.compile(sig)
            dispatcher.disable_compile()
        _prepared.add(name)


def prepare_all(out: TextIO | None = None) -> None:
    """:func:`prepare` every kernel module (the install-time warm-up)."""
    for name in SIGNATURES:
        prepare(name, out=out)


def _kernels_alone() -> None:
    """Let the kernel modules load without their packages' ``__init__`` (which import pandas,
    pyarrow, scipy...): a process that only compiles needs numba and numpy alone."""
    root = Path(__file__).resolve().parents[2]
    for name in SIGNATURES:
        parts = name.split(".")[:-1]
        for i in range(1, len(parts) + 1):
            package = ".".join(parts[:i])
            if package not in sys.modules:
                stub = ModuleType(package)
                stub.__path__ = [str(root.joinpath(*parts[:i]))]
                sys.modules[package] = stub


def _helper(names: Sequence[str]) -> None:
    """The helper process of :func:`compile_modules`: compile ``names`` in turn, printing each
    name on stdout when it is in numba's cache."""
    _kernels_alone()
    for name in names:
        _compile(name)
        print(name, flush=True)


def ship(out: Path) -> None:
    """Compile every kernel module into numba's cache and copy the entries into ``out``, the
    wheel's ``ltr/_precompiled`` (:func:`ltr.compiled.precompiled.export`). Run by the wheel build as
    ``python -m ltr.compiled.kernel_signatures --ship OUT`` with ``NUMBA_CPU_NAME=generic`` and an empty
    ``NUMBA_CACHE_DIR``."""
    _kernels_alone()
    names = list(SIGNATURES)
    compile_modules(names)
    export(names, out)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--ship"]:
        ship(Path(sys.argv[2]))
    else:
        _helper(sys.argv[1:])

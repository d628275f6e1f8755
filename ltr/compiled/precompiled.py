"""Machine code of ``ltr``'s numba kernels, built with the wheel and shipped in it.

A wheel built with ``python -m build`` holds, in ``ltr/_precompiled/``, numba's cache entries of
every kernel of :data:`ltr.compiled.kernel_signatures.SIGNATURES` (entry points, their helpers and the
kernels they call), compiled at build time for a generic CPU of the build's architecture
(``NUMBA_CPU_NAME=generic``: no instruction the oldest CPU of that architecture lacks). The first
``ltr`` command that needs a kernel puts them into numba's cache (:func:`install`, milliseconds)
instead of compiling for half a minute; numba then loads them as it loads any cached kernel, and
no command compiles.

They are used only where they are valid, else the kernels compile as before
(:mod:`ltr.compiled.kernel_signatures`, one line of progress): the same Python version and
implementation, operating system, architecture, numba and llvmlite as the build
(:func:`platform_tag`), the same kernel sources (SHA-256 of each file), and per kernel the same
bytecode numba hashes into its cache key. Each entry is written under the key numba looks up on
this machine (its CPU in the key) and the source stamp of the installed file, atomically (a
temporary file renamed, numba's own writer), beside entries already there.

The values are the same bits as a kernel compiled for this machine's CPU: the kernels use no
fast-math flags, so LLVM neither reassociates nor contracts their floating-point operations,
whatever instructions the CPU offers.

``python -m ltr.compiled.kernel_signatures --ship OUT`` builds the folder (the wheel build runs it:
``setup.py``) with :func:`export`; it imports only numba and numpy, not ``ltr``'s other
dependencies, so it runs in an isolated build.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import logging
import os
import pickle
import platform
import shutil
import sys
from collections.abc import Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

#: Where the wheel holds the shipped cache entries: one folder per kernel module, and the manifest.
FOLDER = Path(__file__).parents[1] / "_precompiled"
MANIFEST = "manifest.json"

#: The CPU the shipped code is compiled for (numba's ``NUMBA_CPU_NAME``; its features are then none).
CPU_NAME = "generic"


def platform_tag() -> dict[str, str]:
    """What shipped machine code must match to be used here (the build's values, in the manifest)."""
    impl = sys.implementation
    return {
        "python": f"{impl.name}-{sys.version_info[0]}.{sys.version_info[1]}",
        "system": sys.platform,
        "machine": platform.machine(),
        "numba": metadata.version("numba"),
        "llvmlite": metadata.version("llvmlite"),
    }


def source_digest(name: str) -> str | None:
    """SHA-256 of kernel module ``name``'s source file (None when it has none)."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None or not os.path.isfile(spec.origin):
        return None
    return hashlib.sha256(Path(spec.origin).read_bytes()).hexdigest()


def dispatchers(name: str) -> Iterator[Any]:
    """Every cached numba dispatcher kernel module ``name`` defines (its own, not imported ones)."""
    from numba.core.caching import NullCache
    from numba.core.registry import CPUDispatcher

    module = importlib.import_module(name)
    for value in vars(module).values():
        cached = not isinstance(getattr(value, "_cache", None), NullCache)
        if isinstance(value, CPUDispatcher) and value.py_func.__module__ == name and cached:
            yield value


def _read_index(path: Path) -> tuple[str, Any, dict[Any, str]]:
    """(numba version, source stamp, {key: data file name}) of a numba cache index file."""
    with path.open("rb") as f:
        version = pickle.load(f)
        stamp, overloads = pickle.loads(f.read())
    return version, stamp, overloads


def manifest() -> dict[str, Any] | None:
    """The shipped manifest, or None (no shipped code: a clone, an sdist's editable install)."""
    path = FOLDER / MANIFEST
    if not path.is_file():
        return None
    try:
        loaded: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return loaded


def install(names: Sequence[str]) -> list[str]:
    """Put the shipped entries of the kernel modules ``names`` into numba's cache, where numba
    looks them up on this machine; the modules whose every shipped entry is now in numba's cache
    (none when the shipped code does not fit this install: the kernels then compile).

    A module is skipped when its source differs from the build's, when a shipped file cannot be
    read or numba's cache folder cannot be written; an entry, when its function's bytecode
    differs (numba's own key)."""
    shipped = manifest()
    if shipped is None or shipped.get("tag") != platform_tag():
        return []
    done = []
    for name in names:
        folder = FOLDER / name
        if not folder.is_dir() or shipped.get("sources", {}).get(name) != source_digest(name):
            continue
        by_index = {os.path.basename(d._cache._cache_file._index_path): d for d in dispatchers(name)}
        shipped_indexes = sorted(folder.glob("*.nbi"))
        try:
            installed = [p.name in by_index and _install_dispatcher(by_index[p.name], p) for p in shipped_indexes]
        except (OSError, EOFError, pickle.UnpicklingError) as exc:  # a cache folder that cannot be written, a damaged file: numba compiles
            log.debug("shipped kernels of %s not installed: %s", name, exc)
            continue
        if installed and all(installed):
            done.append(name)
    return done


def _install_dispatcher(dispatcher: Any, index: Path) -> bool:
    """Install ``dispatcher``'s shipped entries, listed in the shipped ``index`` file; False
    when an entry's bytecode differs (that entry is left to numba) or numba's version does."""
    import numba
    from numba.core.registry import cpu_target

    codegen = cpu_target.target_context.codegen()
    folder = index.parent
    cache = dispatcher._cache
    cache_file = cache._cache_file
    version, _, overloads = _read_index(index)
    if version != numba.__version__:
        return False
    cache._impl.locator.ensure_cache_path()
    present = cache_file._load_index()  # {} when absent or stale
    taken = set(present.values())
    ok = True
    added = False
    for key, data_name in overloads.items():
        sig = key[0]
        here = cache._index_key(sig, codegen)  # the key numba looks up here (this CPU, this bytecode)
        if here[2] != key[2]:
            ok = False
            continue
        if here in present:
            continue
        target = data_name
        number = 1
        while target in taken:  # beside entries numba wrote itself
            target = cache_file._data_name(number)
            number += 1
        with cache_file._open_for_write(cache_file._data_path(target)) as out:
            out.write((folder / data_name).read_bytes())
        present[here] = target
        taken.add(target)
        added = True
    if added:
        cache_file._save_index(present)  # the installed source's stamp, this numba's version
    return ok


# -- the build side ----------------------------------------------------------------------------


def export(names: Sequence[str], out: Path) -> None:
    """Copy the numba cache entries of the kernel modules ``names`` (compiled in this process's
    numba cache for the generic CPU) into ``out/<module>/``, and write the manifest."""
    from numba import config

    if str(getattr(config, "CPU_NAME", None)) != CPU_NAME:
        raise RuntimeError(f"shipped kernels must be compiled with NUMBA_CPU_NAME={CPU_NAME}")
    sources = {}
    for name in names:
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        for dispatcher in dispatchers(name):
            cache_file = dispatcher._cache._cache_file
            index = Path(cache_file._index_path)
            if not index.is_file():
                continue
            shutil.copyfile(index, folder / index.name)
            for data_name in _read_index(index)[2].values():
                shutil.copyfile(cache_file._data_path(data_name), folder / data_name)
        sources[name] = source_digest(name)
    record = {"tag": platform_tag(), "cpu": CPU_NAME, "sources": sources}
    (out / MANIFEST).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")

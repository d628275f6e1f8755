"""``ltr cache``: show or clear the binary cache of parsed data files (:mod:`ltr.data.cache`) and
the LightGBM binned data sets kept beside it (:mod:`ltr.training.binned_store`, ``binned/``).

Examples
--------
::

    ltr cache                 # = ltr cache info: directory, entries, total size, limit, binned data sets
    ltr cache info --verbose  # also one line per entry: size, last use, source file
    ltr cache clear           # remove every entry; prints what it freed
    ltr cache clear --dir /scratch/ltr-cache
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ltr.cli.support.args import OneLineParser
from ltr.cli.support.verb import run_verb

if TYPE_CHECKING:
    from ltr.data.cache import EntryInfo


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="ltr cache",
        description="Show (info, the default) or clear the binary cache of parsed data files.",
    )
    p.add_argument(
        "action", nargs="?", choices=("info", "clear"), default="info",
        help="info (default): directory, entries, total size and limit; clear: remove every entry",
    )
    p.add_argument(
        "--dir", type=Path, default=None,
        help="the cache directory (default: $LTR_CACHE_DIR, else ~/.cache/ltr/data; as data.cache_dir=null)",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="info: list every entry")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run ``ltr cache``; returns the exit code. User errors raise `LtrUserError`."""
    return run_verb(argv, build_parser(), _run)


def _run(args: argparse.Namespace) -> int:
    # the cache's module (numpy, pyarrow) after parsing: --help and an argument error import none of it
    from ltr.cli.support.output_guard import check_outputs
    from ltr.config.groups.data import default_cache_dir
    from ltr.data.cache import (
        DEFAULT_MAX_MB,
        cache_limit_mb,
        clear_cache,
        format_size,
        list_entries,
    )

    cache_dir = (args.dir if args.dir is not None else default_cache_dir()).expanduser()
    binned_dir = cache_dir / "binned"  # LightGBM's binned data sets (ltr.training.binned_store)
    if args.action == "clear":
        check_outputs({"--dir": cache_dir}, folders={"--dir"})  # it removes what it finds there
        n, freed = clear_cache(cache_dir)
        print(f"cleared {cache_dir}: removed {n} entries, freed {format_size(freed)}")
        n, freed = clear_cache(binned_dir)
        print(f"cleared {binned_dir}: removed {n} binned data sets, freed {format_size(freed)}")
        return 0
    limit = cache_limit_mb(DEFAULT_MAX_MB)
    entries, leftovers = list_entries(cache_dir)
    total = sum(e.size for e in entries)
    where = "" if cache_dir.is_dir() else " (does not exist yet)"
    print(f"cache dir: {cache_dir}{where}")
    print(f"entries:   {len(entries)}")
    print(f"size:      {format_size(total)}")
    if os.environ.get("LTR_CACHE_MAX_MB", "").strip():
        source = "from LTR_CACHE_MAX_MB"
    else:
        source = "default of data.cache_max_mb; a run's data.cache_max_mb or LTR_CACHE_MAX_MB may differ"
    print(f"limit:     {'none' if limit is None else f'{limit} MB'} ({source})")
    if leftovers:
        print(
            f"leftovers: {len(leftovers)} temporary directories of interrupted or running writes "
            f"({format_size(sum(e.size for e in leftovers))}), swept after an hour"
        )
    if args.verbose:
        for e in reversed(entries):  # most recently used first
            print(f"  {e.path.name}  {format_size(e.size):>10}  {_when(e.last_used)}  {_source(e)}")
    binned, _ = list_entries(binned_dir)
    print(
        f"binned:    {len(binned)} LightGBM data sets in {binned_dir}, {format_size(sum(e.size for e in binned))} "
        "(limit: data.binned_cache_max_mb, default 4096 MB)"
    )
    if args.verbose:
        for e in reversed(binned):
            print(f"  {e.path.name}  {format_size(e.size):>10}  {_when(e.last_used)}")
    return 0


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) if t > 0 else "?" * 19


def _source(e: EntryInfo) -> str:
    """The file(s) an entry was parsed from, from its ``meta.json`` (best effort: not verified)."""
    try:
        meta = json.loads((e.path / "meta.json").read_text())
        return " + ".join(str(f[0]) for f in meta["files"])
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return "(unreadable meta.json)"

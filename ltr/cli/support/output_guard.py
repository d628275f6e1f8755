"""The one guard of every path a command writes, checked before any work.

Every verb that writes a file or a folder (``predict --out/--trec-run/--per-query``, ``evaluate
--per-query``, ``calibrate --figure``, ``data write --out``, ``partition --out``, ``cache clear
--dir``) hands its outputs to :func:`check_outputs` right after parsing its arguments, before
it reads an input, opens the store or logs anything. Each output is refused in one line
(:class:`ltr.errors.LtrUserError`, exit 2) when it

- is ``-`` where the option writes no text (a figure, a Parquet table, a folder); ``-`` is
  standard output for the options that write text (``stdout``), one of them at most;
- is a folder where a file is written, an existing file that is not a regular file (a device,
  a pipe: the rename into place would replace it), or in a folder that does not exist or takes
  no new file (a file is made there and removed: ``/proc/x``, a read-only folder);
- is a file of the tracking store (the sqlite database, its ``-journal``, ``-wal`` and ``-shm``
  files, the store lock) or lies inside one of its artifact folders (``mlartifacts``, the
  experiments' artifact locations, ``./mlruns``): :mod:`ltr.tracking.sqlite.paths`; the store is
  the command's ``--tracking-uri`` or the one it finds, and the one ``ltr train`` writes here;
- is an input of the command (the same file by path or by inode: a symlink, a hard link), a side
  file of one (``.query``, ``.position``), inside an input folder, or a folder holding an input;
- names the same file as another output.

A guard that passes changes nothing on disk.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from ltr.data.formats.side_files import side_file_candidates
from ltr.data.query_parts import partition_files
from ltr.errors import LtrUserError, write_failed
from ltr.tracking.sqlite.paths import StorePaths, store_paths

#: What an output given as ``-`` is: standard output.
STDOUT = "-"
#: The files of a sqlite store besides its database, by the end of their names.
_STORE_FILES = {".lock": "lock file", "-journal": "journal", "-wal": "write-ahead log", "-shm": "shared-memory file"}


def check_outputs(
    outputs: Mapping[str, str | Path | None],
    *,
    inputs: Sequence[str | Path | None] = (),
    tracking_uri: str | None = None,
    stdout: Collection[str] = (),
    folders: Collection[str] = (),
    make_folders: bool = False,
) -> dict[str, Path | None]:
    """Check ``outputs`` (option as the user spells it -> path as given; None: not given) as the
    module docstring says; returns option -> the path to write (None: standard output), for the
    outputs given.

    ``inputs``: the files and folders the command reads (None entries are skipped);
    ``tracking_uri``: the command's ``--tracking-uri`` (None: the store it finds);
    ``stdout``: the options that write text and take ``-``; ``folders``: the options that name a
    folder to write into (checked against the store and the inputs only: the verb checks its
    contents); ``make_folders``: a file's missing folder is created by the verb (its nearest
    existing folder must take a new one).

    Raises
    ------
    LtrUserError
        One line naming the option and the path, for the first rule an output breaks.
    """
    given = {option: value for option, value in outputs.items() if value is not None and str(value) != ""}
    checked: dict[str, Path | None] = {}
    to_stdout = [option for option, value in given.items() if str(value) == STDOUT]
    for option in to_stdout:
        if option not in stdout:
            what = "a folder" if option in folders else "a file that is not text"
            raise LtrUserError(f"{option} -: '-' (standard output) is for text, and {option} writes {what}; give a name")
        checked[option] = None
    if len(to_stdout) > 1:
        raise LtrUserError(f"{' and '.join(to_stdout)} are each '-': only one output can go to standard output")
    paths = {option: Path(value).expanduser() for option, value in given.items() if str(value) != STDOUT}
    if not paths:
        return checked
    store = store_paths(tracking_uri)
    for option, path in paths.items():
        check_not_store(path, option, store)
    check_not_inputs(paths, [Path(p) for p in inputs if p is not None and str(p) != STDOUT], folders=folders)
    for option, path in paths.items():
        if option not in folders:
            _check_file_target(path, option, make_folders=make_folders)
    resolved: dict[Path, str] = {}
    for option, path in paths.items():
        other = resolved.setdefault(path.resolve(), option)
        if other != option:
            raise LtrUserError(f"{other} and {option} name the same file {path}: give each its own")
        checked[option] = path
    return checked


def _check_file_target(path: Path, option: str, *, make_folders: bool) -> None:
    """``path`` as a file to write: not a folder, not an existing file that is not a regular file,
    in a folder that exists (``make_folders``: that can be made) and takes a new file."""
    if path.is_dir():
        raise LtrUserError(f"{option} {path} is a directory; give a file name")
    if path.exists() and not path.is_file():
        raise LtrUserError(f"{option} {path} is not a regular file (a device or a pipe); give a file name")
    folder = path.parent
    if make_folders:
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
    if folder.exists() and not folder.is_dir():
        raise LtrUserError(f"{option} {path}: {folder} is a file, not a folder")
    if not folder.is_dir():
        raise LtrUserError(f"{option} {path}: the folder {folder} does not exist")
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise write_failed(exc, f"{option} {path}: cannot write a file in {folder} ({exc.strerror or exc})", path=folder) from None


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and os.path.samefile(a, b))
    except OSError:
        return False


def check_not_store(path: Path, option: str, store: StorePaths) -> None:
    """Refuse ``path`` (an output of ``option``) when it is a file of the tracking store or lies
    inside (or is) one of its artifact folders: writing it would destroy runs."""
    for f in store.files:
        if _same_file(path, f):
            what = next((w for suffix, w in _STORE_FILES.items() if f.name.endswith(suffix)), "database")
            raise LtrUserError(
                f"{option} {path} is the tracking store's {what} ({f}): writing it would destroy its runs; name another file"
            )
    resolved = path.resolve()
    for root in store.roots:
        if resolved.is_relative_to(root):
            raise LtrUserError(
                f"{option} {path} lies inside {root}, the artifact folder of the tracking store: "
                "writing it would replace runs' files; write it elsewhere"
            )


def _input_files(inputs: Sequence[Path]) -> tuple[list[Path], list[Path]]:
    """(files, folders) of ``inputs``: each file with its side files that exist, each folder."""
    files: list[Path] = []
    folders: list[Path] = []
    for given in inputs:
        path = given.expanduser()
        if path.is_dir():
            folders.append(path.resolve())
            files += partition_files(path)  # a partition may be a link to a file elsewhere
        else:
            files.append(path)
            files += [c for ext in (".query", ".position") for c in side_file_candidates(path, ext) if c.is_file()]
    return files, folders


def check_not_inputs(targets: Mapping[str, Path], inputs: Sequence[Path], *, folders: Collection[str] = ()) -> None:
    """Refuse an output (``targets``: option -> path) that is one of the ``inputs`` (the same file
    by path or by inode: a hard link, a symlink), a side file of one (``.query``, ``.position``)
    or inside an input folder; and an output folder (``folders``: its options) that holds an
    input: writing it would destroy or add to the data being read."""
    files, input_folders = _input_files(inputs)
    for option, target in targets.items():
        resolved = target.resolve()
        for folder in input_folders:
            if resolved.is_relative_to(folder):
                raise LtrUserError(f"{option} {target} is inside the input folder {folder}; write it elsewhere")
        for f in files:
            if _same_file(target, f):
                raise LtrUserError(f"{option} {target} is the input {f}: writing it would destroy the data; name another file")
        if option in folders:
            for f in [*files, *input_folders]:
                if f.resolve().is_relative_to(resolved):
                    raise LtrUserError(f"{option} {target} holds the input {f}: writing there could destroy the data; choose another folder")

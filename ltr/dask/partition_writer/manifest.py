"""``DIR/fingerprint.json``: the content fingerprint ``ltr partition`` records beside its partitions.

A ``data=parquet_partitions`` run never reads the rows in the client, so it cannot hash them; a
local run of the same files hashes their arrays (:func:`ltr.data.fingerprint.fingerprint`, the
run's ``ltr.data.fingerprint`` tag). ``ltr partition`` has the splits in memory: it records their
content fingerprint, computed by that same function on the same arrays, in this manifest, with
what it wrote (for every partition file its path relative to ``DIR``, bytes and Parquet row
count, as :func:`file_entries` lists them, and a digest of its footer, :func:`footer_digest`). A
partitions run logs the recorded content hash when the files are still exactly those
(:func:`check_manifest`), so that ``ltr compare`` accepts it beside a local run of the same data;
any change of a file's size, row count or footer (its column statistics: a rewrite that keeps the
size and rows almost always changes them), a file added or missing falls back to the files'
metadata.

Contract
--------
- :func:`content_fingerprint`: ``fingerprint(Splits(train, valid, test))`` without the
  list-length strata (they depend on a run's ``eval.strata``): the ``sha256`` of the whole set and
  of each split are what a local run of the same files with the same options logs (positions, when
  the files have them, are hashed as a local run hashes them, though the partitions do not hold
  them; doc ids are never hashed).
- :func:`write_manifest`: written last, after every partition file, into a temporary file of
  ``root`` that is fsynced and renamed to ``root/fingerprint.json``: a reader sees the whole
  manifest or none. ``ltr partition`` writes it inside its temporary sibling, renamed to ``OUT``
  with the partitions, so a killed run leaves no manifest claiming files it did not finish.
- :func:`check_manifest`: the recorded content fingerprint when the manifest parses, its columns
  are the run's and its files are exactly the files found (same relative paths, bytes, rows and
  footer digests, no other ``*.parquet`` file); else None and one line saying why (``why_not``; empty when there
  is no manifest at all).

Needs no Dask: pyarrow reads only the footers.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ltr.data.fingerprint import HASH_HEX_DIGITS, fingerprint
from ltr.data.query_parts import partition_files
from ltr.data.ranking_data import RankingData
from ltr.data.splits import Splits
from ltr.tracking.store import fsync_path

#: The manifest's file name in ``DIR`` (beside ``train/``, ``valid/``, ``test/``).
MANIFEST_NAME = "fingerprint.json"
#: The manifest's ``format``: a reader refuses (falls back on) any other.
MANIFEST_FORMAT = 1
#: The split folders of a partitions root, in order (``ltr partition`` writes them, a partitions
#: run reads them).
SPLITS = ("train", "valid", "test")
#: The ``method`` of a fingerprint taken from the manifest.
CONTENT_METHOD = (
    f"content hash recorded by ltr partition ({MANIFEST_NAME}): sha256 over the splits' arrays, as a local run "
    "of the same files logs it; the files checked against the record (relative path, bytes, rows)"
)


@dataclass(frozen=True, slots=True)
class ManifestCheck:
    """What :func:`check_manifest` found: the recorded content fingerprint (None when it cannot be
    used) and, when a manifest exists but cannot be used, why (one line; empty otherwise)."""

    content: dict[str, Any] | None
    why_not: str = ""


def file_entries(root: Path, split: str) -> list[dict[str, Any]]:
    """Every ``*.parquet`` file of ``root/split`` in partition order: ``{"path": "split/name",
    "bytes": size, "rows": the footer's row count}`` (reads the footers only)."""
    import pyarrow.parquet as pq

    return [
        {"path": f"{split}/{path.name}", "bytes": path.stat().st_size, "rows": pq.read_metadata(path).num_rows}
        for path in partition_files(root / split)
    ]


def content_fingerprint(splits: Mapping[str, RankingData]) -> dict[str, Any]:
    """The content fingerprint of train, valid and test (keys of ``splits``) as a local run logs it
    (:func:`ltr.data.fingerprint.fingerprint`), without ``strata`` at any level."""
    whole = fingerprint(Splits(train=splits["train"], valid=splits["valid"], test=splits["test"]))
    out = {key: value for key, value in whole.items() if key != "strata"}
    for split in SPLITS:
        out[split] = {key: value for key, value in whole[split].items() if key != "strata"}
    return out


def write_manifest(
    root: Path, content: Mapping[str, Any], *, qid_column: str, label_column: str, doc_id_column: str | None
) -> Path:
    """Write ``root/fingerprint.json``: ``content`` (:func:`content_fingerprint`), the columns the
    files were written with, and :func:`file_entries` of every split; atomically (a temporary file
    of ``root``, fsynced, renamed). Call it after the last partition file is written. Returns its path.

    Raises
    ------
    OSError
        the file system refused the write (the temporary file is removed).
    """
    manifest = {
        "format": MANIFEST_FORMAT,
        "written_by": "ltr partition",
        "content": dict(content),
        "columns": {"qid": qid_column, "label": label_column, "doc_id": doc_id_column},
        "files": {
            split: [entry | {"footer": footer_digest(root / entry["path"])} for entry in file_entries(root, split)]
            for split in SPLITS
        },
    }
    target = root / MANIFEST_NAME
    tmp = root / f".{MANIFEST_NAME}.{os.getpid()}.tmp"
    try:
        # O_EXCL: never another writer's file; mode 0666 & ~umask, as the partition files
        with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), "w", encoding="utf-8") as f:
            json.dump(manifest, f, indent=1, sort_keys=True)
            f.write("\n")
        fsync_path(tmp)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target


def check_manifest(
    root: Path, found: Mapping[str, Sequence[Mapping[str, Any]]], *, qid_column: str, label_column: str
) -> ManifestCheck:
    """The recorded content fingerprint of ``root``, if its files are exactly ``found``.

    Parameters
    ----------
    root : the partitions' directory (``data.root``)
    found : :func:`file_entries` of every split, as they are now
    qid_column, label_column : the columns the run reads as qid and label (``data.*``)

    Returns
    -------
    ManifestCheck
        ``content``: the manifest's content fingerprint when it parses, was written with these
        columns and records exactly the files found (every relative path with its bytes and rows,
        no file more or less); else None with ``why_not`` (one line: unreadable, other columns,
        or the files changed / added / missing), or an empty ``why_not`` when there is no manifest.
    """
    path = root / MANIFEST_NAME
    if not path.exists():
        return ManifestCheck(None)
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        content, recorded, columns = _parts(manifest)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return ManifestCheck(None, f"{path} cannot be read ({exc})")
    wanted = {"qid": qid_column, "label": label_column}
    if any(columns.get(k) != v for k, v in wanted.items()):
        return ManifestCheck(
            None, f"{path} records the columns qid={columns.get('qid')!r}, label={columns.get('label')!r}, "
            f"but the run reads qid={qid_column!r}, label={label_column!r}"
        )  # fmt: skip
    now = {f["path"]: (f["bytes"], f["rows"]) for split in SPLITS for f in found.get(split, ())}
    then = {f["path"]: (f["bytes"], f["rows"]) for split in SPLITS for f in recorded[split]}
    footers: dict[str, str] = {f["path"]: f["footer"] for split in SPLITS for f in recorded[split]}

    def footer_changed(relative: str) -> bool:
        return _footer_or_none(root / relative) != footers[relative]

    changes = [
        ("changed", sorted(p for p in then.keys() & now.keys() if then[p] != now[p] or footer_changed(p))),
        ("added", sorted(now.keys() - then.keys())),
        ("missing", sorted(then.keys() - now.keys())),
    ]
    if any(paths for _, paths in changes):
        listed = "; ".join(f"{what}: {listing(paths, noun='files')}" for what, paths in changes if paths)
        return ManifestCheck(None, f"the partition files are not those {path} records ({listed})")
    return ManifestCheck(content)


# -- helpers -------------------------------------------------------------------------------------


def _parts(manifest: Any) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]], dict[str, Any]]:
    """The content fingerprint, recorded files and columns of a parsed manifest (ValueError: a
    manifest of another format or shape)."""
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise ValueError(f"not a format-{MANIFEST_FORMAT} manifest of ltr partition")
    content, files, columns = manifest.get("content"), manifest.get("files"), manifest.get("columns")
    if not isinstance(content, dict) or not _is_digest(content.get("sha256")):
        raise ValueError("no content sha256")
    if not all(isinstance(content.get(s), dict) and _is_digest(content[s].get("sha256")) for s in SPLITS):
        raise ValueError("no sha256 of every split")
    if not isinstance(columns, dict):
        raise ValueError("no columns")
    if not isinstance(files, dict) or not all(isinstance(files.get(s), list) for s in SPLITS):
        raise ValueError("no files of every split")
    for split in SPLITS:
        for entry in files[split]:
            if not (
                isinstance(entry, dict) and isinstance(entry.get("path"), str)
                and all(type(entry.get(k)) is int for k in ("bytes", "rows")) and _is_digest(entry.get("footer"))
            ):  # fmt: skip
                raise ValueError(f"a {split} file entry is not {{path, bytes, rows, footer}}: {entry!r}")
    return content, files, columns


def footer_digest(path: Path) -> str:
    """sha256 (16 hex digits) of a Parquet file's footer: its metadata as written (schema, row
    groups, every column chunk's offsets, sizes and min / max / null-count statistics). A rewrite
    that keeps the file's size and row count almost always changes it; a copy keeps it. Reads the
    last bytes of the file only.

    Raises
    ------
    OSError
        unreadable; ValueError: not a Parquet file (no ``PAR1`` trailer, or a footer longer than the file).
    """
    with path.open("rb") as f:
        size = f.seek(0, os.SEEK_END)
        if size < 12:
            raise ValueError(f"{path} is not a Parquet file")
        f.seek(size - 8)
        trailer = f.read(8)
        length = int.from_bytes(trailer[:4], "little")
        if trailer[4:] != b"PAR1" or length > size - 12:
            raise ValueError(f"{path} is not a Parquet file")
        f.seek(size - 8 - length)
        return hashlib.sha256(f.read(length)).hexdigest()[:HASH_HEX_DIGITS]


def _footer_or_none(path: Path) -> str | None:
    try:
        return footer_digest(path)
    except (OSError, ValueError):
        return None


def _is_digest(value: Any) -> bool:
    return isinstance(value, str) and len(value) == HASH_HEX_DIGITS and all(c in "0123456789abcdef" for c in value)


def listing(names: Sequence[str], *, noun: str = "entries", limit: int = 3) -> str:
    """The first ``limit`` of ``names``, comma-separated, and how many there are when more.

    Examples
    --------
    >>> listing(["a", "b"]), listing(["a", "b", "c", "d"], noun="files", limit=2)
    ('a, b', 'a, b, ... (4 files)')
    """
    shown = ", ".join(names[:limit])
    return shown + (f", ... ({len(names)} {noun})" if len(names) > limit else "")

"""A run's own config folders: the entries a user adds to Hydra's search path, recorded with the
run so ``ltr rerun`` composes it again from the same folders.

A user's folder comes in as ``ltr train --config-dir DIR``, ``'hydra.searchpath=[file://DIR]'``
or ``ltr.api.train(..., config_dir=DIR)``; Hydra lists it among ``hydra.runtime.config_sources``
(provider ``command-line``, or ``hydra.searchpath in ...``). :func:`user_config_dirs` picks those
entries, as absolute paths (``pkg://`` entries as written), and the run records them in the tag
:data:`TAG` (a JSON list, :func:`encode` / :func:`decode`); :func:`search_path_override` turns
them back into the ``hydra.searchpath`` override that layers them on ``ltr/conf/`` again.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from ltr.errors import LtrUserError

#: The tag of a run's own config folders (absent when it used none).
TAG = "ltr.config_dirs"
#: Hydra's ``provider`` of a search-path entry a user added: ``--config-dir``, or a
#: ``hydra.searchpath`` setting (``hydra.searchpath in command-line``, ``... in main``).
_USER_PROVIDERS = ("command-line", "hydra.searchpath in ")


def entry(path_or_uri: str | Path) -> str:
    """A search-path entry as recorded: a folder (or ``file://`` URI) as its absolute path,
    ``~`` expanded; another scheme (``pkg://module.conf``) as written.

    >>> entry("pkg://mine.conf"), entry("file:///etc/../etc/ltr") == str(Path("/etc/ltr").resolve())
    ('pkg://mine.conf', True)
    """
    text = str(path_or_uri)
    if "://" in text and not text.startswith("file://"):
        return text
    return str(Path(text.removeprefix("file://")).expanduser().resolve())


def user_config_dirs(config_sources: Iterable[Mapping[str, str]]) -> list[str]:
    """The entries of Hydra's ``hydra.runtime.config_sources`` that a user added, in search order
    (:func:`entry` of each): not ``ltr/conf/`` itself, Hydra's own or the structured schemas.

    >>> user_config_dirs([
    ...     {"path": "hydra.conf", "schema": "pkg", "provider": "hydra"},
    ...     {"path": "/site/ltr/conf", "schema": "file", "provider": "main"},
    ...     {"path": "/home/me/ltr-conf", "schema": "file", "provider": "command-line"},
    ...     {"path": "mine.conf", "schema": "pkg", "provider": "hydra.searchpath in command-line"},
    ...     {"path": "", "schema": "structured", "provider": "schema"},
    ... ])
    ['/home/me/ltr-conf', 'pkg://mine.conf']
    """
    found: list[str] = []
    for source in config_sources:
        if not str(source["provider"]).startswith(_USER_PROVIDERS):
            continue
        schema, path = str(source["schema"]), str(source["path"])
        item = entry(path) if schema == "file" else f"{schema}://{path}"
        if item not in found:
            found.append(item)
    return found


def encode(dirs: Sequence[str]) -> str:
    """The tag's value: a JSON list.

    >>> encode(["/home/me/ltr-conf"])
    '["/home/me/ltr-conf"]'
    """
    return json.dumps(list(dirs))


def decode(text: str | None) -> list[str]:
    """The folders a tag's value lists (``[]`` for no tag or a value that is not a JSON list).

    >>> decode('["/home/me/ltr-conf"]'), decode(None)
    (['/home/me/ltr-conf'], [])
    """
    try:
        value = json.loads(text or "[]")
    except json.JSONDecodeError:
        return []
    return [str(item) for item in value] if isinstance(value, list) else []


def tags(dirs: Sequence[str]) -> dict[str, str]:
    """``{TAG: encode(dirs)}``, or nothing without folders (a run of the shipped configs only)."""
    return {TAG: encode(dirs)} if dirs else {}


def missing(dirs: Sequence[str]) -> list[str]:
    """The folders of ``dirs`` that are not a directory here (``pkg://`` entries are not checked)."""
    return [d for d in dirs if "://" not in d and not Path(d).is_dir()]


def search_path_override(dirs: Sequence[str]) -> str:
    """The ``hydra.searchpath`` override that layers ``dirs`` (recorded entries) on ``ltr/conf/``.

    >>> search_path_override(["/home/me/ltr-conf", "pkg://mine.conf"])
    "hydra.searchpath=['file:///home/me/ltr-conf','pkg://mine.conf']"
    """
    for d in dirs:
        if "'" in d:
            raise LtrUserError(f"config folder {d!r}: a path with a quote cannot be put on Hydra's search path")
    uris = ",".join(f"'{d}'" if "://" in d else f"'file://{d}'" for d in dirs)
    return f"hydra.searchpath=[{uris}]"

"""``ltr train``'s command line before Hydra runs: its ``--help``'s config groups, and the
arguments Hydra's own parser refuses.

:func:`install` registers the ``${ltr_config_groups:}`` resolver that ``ltr train --help``'s
template uses (:func:`config_groups`: the shipped groups and their options, then the options a
user's config folder adds), and makes Hydra's own group lists text computed only when a template
asks for them. :func:`check_arguments` refuses in one line what Hydra's parser would refuse
with its usage.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, cast

from hydra._internal.hydra import Hydra
from hydra._internal.utils import get_args_parser
from omegaconf import OmegaConf

from ltr.config import search_path
from ltr.config.compose import CONF_DIR
from ltr.errors import LtrUserError

__all__ = ["check_arguments", "config_groups", "install"]


def _group_options(root: Path) -> dict[str, list[str]]:
    """Config group -> its options (the YAML files of each sub-folder of ``root``), sorted."""
    found: dict[str, list[str]] = {}
    if not root.is_dir():
        return found
    for group in sorted(p for p in root.iterdir() if p.is_dir()):
        options = sorted(f.stem for f in group.glob("*.yaml"))
        if options:
            found[group.name] = options
    return found


def _shown_folder(folder: Path) -> str:
    """A config folder as ``--help`` names it: relative to the current folder when inside it."""
    try:
        return str(folder.relative_to(Path.cwd().resolve())) or "."
    except ValueError:
        return str(folder)


def config_groups(conf_dir: str = CONF_DIR, *, _root_: Any = None) -> str:
    """The ``--help`` list of config groups and their options: the YAML files of ``ltr/conf/``
    (the schemas the files extend are not options), then, per group, the options a user's config
    folder adds (``--config-dir conf`` with ``conf/data/mine.yaml``: ``data: ...; from conf:
    mine``; a group of the folder's own on a line of its own). ``_root_``: the composed config
    (OmegaConf passes it to a resolver), whose ``hydra.runtime.config_sources`` name the
    folders."""
    own = _group_options(Path(conf_dir))
    sources = OmegaConf.select(_root_, "hydra.runtime.config_sources", default=None) if _root_ is not None else None
    folders = [Path(d) for d in search_path.user_config_dirs(sources or []) if "://" not in d]
    added: dict[str, list[str]] = {}
    seen = {group: set(options) for group, options in own.items()}
    for folder in folders:
        for group, options in _group_options(folder).items():
            new = [o for o in options if o not in seen.setdefault(group, set())]
            seen[group] |= set(new)
            if new:
                added.setdefault(group, []).append(f"from {_shown_folder(folder)}: {', '.join(new)}")
    lines = []
    for group in sorted(set(own) | set(added)):
        parts = ([", ".join(own[group])] if group in own else []) + added.get(group, [])
        lines.append(f"{group}: {'; '.join(parts)}")
    return "\n".join(lines)


class _TextOnDemand:
    """Text computed when ``str()`` asks for it (``string.Template`` does, for a placeholder only)."""

    def __init__(self, make: Callable[[], str]) -> None:
        self.make = make

    def __str__(self) -> str:
        return self.make()


def _config_groups_on_demand() -> None:
    """Hydra's help lists its config groups only where a help template says
    ``$APP_CONFIG_GROUPS`` / ``$HYDRA_CONFIG_GROUPS``. Hydra computes both lists for every
    ``--help`` (about 2 s: a copy of the whole config store per group); ours says
    ``${ltr_config_groups:}`` instead, so ``ltr train --help`` computes them only for a template
    that asks (a user's ``hydra.help.template``, ``--hydra-help``). The text is Hydra's own."""
    original = Hydra.format_config_groups

    def on_demand(self: Hydra, predicate: Callable[[str], bool], compact: bool = True) -> str:
        return cast(str, _TextOnDemand(lambda: original(self, predicate, compact)))

    if not getattr(original, "ltr_on_demand", False):
        on_demand.ltr_on_demand = True  # type: ignore[attr-defined]
        Hydra.format_config_groups = on_demand  # type: ignore[method-assign]


def install() -> None:
    """The ``${ltr_config_groups:}`` resolver of ``ltr train --help``, and Hydra's own group
    lists computed on demand (idempotent)."""
    OmegaConf.register_new_resolver("ltr_config_groups", config_groups, replace=True)
    _config_groups_on_demand()


class _ArgumentError(Exception):
    """An argument Hydra's parser refuses (its message), instead of its usage and exit 2."""


def _refuse(message: str) -> NoReturn:
    raise _ArgumentError(message)


def check_arguments(argv: list[str]) -> None:
    """Refuse, in one line, the arguments Hydra's own parser would refuse with its 8-line usage
    and no ``ltr: error:`` line (an unknown option, ``--cfg`` without its value): the same
    parser, its error raised as a :class:`LtrUserError` with the hint ``ltr train --help``."""
    if "--version" in argv:  # Hydra's parser prints its version and exits: let Hydra answer it
        return
    parser = get_args_parser()
    parser.error = _refuse  # type: ignore[method-assign]
    try:
        parser.parse_args(argv)
    except _ArgumentError as exc:
        raise LtrUserError(f"{exc} (ltr train --help)") from None

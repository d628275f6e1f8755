"""The ``ltr train`` config composed outside the Hydra app, from the package's ``ltr/conf/``.

One mechanism for every caller that composes outside ``@hydra.main`` (the Python API, ``ltr
rerun``, ``ltr predict``): the schemas registered, the overrides read exactly as the command line
reads them (:func:`quote_non_ascii`), a user's config directory layered on top, and Hydra's or
OmegaConf's complaints turned into one-line `LtrUserError`\\ s (:func:`one_line`).

Layering: the package's directory comes first, a user's directory (``config_dir`` here,
``--config-dir`` or ``hydra.searchpath`` on the command line) after it, so a user's directory
*adds* options (``local/default.yaml``, ``model/mine.yaml``, ``experiment/mine.yaml``) and cannot
shadow a shipped one of the same name.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException, MissingConfigException, OverrideParseException
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import ConfigAttributeError, ConfigKeyError, OmegaConfBaseException

from ltr.config.search_path import search_path_override, user_config_dirs
from ltr.config.store import register_configs
from ltr.config.unknown_key import data_option_of, unknown_key_message, unknown_option_message
from ltr.errors import LtrUserError

#: The config groups, shipped inside the package (package data), so a wheel installed anywhere
#: composes the same configs as the repository.
CONF_DIR = str(Path(__file__).resolve().parents[1] / "conf")

_GRAMMAR = set(",[]{}()'\"$=:\\ ")


def quote_non_ascii(override: str) -> str:
    """``key=value`` with a non-ASCII value (``data.train=/data/données/train.txt``) quoted, as
    Hydra's override grammar needs; values with grammar characters (sweeps, lists) are left to
    the user (and get a one-line hint when Hydra refuses them).

    Examples
    --------
    >>> quote_non_ascii("data.train=/data/données/train.txt")
    "data.train='/data/données/train.txt'"
    >>> quote_non_ascii("model.num_leaves=7")
    'model.num_leaves=7'
    """
    key, sep, value = override.partition("=")
    if not sep or value.isascii() or _GRAMMAR & set(value) or key.startswith("-"):
        return override
    return f"{key}='{value}'"


def one_line(exc: BaseException) -> str:
    """Hydra's or OmegaConf's message (and its cause's) on one line, without search paths; a key
    no schema has and a group's missing option as ltr says them (:mod:`ltr.config.unknown_key`)."""
    unknown = _unknown_key(exc.__cause__) or _missing_option(exc)
    if unknown is not None:
        return unknown
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    text = lines[0] if lines else type(exc).__name__
    if text.endswith("raised while composing config:") and len(lines) > 1:
        # "In 'debug/default': ConfigKeyError raised while composing config:" says neither key nor why
        where = text.split(":", 1)[0]
        full_key = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("full_key:")), "")
        text = f"{where}: {lines[1]}" + (f" (it sets {full_key})" if full_key else "")
        if where == "In 'debug/default'" and full_key.startswith("data."):
            text += "; debug=default shrinks the synthetic data: with file data leave it out and set fit.num_boost_round"
    override = getattr(exc, "override", None)
    if isinstance(exc, OverrideParseException) and override and override not in text:
        text = f"cannot parse {override!r}: {text}"
    cause = exc.__cause__
    if isinstance(cause, OmegaConfBaseException) and str(cause).strip():
        text = f"{text}: {str(cause).strip().splitlines()[0]}"
    return text


def _unknown_key(cause: BaseException | None) -> str | None:
    """The line of a key the config lacks (Hydra: "Could not override 'model.num_leafs'.", caused
    by OmegaConf's ConfigAttributeError / ConfigKeyError on a node of a schema), else None."""
    if not isinstance(cause, ConfigAttributeError | ConfigKeyError):
        return None
    key, full_key, parent = cause.key, cause.full_key, cause.parent_node
    if not isinstance(key, str) or not full_key or not isinstance(parent, DictConfig):
        return None
    schema = OmegaConf.get_type(parent)
    if not dataclasses.is_dataclass(schema):
        return None
    return unknown_key_message(full_key, [str(k) for k in parent], data_option=data_option_of(schema))


def _missing_option(exc: BaseException) -> str | None:
    """The line of a group option that does not exist (Hydra: "In 'train': Could not find
    'model/lambdarnk'", with the group's options), else None."""
    if not isinstance(exc, MissingConfigException) or not exc.options or "/" not in (exc.missing_cfg_file or ""):
        return None
    group, _, name = str(exc.missing_cfg_file).rpartition("/")
    where = str(exc).split(":", 1)[0]  # "In 'train'" (the command line) or "In 'experiment/mine'"
    prefix = f"{where}: " if where.startswith("In '") and where != "In 'train'" else ""
    return prefix + unknown_option_message(group, name, [str(o) for o in exc.options])


def user_message(exc: HydraException | OmegaConfBaseException, overrides: Sequence[str]) -> str:
    """:func:`one_line`, with a hint when a non-ASCII value needs quotes."""
    message = one_line(exc)
    if message.startswith("Ambiguous value for argument"):
        message += "; a list is key=[a,b]; a sweep over values is ltr train -m key=a,b"
    unparsed = "LexerNoViableAlt" in message or "no viable alternative" in message
    if unparsed and not all(o.isascii() for o in overrides):
        message += " (quote a value with non-ASCII characters: \"key='/path/données'\")"
    elif unparsed and any(
        any(ch in o for ch in _NEEDS_QUOTES) or ("=" not in o and not o.startswith(("-", "~"))) for o in overrides
    ):  # a character Hydra needs quoted, or a word the shell split off a value
        message += (
            " (a value with spaces or < > ! needs Hydra's quotes inside the shell's: "
            "\"sweep.constraints=['valid/ndcg_at_10 >= 0.7']\", \"tracking.run_name='a b'\")"
        )
    return message


#: Characters Hydra's override grammar does not take in an unquoted value (a space: the shell
#: split the override, or it was quoted for the shell only).
_NEEDS_QUOTES = frozenset(" <>!")


def checked_config_dir(config_dir: str | Path) -> str:
    """``config_dir`` as an absolute path (``~`` expanded).

    Raises
    ------
    LtrUserError
        ``config_dir`` is not a directory.
    """
    path = Path(config_dir).expanduser().resolve()
    if not path.is_dir():
        raise LtrUserError(f"config_dir {str(config_dir)!r}: no such directory ({path})")
    return str(path)


def _checked_entry(config_dir: str | Path) -> str:
    """A folder (or ``file://`` URI) checked by :func:`checked_config_dir`; ``pkg://...`` as is."""
    text = str(config_dir)
    if "://" in text and not text.startswith("file://"):
        return text
    return checked_config_dir(text.removeprefix("file://"))


def _is_search_path(override: str) -> bool:
    return override.lstrip("+~").startswith("hydra.searchpath=")


def _search_path_entries(override: str) -> list[str]:
    """The entries of a ``hydra.searchpath=[...]`` override, as Hydra's grammar reads them."""
    value = OverridesParser.create().parse_override(override).value()
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


@dataclasses.dataclass(frozen=True, slots=True)
class Composed:
    """A composed ``ltr train`` config and the user's config folders it was composed with
    (:func:`ltr.config.search_path.user_config_dirs`: what the run records, tag
    ``ltr.config_dirs``)."""

    config: DictConfig
    config_dirs: tuple[str, ...]


def compose_run(
    overrides: Sequence[str] = (), *, what: str = "the config", config_dirs: Sequence[str | Path] = ()
) -> Composed:
    """:func:`compose_train`, with the user's config folders it used: ``config_dirs`` (folders,
    checked to exist, or ``pkg://`` entries, on Hydra's search path in this order) and the entries of a
    ``hydra.searchpath=[...]`` override (after them, as ``ltr train --config-dir`` orders them)."""
    kept = [quote_non_ascii(o) for o in overrides if not o.lstrip("+~").startswith(("hydra.", "hydra/"))]
    given = [o for o in overrides if _is_search_path(o)]
    if config_dirs or given:
        try:
            entries = [*map(_checked_entry, config_dirs), *(e for o in given[-1:] for e in _search_path_entries(o))]
        except HydraException as exc:
            raise LtrUserError(f"cannot compose {what}: {user_message(exc, overrides)}") from exc
        kept.append(search_path_override(entries))
    register_configs()
    try:
        with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
            composed = compose(config_name="train", overrides=kept, return_hydra_config=True)
    except (HydraException, OmegaConfBaseException) as exc:
        raise LtrUserError(f"cannot compose {what}: {user_message(exc, overrides)}") from exc
    dirs = user_config_dirs(composed.hydra.runtime.config_sources)
    with open_dict(composed):
        del composed["hydra"]  # as compose() leaves it without return_hydra_config
    return Composed(composed, tuple(dirs))


def compose_train(
    overrides: Sequence[str] = (), *, what: str = "the config", config_dir: str | Path | None = None
) -> DictConfig:
    """The composed ``ltr train`` config: ``ltr/conf/train.yaml`` with ``overrides`` (as typed on
    the command line; of Hydra's own ``hydra.*`` keys only ``hydra.searchpath``) and
    ``config_dir`` (a user's config directory) layered on top.

    Sweeps (``a=1,2``) are the command line's (``ltr train -m``); here they are refused.

    Raises
    ------
    LtrUserError
        One line (``cannot compose {what}: ...``): a bad override, an unknown option or key, a
        value of the wrong type; or ``config_dir`` missing.
    """
    return compose_run(overrides, what=what, config_dirs=() if config_dir is None else (config_dir,)).config


#: :func:`compose_shipped`'s configs by their overrides (composed once per process; bounded).
_SHIPPED: dict[tuple[str, ...], DictConfig] = {}
_SHIPPED_MAX = 64


def compose_shipped(overrides: Sequence[str] = (), *, what: str = "the config") -> DictConfig:
    """:func:`compose_train` of the package's own configs alone (no user folder, no
    ``hydra.searchpath``): composed once per process for each ``overrides`` (the package's files
    do not change while it runs), and returned as a deep copy the caller may change. For callers
    that compose the shipped schemas again and again (each logged run read back merges its
    config onto them): a deep copy is a small part of a composition's cost.

    Raises
    ------
    LtrUserError
        as :func:`compose_train` (nothing is kept of a composition that fails); a search-path
        override, which this function does not take.
    """
    key = tuple(overrides)
    if any(_is_search_path(o) for o in key):
        raise LtrUserError(f"cannot compose {what}: compose_shipped takes no hydra.searchpath (use compose_train)")
    composed = _SHIPPED.get(key)
    if composed is None:
        composed = compose_train(key, what=what)
        if len(_SHIPPED) >= _SHIPPED_MAX:
            _SHIPPED.clear()
        _SHIPPED[key] = composed
    return copy.deepcopy(composed)

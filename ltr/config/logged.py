"""A run's logged config (``config/config.yaml``) read as data.

A logged config is text in a store: whoever could write to the store wrote it. Resolving it as a
Hydra config would run its resolvers: ``${oc.env:AWS_SECRET_ACCESS_KEY}`` would read the
environment of whoever reads the run, and the value could land in an error line or a table.
:func:`read_logged_config` refuses, in one line naming the run and the key, a logged config
with a resolver call anywhere (``${name:...}``); interpolations inside the config
(``${data.path}``) stay, as OmegaConf resolves them from the config itself.
"""

from __future__ import annotations

import re
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from ltr.errors import LtrUserError

#: ``${name:`` (a resolver call: ``oc.env``, ``oc.decode``, a custom resolver), also nested.
_RESOLVER_CALL = re.compile(r"\$\{\s*[A-Za-z_][\w.]*\s*:")


def _resolver_key(node: Any, path: str) -> str | None:
    """The dotted key of the first string value of ``node`` (a plain container) that calls a resolver."""
    if isinstance(node, dict):
        items: Any = node.items()
    elif isinstance(node, list):
        items = enumerate(node)
    else:
        return path if isinstance(node, str) and _RESOLVER_CALL.search(node) else None
    for key, value in items:
        found = _resolver_key(value, f"{path}.{key}" if path else str(key))
        if found is not None:
            return found
    return None


def read_logged_config(text: str, what: str) -> DictConfig:
    """The logged config ``text`` of ``what`` (``run 1a2b3c4d``) as a :class:`DictConfig`,
    unresolved; a config that calls a resolver (``${oc.env:HOME}``) is refused.

    Raises
    ------
    LtrUserError
        not YAML, not a mapping, or a resolver call at some key (named, its value not shown).
    """
    try:
        config = OmegaConf.create(text)
        plain = OmegaConf.to_container(config, resolve=False)
    except (OmegaConfBaseException, ValueError) as exc:
        raise LtrUserError(f"the logged config of {what} does not load: {type(exc).__name__}") from exc
    if not isinstance(config, DictConfig):
        raise LtrUserError(f"the logged config of {what} is not a mapping")
    key = _resolver_key(plain, "")
    if key is not None:
        raise LtrUserError(
            f"the logged config of {what} calls a resolver at {key} (${{name:...}}, such as an environment "
            "variable): ltr reads a logged config as data and resolves nothing outside it"
        )
    return config

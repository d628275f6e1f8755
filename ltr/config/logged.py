"""A run's logged config (``config/config.yaml``) read as data.

A logged config is text in a store: whoever could write to the store wrote it. Resolving it as a
Hydra config would run its resolvers: ``${oc.env:AWS_SECRET_ACCESS_KEY}`` would read the
environment of whoever reads the run, and the value could land in an error line or a table.
:func:`read_logged_config` reads a string that calls a resolver anywhere in it (``${name:...}``,
as ``data=mq2008``'s shipped ``root: ${oc.env:LTR_SHARED_DATA,../shared/data}/mq2008`` does) as
the literal text it is, never calling the resolver; interpolations inside the config
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


def _literal(node: Any) -> Any:
    """``node`` (a plain container) with every string that calls a resolver escaped (``\\${``), so
    that OmegaConf reads it as the literal text."""
    if isinstance(node, dict):
        return {key: _literal(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_literal(value) for value in node]
    if isinstance(node, str) and _RESOLVER_CALL.search(node):
        return node.replace("${", "\\${")
    return node


def read_logged_config(text: str, what: str) -> DictConfig:
    """The logged config ``text`` of ``what`` (``run 1a2b3c4d``) as a :class:`DictConfig`: its
    own interpolations resolve from itself, a resolver call (``${oc.env:HOME}``) is the literal
    text (nothing of the reader's environment is read).

    >>> read_logged_config("a: 1\\nb: ${a}\\nc: ${oc.env:HOME}/x\\n", "run x").c
    '${oc.env:HOME}/x'

    Raises
    ------
    LtrUserError
        not YAML or not a mapping.
    """
    try:
        config = OmegaConf.create(text)
        plain = OmegaConf.to_container(config, resolve=False)
    except (OmegaConfBaseException, ValueError) as exc:
        raise LtrUserError(f"the logged config of {what} does not load: {type(exc).__name__}") from exc
    if not isinstance(config, DictConfig):
        raise LtrUserError(f"the logged config of {what} is not a mapping")
    literal = OmegaConf.create(_literal(plain))
    assert isinstance(literal, DictConfig)  # a mapping in, a mapping out
    return literal

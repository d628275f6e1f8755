"""Tab completion of ``ltr train``'s overrides, from Hydra's own completion engine.

Hydra's ``-sc install=bash`` cannot serve ``ltr train``: its script registers the two words ``ltr``
and ``train`` as two commands and asks ``ltr -sc query=bash``, which is no verb. ``ltr completion
bash`` prints a script for the ``ltr`` command instead (:data:`BASH_SCRIPT`): verbs first, then,
after ``train``, the candidates :func:`train_completions` computes with Hydra's completion plugin
on the package's configs (group options ``model=...``, config keys ``model.num_leaves=``, files).
The schemas the config files extend (``model_schema``, ``train_schema``, ...) and Hydra's own
``_target_``-style keys are internal: never offered. A key that holds a list is offered as
``eval.k=`` (a list is set whole, ``eval.k=[5,10]``), not as ``eval.k.`` (Hydra's element keys
``eval.k.0=``, and nothing at all for an empty list).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, cast

from hydra import initialize_config_dir
from hydra.core.config_loader import ConfigLoader
from hydra.core.global_hydra import GlobalHydra
from hydra.core.object_type import ObjectType
from hydra.plugins.completion_plugin import DefaultCompletionPlugin

from ltr.config.compose import CONF_DIR
from ltr.config.schema import list_keys
from ltr.config.store import register_configs

#: The app name and the verb at the start of a completed line (``ltr train``, ``.venv/bin/ltr train``).
_APP_AND_VERB = re.compile(r"\s*\S+\s+\S+\s*")
_SCHEMA = re.compile(r"(^|[=/])\w*_schema$")
_UNDERSCORED = re.compile(r"(^|\.)_\w*_[.=]")

BASH_SCRIPT = """\
# bash completion of the ltr command (ltr completion bash); enable it with
#   ltr completion bash > ~/.ltr-completion.bash && echo 'source ~/.ltr-completion.bash' >> ~/.bashrc
_ltr_complete() {
    local cur="${COMP_WORDS[COMP_CWORD]}"
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "%(verbs)s" -- "$cur"))
        return
    fi
    if [ "${COMP_WORDS[1]}" == "train" ]; then
        local choices
        choices=$("${COMP_WORDS[0]}" completion query "${COMP_LINE:0:$COMP_POINT}" 2>/dev/null)
        COMPREPLY=($(compgen -W "$choices" -- "$cur"))
    fi
}
# as Hydra's own script: "=" does not split a word, so model=lambdarank is one word
COMP_WORDBREAKS=${COMP_WORDBREAKS//=}
complete -o nospace -o default -F _ltr_complete ltr
"""


def bash_script(verbs: Sequence[str]) -> str:
    """The bash completion script of ``ltr`` (:data:`BASH_SCRIPT` with the verbs filled in)."""
    return BASH_SCRIPT % {"verbs": " ".join(verbs)}


def is_internal(candidate: str) -> bool:
    """A schema of the ConfigStore (``model=model_schema``, ``train_schema``) or a key of Hydra's
    instantiation (``hydra.sweeper._target_=``): not for users.

    Examples
    --------
    >>> [is_internal(c) for c in ("model=model_schema", "model=lambdarank", "train_schema", "model.")]
    [True, False, True, False]
    >>> [is_internal(c) for c in ("hydra.sweeper._target_=", "hydra.sweeper._recursive_=", "model.max_bin=")]
    [True, True, False]
    """
    return _SCHEMA.search(candidate) is not None or _UNDERSCORED.search(candidate) is not None


def as_list_key(candidate: str, list_keys: frozenset[str]) -> str:
    """``eval.k.`` (Hydra's candidate for a list node) as ``eval.k=``; any other unchanged.

    Examples
    --------
    >>> as_list_key("eval.k.", frozenset({"eval.k"})), as_list_key("eval.", frozenset({"eval.k"}))
    ('eval.k=', 'eval.')
    """
    key = candidate[:-1] if candidate.endswith(".") else ""
    return f"{key}=" if key.lstrip("+~") in list_keys else candidate


class OneRepositoryLoader:
    """Hydra's config loader as its completion plugin uses it, with one config repository per
    (primary config, overrides) instead of one per question.

    The plugin asks ``get_group_options`` once per group it offers (27 times for ``ltr train
    <TAB>``), always with the same config and overrides, and Hydra's loader answers each by
    deep-copying the whole repository (the ConfigStore's schemas included) and reading the search
    path again: 1.7 s of a 2 s completion. The repository built for the first question answers
    the others (it is only read). Everything else goes to the wrapped loader.
    """

    def __init__(self, loader: ConfigLoader) -> None:
        self._loader = loader
        self._repositories: dict[tuple[str | None, tuple[str, ...]], Any] = {}

    def get_group_options(
        self,
        group_name: str,
        results_filter: ObjectType | None = ObjectType.CONFIG,
        config_name: str | None = None,
        overrides: list[str] | None = None,
    ) -> list[str]:
        """``ConfigLoader.get_group_options``: the options (or sub-groups) of ``group_name``."""
        key = (config_name, tuple(overrides or ()))
        if key not in self._repositories:
            # the repository Hydra's own get_group_options builds for these arguments
            _, self._repositories[key] = self._loader._parse_overrides_and_create_caching_repo(  # type: ignore[attr-defined]
                config_name, list(key[1])
            )
        options: list[str] = self._repositories[key].get_group_options(group_name, results_filter)
        return options

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


def train_completions(line: str) -> list[str]:
    """Completions of the last word of ``line`` (``ltr train [overrides...] WORD``, as the shell
    has it up to the cursor; a line ending in a space completes a new word), sorted.

    ``ltr train mod`` gives ``model.`` (the keys under it) and ``model=`` (its options); ``ltr
    train model=`` the options of ``model``; ``ltr train model.num_`` the keys.
    """
    match = _APP_AND_VERB.match(line)
    rest = line[match.end():] if match else ""
    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        loader = cast(ConfigLoader, OneRepositoryLoader(GlobalHydra.instance().config_loader()))
        found = DefaultCompletionPlugin(loader)._query(config_name="train", line=rest)
    lists = list_keys()
    return sorted({as_list_key(c, lists) for c in found if not is_internal(c)})

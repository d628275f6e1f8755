"""What a persistent Optuna study was built on: the config its trials' values depend on, kept
with the study, so a resumed study never mixes trials of other data or settings.

A trial's value depends on the config the search does not vary: the data (``data.*``, e.g.
``data.n_queries``), the split, the model's and fit's other settings, the seed, the evaluation,
``optimized_metric``, ``sweep.*``. :func:`study_config` is that config, flat
(``{"data.n_queries": "300", ...}``): :meth:`ltr.experiment.spec.ExperimentSpec.params` without
the searched keys (and what lies under them: a searched ``model`` group), ``tracking.*`` (where
runs are logged) and the neutral fields (:mod:`ltr.config.neutral`: they never change a metric).
The data's content is not read (a sweep refuses before any data is loaded): files are known by
their paths, generated data by its settings.

The search stores it as the study's user attribute :data:`CONFIG_ATTR` when it creates the study
(:mod:`ltr.sweeper.search`); a later sweep on the same study with another config is refused in
one line, before any run (:func:`check_study_config`, from :func:`ltr.sweeper.record.check_sweep`),
naming the keys that differ and how to start a new study. A study made before ltr kept this
attribute is taken as it is, and gets the attribute of the first sweep that resumes it.

Examples
--------
>>> config_differences({"data.n_queries": "3000", "seed": "42"}, {"data.n_queries": "300", "seed": "42"})
['data.n_queries=3000 (this sweep: 300)']
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ltr.config.schema import neutral_keys
from ltr.errors import LtrUserError
from ltr.experiment.spec import ExperimentSpec
from ltr.sweeper.link import rdb_storage

log = logging.getLogger(__name__)

#: The study's user attribute holding :func:`study_config` of the sweep that created it.
CONFIG_ATTR = "ltr.config"
#: How many differing keys the refusal names.
SHOWN_DIFFERENCES = 3


def study_config(spec: ExperimentSpec, searched: Iterable[str]) -> dict[str, str]:
    """The flat config a study's trial values depend on (see the module docstring); ``searched``:
    the keys the search varies."""
    searched = tuple(searched)
    neutral = neutral_keys()

    def kept(key: str) -> bool:
        if key.startswith("tracking.") or key in neutral:
            return False
        return not any(key == s or key.startswith(f"{s}.") for s in searched)

    return {key: str(value) for key, value in sorted(spec.params().items()) if kept(key)}


def config_differences(stored: Mapping[str, Any], current: Mapping[str, str]) -> list[str]:
    """``key=stored value (this sweep: current value)`` for each key whose values differ, sorted
    (``<unset>`` for a key one side lacks)."""
    out = []
    for key in sorted(set(stored) | set(current)):
        before, now = stored.get(key), current.get(key)
        if before is None or now is None or str(before) != now:
            shown = "<unset>" if before is None else before
            out.append(f"{key}={shown} (this sweep: {'<unset>' if now is None else now})")
    return out


def check_study_config(stored: Mapping[str, Any] | None, current: Mapping[str, str], *, name: str, storage: str) -> None:
    """Refuse (one line) a study built on another config than ``current``; ``stored``: the
    study's :data:`CONFIG_ATTR` (None: a study from before ltr kept it, taken as it is)."""
    if stored is None:
        return
    differences = config_differences(stored, current)
    if not differences:
        return
    more = len(differences) - SHOWN_DIFFERENCES
    shown = "; ".join(differences[:SHOWN_DIFFERENCES]) + (f"; and {more} more" if more > 0 else "")
    raise LtrUserError(
        f"Optuna study {name!r} in {storage} was built on another config ({shown}): its trials' values "
        f"would not be comparable with this sweep's; start a new study with hydra.sweeper.study_name={name}_2 "
        "(or another hydra.sweeper.storage), or run with the study's config"
    )


def _sqlite_file_missing(storage: str) -> bool:
    """True for a ``sqlite:///`` URL whose file does not exist (opening it would create it)."""
    if not storage.startswith("sqlite:"):
        return False
    from sqlalchemy.engine import make_url

    database = make_url(storage).database
    return not database or database == ":memory:" or not Path(database).exists()


def stored_study_config(storage: str, name: str) -> tuple[bool, dict[str, Any] | None]:
    """(whether study ``name`` exists in ``storage``, its :data:`CONFIG_ATTR` or None); a sqlite
    file that does not exist is not created."""
    if _sqlite_file_missing(storage):
        return False, None
    import optuna

    summaries = optuna.study.get_all_study_summaries(rdb_storage(storage), include_best_trial=False)
    found = next((s for s in summaries if s.study_name == name), None)
    if found is None:
        return False, None
    stored = found.user_attrs.get(CONFIG_ATTR)
    return True, dict(stored) if isinstance(stored, Mapping) else None


def study_name(given: str | None, spec: ExperimentSpec) -> str:
    """``hydra.sweeper.study_name``, or ``ltr_<model.name>``."""
    return given or f"ltr_{spec.config.model.name}"


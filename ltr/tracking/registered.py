"""The run behind a registered model: ``models:/NAME@ALIAS`` or ``models:/NAME/VERSION``.

``ltr promote RUN --name NAME`` registers the model of a run as a version of ``NAME`` in the
MLflow Model Registry of the run's store, tagged with the run's id (``ltr.run_id``) and pointed
at by an alias (``champion``). ``ltr predict models:/ranker@champion ...`` (and every reader of
:func:`ltr.models.logged.load_run`) scores with that version's run: its model, feature names
and conventions, exactly as ``ltr predict RUN`` with the run's id. The version is found through
MLflow (the registry has no local fast path); the run is then read as any run.

A reference that names no run but a registered model (``ltr predict ranker``) stands for that
model's ``champion`` alias (:func:`champion_run`, which :meth:`ltr.tracking.runs.RunStore.resolve`
tries last); a model without that alias is one line naming the forms that pick a version.
"""

from __future__ import annotations

import re
from typing import Protocol

from ltr.errors import LtrUserError


class RunStore(Protocol):
    """What is read of a store here: its tracking URI (:class:`ltr.tracking.runs.RunStore`)."""

    @property
    def uri(self) -> str: ...

#: How a registered model's URI starts (MLflow's scheme).
PREFIX = "models:/"
#: The version tag naming the run, as ``ltr promote`` sets it (``ltr.models.promote.TAG_RUN``).
RUN_TAG = "ltr.run_id"
_URI = re.compile(r"^models:/(?P<name>[^/@]+)(?:@(?P<alias>[^/@]+)|/(?P<version>[0-9]+))$")


def is_registered(ref: str) -> bool:
    """Whether ``ref`` names a registered model (``models:/...``), not a run."""
    return ref.startswith(PREFIX)


def registered_run(ref: str, store: RunStore) -> tuple[str, str]:
    """The id of the run whose model ``ref`` (``models:/NAME@ALIAS`` or ``models:/NAME/VERSION``)
    names in ``store``'s registry, and a note saying so (printed by ``ltr predict``).

    Raises
    ------
    LtrUserError
        another form of URI (``models:/m-...``, ``@latest`` is an alias like any other), no such
        model, alias or version, or a version that names no run, in one line.
    """
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    found = _URI.match(ref)
    if found is None:
        raise LtrUserError(f"{ref!r} is not a registered model's URI: give models:/NAME@ALIAS or models:/NAME/VERSION")
    name, alias, number = found["name"], found["alias"], found["version"]
    client = MlflowClient(tracking_uri=store.uri, registry_uri=store.uri)
    try:
        version = client.get_model_version_by_alias(name, alias) if alias else client.get_model_version(name, number)
    except MlflowException as exc:
        raise LtrUserError(
            f"{ref}: {str(exc.message).splitlines()[0]} (in {store.uri}); ltr promote RUN --name {name} registers a run's model"
        ) from exc
    run_id = str(version.tags.get(RUN_TAG) or version.run_id or "")
    if not run_id:
        raise LtrUserError(f"{ref} is version {version.version} of {name!r}, which names no run; predict with the run instead")
    return run_id, f"{ref} is version {version.version} of {name!r}: the model of run {run_id[:8]}"


#: The alias a bare registered model's name stands for (``ltr promote``'s default alias).
CHAMPION = "champion"


def champion_run(name: str, store: RunStore) -> tuple[str, str] | None:
    """The run of ``models:/NAME@champion`` when ``name`` is a registered model of ``store``'s
    registry (what a run reference that names no run falls back to), with the note saying so;
    None when no registered model has that name (or the store has no registry).

    Raises
    ------
    LtrUserError
        ``name`` is a registered model without a ``champion`` alias: one line giving the forms
        that name one of its versions (its aliases, its versions).
    """
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    if not name or "/" in name or "@" in name:
        return None
    client = MlflowClient(tracking_uri=store.uri, registry_uri=store.uri)
    try:
        model = client.get_registered_model(name)
    except MlflowException:  # no such model, a name MLflow refuses, a store without a registry
        return None
    aliases = dict(getattr(model, "aliases", None) or {})
    if CHAMPION not in aliases:
        try:
            versions = sorted(int(v.version) for v in client.search_model_versions(f"name = '{name}'"))
        except (MlflowException, ValueError):
            versions = []
        forms = [f"models:/{name}@{alias}" for alias in sorted(aliases)]
        forms += [f"models:/{name}/{versions[-1]}"] if versions else []
        given = f": give {' or '.join(forms)}" if forms else ": it has no version yet"
        raise LtrUserError(
            f"no run {name!r}, and the registered model {name!r} has no alias {CHAMPION!r} (ltr promote RUN --name {name} "
            f"sets it){given}"
        )
    run_id, note = registered_run(f"{PREFIX}{name}@{CHAMPION}", store)
    return run_id, f"no run is named {name!r}: {note}"

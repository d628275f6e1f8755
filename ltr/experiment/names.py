"""Run names: what tells a run apart from the runs it is compared with, first.

The MLflow UI's runs table shows about the first 15 characters of a name (fewer for a child run,
indented under its parent), so a name is built for those:

- **What differs leads.** A sweep's job is named by the values of the keys its sweep varies
  only (``nl=7 lambdarank``); the settings every job of the sweep shares are on the parent. A
  sweep's parent leads with what it varies (``nl=3,7 lambdarank,rank_xendcg``), then its fixed
  overrides. A single run leads with its model's parameters, then the model, then data and
  evaluation settings; how it is fitted (``fit.*``, ``trainer.*``: ``nbr=60``) and the
  ``debug`` / ``experiment`` presets come last (:func:`name_order`).
- **Short keys.** A dotted key is shown by its last part (``model.num_leaves`` ->
  ``num_leaves``), and a last part longer than 6 characters made of several words by their
  initials (``nl``, ``lr``, ``mcs``, ``nbr``; a word with a digit is kept whole: ``lambda_l2``
  -> ``ll2``), unless two keys of the name would then read alike (:func:`name_parts`). The model
  (``model=rank_xendcg``) is its bare value. The full overrides are the ``ltr.overrides`` tag and
  every value is a param.
- **Files by their names.** A value that is a path (``data.train=/data/export/train.parquet``)
  is shown by its last part (``train=train.parquet``; :func:`short_value`): a name stays on one
  line of the UI's table. The full path is the ``ltr.overrides`` tag and the param.
- **Left out.** ``tracking.*``, ``hydra.*`` and the fields that change no result
  (:mod:`ltr.config.neutral`): :func:`shown_overrides`.

A cross-validation's parent is named by what tells it from other CVs (:func:`cv_name`): its
overrides but the fold's, then the model and the number of folds, ``nl=3 debug=default
(lambdarank, 5-fold CV)``; the fold list every CV of a data set shares would fill the name.

An Optuna search's parent is named by its search, not its space (:func:`search_name`):
``optuna:ltr_lambdarank (20 trials, maximize valid/ndcg_at_10)``; its space is logged as the
parent's ``space.*`` params.

A name given as ``tracking.run_name`` is checked before any work (:func:`check_run_name`, in
the one pass of :mod:`ltr.experiment.checks`): at most :data:`MAX_RUN_NAME` characters, none a
control character.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Collection, Mapping, Sequence

from ltr.config.overrides import override_key
from ltr.config.schema import neutral_keys
from ltr.errors import LtrUserError

#: Config groups that set many things at once; they come last in a name.
PRESETS = ("debug", "experiment", "hparams_search", "local")
#: Sections of how a run is fitted rather than what it fits; after the rest of a name.
PROCEDURE = ("fit", "trainer")
#: A key's last part up to this long is shown whole.
SHORT_KEY = 6


def shown_overrides(overrides: Sequence[str]) -> list[str]:
    """The overrides that say what a run computes: not tracking's (where it is logged), Hydra's,
    or a neutral field's (``fit.show_progress``, the caches: :mod:`ltr.config.neutral`)."""
    neutral = neutral_keys()
    return [
        o for o in overrides
        if not o.lstrip("+~").startswith(("tracking", "hydra")) and override_key(o) not in neutral
    ]  # fmt: skip


def abbreviation(leaf: str) -> str:
    """A key's last part as a name shows it: whole up to :data:`SHORT_KEY` characters or when it
    is one word, else the initials of its words (a word with a digit whole).

    >>> [abbreviation(k) for k in ("seed", "num_leaves", "learning_rate", "lambda_l2", "objective")]
    ['seed', 'nl', 'lr', 'll2', 'objective']
    """
    words = [w for w in leaf.split("_") if w]
    if len(leaf) <= SHORT_KEY or len(words) < 2:
        return leaf
    return "".join(w if any(c.isdigit() for c in w) else w[0] for w in words)


def short_value(value: str) -> str:
    """A value as a name shows it: a path (a value with ``/``) by its last part, each of a sweep's
    comma-separated paths too; anything else (a list, a function of Hydra's sweep syntax) as it is.

    >>> short_value("/data/export/train.parquet"), short_value("/data/MSLR-WEB10K/"), short_value("a/x.txt,b/y.txt")
    ('train.parquet', 'MSLR-WEB10K', 'x.txt,y.txt')
    >>> short_value("0.05"), short_value("[1,2]"), short_value("choice(a/x,b/y)")
    ('0.05', '[1,2]', 'choice(a/x,b/y)')
    """
    if "/" not in value or any(c in value for c in "[]{}()"):
        return value
    quote = value[0] if value[:1] in "'\"" and value[-1:] == value[:1] and len(value) > 1 else ""
    inner = value[1:-1] if quote else value
    return quote + ",".join(part.rstrip("/").rsplit("/", 1)[-1] or part for part in inner.split(",")) + quote


def name_order(key: str) -> int:
    """Where an override of ``key`` goes in a name: 0 a parameter of what is computed
    (``model.num_leaves``, ``rerank.alpha``, ``data.n_queries``, ``seed``), 1 the model, 2 another
    group or top-level setting (``rerank=diversify``), 3 how it is fitted (``fit.*``,
    ``trainer.*``), 4 a preset (``debug=default``, ``experiment=...``).

    >>> [name_order(k) for k in ("model.num_leaves", "model", "rerank", "fit.num_boost_round", "debug")]
    [0, 1, 2, 3, 4]
    """
    top = key.split(".", 1)[0]
    if top in PRESETS:
        return 4
    if top in PROCEDURE:
        return 3
    if "." in key or key == "seed":
        return 0
    return 1 if key == "model" else 2


def name_parts(overrides: Sequence[str], *, lead: Collection[str] = ()) -> list[str]:
    """``overrides`` as a name shows them, in name order: those of the keys in ``lead`` first,
    then by :func:`name_order`, the given order kept among equals.

    A dotted key is shown by the :func:`abbreviation` of its last part, or by its last part when
    two keys of ``overrides`` have one abbreviation, or whole when they have one last part;
    ``model=X`` as ``X``; ``+`` and ``~`` prefixes are kept.

    >>> name_parts(["fit.num_boost_round=60", "model=rank_xendcg", "model.num_leaves=7"])
    ['nl=7', 'rank_xendcg', 'nbr=60']
    >>> name_parts(["data.seed=1", "model.params.seed=2", "+model.params.path_smooth=0.5"])
    ['data.seed=1', 'model.params.seed=2', '+ps=0.5']
    >>> name_parts(["data=parquet", "data.train=/home/me/export/train.parquet"])
    ['train=train.parquet', 'data=parquet']
    """
    keys = [override_key(o) for o in overrides]
    leaves = [k.rsplit(".", 1)[-1] for k in keys]
    shorts = [abbreviation(leaf) for leaf in leaves]

    def shown(i: int) -> str:
        override, key = overrides[i], keys[i]
        prefix = override[: len(override) - len(override.lstrip("+~"))]
        value = override.split("=", 1)[1] if "=" in override else None
        if key == "model" and value is not None and not prefix:
            return value
        if "." not in key or value is None:
            return override
        label = shorts[i] if shorts.count(shorts[i]) == 1 else leaves[i] if leaves.count(leaves[i]) == 1 else key
        return f"{prefix}{label}={short_value(value)}"

    lead = set(lead)
    order = sorted(range(len(overrides)), key=lambda i: (keys[i] not in lead, name_order(keys[i]), i))
    return [shown(i) for i in order]


def run_name(
    overrides: Sequence[str],
    *,
    model: str,
    given: str | None = None,
    varying: Sequence[str] | None = None,
    job: str | None = None,
) -> str:
    """A run's name (see the module docstring); ``given``: ``tracking.run_name``.

    A single run: its :func:`shown_overrides` as :func:`name_parts`, then ``(model)`` unless an
    override picks the model; without overrides, its ``model``. A sweep's job (``varying``: the
    keys its sweep varies, ``job``: its number): its values of those keys only; with ``given``
    (which then names the parent), those values then ``(given)``, or ``#job (given)`` when the
    job varies none of them. ``given`` names a single run as it is.

    >>> run_name(["fit.num_boost_round=60", "model.num_leaves=7"], model="lambdarank")
    'nl=7 nbr=60 (lambdarank)'
    >>> run_name(["debug=default", "model=rank_xendcg", "model.num_leaves=7"], model="rank_xendcg",
    ...          varying=["model", "model.num_leaves"])
    'nl=7 rank_xendcg'
    >>> run_name(["data.fold=1"], model="lambdarank", given="cv7", varying=["data.fold"], job="0")
    'fold=1 (cv7)'
    """
    shown = shown_overrides(overrides)
    own = [o for o in shown if override_key(o) in set(varying)] if varying is not None else []
    if given:
        if job is None:
            return given
        return f"{' '.join(name_parts(own)) if own else f'#{job}'} ({given})"
    if own:
        return " ".join(name_parts(own))
    if not shown:
        return model
    parts = " ".join(name_parts(shown))
    return parts if any(override_key(o) == "model" for o in shown) else f"{parts} ({model})"


def sweep_name(task_overrides: Sequence[str], varying: Sequence[str], params: Mapping[str, object]) -> str:
    """A grid sweep's parent: what it varies first (its sweep overrides, ``nl=3,7``, and the
    ``hydra.sweeper.params`` an experiment sets, as ``key=values``), then its other shown
    overrides, in name order: what tells sweeps apart leads.

    >>> sweep_name(["debug=default", "fit.num_boost_round=60", "model=lambdarank,rank_xendcg",
    ...             "model.num_leaves=3,7"], ["model", "model.num_leaves"], {})
    'nl=3,7 lambdarank,rank_xendcg nbr=60 debug=default'
    """
    shown = shown_overrides(task_overrides)
    varied = [o for o in shown if override_key(o) in set(varying)]
    searched = [f"{key}={value}" for key, value in params.items() if not any(override_key(o) == key for o in varied)]
    rest = [o for o in shown if o not in varied]
    return " ".join(name_parts([*varied, *searched, *rest], lead={override_key(o) for o in [*varied, *searched]})) or "sweep"


#: Keys a cross-validation's name says by its number of folds.
CV_KEYS = ("cv.fold_key", "split.n_folds")


def cv_name(task_overrides: Sequence[str], fold_key: str, n_folds: int | None, *, model: str) -> str:
    """A cross-validation sweep's parent: its shown overrides but the fold's (``fold_key``'s
    values, ``cv.fold_key``, ``split.n_folds``) in name order, then ``(<model>, <n>-fold CV)``
    (the model left out when an override picks it; ``CV`` alone when ``n_folds`` is unknown).

    >>> cv_name(["debug=default", "split.n_folds=5", "split.fold=1,2,3,4,5", "cv.fold_key=split.fold",
    ...          "model.num_leaves=3"], "split.fold", 5, model="lambdarank")
    'nl=3 debug=default (lambdarank, 5-fold CV)'
    >>> cv_name(["experiment=letor_cv"], "data.fold", 5, model="lambdarank")
    'experiment=letor_cv (lambdarank, 5-fold CV)'
    >>> cv_name(["data.fold=1,2", "cv.fold_key=data.fold", "model=rank_xendcg"], "data.fold", 2, model="rank_xendcg")
    'rank_xendcg (2-fold CV)'
    >>> cv_name(["seed=1,2", "cv.fold_key=seed"], "seed", None, model="lambdarank")
    'lambdarank, CV'
    """
    rest = [o for o in shown_overrides(task_overrides) if override_key(o) not in {fold_key, *CV_KEYS}]
    cv = f"{n_folds}-fold CV" if n_folds else "CV"
    if not rest:
        return f"{model}, {cv}"
    picked = any(override_key(o) == "model" for o in rest)
    return f"{' '.join(name_parts(rest))} ({cv if picked else f'{model}, {cv}'})"


def search_name(
    study: str,
    n_trials: int,
    objectives: Sequence[str],
    directions: Sequence[str],
    task_overrides: Sequence[str],
    varying: Sequence[str],
) -> str:
    """An Optuna search's parent: ``optuna:<study> (<n> trials, <direction> <objectives>)``, then
    the overrides it fixes (not its space, ``varying``, nor ``hparams_search``,
    ``optimized_metric``, ``sweep.directions``: the name says them), in name order.

    >>> search_name("ltr_lambdarank", 20, ["valid/ndcg_at_10"], ["maximize"], ["hparams_search=optuna"], [])
    'optuna:ltr_lambdarank (20 trials, maximize valid/ndcg_at_10)'
    >>> search_name("s", 4, ["valid/ndcg_at_10", "valid/ild_at_10"], ["maximize", "maximize"],
    ...             ["rerank=diversify", "rerank.alpha=interval(0,1)", "debug=default"], ["rerank.alpha"])
    'optuna:s (4 trials, maximize valid/ndcg_at_10, valid/ild_at_10) rerank=diversify debug=default'
    """
    goals: list[str] = []
    for i, (objective, direction) in enumerate(zip(objectives, directions, strict=True)):
        goals.append(objective if i and direction == directions[i - 1] else f"{direction} {objective}")
    trials = f"{n_trials} trial{'s' * (n_trials != 1)}"
    said = {"hparams_search", "optimized_metric", "sweep.directions", *varying}
    rest = [o for o in shown_overrides(task_overrides) if override_key(o) not in said]
    name = f"optuna:{study} ({', '.join([trials, *goals])})"
    return " ".join([name, *name_parts(rest)])


#: The longest ``tracking.run_name``: MLflow keeps a run's name in a column of 250 characters.
MAX_RUN_NAME = 250


def check_run_name(name: str | None) -> None:
    """Refuse a ``tracking.run_name`` longer than :data:`MAX_RUN_NAME` characters, or with a
    control character (ESC, BEL, a newline: a name is printed to terminals and drawn in figure
    titles), before any work; None (a name made from the overrides) passes."""
    if name is None:
        return
    if len(name) > MAX_RUN_NAME:
        raise LtrUserError(
            f"tracking.run_name is {len(name):,} characters long ({name[:20]}...): at most {MAX_RUN_NAME}, "
            "MLflow's limit of a run name; give a shorter name"
        )
    control = next((c for c in name if unicodedata.category(c) == "Cc"), None)
    if control is not None:
        raise LtrUserError(
            f"tracking.run_name {name!r} has a control character ({control!r}): give a name of printable characters"
        )

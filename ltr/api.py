"""The Python API of ``ltr``: train, evaluate, compare and read runs from Python.

Each function does what its ``ltr`` verb does, with the same checks: a mistake raises
[`LtrUserError`][ltr.errors.LtrUserError] with the one line the command would print (never
``SystemExit``), before any data is read or any run exists; the line names the function's
arguments where the command's names its options (``split='tset'``, not ``--split='tset'``).
Every argument is checked first, by one mechanism (``_python_names``): its type against the
function's annotation (``k='10'`` is not a list of integers; one string where a list of strings
goes, ``metrics='ndcg_at_10'``, is refused, never read character by character), then its value
(counts >= 1, choices such as ``split``, input paths that must exist, no empty names).

- [`train`][ltr.api.train]: ``ltr train OVERRIDES`` (one run; sweeps are the command line's ``-m``);
- [`evaluate`][ltr.api.evaluate]: ``ltr evaluate`` (rankings made elsewhere);
- [`compare`][ltr.api.compare]: ``ltr compare`` (per query and per stratum, paired statistics);
- [`load_run`][ltr.api.load_run]: a finished run and its model (id, id prefix or name, as ``ltr compare``
  resolves them);
- [`predict`][ltr.api.predict]: ``ltr predict`` (score data with a run's model, ranked as the run ranked);
- [`scored_pairs`][ltr.api.scored_pairs]: those scores by (query, document id), what ``ltr labels --run`` joins
  to label sets.

Runs are read from the store `ltr.tracking.find_tracking_uri` finds (``tracking_uri``, else
``$LTR_TRACKING_URI``, ``$MLFLOW_TRACKING_URI``, ``./mlflow.db``, the project root's
``mlflow.db``); [`train`][ltr.api.train] writes where ``ltr train`` does (``tracking.uri``, else the same
two variables, else ``./mlflow.db``), so a notebook that called ``mlflow.set_tracking_uri``
trains and reads in that store.

Examples
--------
>>> from ltr import api
>>> small = ["debug=default", "fit.num_boost_round=5", "fit.show_progress=false"]
>>> a = api.train([*small, "model.num_leaves=3", "tracking.run_name=leaves3"])
>>> b = api.train([*small, "model.num_leaves=7", "tracking.run_name=leaves7"])
>>> comparison = api.compare(a.run_id, b.run_id, n_resamples=200)
>>> comparison.labels
('leaves3', 'leaves7')
>>> best = max((a, b), key=lambda run: run.metrics["valid/ndcg_at_10"])
>>> api.predict(best.run_id, split="test").summary["ndcg_at_10"] == best.metrics["test/ndcg_at_10"]
True
"""

from __future__ import annotations

import functools
import inspect
import logging
import numbers
import os
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ltr.compare.comparison import Comparison
from ltr.compare.loading import load_comparison
from ltr.config import search_path
from ltr.config.compose import compose_run
from ltr.config.schema import EVAL_SPLITS, TrainerConfig
from ltr.data.formats.readers import FORMATS
from ltr.data.label_sets import score_set
from ltr.errors import LtrUserError
from ltr.experiment import run as pipeline
from ltr.experiment.external import DEFAULT_STRATA, RankingEvaluation, evaluate_rankings
from ltr.experiment.run import RunOutcome
from ltr.models.inputs import DEFAULT_BATCH_ROWS, open_input, split_input
from ltr.models.logged import LoggedRun
from ltr.models.logged import load_run as load_logged_run
from ltr.models.on_workers import dask_input
from ltr.models.predict import Prediction, predict_input

__all__ = [
    "LoggedRun",
    "Prediction",
    "RankingEvaluation",
    "RunOutcome",
    "TrainerConfig",
    "compare",
    "evaluate",
    "load_run",
    "predict",
    "scored_pairs",
    "train",
]

log = logging.getLogger(__name__)

_P = ParamSpec("_P")
_R = TypeVar("_R")
#: A command-line option in a message: ``--split``, ``--k``, ``--doc-id-column`` (not part of a
#: longer word or path); ``pass --tracking-uri`` (an instruction to give the option) with the
#: ``pass `` before it and a space after it, if a value follows.
_OPTION = re.compile(r"(?P<verb>\bpass )?(?<![\w/-])--(?P<option>[a-z][a-z0-9-]*)\b(?P<space> (?!(?:or|and|to)\b)(?=\S))?")
#: A check of one argument's value: (the argument's name, its value) -> None, or `LtrUserError`.
_Check = Callable[[str, Any], None]


def _python_names(
    *, checks: Mapping[str, _Check] | None = None, **aliases: str
) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """The one mechanism behind every API function's argument checks and messages.

    Before the function runs, each argument is checked against the function's own annotations
    (`_check_type`: ``k: Sequence[int]`` refuses ``"10"``, a ``Sequence[str]`` refuses one
    string, ``bool`` refuses ``1``, ...), then against its entry of ``checks`` (values: ranges,
    choices, paths that must exist; the argument's name and value -> None or `LtrUserError`).
    Each refusal is one line naming the Python argument (``k='10'``).

    After: the function's `LtrUserError` names its Python arguments, not the options of its
    verb: the shared checks word their messages for the command line (``--split='tset' is not
    one of ...``); here ``--split`` becomes ``split``, ``--doc-id-column`` ``doc_id_column``, a
    flag such as ``--force`` ``force=True``, ``pass --tracking-uri`` ``pass tracking_uri=``
    (an option to give), and ``aliases`` map options of other names (``measure`` to
    ``measures``). Options the function has no argument for are left as they are."""

    def decorate(func: Callable[_P, _R]) -> Callable[_P, _R]:
        signature = inspect.signature(func)
        parameters = signature.parameters
        hints = typing.get_type_hints(func)
        raw = {name: str(p.annotation) for name, p in parameters.items()}

        def python_name(match: re.Match[str]) -> str:
            option = match.group("option")
            verb, space = match.group("verb") or "", match.group("space") or ""
            name = aliases.get(option.replace("-", "_"), option.replace("-", "_"))
            if name not in parameters:
                return match.group(0)
            if isinstance(parameters[name].default, bool):
                flag = not match.string.startswith("=", match.end("option"))
                return f"{verb}{name}=True{space}" if flag else f"{verb}{name}{space}"
            if verb and not match.string.startswith("=", match.end("option")):
                return f"{verb}{name}="  # the value that follows, if any, right after the '='
            return f"{verb}{name}{space}"

        def check(bound: inspect.BoundArguments) -> None:
            for name, value in bound.arguments.items():
                parameter = parameters[name]
                # numpy's ArrayLike is any array-like: what reads it (np.asarray) says what is wrong
                hint = None if "ArrayLike" in raw[name] else hints.get(name)
                items = (
                    [(f"{name}[{i}]", v) for i, v in enumerate(value)]
                    if parameter.kind is inspect.Parameter.VAR_POSITIONAL else [(name, value)]
                )  # fmt: skip
                for shown, item in items:
                    if hint is not None:
                        _check_type(shown, item, hint)
                    if checks and name in checks and item is not None:
                        checks[name](shown, item)

        @functools.wraps(func)
        def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError:
                return func(*args, **kwargs)  # Python's own error: a missing or unknown argument
            bound.apply_defaults()
            check(bound)
            try:
                return func(*args, **kwargs)
            except LtrUserError as exc:
                if len(exc.args) == 1 and isinstance(exc.args[0], str):
                    exc.args = (_OPTION.sub(python_name, exc.args[0]),)
                raise

        return wrapper

    return decorate


def _conforms(value: object, hint: Any) -> bool:
    """Whether ``value`` is of the annotation ``hint`` (the types API functions use)."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_conforms(value, arg) for arg in typing.get_args(hint))
    if hint is None or hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool | np.bool_)
    if hint is int:
        return isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_)
    if hint is float:
        return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)
    if hint is Path:
        return isinstance(value, os.PathLike)
    if origin is Sequence:
        (item,) = typing.get_args(hint)
        items = value.tolist() if isinstance(value, np.ndarray) and value.ndim == 1 else value
        return isinstance(items, Sequence) and not isinstance(items, str | bytes) and all(_conforms(v, item) for v in items)
    if origin is not None:  # tuple[str, ...], dict[str, int]: the container only
        return isinstance(value, origin)
    return isinstance(value, hint) if isinstance(hint, type) else True


def _described(hint: Any, *, plural: bool = False) -> str:
    """``hint`` in words: ``a list of integers``, ``a string or a path``, ``None``."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_described(arg, plural=plural) for arg in typing.get_args(hint))
    if origin is Sequence:
        return f"a list of {_described(typing.get_args(hint)[0], plural=True)}"
    words = {
        type(None): ("None", "None"), bool: ("True or False", "booleans"), int: ("an integer", "integers"),
        float: ("a number", "numbers"), str: ("a string", "strings"), Path: ("a path", "paths"),
    }  # fmt: skip
    if hint in words:
        return words[hint][plural]
    name = getattr(hint, "__name__", str(hint))
    return f"{name}s" if plural else f"a {name}"


def _check_type(name: str, value: object, hint: Any) -> None:
    """Refuse ``value`` of argument ``name`` unless it is of the annotation ``hint``, in one line
    naming the argument; one string where a list of strings goes is refused with the list it
    may have meant (its characters would be read one by one)."""
    if _conforms(value, hint):
        return
    wants = _described(hint)
    if isinstance(value, str) and "a list of strings" in wants:
        example = ", ".join(repr(o) for o in value.split()) or "'...'"
        raise LtrUserError(f"{name} must be {wants}, e.g. [{example}], not one string")
    raise LtrUserError(f"{name}={value!r} is not {wants}")


def _at_least(low: int) -> _Check:
    """A whole number >= ``low``."""

    def check(name: str, value: Any) -> None:
        if value < low:
            raise LtrUserError(f"{name}={value!r} must be >= {low}")

    return check


def _one_of(*choices: str) -> _Check:
    """One of ``choices``."""

    def check(name: str, value: Any) -> None:
        if value not in choices:
            raise LtrUserError(f"{name}={value!r} is not one of {', '.join(repr(c) for c in choices)}")

    return check


def _not_blank(name: str, value: Any) -> None:
    """A string with something in it (a `LoggedRun` for ``run`` is not a string: not checked)."""
    if isinstance(value, str) and not value.strip():
        raise LtrUserError(f"{name}={value!r} is empty")


def _each(check: _Check) -> _Check:
    """``check`` on each item of a list (``metrics[1]``)."""

    def each(name: str, value: Any) -> None:
        for i, item in enumerate(value):
            check(f"{name}[{i}]", item)

    return each


def _existing(kind: str = "file or folder") -> _Check:
    """A path (a string or a path; each of a list of them) that exists: a file, a folder
    (``kind="folder"``) or either. Arrays (``scores``) are not paths: not checked."""

    def check(name: str, value: Any) -> None:
        if isinstance(value, list | tuple):
            for i, item in enumerate(value):
                check(f"{name}[{i}]", item)
            return
        if not isinstance(value, str | os.PathLike):
            return
        there = Path(value)
        if not (there.is_dir() if kind == "folder" else there.exists()):
            what = "no such folder" if kind == "folder" else "no such file or folder"
            raise LtrUserError(f"{name}={str(value)!r}: {what}")

    return check


def _in_existing_folder(name: str, value: Any) -> None:
    """A file to write, in a folder that exists."""
    folder = Path(value).parent
    if not folder.is_dir():
        raise LtrUserError(f"{name}={str(value)!r}: no such folder {str(folder)!r} to write it in")


_SPLIT = _one_of(*EVAL_SPLITS)
#: The store and the experiment, as every reader of runs takes them.
_STORE_CHECKS: dict[str, _Check] = {"tracking_uri": _not_blank, "experiment": _not_blank}


@_python_names(checks={"config_dir": _existing("folder")})
def train(overrides: Sequence[str] = (), *, config_dir: str | Path | None = None) -> RunOutcome:
    """Train and evaluate one experiment: ``ltr train OVERRIDES`` from Python.

    Parameters
    ----------
    overrides : sequence of str
        Hydra overrides exactly as on the command line (``"model=rank_xendcg"``,
        ``"model.num_leaves=15"``, ``"+model.params.min_data_in_bin=5"``), a list of them: one
        string is refused (``["debug=default"]``, not ``"debug=default"``); they are composed
        with the package's ``ltr/conf/`` and logged with the run as the command line's are.
    config_dir : str or Path, optional
        Your own config directory, layered on top of ``ltr/conf/`` (``ltr train --config-dir``):
        it adds options such as ``local/default.yaml`` (personal settings) or ``model/mine.yaml``.
        The run records it (tag ``ltr.config_dirs``), so ``ltr rerun`` composes from it again.

    Returns
    -------
    RunOutcome
        ``summaries`` per split, the flat ``metrics`` (MLflow keys such as
        ``test/ndcg_at_10``), ``run_id`` (None with ``tracking=none``), ``run_url``,
        ``best_iteration`` and ``objective_value`` (the run's ``optimized_metric``).

    Raises
    ------
    LtrUserError
        Overrides that are not a list of strings, a bad override or setting (before any data is
        read or run exists), or unusable data.

    Examples
    --------
    >>> from ltr import api
    >>> outcome = api.train(["debug=default", "fit.num_boost_round=3", "tracking=none"])
    >>> outcome.run_id is None, 1 <= outcome.best_iteration <= 3
    (True, True)
    >>> 0.0 <= outcome.metrics["test/ndcg_at_10"] <= 1.0
    True
    >>> api.train(["model.num_leaves=-1", "tracking=none"])
    Traceback (most recent call last):
    ...
    ltr.errors.LtrUserError: model.num_leaves=-1 is out of range: it must be >= 2 and <= 131072
    """
    composed = compose_run(overrides, config_dirs=() if config_dir is None else (config_dir,))
    logged = [o for o in overrides if not o.lstrip("+~").startswith("hydra.")]
    return pipeline.run(composed.config, overrides=logged, print_summary=False, extra_tags=search_path.tags(composed.config_dirs))


@_python_names(
    measure="measures", metric="measures",
    checks={
        "qrels": _existing(), "run": _existing(), "data": _existing(), "scores": _existing(),
        "per_query": _in_existing_folder, "max_docs": _at_least(1), "rel_threshold": _at_least(0),
        "err_max_grade": _at_least(0), "missing_topics": _one_of("empty", "skip", "error"),
        "qid_column": _not_blank, "label_column": _not_blank, "n_features": _at_least(1),
    },
)  # fmt: skip
def evaluate(
    *,
    qrels: str | Path | None = None,
    run: str | Path | None = None,
    data: str | Path | None = None,
    scores: str | Path | ArrayLike | None = None,
    k: Sequence[int] = (5, 10),
    preset: str | None = None,
    gain: str | None = None,
    label_gain: Sequence[float] | None = None,
    ties: str | None = None,
    zero_idcg: str | None = None,
    rel_threshold: int | None = None,
    discount: str | Path | Sequence[float] | None = None,
    discount_base: float | None = None,
    err_max_grade: int | None = None,
    strata: Sequence[int] = DEFAULT_STRATA,
    missing_topics: str = "empty",
    max_docs: int | None = None,
    per_query: str | Path | None = None,
    measures: Sequence[str] | None = None,
    composite: Sequence[str] | None = None,
    qid_column: str = "qid",
    label_column: str = "label",
    n_features: int | None = None,
) -> RankingEvaluation:
    """Evaluate rankings made elsewhere: ``ltr evaluate`` from Python.

    Give either ``qrels`` and ``run`` (TREC files), or ``data`` (a file in any format ``ltr``
    reads) and ``scores`` (a file with one score per line, or an array with one score per row).

    Parameters
    ----------
    k : cut-offs (distinct, 1 to 1,000,000)
    preset : ``"trec_eval"``, ``"lightgbm"`` or ``"sklearn"``: a peer's conventions, which
        ``gain``, ``label_gain``, ``ties``, ``zero_idcg`` and ``rel_threshold`` then override
    gain : ``"exp"``, ``"linear"`` or ``"value"`` (real labels, revenue or margin, are the gains)
    discount, discount_base : ``"log2_rank_plus_1"`` (default) or ``"jarvelin"`` with its base
        (default 2), as ``--discount`` / ``--discount-base``; or explicit position weights (a
        list, ``"1,0.7,0.5"``, or a file of weights; positions beyond them weigh 0)
    composite : composites as ``["blend=0.4*ndcg_at_3+0.6*ndcg_at_10"]`` (``--composite``)
    strata : lower edges of the list-length strata, increasing from 1
    missing_topics, max_docs, err_max_grade : as ``ltr evaluate --help`` says
    per_query : also write the per-query table there (``.csv`` or ``.parquet``)
    measures : the measures to compute and report, e.g. ``["ndcg", "p"]`` (``--measure``; names
        in ``ltr.experiment.external.MEASURE_NAMES``; default all), each value as in the full set
    qid_column, label_column : ``data`` as a Parquet / CSV table: its query id and label columns
        (``--qid-column``, ``--label-column``; only they are read)
    n_features : ``data`` as a text file: its width, for feature indices beyond 1,000,000
        (``--n-features``)

    Returns
    -------
    RankingEvaluation
        ``summary`` (the ``--json`` output: ``ndcg_at_10``, ``ndcg_at_10/len_1-10``,
        ``n_queries``, ...; None for a mean over no queries), ``columns`` (the per-query
        values, numpy arrays by name), ``table`` (one row per query: a DataFrame of the
        columns and each list's stratum, made with pandas when first read), ``counts`` (TREC
        input counts), ``ks``, ``strata``, ``conventions``.

    Raises
    ------
    LtrUserError
        A bad option (named as the argument, e.g. ``k``), or unusable input
        (`ltr.errors.DataError`, naming the file and line).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from ltr import api
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "qrels").write_text("q1 0 d1 2\\nq1 0 d2 0\\n")
    >>> _ = (folder / "run").write_text("q1 Q0 d2 1 2.0 x\\nq1 Q0 d1 2 1.0 x\\n")
    >>> result = api.evaluate(qrels=folder / "qrels", run=folder / "run", k=[1])
    >>> result.summary["ndcg_at_1"], result.summary["rr"]
    (0.0, 0.5)
    >>> classic = api.evaluate(qrels=folder / "qrels", run=folder / "run", k=[2], gain="linear", discount="jarvelin")
    >>> round(classic.summary["ndcg_at_2"], 4)  # DCG 0 + 2/log2(2) = 2, IDCG 2 + 0 = 2
    1.0
    >>> api.evaluate(qrels=folder / "qrels", run=folder / "run", k=[0])
    Traceback (most recent call last):
    ...
    ltr.errors.LtrUserError: k values must be distinct integers from 1 to 1,000,000, got [0]
    """
    return evaluate_rankings(
        qrels=qrels, run=run, data=data, scores=scores, k=k, preset=preset, gain=gain,
        label_gain=label_gain, ties=ties, zero_idcg=zero_idcg, rel_threshold=rel_threshold,
        discount=discount, discount_base=discount_base, err_max_grade=err_max_grade, strata=strata, missing_topics=missing_topics,
        max_docs=max_docs, per_query=per_query, measures=measures, composite=composite,
        qid_column=qid_column, label_column=label_column, n_features=n_features,
    )  # fmt: skip


@_python_names(
    metric="metrics",
    checks={
        "runs": _not_blank, "baseline": _not_blank, "split": _SPLIT, "metrics": _each(_not_blank), "seed": _at_least(0),
        **_STORE_CHECKS,  # n_resamples: load_comparison's own check, before the store is opened
    },
)  # fmt: skip
def compare(
    *runs: str,
    baseline: str | None = None,
    split: str = "test",
    metrics: Sequence[str] = ("ndcg_at_10",),
    experiment: str = "ltr",
    tracking_uri: str | None = None,
    force: bool = False,
    seed: int = 0,
    n_resamples: int = 10_000,
) -> Comparison:
    """Compare runs per query and per list-length stratum: ``ltr compare`` from Python.

    Parameters
    ----------
    *runs : str
        Run ids, id prefixes (6+ hex digits) or run names (in ``experiment``); the first is the
        baseline unless ``baseline`` names one. None at all: the two latest finished runs.
    split, metrics : the per-query table compared and its columns (``ndcg_at_10``, ``err_at_5``...)
    tracking_uri : the store (default: `ltr.tracking.find_tracking_uri`)
    force : compare runs evaluated on different data or metric conventions
    seed, n_resamples : of the paired bootstrap and the sign-flip test

    Returns
    -------
    Comparison
        ``labels`` (baseline first), ``rows`` (one per metric, stratum and run: mean with CI,
        delta against the baseline with CI, Holm-corrected p-values, wins/ties/losses),
        ``to_frame()``, ``to_dict()``. What ``ltr compare`` prints as notes is logged.

    Raises
    ------
    LtrUserError
        An unknown or ambiguous run, fewer than two runs, a missing table or metric, or runs
        on different data or conventions without ``force``.

    Examples
    --------
    >>> from ltr import api
    >>> api.compare("no-such-run", "another", tracking_uri="sqlite:////nonexistent/mlflow.db")
    Traceback (most recent call last):
    ...
    ltr.errors.LtrUserError: no MLflow store at /nonexistent/mlflow.db ...
    """
    loaded = load_comparison(
        runs, baseline=baseline, tracking_uri=tracking_uri, experiment=experiment, split=split,
        metrics=list(metrics), force=force, seed=seed, n_resamples=n_resamples,
    )  # fmt: skip
    for note in loaded.notes:
        log.warning("%s", note)
    return loaded.comparison


@_python_names(checks={"run": _not_blank, **_STORE_CHECKS})
def load_run(run: str, *, tracking_uri: str | None = None, experiment: str = "ltr") -> LoggedRun:
    """A finished run with its model and settings, by id, id prefix or name (as ``ltr compare``
    resolves them): what [`predict`][ltr.api.predict] scores with.

    Parameters
    ----------
    run : a run id (32 hex digits, any experiment), a run name, or an id prefix of 6+ hex digits
        (both within ``experiment``)
    tracking_uri : the store (default: `ltr.tracking.find_tracking_uri`)

    Returns
    -------
    LoggedRun
        ``run_id``, ``run_name``, ``record`` (status, tags), ``metrics`` (as logged),
        ``per_query(split)`` (the logged per-query table), ``booster`` (the LightGBM model: the
        best round's trees), ``spec`` (the run's checked settings), ``feature_names``.

    Raises
    ------
    LtrUserError
        No store there, no such run, a name or prefix that matches several runs (listed), or
        a run that did not finish.

    Examples
    --------
    >>> from ltr import api
    >>> outcome = api.train(["debug=default", "fit.num_boost_round=3", "tracking.run_name=tiny"])
    >>> logged = api.load_run("tiny")
    >>> logged.run_id == outcome.run_id, logged.record.status
    (True, 'FINISHED')
    >>> logged.metrics["test/ndcg_at_10"] == outcome.metrics["test/ndcg_at_10"]
    True
    >>> len(logged.per_query("test")) == outcome.metrics["test/n_queries"]
    True
    """
    logged = load_logged_run(run, tracking_uri=tracking_uri, experiment=experiment)
    for note in logged.notes:
        log.warning("%s", note)
    return logged


@_python_names(
    checks={
        "run": _not_blank, "data": _existing(), "split": _SPLIT, "format": _one_of(*FORMATS), "batch_rows": _at_least(1),
        "qid_column": _not_blank, "label_column": _not_blank, "doc_id_column": _not_blank, **_STORE_CHECKS,
    }
)  # fmt: skip
def predict(
    run: str | LoggedRun,
    data: str | Path | Sequence[str | Path] | None = None,
    *,
    split: str | None = None,
    tracking_uri: str | None = None,
    experiment: str = "ltr",
    format: str = "auto",
    batch_rows: int = DEFAULT_BATCH_ROWS,
    qid_column: str | None = None,
    label_column: str | None = None,
    doc_id_column: str | None = None,
    dask: TrainerConfig | None = None,
) -> Prediction:
    """Score data with a run's model, ranked as the run ranked: ``ltr predict`` from Python.

    Parameters
    ----------
    run : a run reference (as [`load_run`][ltr.api.load_run] takes it) or a `LoggedRun` (what `load_run` returns)
    data : data files (any format ``ltr`` reads; a folder of Parquet partitions), or None with
        ``split``
    split : ``"train"``, ``"valid"`` or ``"test"``: the run's own split, made again from its config
    format, batch_rows, qid_column, label_column, doc_id_column : as ``ltr predict --help``
    dask : score the Parquet files of ``data`` on Dask workers, one task per file (``ltr predict
        --dask``): a cluster as ``TrainerConfig(kind="dask", n_workers=2)`` or
        ``scheduler_address=...`` describes it; None: in this process

    Returns
    -------
    Prediction
        ``model_scores`` (the model's score per row, input order), ``scores`` (the run's final
        order as scores: the model's, or re-ranked), and with labels in the data ``table`` (one
        row per query) and ``summary`` (``ndcg_at_10``, ``ndcg_at_10/len_1-10``, ... under the
        run's conventions: on the run's own split, its logged metrics bit for bit).

    Raises
    ------
    LtrUserError
        As [`load_run`][ltr.api.load_run]; neither or both of ``data`` and ``split``; data the model cannot
        score (more features than it was trained on, ...).

    Examples
    --------
    >>> from ltr import api
    >>> outcome = api.train(["debug=default", "fit.num_boost_round=3", "tracking.run_name=scored"])
    >>> prediction = api.predict("scored", split="test")
    >>> prediction.summary["ndcg_at_10"] == outcome.metrics["test/ndcg_at_10"]
    True
    >>> prediction.model_scores.shape == (prediction.n_rows,)
    True
    """
    if (data is None) == (split is None):
        raise LtrUserError("give data (files) or split (the run's own), one of them")
    logged = run if isinstance(run, LoggedRun) else load_run(run, tracking_uri=tracking_uri, experiment=experiment)
    paths = [data] if isinstance(data, str | Path) else list(data or [])
    if dask is not None:
        if split is not None:
            raise LtrUserError("dask scores data files (Parquet partitions); a split is scored in this process")
        workers = dask_input(logged, paths, dask, qid_column=qid_column, label_column=label_column, doc_id_column=doc_id_column)
        return workers.predict(keep=True)
    if split is not None:
        source = split_input(logged, split)
    else:
        source = open_input(
            logged, paths, fmt=format, batch_rows=batch_rows, qid_column=qid_column,
            label_column=label_column, doc_id_column=doc_id_column,
        )  # fmt: skip
    return predict_input(logged, source, keep=True)


@_python_names(
    checks={
        "run": _not_blank, "data": _existing(), "format": _one_of(*FORMATS), "qid_column": _not_blank,
        "doc_id_column": _not_blank, **_STORE_CHECKS,
    }
)  # fmt: skip
def scored_pairs(
    run: str | LoggedRun,
    data: str | Path | Sequence[str | Path],
    *,
    tracking_uri: str | None = None,
    experiment: str = "ltr",
    format: str = "auto",
    qid_column: str | None = None,
    doc_id_column: str | None = None,
) -> pd.DataFrame:
    """A run's scores of data files by (query, document id): [`predict`][ltr.api.predict]'s final order (the
    run's ranking step applied) as ``ltr predict --trec-run`` writes it, as a table.

    Parameters
    ----------
    run : a run reference (as [`load_run`][ltr.api.load_run] takes it) or a `LoggedRun` (what `load_run` returns)
    data : data files with document ids: LETOR/SVMlight lines with a ``#docid = X`` comment, or
        Parquet with a document id column (``doc_id_column``, default the run's
        ``data.doc_id_column``); as [`predict`][ltr.api.predict] reads them
    format, qid_column, doc_id_column : as ``ltr predict --help``

    Returns
    -------
    pandas.DataFrame
        One row per input row: ``qid`` and ``docno`` as text, ``score`` (float64) the run's
        final-order score (the model's, or ``0, -1, -2, ...`` after re-ranking).

    Raises
    ------
    LtrUserError
        As [`predict`][ltr.api.predict]; data without document ids; a document id twice in one query.

    Examples
    --------
    >>> from pathlib import Path
    >>> from ltr import api
    >>> outcome = api.train(["debug=default", "fit.num_boost_round=3", "tracking.run_name=paired"])
    >>> _ = Path("two.txt").write_text("1 qid:7 1:0.5 #docid = a\\n0 qid:7 1:0.1 #docid = b\\n")
    >>> pairs = api.scored_pairs("paired", "two.txt")
    >>> pairs[["qid", "docno"]].values.tolist()
    [['7', 'a'], ['7', 'b']]
    >>> pairs["score"].tolist() == api.predict("paired", "two.txt").scores.tolist()
    True
    """
    paths = [data] if isinstance(data, str | Path) else list(data)
    prediction = predict(
        run, paths, tracking_uri=tracking_uri, experiment=experiment, format=format,
        qid_column=qid_column, doc_id_column=doc_id_column,
    )  # fmt: skip
    where = ", ".join(str(p) for p in paths)
    if any(batch.doc_ids is None for batch in prediction.batches):
        raise LtrUserError(
            f"{where} has no document ids (LETOR '#docid = X' comments, or a Parquet column named by "
            "--doc-id-column): the scores cannot be joined to (query, document) pairs"
        )
    batches = prediction.batches
    return score_set(
        np.concatenate([b.data.row_qids() for b in batches]) if batches else np.empty(0, dtype=np.int64),
        np.concatenate([b.doc_ids for b in batches if b.doc_ids is not None]) if batches else np.empty(0, dtype=object),
        prediction.scores,
        where=f"the scores of {where}",
    )

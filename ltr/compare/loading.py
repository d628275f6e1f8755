"""Load runs' per-query tables from the tracking store and compare them (``ltr compare`` as a function).

`load_comparison` resolves run references (:mod:`ltr.tracking.runs`), refuses runs evaluated on
different data or with different metric conventions unless ``force``, and compares the runs'
per-query tables (:mod:`ltr.compare`). Notebooks call it; the CLI prints what it returns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
from scipy import stats

from ltr.compare.comparison import Comparison, compare_runs
from ltr.data.fingerprint import EVAL_TAG, TRAIN_TAG, WHOLE_TAG
from ltr.errors import LtrUserError
from ltr.metrics import IdcgReport
from ltr.metrics.composite import composite_columns
from ltr.metrics.composite_rules import parse_composite
from ltr.tracking import find_tracking_uri
from ltr.tracking.runs import TAG_COMPARED, TAG_KIND, RunRecord, RunStore
from ltr.tracking.sweep_summary import child_runs

#: Tag of the whole data of a run; runs without `EVAL_FINGERPRINT_TAG` must agree on it.
FINGERPRINT_TAG = WHOLE_TAG
#: Tags of what a run is judged on and what it trained on (:mod:`ltr.data.fingerprint`).
EVAL_FINGERPRINT_TAG = EVAL_TAG
TRAIN_FINGERPRINT_TAG = TRAIN_TAG
#: Tags of the metric conventions runs must agree on. ``ltr.eval.k`` is not among them: runs
#: with different cut-offs compare fine on a metric both have (a missing column is an error).
CONVENTION_TAGS = ("ltr.eval.gain", "ltr.eval.ties", "ltr.eval.zero_idcg", "ltr.eval.discount", "ltr.eval.strata")
_MISSING = "(no tag)"
#: What a run logged before a convention tag existed used (runs before ``eval.discount``).
_TAG_DEFAULTS = {"ltr.eval.discount": "log2_rank_plus_1"}
#: The fewest bootstrap resamples and randomisation draws a comparison accepts: with fewer, a 95 %
#: interval's tails hold a resample or two (``--n-resamples 1`` gave an interval of one point that
#: missed the delta itself) and the smallest p-value is above 0.01.
MIN_RESAMPLES = 100
#: Tag of a cross-validation sweep's parent: the config key that picks the fold.
CV_FOLD_KEY_TAG = "ltr.cv.fold_key"



@dataclass(frozen=True)
class LoadedComparison:
    """A comparison together with the runs it came from (baseline first) and their store."""

    comparison: Comparison
    runs: tuple[RunRecord, ...]
    store: RunStore
    split: str
    notes: tuple[str, ...] = field(default=())

    def idcg_reports(self, k: int = 10) -> list[tuple[str, IdcgReport]]:
        """``(label, IdcgReport)`` of every run for the compared split, from the logged JSON."""
        return [
            (label, self.store.idcg_report(run, self.split, k))
            for label, run in zip(self.comparison.labels, self.runs, strict=True)
        ]


def run_labels(runs: Sequence[RunRecord]) -> list[str]:
    """Display labels: the run name when it is unique among ``runs``, else name and short id."""
    names = [r.run_name for r in runs]
    return [
        r.run_name if r.run_name and names.count(r.run_name) == 1 else f"{r.run_name or 'run'} ({r.short_id})"
        for r in runs
    ]


def data_tag(runs: Sequence[RunRecord], split: str | None) -> str:
    """The fingerprint tag runs must agree on to be compared on ``split``: what they are judged
    on (``ltr.data.eval_fingerprint.{split}``, else ``ltr.data.eval_fingerprint``) when every run
    has it, else the whole data's (``ltr.data.fingerprint``: runs logged before the parts were
    fingerprinted apart, and partitioned data)."""
    for tag in ((f"{EVAL_FINGERPRINT_TAG}.{split}",) if split else ()) + (EVAL_FINGERPRINT_TAG,):
        if all(tag in r.tags for r in runs):
            return tag
    return FINGERPRINT_TAG


def _parts_that_differ(runs: Sequence[RunRecord]) -> str:
    """``" (the evaluation data differs; the training data differs)"``: which fingerprinted parts
    differ, when every run has them; else ``""``."""
    parts = []
    for tag, what in ((EVAL_FINGERPRINT_TAG, "evaluation data (queries, documents, grades)"), (TRAIN_FINGERPRINT_TAG, "training data")):
        values = [r.tags.get(tag) for r in runs]
        if None not in values:
            parts.append(f"the {what} {'differs' if len(set(values)) > 1 else 'is the same'}")
    return f" ({'; '.join(parts)})" if parts else ""


def check_compatible(
    runs: Sequence[RunRecord], labels: Sequence[str], *, force: bool, split: str | None = None
) -> list[str]:
    """Refuse runs on different data or conventions (one-line `LtrUserError`) unless ``force``.

    Data: runs must agree on what they are judged on (:func:`data_tag`: the evaluated split's
    queries, documents and grades), not on what they trained on: a clicks-trained and a
    relevance-trained run of one click log compare (a note says the training data differs).
    Returns notes for the user: what differs when forced, or that no fingerprint could be checked.
    """
    notes: list[str] = []
    compared_on = data_tag(runs, split)
    if compared_on != FINGERPRINT_TAG:
        whole = {r.tags.get(FINGERPRINT_TAG) for r in runs}
        if len(whole) > 1 and len({r.tags.get(compared_on) for r in runs}) == 1:
            notes.append(f"the runs trained on different data but are judged on the same {split or 'evaluated'} data ({compared_on}): compared")
    for tag in (compared_on, *CONVENTION_TAGS):
        values = [r.tags.get(tag, _TAG_DEFAULTS.get(tag, _MISSING)) for r in runs]
        if len(set(values)) == 1:
            if tag == compared_on and values[0] == _MISSING:
                notes.append(f"no run has a {tag} tag: cannot check they were evaluated on the same data")
            continue
        what = "different data" if tag == compared_on else "different metric conventions"
        listed = ", ".join(f"{lab!r}={val}" for lab, val in zip(labels, values, strict=True))
        message = f"runs were evaluated on {what}: {tag} differs ({listed})"
        if tag == compared_on:
            message += _parts_that_differ(runs)
        if not force:
            raise LtrUserError(f"{message}; pass --force to compare them anyway")
        notes.append(f"--force: {message}")
    return notes


def check_comparable_kind(label: str, run: RunRecord, *, is_cv: bool) -> None:
    """Refuse, in one line saying what it is, a run that holds no per-query results of its own: a
    comparison or A/B test ``--log`` run, or a sweep's parent that is not a cross-validation's
    (``is_cv``: its folds are compared)."""
    kind = run.tags.get(TAG_KIND)
    if kind in ("comparison", "abtest"):
        what = "an `ltr compare --log`" if kind == "comparison" else "an `ltr abtest --log`"
        raise LtrUserError(
            f"run {label!r} ({run.short_id}) is {what} run, not a trained one: compare the runs it compared "
            f"({', '.join(i[:8] for i in run.tags.get(TAG_COMPARED, '?').split(','))})"
        )
    if run.tags.get("ltr.role") == "sweep" and not is_cv:
        raise LtrUserError(
            f"run {label!r} ({run.short_id}) is a sweep's parent: its jobs are the trained runs; compare two of "
            "them (the parent's description lists them), or two cross-validation parents"
        )


def cv_folds(store: RunStore, run: RunRecord) -> dict[str, RunRecord]:
    """The fold runs of a cross-validation sweep's parent (fold value -> child run), or {}."""
    fold_key = run.tags.get(CV_FOLD_KEY_TAG)
    if run.tags.get("ltr.role") != "sweep" or not fold_key:
        return {}
    children = child_runs(store.client, run.experiment_id, run.run_id, finished_only=True)
    by_fold = {str(c.data.params.get(fold_key)): store.resolve(c.info.run_id, experiment="") for c in children}
    return dict(sorted(by_fold.items()))


def check_fold_pairs(
    folds: Sequence[dict[str, RunRecord]], labels: Sequence[str], *, force: bool, split: str | None = None
) -> list[str]:
    """Same folds in every sweep, and each fold's runs comparable (`check_compatible`)."""
    names = [tuple(f) for f in folds]
    if len(set(names)) != 1:
        listed = ", ".join(f"{lab!r}: {', '.join(n)}" for lab, n in zip(labels, names, strict=True))
        raise LtrUserError(f"the sweeps ran different folds ({listed})")
    notes: list[str] = []
    for fold in names[0]:
        notes += check_compatible([f[fold] for f in folds], [f"{lab} fold {fold}" for lab in labels], force=force, split=split)
    return sorted(set(notes))


def fold_paired_test(
    store: RunStore, folds: Sequence[dict[str, RunRecord]], labels: Sequence[str], *, split: str, metric: str
) -> str:
    """One line: each run's fold means of ``metric`` against the baseline's, paired over folds."""
    means = [[store.metrics(run).get(f"{split}/{metric}", float("nan")) for run in f.values()] for f in folds]
    parts = []
    for label, values in zip(labels[1:], means[1:], strict=True):
        delta = np.asarray(values) - np.asarray(means[0])
        p = float(stats.ttest_rel(values, means[0]).pvalue) if len(delta) > 1 and delta.std() > 0 else float("nan")
        parts.append(f"{label!r} {delta.mean():+.4f} (t-test p={p:.3g})")
    return (
        f"paired over {len(means[0])} folds, mean of the fold deltas of {split}/{metric} against "
        f"{labels[0]!r}: " + "; ".join(parts) + "; the table pairs the queries of all folds"
    )


def _ordered_refs(refs: Sequence[str], baseline: str | None) -> list[str]:
    return list(refs) if baseline is None else [baseline, *refs]


def check_n_resamples(n_resamples: int) -> None:
    """Refuse ``--n-resamples`` below :data:`MIN_RESAMPLES`, whether or not a comparison is due
    (``ltr promote`` with no model under the alias yet compares nothing, and still refuses it)."""
    if n_resamples < MIN_RESAMPLES:
        raise LtrUserError(
            f"--n-resamples={n_resamples} is too few for a confidence interval or a p-value: give at least "
            f"{MIN_RESAMPLES} (default 10000)"
        )


def load_comparison(
    refs: Sequence[str],
    *,
    baseline: str | None = None,
    tracking_uri: str | None = None,
    experiment: str = "ltr",
    split: str = "test",
    metrics: Sequence[str] = ("ndcg_at_10",),
    force: bool = False,
    seed: int = 0,
    n_resamples: int = 10_000,
    composites: Sequence[str] = (),
) -> LoadedComparison:
    """Resolve ``refs`` in the store, check they are comparable, load and compare them.

    ``composites``: ``name=0.4*ndcg_at_3+0.6*ndcg_at_10`` texts (``ltr compare --composite``, the
    syntax of ``ltr evaluate --composite``): each is computed per query on every run's table (as
    ``ltr train`` computes ``eval.composite``) and compared after ``metrics``.

    Parameters
    ----------
    refs : run ids, names or id prefixes (see :mod:`ltr.tracking.runs`); empty (and no
        ``baseline``): the two latest finished runs of ``experiment``, the older one as baseline
    baseline : reference of the baseline; default the first of ``refs``. It may also appear in
        ``refs``; a run named twice is compared once.
    tracking_uri : the store; default :func:`ltr.tracking.find_tracking_uri` (``$LTR_TRACKING_URI``,
        ``$MLFLOW_TRACKING_URI``, ``./mlflow.db``, the project root's ``mlflow.db``)
    experiment, split, metrics, force, seed, n_resamples : as the CLI options

    Raises
    ------
    LtrUserError
        Fewer than two distinct runs, an unknown run, a missing table or metric, or runs on
        different data or conventions without ``force``.
    """
    check_n_resamples(n_resamples)
    extra: dict[str, dict[str, float]] = {}
    for text in composites:
        extra |= parse_composite(str(text))
    metrics = [*metrics, *(name for name in extra if name not in metrics)]
    if not metrics:
        raise LtrUserError("no metric to compare")
    named = [*refs, *([] if baseline is None else [baseline])]
    if named and len(set(named)) < 2:  # one reference, however often: refused before the store is opened
        raise _fewer_than_two(1, refs or named)
    store = RunStore(find_tracking_uri(tracking_uri))
    if not refs and baseline is None:
        refs = [r.run_id for r in reversed(store.latest_runs(experiment=experiment, n=2))]
    runs: list[RunRecord] = []
    for ref in _ordered_refs(refs, baseline):
        record = store.resolve(ref, experiment=experiment)
        if all(r.run_id != record.run_id for r in runs):
            runs.append(record)
    if len(runs) < 2:
        raise _fewer_than_two(len(runs), refs)
    labels = run_labels(runs)
    folds = [cv_folds(store, run) for run in runs]
    for label, run, fold_runs in zip(labels, runs, folds, strict=True):
        check_comparable_kind(label, run, is_cv=bool(fold_runs))
    if any(folds) and not all(folds):
        raise LtrUserError("compare cross-validation sweeps with cross-validation sweeps (a parent run with cv/ metrics) only")
    if all(folds):  # CV sweeps: fold by fold, the per-query tables of all folds together
        notes = [*store.notes, *check_fold_pairs(folds, labels, force=force, split=split)]
        tables = [pd.concat([store.per_query_table(child, split) for child in by_fold.values()], ignore_index=True)
                  for by_fold in folds]
        notes.append(fold_paired_test(store, folds, labels, split=split, metric=metrics[0]))
    else:
        notes = [*store.notes, *check_compatible(runs, labels, force=force, split=split)]
        tables = [store.per_query_table(run, split) for run in runs]
    if extra:
        tables = [_with_composites(t, extra, label) for t, label in zip(tables, labels, strict=True)]
    comparison = compare_runs(
        tables, labels, metrics=list(dict.fromkeys(metrics)), baseline=0, seed=seed, n_resamples=n_resamples
    )
    if any(comparison.n_dropped):
        notes.append(f"only the {comparison.n_queries} queries all runs share are compared")
    meta = {
        "split": split,
        "experiment": experiment,
        "tracking_uri": store.uri,
        "baseline_run_id": runs[0].run_id,
        "runs": [
            {"label": lab, "run_id": r.run_id, "run_name": r.run_name} for lab, r in zip(labels, runs, strict=True)
        ],
    }
    return LoadedComparison(replace(comparison, meta=meta), tuple(runs), store, split, tuple(notes))


def _fewer_than_two(n_runs: int, refs: Sequence[str]) -> LtrUserError:
    return LtrUserError(f"a comparison needs two different runs; got {n_runs} ({', '.join(refs)})")


def _with_composites(table: pd.DataFrame, composites: dict[str, dict[str, float]], label: str) -> pd.DataFrame:
    """``table`` with a column per composite (:func:`ltr.metrics.composite.composite_columns`);
    a part the run's table lacks is one line naming the run."""
    for name, parts in composites.items():
        missing = [p for p in parts if p not in table.columns]
        if missing:
            raise LtrUserError(
                f"--composite {name}: run {label!r} has no per-query {missing[0]!r} (its eval.k, or a composite part, "
                "decides the table's cut-offs)"
            )
    made = composite_columns(table, composites)
    return pd.concat([table.drop(columns=[c for c in made.columns if c in table.columns]), made], axis=1)


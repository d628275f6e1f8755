"""``ltr compare RUN [RUN ...]``: per-query, per-stratum comparison of runs with significance.

Loads the runs' per-query tables from the tracking store (:mod:`ltr.tracking.runs`), refuses
runs evaluated on different data or with different metric conventions unless ``--force``,
compares them (:mod:`ltr.compare`) and prints a rich table (or ``--markdown`` / ``--json``);
``--log`` records the comparison as its own MLflow run. `load_comparison` is the same thing as
a function, for notebooks.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, NoReturn

from ltr.compare import Comparison, compare_runs
from ltr.compare.render import legend, rich_tables, to_json, to_markdown
from ltr.errors import LtrUserError

if TYPE_CHECKING:
    from ltr.metrics import IdcgReport
    from ltr.tracking.runs import RunRecord, RunStore

log = logging.getLogger(__name__)

#: Tag of the data a run was evaluated on; runs must agree on it.
FINGERPRINT_TAG = "ltr.data.fingerprint"
#: Tags of the metric conventions runs must agree on. ``ltr.eval.k`` is not among them: runs
#: with different cut-offs compare fine on a metric both have (a missing column is an error).
CONVENTION_TAGS = ("ltr.eval.gain", "ltr.eval.ties", "ltr.eval.zero_idcg", "ltr.eval.strata")
_MISSING = "(no tag)"


class _Parser(argparse.ArgumentParser):
    """argparse that raises `LtrUserError` (one line, exit 2 through ``ltr``) instead of exiting."""

    def error(self, message: str) -> NoReturn:
        raise LtrUserError(f"ltr compare: {message} (see ltr compare --help)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="ltr compare",
        description=(
            "Compare runs per query against a baseline, overall and per list-length stratum: means, "
            "deltas with paired-bootstrap CIs, paired t-test and sign-flip p-values (Holm-corrected), "
            "wins/ties/losses."
        ),
    )
    parser.add_argument("runs", nargs="+", metavar="RUN", help="run id, run name (in --experiment) or run-id prefix")
    parser.add_argument("--baseline", metavar="RUN", help="the run the others are compared with (default: the first RUN)")
    parser.add_argument("--split", default="test", help="split whose per-query table is compared (default: test)")
    parser.add_argument(
        "--metric", dest="metrics", action="append", metavar="NAME",
        help="per-query metric column, repeatable (default: ndcg_at_10)",
    )
    parser.add_argument("--experiment", default="ltr", help="experiment of run names, and of --log (default: ltr)")
    parser.add_argument("--tracking-uri", default=None, help="tracking store (default: the one ltr train uses, sqlite:///./mlflow.db)")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--markdown", action="store_true", help="print markdown instead of a terminal table")
    output.add_argument("--json", action="store_true", help="print JSON instead of a terminal table")
    parser.add_argument("--log", action="store_true", help="log the comparison as an MLflow run linked to the compared runs")
    parser.add_argument("--force", action="store_true", help="compare even runs on different data or metric conventions")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and randomisation draws (default: 0)")
    parser.add_argument("--n-resamples", type=int, default=10_000, help="bootstrap resamples and randomisation draws (default: 10000)")
    return parser


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


def check_compatible(runs: Sequence[RunRecord], labels: Sequence[str], *, force: bool) -> list[str]:
    """Refuse runs on different data or conventions (one-line `LtrUserError`) unless ``force``.

    Returns notes for the user: what differs when forced, or that no fingerprint could be checked.
    """
    notes: list[str] = []
    for tag in (FINGERPRINT_TAG, *CONVENTION_TAGS):
        values = [r.tags.get(tag, _MISSING) for r in runs]
        if len(set(values)) == 1:
            if tag == FINGERPRINT_TAG and values[0] == _MISSING:
                notes.append(f"no run has a {tag} tag: cannot check they were evaluated on the same data")
            continue
        what = "different data" if tag == FINGERPRINT_TAG else "different metric conventions"
        listed = ", ".join(f"{lab!r}={val}" for lab, val in zip(labels, values, strict=True))
        message = f"runs were evaluated on {what}: {tag} differs ({listed})"
        if not force:
            raise LtrUserError(f"{message}; pass --force to compare them anyway")
        notes.append(f"--force: {message}")
    return notes


def _ordered_refs(refs: Sequence[str], baseline: str | None) -> list[str]:
    return list(refs) if baseline is None else [baseline, *refs]


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
) -> LoadedComparison:
    """Resolve ``refs`` in the store, check they are comparable, load and compare them.

    Parameters
    ----------
    refs : run ids, names or id prefixes (see :mod:`ltr.tracking.runs`); empty (and no
        ``baseline``): the two latest finished runs of ``experiment``, the older one as baseline
    baseline : reference of the baseline; default the first of ``refs``. It may also appear in
        ``refs``; a run named twice is compared once.
    tracking_uri : the store; default the one ``ltr train`` uses
    experiment, split, metrics, force, seed, n_resamples : as the CLI options

    Raises
    ------
    LtrUserError
        Fewer than two distinct runs, an unknown run, a missing table or metric, or runs on
        different data or conventions without ``force``.
    """
    from ltr.tracking import resolve_tracking_uri
    from ltr.tracking.runs import RunStore

    if n_resamples < 1:
        raise LtrUserError(f"--n-resamples={n_resamples} must be >= 1")
    if not metrics:
        raise LtrUserError("no metric to compare")
    store = RunStore(resolve_tracking_uri(tracking_uri))
    if not refs and baseline is None:
        refs = [r.run_id for r in reversed(store.latest_runs(experiment=experiment, n=2))]
    runs: list[RunRecord] = []
    for ref in _ordered_refs(refs, baseline):
        record = store.resolve(ref, experiment=experiment)
        if all(r.run_id != record.run_id for r in runs):
            runs.append(record)
    if len(runs) < 2:
        raise LtrUserError(f"a comparison needs two different runs; got {len(runs)} ({', '.join(refs)})")
    labels = run_labels(runs)
    notes = check_compatible(runs, labels, force=force)
    tables = [store.per_query_table(run, split) for run in runs]
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


def _print_terminal(comparison: Comparison) -> None:
    from rich.console import Console

    console = Console()
    if not console.is_terminal:
        console = Console(width=160)
    for table in rich_tables(comparison):
        console.print(table)
    for line in legend(comparison):
        console.print(line, style="dim", highlight=False, markup=False)


def _log(loaded: LoadedComparison, *, experiment: str, markdown: str) -> str:
    comparison = loaded.comparison
    others = ", ".join(comparison.labels[1:])
    name = f"compare {loaded.split}: {others} vs {comparison.baseline}"
    return loaded.store.log_comparison(
        experiment=experiment,
        run_name=name if len(name) <= 250 else name[:247] + "...",
        runs=loaded.runs,
        baseline=loaded.runs[0],
        split=loaded.split,
        metrics=comparison.metrics,
        markdown=markdown,
        data=comparison.to_dict(),
        params={"seed": comparison.seed, "n_resamples": comparison.n_resamples, "confidence": comparison.confidence},
    )


def main(argv: list[str] | None = None) -> int:
    """``ltr compare``; returns the exit code. User errors raise `LtrUserError` (``ltr`` prints
    them as one line and exits 2)."""
    parser = build_parser()
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    loaded = load_comparison(
        args.runs,
        baseline=args.baseline,
        tracking_uri=args.tracking_uri,
        experiment=args.experiment,
        split=args.split,
        metrics=args.metrics or ["ndcg_at_10"],
        force=args.force,
        seed=args.seed,
        n_resamples=args.n_resamples,
    )
    for note in loaded.notes:
        print(f"ltr compare: note: {note}", file=sys.stderr)
    markdown = to_markdown(loaded.comparison)
    if args.json:
        print(to_json(loaded.comparison))
    elif args.markdown:
        print(markdown, end="")
    else:
        _print_terminal(loaded.comparison)
    if args.log:
        run_id = _log(loaded, experiment=args.experiment, markdown=markdown)
        print(f"logged the comparison as MLflow run {run_id} in {args.experiment!r}", file=sys.stderr)
    return 0

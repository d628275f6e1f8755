"""Summary of a sweep's child runs, read back from the store: best value, failures, a table."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ltr.tracking.uri import ui_path


@dataclass
class SweepSummary:
    """The children of one parent run and what they reached on ``objective``.

    Every job is counted once: ``n_finished`` (its run FINISHED), ``n_failed`` (its run FAILED or
    never ended, or it failed before its run existed), ``n_refused`` (its config or data was
    refused before its run existed), ``n_killed`` (its run KILLED: the sweep was interrupted),
    ``n_not_run`` (planned but never started: an interrupted sweep); ``n_jobs`` is their sum."""

    n_jobs: int
    n_failed: int
    n_killed: int
    best_run_id: str | None
    best_value: float | None
    failures: list[str] = field(default_factory=list)
    text: str = ""
    n_finished: int = 0
    n_refused: int = 0
    n_not_run: int = 0
    markdown: str = ""


def run_link(text: str, experiment_id: str, run_id: str) -> str:
    """A Markdown link to a run's page, relative to the MLflow UI's own address (a description
    is rendered there); ``|`` and brackets in ``text`` are escaped for a table cell."""
    shown = text.replace("|", "\\|").replace("[", "\\[").replace("]", "\\]")
    return f"[{shown}](#{ui_path(experiment_id, run_id)})"


def child_runs(client: Any, experiment_id: str, parent_run_id: str, *, finished_only: bool = False) -> list[Any]:
    """The child runs of ``parent_run_id`` (a sweep's jobs; ``client``: an ``MlflowClient``),
    FINISHED ones only if asked."""
    query = f"tags.mlflow.parentRunId = '{parent_run_id}'"
    if finished_only:
        query += " and attributes.status = 'FINISHED'"
    return list(client.search_runs([experiment_id], filter_string=query, max_results=10_000))


def counts_line(n_jobs: int, counts: dict[str, int]) -> str:
    """The jobs of a sweep by outcome (the outcomes with none left out, but finished and failed).

    >>> counts_line(3, {"finished": 1, "failed": 0, "refused": 0, "killed": 1, "not run": 1})
    'sweep: 3 jobs: 1 finished, 0 failed, 1 killed, 1 not run'
    """
    shown = [f"{n} {what}" for what, n in counts.items() if n or what in ("finished", "failed")]
    return f"sweep: {n_jobs} job{'s' * (n_jobs != 1)}: {', '.join(shown)}"


def child_summary(
    tracker: Any,
    objective: str,
    job_errors: dict[str, str] | None = None,
    *,
    pick_best: bool = True,
    job_outcomes: dict[str, str] | None = None,
    n_planned: int | None = None,
) -> SweepSummary:
    """Read the children of ``tracker``'s current run (an :class:`MlflowTracker`).

    ``pick_best=False`` (cross-validation: the folds are no candidates): no best run is named,
    and the summary opens with the number of runs instead.

    ``job_errors``: job number -> error of every job that failed; those without a run are
    listed with their error, as refused (``job_outcomes``, job number -> outcome, says
    ``refused``: their config or data was refused before a run existed) or failed.
    ``n_planned``: the jobs the sweep was to launch (None: unknown); those with neither a run nor
    an outcome count as not run.
    """
    runs = sorted(child_runs(tracker.client, tracker.experiment_id, tracker.run_id), key=lambda r: int(r.data.tags.get("ltr.job_num", "0")))
    rows: list[tuple[str, str, str, str]] = []
    links: list[str] = []  # each row's run name, as a link to its page in the MLflow UI
    failures: list[str] = []
    killed: list[str] = []
    best_id, best_value = None, -math.inf
    n_failed = n_killed = 0
    for r in runs:
        status = r.info.status
        value = r.data.metrics.get(objective)
        if status not in ("FINISHED", "KILLED"):  # FAILED, or never ended
            n_failed += 1
        if status == "KILLED":
            n_killed += 1
        if status == "KILLED":
            killed.append(f"job {r.data.tags.get('ltr.job_num', '?')} ({r.info.run_name})")
        elif status != "FINISHED":
            failures.append(f"job {r.data.tags.get('ltr.job_num', '?')} ({r.info.run_name}): {r.data.tags.get('ltr.error', status)}")
        if pick_best and value is not None and status == "FINISHED" and value > best_value:
            best_id, best_value = r.info.run_id, value
        rows.append((r.data.tags.get("ltr.job_num", "?"), r.info.run_name or "", status, "-" if value is None else f"{value:.4f}"))
        links.append(run_link(r.info.run_name or r.info.run_id, tracker.experiment_id, r.info.run_id))
    with_run = {r.data.tags.get("ltr.job_num") for r in runs}
    n_refused = 0
    for job, error in sorted((job_errors or {}).items(), key=lambda item: int(item[0]) if item[0].isdigit() else 0):
        if job not in with_run:
            refused = (job_outcomes or {}).get(job, "refused") == "refused"
            n_refused += refused
            n_failed += not refused
            failures.append(f"job {job} ({'refused' if refused else 'failed'} before its run): {error}")
            rows.append((job, "(no run)", "REFUSED" if refused else "FAILED", "-"))
            links.append(rows[-1][1])
    n_finished = sum(r.info.status == "FINISHED" for r in runs)
    n_not_run = max(0, n_planned - len(rows)) if n_planned is not None else 0
    header = ("job", "run", "status", objective)
    best_line = "No job finished."
    if not pick_best:
        best_line = f"**Fold runs**: {n_finished} of {len(rows) + n_not_run} finished."
    elif best_id is not None:
        best = next(r for r in runs if r.info.run_id == best_id)
        best_line = (
            f"**Best run**: {run_link(best.info.run_name or best_id, tracker.experiment_id, best_id)} "
            f"(job {best.data.tags.get('ltr.job_num', '?')}), {objective} = {best_value:.4f}."
        )
    n_jobs = len(rows) + n_not_run
    counts = {"finished": n_finished, "failed": n_failed, "refused": n_refused, "killed": n_killed, "not run": n_not_run}
    md = (
        f"{best_line} {counts_line(n_jobs, counts).removeprefix('sweep: ').capitalize()}.\n\n"
        + "| " + " | ".join(header) + " |\n|---|---|---|---|\n"
        + "".join(f"| {row[0]} | {link} | {row[2]} | {row[3]} |\n" for row, link in zip(rows, links, strict=True))
    )
    width = max([len(r[1]) for r in rows] + [8])
    text = "\n".join(
        [counts_line(n_jobs, counts)]
        + [f"  {row[0]:>3}  {row[1]:<{width}}  {row[2]:<8}  {row[3]}" for row in rows]
        + [f"  error: {f}" for f in failures]
        + [f"  killed: {k}" for k in killed]
    )
    return SweepSummary(
        n_jobs=n_jobs,
        n_failed=n_failed,
        n_killed=n_killed,
        best_run_id=best_id,
        best_value=None if best_id is None else best_value,
        failures=failures,
        text=text,
        markdown=md,
        n_finished=n_finished,
        n_refused=n_refused,
        n_not_run=n_not_run,
    )

"""Read runs back from an MLflow store, and log a comparison of runs as a run of its own.

Run references
--------------
A reference is tried, in this order, as: a run id (32 hex digits, any experiment of the store);
a run name (``mlflow.runName``) within the experiment; a run-id prefix of at least 6 hex digits
within the experiment (the ``ltr train`` summary prints ids shortened); a registered model
(``models:/NAME@ALIAS``, ``models:/NAME/VERSION``: the run that logged that version); else the
name of a registered model, for its ``champion`` alias (``ltr promote``'s default: ``ltr predict
ranker`` after ``ltr promote R --name ranker``). Deleted runs are not found. A name that matches several runs, only one of them FINISHED, means that one; otherwise a
name or prefix that matches several runs is an error that lists them.

Everything that can go wrong because of what the user typed raises `ltr.errors.LtrUserError`
with a one-line message.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from mlflow.entities import Run, ViewType
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from ltr.errors import LtrUserError
from ltr.metrics import IdcgReport
from ltr.runtime.stops import committing
from ltr.tracking.lifecycle import tracked_run
from ltr.tracking.mlflow_tracker import MlflowTracker
from ltr.tracking.records import RunRecord as RunRecord  # re-exported: readers import it from here
from ltr.tracking.records import unfinished as unfinished
from ltr.tracking.registered import champion_run, is_registered, registered_run
from ltr.tracking.store import check_tracking_uri, open_client
from ltr.tracking.uri import environment_variable_of

_RUN_ID = re.compile(r"[0-9a-f]{32}")
_ID_PREFIX = re.compile(r"[0-9a-f]{1,31}")  # any prefix: one that matches several runs says so
#: MLflow's tag value limit is larger, but the UI note only needs the table's head.
_NOTE_MAX = 5000

#: Tags of a comparison run.
TAG_KIND = "ltr.kind"
TAG_COMPARED = "ltr.compare.run_ids"
TAG_BASELINE = "ltr.compare.baseline_run_id"
TAG_SPLIT = "ltr.compare.split"
TAG_METRICS = "ltr.compare.metrics"


def comparisons_experiment(experiment: str) -> str:
    """Where ``ltr compare --log`` and ``ltr abtest --log`` log the runs of ``experiment``: a
    sibling experiment, ``<experiment> (comparisons)``, so that the training runs' chart view
    and runs table hold training runs only (a logged comparison has no curves and would head
    the chart's legend, pushing training runs out of its 10-run limit).

    >>> comparisons_experiment("ltr")
    'ltr (comparisons)'
    """
    return f"{experiment} (comparisons)"


@contextlib.contextmanager
def _no_progress_bar() -> Iterator[None]:
    """MLflow draws a progress bar on stderr per download; a comparison reads a few small files."""
    key = "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"
    before = os.environ.get(key)
    os.environ[key] = "false"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = before


def _record(run: Run) -> RunRecord:
    return RunRecord(
        run_id=run.info.run_id,
        run_name=run.info.run_name or run.data.tags.get("mlflow.runName", ""),
        experiment_id=str(run.info.experiment_id),
        status=str(run.info.status),
        tags=dict(run.data.tags),
    )


def _first_line(exc: MlflowException) -> str:
    return str(exc.message).splitlines()[0] if exc.message else type(exc).__name__


def _describe(runs: Sequence[Run]) -> str:
    return ", ".join(f"{r.info.run_id} ({r.info.run_name})" for r in runs[:5]) + (
        f" and {len(runs) - 5} more" if len(runs) > 5 else ""
    )


class RunStore:
    """Read access to the runs of one tracking store.

    Parameters
    ----------
    uri : str
        A resolved tracking URI (`ltr.tracking.resolve_tracking_uri`). A ``sqlite:///`` URI
        whose database file does not exist is refused (MLflow would create an empty store).
    """

    def __init__(self, uri: str, *, reap: bool = True) -> None:
        if uri.startswith("sqlite:///"):
            db = Path(uri.removeprefix("sqlite:///"))
            if not db.is_file():
                var = environment_variable_of(uri)
                origin = f"${var}={uri}" if var else f"from {uri}"
                raise LtrUserError(f"no MLflow store at {db} ({origin}); train a run first or pass --tracking-uri")
        # Same path as the trackers: URI checked, store checked under its lock, dead runs reaped
        # (``reap``; never in a store that can only be read).
        self.uri = check_tracking_uri(uri, writable=False)
        self.client: MlflowClient = open_client(self.uri, create=False, reap=reap)
        #: What resolving references decided on the user's behalf (a name of several runs).
        self.notes: list[str] = []

    def experiment_id(self, experiment: str) -> str:
        """Id of the experiment named ``experiment``; an error naming the ones that exist."""
        try:
            found = self.client.get_experiment_by_name(experiment)
            if found is None:
                names = [e.name for e in self.client.search_experiments()]
                raise LtrUserError(
                    f"no experiment {experiment!r} in {self.uri}; experiments: {', '.join(names) or 'none'}"
                )
        except MlflowException as exc:
            raise LtrUserError(f"cannot read the MLflow store {self.uri}: {_first_line(exc)}") from exc
        return str(found.experiment_id)

    def _search(self, experiment_id: str, filter_string: str = "") -> list[Run]:
        runs: list[Run] = []
        token = None
        while True:
            page = self.client.search_runs(
                [experiment_id], filter_string, run_view_type=ViewType.ACTIVE_ONLY, max_results=1000, page_token=token
            )
            runs += list(page)
            token = page.token
            if not token:
                return runs

    def resolve(self, ref: str, *, experiment: str) -> RunRecord:
        """The run ``ref`` names: run id, else run name in ``experiment``, else id prefix.

        A name several runs share (a quickstart run twice) names the latest finished one; a note
        in :attr:`notes` says so, and another says when the run did not finish (KILLED: it was
        interrupted; FAILED).
        """
        record = self._resolve(ref, experiment=experiment)
        if record.status != "FINISHED":
            self.notes.append(f"run {record.short_id} ({record.run_name}) {unfinished(record.status)}")
        return record

    def _resolve(self, ref: str, *, experiment: str) -> RunRecord:
        ref = ref.strip()
        if not ref:
            raise LtrUserError("an empty run reference was given")
        if is_registered(ref):  # models:/NAME@ALIAS or models:/NAME/VERSION: the run that logged it
            run_id, note = registered_run(ref, self)
            self.notes.append(note)
            return self._resolve(run_id, experiment=experiment)
        if _RUN_ID.fullmatch(ref):
            try:
                run = self.client.get_run(ref)
            except MlflowException:
                run = None
            if run is not None and run.info.lifecycle_stage != "deleted":
                return _record(run)
        experiment_id = self.experiment_id(experiment)
        if "'" not in ref:
            by_name = self._search(experiment_id, f"attributes.run_name = '{ref}'")
        else:
            by_name = [r for r in self._search(experiment_id) if r.info.run_name == ref]
        finished = [r for r in by_name if r.info.status == "FINISHED"]
        if len(by_name) == 1:
            return _record(by_name[0])
        if finished:
            latest = max(finished, key=lambda r: (r.info.start_time or 0, r.info.run_id))
            if len(by_name) > 1:
                self.notes.append(
                    f"run name {ref!r} matches {len(by_name)} runs; using the latest finished one, "
                    f"{latest.info.run_id[:8]} (pass a run id for another)"
                )
            return _record(latest)
        if len(by_name) > 1:
            raise LtrUserError(
                f"run name {ref!r} matches {len(by_name)} runs in experiment {experiment!r}, none finished: "
                f"{_describe(by_name)}; pass a run id"
            )
        if _ID_PREFIX.fullmatch(ref):
            by_prefix = [r for r in self._search(experiment_id) if r.info.run_id.startswith(ref)]
            if len(by_prefix) == 1:
                return _record(by_prefix[0])
            if len(by_prefix) > 1:
                raise LtrUserError(
                    f"run id prefix {ref!r} matches {len(by_prefix)} runs: {_describe(by_prefix)}; pass more digits"
                )
        champion = champion_run(ref, self)
        if champion is not None:  # a registered model's name: its champion's run
            run_id, note = champion
            self.notes.append(note)
            return self._resolve(run_id, experiment=experiment)
        raise LtrUserError(
            f"no run {ref!r} in experiment {experiment!r} of {self.uri} (tried run id, run name, id prefix, "
            "registered model name); a registered model's version: models:/NAME@ALIAS or models:/NAME/VERSION"
        )

    def latest_runs(self, *, experiment: str, n: int = 2) -> list[RunRecord]:
        """The ``n`` most recently started FINISHED runs of ``experiment`` that are not
        comparisons (``ltr.kind=comparison``), newest first."""
        runs = self.client.search_runs(
            [self.experiment_id(experiment)],
            "attributes.status = 'FINISHED'",
            run_view_type=ViewType.ACTIVE_ONLY,
            max_results=n + 100,
            order_by=["attributes.start_time DESC"],
        )
        return [_record(r) for r in runs if r.data.tags.get(TAG_KIND) not in ("comparison", "abtest")][:n]

    def download(self, run: RunRecord, path: str, dst: str) -> Path:
        """Download the run's artifact ``path`` into ``dst``; one line naming what the run holds instead."""
        try:
            with _no_progress_bar():
                return Path(self.client.download_artifacts(run.run_id, path, dst))
        except (MlflowException, OSError) as exc:
            folder = path.rsplit("/", 1)[0]
            try:
                have = [Path(a.path).name for a in self.client.list_artifacts(run.run_id, folder)]
            except (MlflowException, OSError):
                have = []
            status = "" if run.status == "FINISHED" else f" {unfinished(run.status)} and"
            raise LtrUserError(
                f"run {run.run_id} ({run.run_name!r}){status} has no artifact {path}"
                + (f"; {folder}/ holds {', '.join(have)}" if have else f" and no {folder}/ artifacts")
            ) from exc

    def text_artifact(self, run: RunRecord, path: str) -> str:
        """The text of the run's artifact ``path`` (e.g. ``config/config.yaml``)."""
        with tempfile.TemporaryDirectory() as tmp:
            return self.download(run, path, tmp).read_text()

    def metrics(self, run: RunRecord) -> dict[str, float]:
        """The run's metrics: the last value of each key."""
        return dict(self.client.get_run(run.run_id).data.metrics)

    def params(self, run: RunRecord) -> dict[str, str]:
        """The run's params (config keys, and ``lightgbm.*``: LightGBM's resolved parameters)."""
        return dict(self.client.get_run(run.run_id).data.params)

    def per_query_table(self, run: RunRecord, split: str) -> pd.DataFrame:
        """The run's per-query table of ``split`` (artifact ``per_query/{split}.parquet``): its
        ``qid`` column holds integers, or the strings of string-qid data as written (a run
        logged before ltr kept them has the readers' numbers 0, 1, ... there instead)."""
        with tempfile.TemporaryDirectory() as tmp:
            path = self.download(run, f"per_query/{split}.parquet", tmp)
            return pd.read_parquet(path)

    def idcg_report(self, run: RunRecord, split: str, k: int) -> IdcgReport:
        """The run's IDCG@k histogram of ``split`` (artifact ``idcg/{split}/hist_at_{k}.json``)."""
        with tempfile.TemporaryDirectory() as tmp:
            path = self.download(run, f"idcg/{split}/hist_at_{k}.json", tmp)
            data = json.loads(path.read_text())
        return idcg_report_from_dict(data)

    def log_comparison(
        self,
        *,
        experiment: str,
        run_name: str,
        runs: Sequence[RunRecord],
        baseline: RunRecord,
        split: str,
        metrics: Sequence[str],
        markdown: str,
        data: Mapping[str, Any],
        params: Mapping[str, Any] | None = None,
        kind: str = "comparison",
        values: Mapping[str, float] | None = None,
        figures: Mapping[str, Any] | None = None,
    ) -> str:
        """Log a comparison as its own FINISHED run in ``experiment``'s comparisons experiment
        (:func:`comparisons_experiment`: the runs it compares stay in ``experiment``); returns
        its run id.

        ``kind``: the ``ltr.kind`` tag (``abtest`` for ``ltr abtest``); ``values``: metrics of
        the comparison run; ``figures``: artifact path -> matplotlib figure.

        Tags link it to the compared runs (``ltr.compare.run_ids``, comma-separated, baseline
        first; ``ltr.compare.baseline_run_id``) and carry ``ltr.kind=comparison``, the split,
        the metrics and the baseline's data fingerprint; the markdown table is also the run's
        description in the MLflow UI. Artifacts: ``comparison/summary.md`` (the table) and
        ``comparison/comparison.json`` (every number).

        Logging it makes the command's work final (:func:`ltr.runtime.stops.committing`): a stop
        signal after it ends ``ltr compare --log`` / ``ltr abtest --log`` with exit 0 and the run
        logged, not with exit 130 over a store the user is told was not written.
        """
        tracker = MlflowTracker(self.uri, comparisons_experiment(experiment))
        tags = {
            TAG_KIND: kind,
            TAG_COMPARED: ",".join(r.run_id for r in runs),
            TAG_BASELINE: baseline.run_id,
            TAG_SPLIT: split,
            TAG_METRICS: ",".join(metrics),
            "mlflow.note.content": markdown[:_NOTE_MAX],
        }
        for key in ("ltr.data.fingerprint", "ltr.data.name"):
            if key in baseline.tags:
                tags[key] = baseline.tags[key]
        # the command's commit (committing): a stop signal before it logs nothing, one during it
        # waits for the run's end, one after it stops nothing (exit 0, the run logged)
        with committing(), tracked_run(tracker, run_name, tags) as run_id:  # FAILED / KILLED / a full store: as a training run
            if params:
                tracker.log_params(params)
            if values:
                tracker.log_metrics(dict(values))
            for path, figure in (figures or {}).items():
                tracker.log_figure(figure, path)
            tracker.log_text(markdown, "comparison/summary.md")
            tracker.log_dict(dict(data), "comparison/comparison.json")
        assert run_id is not None  # an MlflowTracker's run
        return run_id


def idcg_report_from_dict(data: Mapping[str, Any]) -> IdcgReport:
    """Rebuild an `IdcgReport` from `IdcgReport.to_dict` output (the logged JSON)."""
    return IdcgReport(
        k=int(data["k"]),
        bin_edges=np.asarray(data["bin_edges"], dtype=np.float64),
        counts=np.asarray(data["counts"], dtype=np.int64),
        share_zero=float(data["share_zero"]),
        share_le_one=float(data["share_le_one"]),
        share_shorter_than_k=float(data["share_shorter_than_k"]),
        n_queries=int(data["n_queries"]),
    )

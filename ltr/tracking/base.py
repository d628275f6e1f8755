"""The tracker interface the pipeline logs through, and a tracker that logs nothing."""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol


class RunStatus(enum.Enum):
    """How a run ended (MLflow's terminal states)."""

    FINISHED = "FINISHED"
    FAILED = "FAILED"
    KILLED = "KILLED"


class Tracker(Protocol):
    """What the runner needs from a tracking backend. Keys: the README's "What a run logs"."""

    run_id: str | None
    enabled: bool

    def start_run(self, run_name: str, tags: Mapping[str, str], *, parent_run_id: str | None = None) -> str: ...

    def log_params(self, params: Mapping[str, Any]) -> None: ...

    def log_metrics(
        self, metrics: Mapping[str, float], *, step: int | None = None, model_id: str | None = None
    ) -> None:
        """Metrics of the run (at ``step``, default 0); with ``model_id`` also linked to that
        logged model (MLflow shows them on the model's page)."""
        ...

    def log_curves(self, curves: Mapping[str, Sequence[float]]) -> None:
        """Per-iteration curves: ``values[i]`` is logged with ``step=i + 1`` (boosting round)."""
        ...

    def set_tags(self, tags: Mapping[str, str]) -> None: ...

    def log_figure(self, figure: Any, artifact_file: str) -> None: ...

    def log_dict(self, data: Any, artifact_file: str) -> None: ...

    def log_text(self, text: str, artifact_file: str) -> None: ...

    def log_file(self, local_path: Path, artifact_dir: str | None = None) -> None: ...

    def log_table(self, table: Any, artifact_file: str) -> None:
        """A pandas DataFrame as a JSON table artifact (``artifact_file`` ends in ``.json``)
        that the MLflow UI shows as a table."""
        ...

    def log_model(self, booster: Any, input_example: Any, metadata: Mapping[str, Any]) -> str | None:
        """The booster as the run's MLflow model (signature from ``input_example``, a DataFrame
        of the named feature columns; ``metadata`` in its MLmodel file); its model id."""
        ...

    def show_first(self, metric_keys: Sequence[str], curves: Sequence[str] = ()) -> None:
        """Make these metric columns the first a user meets in the runs table of the experiment,
        beside those earlier runs asked for (the view serves every run kind of the experiment),
        and these per-round ``curves`` the first charts of its chart view."""
        ...

    def log_dataset(self, name: str, digest: str, features: Any, labels: Any, *, context: str) -> None:
        """Record a split as an MLflow dataset input (name, our content digest, schema), its source
        the run's (its ``mlflow.source.*`` and ``mlflow.user`` tags)."""
        ...

    def end_run(self, status: RunStatus, *, error: str | None = None) -> None: ...

    def run_url(self, run_id: str | None = None) -> str | None:
        """The page of ``run_id`` (default: the current run) in the MLflow UI (a server's, or
        ``ltr ui``'s default address)."""
        ...


class NullTracker:
    """Logs nothing; every method is a no-op."""

    run_id: str | None = None
    enabled: bool = False

    def start_run(self, run_name: str, tags: Mapping[str, str], *, parent_run_id: str | None = None) -> str:
        return ""

    def log_params(self, params: Mapping[str, Any]) -> None:
        pass

    def log_metrics(
        self, metrics: Mapping[str, float], *, step: int | None = None, model_id: str | None = None
    ) -> None:
        pass

    def log_curves(self, curves: Mapping[str, Sequence[float]]) -> None:
        pass

    def set_tags(self, tags: Mapping[str, str]) -> None:
        pass

    def log_figure(self, figure: Any, artifact_file: str) -> None:
        pass

    def log_dict(self, data: Any, artifact_file: str) -> None:
        pass

    def log_text(self, text: str, artifact_file: str) -> None:
        pass

    def log_file(self, local_path: Path, artifact_dir: str | None = None) -> None:
        pass

    def log_table(self, table: Any, artifact_file: str) -> None:
        pass

    def log_model(self, booster: Any, input_example: Any, metadata: Mapping[str, Any]) -> str | None:
        return None

    def show_first(self, metric_keys: Sequence[str], curves: Sequence[str] = ()) -> None:
        pass

    def log_dataset(self, name: str, digest: str, features: Any, labels: Any, *, context: str) -> None:
        pass

    def end_run(self, status: RunStatus, *, error: str | None = None) -> None:
        pass

    def run_url(self, run_id: str | None = None) -> str | None:
        return None

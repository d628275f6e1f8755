"""The work of one ``ltr train`` job below its Hydra shell: the config checked, then run; the
line that ends it.

:func:`run_checked` checks the composed config first (:mod:`ltr.experiment.checks`, with numpy)
and imports the run (LightGBM, MLflow, pandas) only for a config that passed, so a config error
answers before those libraries load. :func:`run_line` is the line that names the run's page;
:func:`install_signal_handlers` the stop signals of the job's launching process;
:func:`config_dir_tags` the tag of the user's config folders a run is composed from.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ltr.config import search_path
from ltr.runtime.stops import on_stop_signal, quiet_unraisable
from ltr.tracking.uri import (
    default_tracking_uri,
    environment_variable_of,
    find_tracking_uri,
    redacted,
)

if TYPE_CHECKING:
    from omegaconf import DictConfig

    from ltr.experiment.run import RunOutcome

__all__ = ["config_dir_tags", "install_signal_handlers", "run_checked", "run_line"]


def run_checked(
    cfg: DictConfig,
    *,
    overrides: Sequence[str],
    extra_tags: dict[str, str],
    parent_run_id: str | None = None,
    varying: Sequence[str] | None = None,
    on_run_start: Callable[[str | None], None] | None = None,
) -> RunOutcome:
    """Check ``cfg`` (:func:`ltr.experiment.checks.check_config`, before the run's libraries
    load: a config error in a blink), then run it (:func:`ltr.experiment.run.run` with the
    options): its outcome. A config or data mistake raises :class:`ltr.errors.LtrUserError`."""
    from ltr.experiment.checks import check_config  # numpy and the run's rules: not for --help

    spec = check_config(cfg)
    from ltr.experiment.run import run as run_experiment  # LightGBM, MLflow, pandas

    return run_experiment(
        cfg, spec=spec, overrides=overrides, extra_tags=extra_tags, parent_run_id=parent_run_id, varying=varying,
        on_run_start=on_run_start,
    )  # fmt: skip


def run_line(run_id: str, run_url: str | None, experiment: str, uri: str | None) -> str:
    """The line that ends a run: its id, experiment and page, the store it went to when that is
    not ``./mlflow.db`` (``tracking.uri``, or the variable that named it), and how to serve it
    (``ltr ui`` finds the store itself, else ``--uri``)."""
    store = find_tracking_uri(uri, writing=True)
    var = None if uri else environment_variable_of(store)
    where = "" if store == default_tracking_uri() else f" of {redacted(store)}" + (f" (${var})" if var else "")
    line = f"MLflow run {run_id} in experiment {experiment!r}{where}: {run_url}"
    if store.startswith(("http://", "https://")):
        return line
    serve = "ltr ui" if find_tracking_uri() == store else f"ltr ui --uri {redacted(store)}"
    return f"{line}  (serve it with: {serve})"


def install_signal_handlers() -> None:
    """SIGINT and SIGTERM -> :func:`ltr.runtime.stops.on_stop_signal`, in the launching process only (launcher
    workers keep theirs); outside the main thread ``signal()`` raises ValueError: left as is. A
    stop exception swallowed in a garbage-collection callback is not printed, in workers too (a
    terminal's Ctrl-C reaches joblib's workers: no "Exception ignored ... Traceback" lines)."""
    import multiprocessing

    sys.unraisablehook = quiet_unraisable
    if multiprocessing.parent_process() is not None:
        return
    with contextlib.suppress(ValueError):
        signal.signal(signal.SIGTERM, on_stop_signal)
        signal.signal(signal.SIGINT, on_stop_signal)


def config_dir_tags(hydra_cfg: Any) -> dict[str, str]:
    """The tag of the user's config folders on Hydra's search path (``--config-dir``,
    ``hydra.searchpath``), which ``ltr rerun`` composes the run from again; none without them.
    ``hydra_cfg``: the job's ``HydraConfig.get()`` (or the ``hydra`` node ``--cfg hydra`` prints)."""
    return search_path.tags(search_path.user_config_dirs(hydra_cfg.runtime.config_sources))

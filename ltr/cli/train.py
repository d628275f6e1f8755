"""``ltr train``: Hydra composes the config, :func:`ltr.experiment.run.run` runs it.

Start-up pays only for what the command uses: this module imports Hydra and ltr's config
schemas, not numpy, LightGBM, MLflow or pandas. The job imports the config checks
(:mod:`ltr.experiment.checks`, with numpy) to check the config first, and the run (and with it
those libraries) only for a config that passed, so ``ltr train --help`` and a config error
answer in about the time Hydra takes to import and compose the config once
(:mod:`ltr.cli.support.compose_once`; ``tests/test_startup.py`` lists what each path leaves out).

The job returns the run's ``optimized_metric`` (valid nDCG@max(eval.k) by default), the value
a sweeper maximises.

- A single run: a config or data mistake is one line and exit 2 (a config mistake, whether
  Hydra finds it while composing or :mod:`ltr.experiment.checks` after, before any data is
  read or run exists); Ctrl-C or SIGTERM end the run KILLED and exit 130 / 143.
- A multirun job: an error is logged, the job's run (if it started) ends FAILED and the job
  returns NaN, so the other jobs still run. The sweep ends with one line (jobs finished /
  failed / refused, the parent's and the best run's links) and exits 0 when every job
  finished, 2 when every job was refused before its run, else 1; a refused tracking URI or
  store refuses the whole sweep before its first job (exit 2). Ctrl-C or SIGTERM stop the
  sweep (exit 130 / 143, its parent run KILLED).
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, cast

import hydra
from hydra._internal.hydra import Hydra
from hydra._internal.utils import get_args_parser
from hydra.core.hydra_config import HydraConfig
from hydra.errors import HydraException
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from ltr.cli.support import compose_once
from ltr.cli.sweeps.callback import (
    SweepEnded,
    SweepRefused,
    parent_run_id_for,
    record_job_error,
    record_job_outcome,
    sweep_tags,
    varying_keys_for,
)
from ltr.cli.sweeps.stop import end_stopped_children
from ltr.config import search_path
from ltr.config.completion import bash_script
from ltr.config.compose import CONF_DIR, quote_non_ascii, user_message
from ltr.config.store import register_configs
from ltr.errors import DeviceFull, LtrUserError, Terminated
from ltr.runtime.stops import (
    on_stop_signal,
    quiet_unraisable,
    raise_if_stop_requested,
    stop_signal_wins,
    stop_signals,
)
from ltr.sweeper.link import search_trial
from ltr.tracking.uri import (
    default_tracking_uri,
    environment_variable_of,
    find_tracking_uri,
    redacted,
)


def _group_options(root: Path) -> dict[str, list[str]]:
    """Config group -> its options (the YAML files of each sub-folder of ``root``), sorted."""
    found: dict[str, list[str]] = {}
    if not root.is_dir():
        return found
    for group in sorted(p for p in root.iterdir() if p.is_dir()):
        options = sorted(f.stem for f in group.glob("*.yaml"))
        if options:
            found[group.name] = options
    return found


def _shown_folder(folder: Path) -> str:
    """A config folder as ``--help`` names it: relative to the current folder when inside it."""
    try:
        return str(folder.relative_to(Path.cwd().resolve())) or "."
    except ValueError:
        return str(folder)


def config_groups(conf_dir: str = CONF_DIR, *, _root_: Any = None) -> str:
    """The ``--help`` list of config groups and their options: the YAML files of ``ltr/conf/``
    (the schemas the files extend are not options), then, per group, the options a user's config
    folder adds (``--config-dir conf`` with ``conf/data/mine.yaml``: ``data: ...; from conf:
    mine``; a group of the folder's own on a line of its own). ``_root_``: the composed config
    (OmegaConf passes it to a resolver), whose ``hydra.runtime.config_sources`` name the
    folders."""
    own = _group_options(Path(conf_dir))
    sources = OmegaConf.select(_root_, "hydra.runtime.config_sources", default=None) if _root_ is not None else None
    folders = [Path(d) for d in search_path.user_config_dirs(sources or []) if "://" not in d]
    added: dict[str, list[str]] = {}
    seen = {group: set(options) for group, options in own.items()}
    for folder in folders:
        for group, options in _group_options(folder).items():
            new = [o for o in options if o not in seen.setdefault(group, set())]
            seen[group] |= set(new)
            if new:
                added.setdefault(group, []).append(f"from {_shown_folder(folder)}: {', '.join(new)}")
    lines = []
    for group in sorted(set(own) | set(added)):
        parts = ([", ".join(own[group])] if group in own else []) + added.get(group, [])
        lines.append(f"{group}: {'; '.join(parts)}")
    return "\n".join(lines)


class _TextOnDemand:
    """Text computed when ``str()`` asks for it (``string.Template`` does, for a placeholder only)."""

    def __init__(self, make: Callable[[], str]) -> None:
        self.make = make

    def __str__(self) -> str:
        return self.make()


def _config_groups_on_demand() -> None:
    """Hydra's help lists its config groups only where a help template says
    ``$APP_CONFIG_GROUPS`` / ``$HYDRA_CONFIG_GROUPS``. Hydra computes both lists for every
    ``--help`` (about 2 s: a copy of the whole config store per group); ours says
    ``${ltr_config_groups:}`` instead, so ``ltr train --help`` computes them only for a template
    that asks (a user's ``hydra.help.template``, ``--hydra-help``). The text is Hydra's own."""
    original = Hydra.format_config_groups

    def on_demand(self: Hydra, predicate: Callable[[str], bool], compact: bool = True) -> str:
        return cast(str, _TextOnDemand(lambda: original(self, predicate, compact)))

    if not getattr(original, "ltr_on_demand", False):
        on_demand.ltr_on_demand = True  # type: ignore[attr-defined]
        Hydra.format_config_groups = on_demand  # type: ignore[method-assign]


register_configs()
OmegaConf.register_new_resolver("ltr_config_groups", config_groups, replace=True)
_config_groups_on_demand()
compose_once.install()  # a single run composes its config once, not twice
log = logging.getLogger(__name__)


class _UserErrorInJob(BaseException):
    """Carries a single run's `LtrUserError` (or `DeviceFull`) through Hydra (which reports any
    ``Exception`` a job raises on lines of its own) to :func:`main`, which re-raises the error itself."""

    def __init__(self, error: LtrUserError | DeviceFull) -> None:
        super().__init__(str(error))
        self.error = error


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


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="train")
def job(cfg: DictConfig) -> float:
    """Run one job (see the module docstring for errors and interrupts)."""
    install_signal_handlers()
    hydra_cfg = HydraConfig.get()
    overrides = list(hydra_cfg.overrides.task)
    if hydra_cfg.mode == RunMode.MULTIRUN:
        return _sweep_job(cfg, overrides)
    try:
        from ltr.experiment.checks import check_config  # numpy and the run's rules: not for --help

        spec = check_config(cfg)  # before the run's libraries load: a config error in a blink
        from ltr.experiment.run import run as run_experiment  # LightGBM, MLflow, pandas

        outcome = run_experiment(cfg, spec=spec, overrides=overrides, extra_tags=config_dir_tags(hydra_cfg))
    except (LtrUserError, DeviceFull) as exc:
        raise _UserErrorInJob(exc) from exc
    if outcome.run_id:
        print(run_line(outcome.run_id, outcome.run_url, str(cfg.tracking.experiment), cfg.tracking.uri))
    return outcome.objective_value


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


def config_dir_tags(hydra_cfg: Any) -> dict[str, str]:
    """The tag of the user's config folders on Hydra's search path (``--config-dir``,
    ``hydra.searchpath``), which ``ltr rerun`` composes the run from again; none without them.
    ``hydra_cfg``: the job's ``HydraConfig.get()`` (or the ``hydra`` node ``--cfg hydra`` prints)."""
    return search_path.tags(search_path.user_config_dirs(hydra_cfg.runtime.config_sources))


def _sweep_job(cfg: DictConfig, overrides: list[str]) -> float:
    """One job of a multirun: its outcome (finished / failed / refused before its run) and error
    go to its folder for the sweep's summary; an error returns NaN so the other jobs still run."""
    hydra_cfg = HydraConfig.get()
    job_num, job_dir = str(hydra_cfg.job.num), hydra_cfg.runtime.output_dir
    started: list[str | None] = []
    try:
        from ltr.experiment.checks import check_config  # as in job()

        with search_trial(hydra_cfg.sweep.dir, job_num) as trial:  # an Optuna search's trial, if any
            spec = check_config(cfg)
            from ltr.experiment.run import run as run_experiment  # as in job()

            outcome = run_experiment(
                cfg,
                spec=spec,
                overrides=overrides,
                parent_run_id=parent_run_id_for(hydra_cfg.sweep.dir),
                extra_tags=sweep_tags(hydra_cfg.sweep.dir) | {"ltr.job_num": job_num} | config_dir_tags(hydra_cfg) | trial.tags,
                varying=varying_keys_for(hydra_cfg.sweep.dir),
                on_run_start=started.append,
            )
    except (LtrUserError, DeviceFull) as exc:
        log.error("job %s %s: %s", job_num, "failed" if started else "refused", exc)
        record_job_error(job_dir, str(exc))
        record_job_outcome(job_dir, "failed" if started else "refused")
        return math.nan
    except Exception as exc:
        log.exception("job %s failed", job_num)
        record_job_error(job_dir, f"{type(exc).__name__}: {exc}")
        record_job_outcome(job_dir, "failed")
        return math.nan
    record_job_outcome(job_dir, "finished")
    return trial.result(outcome.objective_value, outcome.metrics, outcome.run_id)


def shell_completion(argv: list[str]) -> int:
    """Hydra's ``-sc install=bash``: the script of ``ltr completion bash`` (Hydra's own would
    register ``ltr`` and ``train`` as two commands); other ``-sc`` uses are refused in one line."""
    from ltr.cli.main import VERBS

    if "install=bash" in argv:
        print(bash_script(VERBS), end="")
        return 0
    raise LtrUserError(
        "shell completion of ltr: ltr completion bash > ~/.ltr-completion.bash && "
        "echo 'source ~/.ltr-completion.bash' >> ~/.bashrc (bash only)"
    )


class _ArgumentError(Exception):
    """An argument Hydra's parser refuses (its message), instead of its usage and exit 2."""


def _refuse(message: str) -> NoReturn:
    raise _ArgumentError(message)


def check_arguments(argv: list[str]) -> None:
    """Refuse, in one line, the arguments Hydra's own parser would refuse with its 8-line usage
    and no ``ltr: error:`` line (an unknown option, ``--cfg`` without its value): the same
    parser, its error raised as a :class:`LtrUserError` with the hint ``ltr train --help``."""
    if "--version" in argv:  # Hydra's parser prints its version and exits: let Hydra answer it
        return
    parser = get_args_parser()
    parser.error = _refuse  # type: ignore[method-assign]
    try:
        parser.parse_args(argv)
    except _ArgumentError as exc:
        raise LtrUserError(f"{exc} (ltr train --help)") from None


def main(argv: list[str]) -> int:
    """``ltr train ARGV``: run the Hydra app; config mistakes become one-line `LtrUserError`s."""
    os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra re-raises; ltr.cli.main prints one line
    if any(arg in ("-sc", "--shell-completion") or arg.startswith("--shell-completion=") for arg in argv):
        return shell_completion(argv)
    argv = [quote_non_ascii(arg) for arg in argv]
    check_arguments(argv)
    sys.argv = ["ltr train", *argv]
    stop_signals.clear()  # a command starts from no recorded signal (an in-process caller may run several)
    install_signal_handlers()  # before Hydra: a sweep's launching process is stopped by the first signal too
    try:
        return _main(argv)
    except (KeyboardInterrupt, Terminated) as stop:
        end_stopped_children(stop)  # a launcher's workers may have left their runs RUNNING
        raise


def _main(argv: list[str]) -> int:
    """:func:`main` once the signal handlers are in place."""
    try:
        with stop_signal_wins():  # a signal whose exception surfaced as another error: 130 / 143
            job()
            raise_if_stop_requested()  # stopped after the run ended: exit 130 / 143 all the same
    except (_UserErrorInJob, SweepRefused) as wrapped:
        raise wrapped.error from None
    except SweepEnded as ended:
        raise_if_stop_requested()
        print(ended.line, file=sys.stderr if ended.code else sys.stdout)
        return ended.code
    except (HydraException, OmegaConfBaseException) as exc:
        raise LtrUserError(user_message(exc, argv)) from exc
    return 0

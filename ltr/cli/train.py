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

import logging
import math
import os
import sys

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.errors import HydraException
from hydra.types import RunMode
from omegaconf import DictConfig
from omegaconf.errors import OmegaConfBaseException

from ltr.cli.support import compose_once, train_help
from ltr.cli.support.train_help import check_arguments
from ltr.cli.support.verb import run_verb
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
from ltr.config.completion import bash_script
from ltr.config.compose import CONF_DIR, quote_non_ascii, user_message
from ltr.config.store import register_configs
from ltr.errors import DeviceFull, LtrUserError, Terminated
from ltr.experiment.train_job import config_dir_tags, install_signal_handlers, run_checked, run_line
from ltr.runtime.stops import (
    raise_if_stop_requested,
    stop_signal_wins,
    stop_signals,
)
from ltr.sweeper.link import search_trial

register_configs()
train_help.install()  # --help's config groups: ours, and Hydra's only where a template asks
compose_once.install()  # a single run composes its config once, not twice
log = logging.getLogger(__name__)


class _UserErrorInJob(BaseException):
    """Carries a single run's `LtrUserError` (or `DeviceFull`) through Hydra (which reports any
    ``Exception`` a job raises on lines of its own) to :func:`main`, which re-raises the error itself."""

    def __init__(self, error: LtrUserError | DeviceFull) -> None:
        super().__init__(str(error))
        self.error = error


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="train")
def job(cfg: DictConfig) -> float:
    """Run one job (see the module docstring for errors and interrupts)."""
    install_signal_handlers()
    hydra_cfg = HydraConfig.get()
    overrides = list(hydra_cfg.overrides.task)
    if hydra_cfg.mode == RunMode.MULTIRUN:
        return _sweep_job(cfg, overrides)
    try:
        outcome = run_checked(cfg, overrides=overrides, extra_tags=config_dir_tags(hydra_cfg))
    except (LtrUserError, DeviceFull) as exc:
        raise _UserErrorInJob(exc) from exc
    if outcome.run_id:
        print(run_line(outcome.run_id, outcome.run_url, str(cfg.tracking.experiment), cfg.tracking.uri))
    return outcome.objective_value


def _sweep_job(cfg: DictConfig, overrides: list[str]) -> float:
    """One job of a multirun: its outcome (finished / failed / refused before its run) and error
    go to its folder for the sweep's summary; an error returns NaN so the other jobs still run."""
    hydra_cfg = HydraConfig.get()
    job_num, job_dir = str(hydra_cfg.job.num), hydra_cfg.runtime.output_dir
    started: list[str | None] = []
    try:
        with search_trial(hydra_cfg.sweep.dir, job_num) as trial:  # an Optuna search's trial, if any
            outcome = run_checked(
                cfg,
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


def main(argv: list[str] | None = None) -> int:
    """``ltr train ARGV``: run the Hydra app; config mistakes become one-line `LtrUserError`s."""
    return run_verb(argv, _parse, _run)


def _completion_asked(argv: list[str]) -> bool:
    return any(arg in ("-sc", "--shell-completion") or arg.startswith("--shell-completion=") for arg in argv)


def _parse(argv: list[str]) -> list[str]:
    """The arguments as Hydra gets them (non-ASCII quoted), refused in one line where Hydra's
    parser would refuse them (:func:`ltr.cli.support.train_help.check_arguments`); ``-sc`` as given."""
    os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra re-raises; ltr.cli.main prints one line
    if _completion_asked(argv):
        return argv
    argv = [quote_non_ascii(arg) for arg in argv]
    check_arguments(argv)
    return argv


def _run(argv: list[str]) -> int:
    """Hydra's app on ``argv`` with ltr's stop signals (or the completion script of ``-sc``)."""
    if _completion_asked(argv):
        return shell_completion(argv)
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

"""``ltr train``: Hydra composes the config, :func:`ltr.experiment.run.run` runs it.

The job returns the run's ``optimized_metric`` (valid nDCG@max(eval.k) by default), the value
a sweeper maximises.

- A single run: a config or data mistake is one line and exit 2 (a config mistake, whether
  Hydra finds it while composing or :mod:`ltr.experiment.checks` after, before any data is
  read or run exists); Ctrl-C or SIGTERM end the run KILLED and exit 130 / 143.
- A multirun job: an error is logged, the job's run (if it started) ends FAILED and the job
  returns NaN, so the other jobs still run; the sweep's summary lists the failures and the
  sweep exits 1. Ctrl-C or SIGTERM stop the sweep (exit 130 / 143, its parent run KILLED).
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import signal
import sys
from pathlib import Path
from types import FrameType

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.errors import HydraException, OverrideParseException
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from ltr.cli.sweep_callback import (
    SweepRefused,
    parent_run_id_for,
    record_job_error,
    sweep_tags,
    varying_keys_for,
)
from ltr.config.store import register_configs
from ltr.errors import LtrUserError
from ltr.experiment import run as pipeline
from ltr.sweeper.link import search_trial
from ltr.tracking.lifecycle import Terminated, raise_if_stop_requested, stop_signals

#: The config groups, shipped inside the package (package data), so a wheel installed anywhere
#: composes the same configs as the repository.
CONF_DIR = str(Path(__file__).resolve().parents[1] / "conf")



def config_groups(conf_dir: str = CONF_DIR) -> str:
    """The ``--help`` list of config groups and their options: the YAML files of ``ltr/conf/``
    (the schemas the files extend are not options)."""
    root = Path(conf_dir)
    lines = []
    for group in sorted(p for p in root.iterdir() if p.is_dir()):
        options = sorted(f.stem for f in group.glob("*.yaml"))
        if options:
            lines.append(f"{group.name}: {', '.join(options)}")
    return "\n".join(lines)


register_configs()
OmegaConf.register_new_resolver("ltr_config_groups", config_groups, replace=True)
log = logging.getLogger(__name__)


class _UserErrorInJob(BaseException):
    """Carries a single run's `LtrUserError` through Hydra (which reports any ``Exception`` a job
    raises on lines of its own) to :func:`main`, which re-raises the error itself."""

    def __init__(self, error: LtrUserError) -> None:
        super().__init__(str(error))
        self.error = error


def _on_stop_signal(signum: int, frame: FrameType | None) -> None:
    """The first SIGINT / SIGTERM stops the job (KeyboardInterrupt / Terminated); later ones are
    ignored, so a second Ctrl-C or ``kill`` cannot interrupt ending the run KILLED."""
    stop_signals.append(signum)
    if len(stop_signals) > 1:
        return
    raise_if_stop_requested()


def _quiet_unraisable(unraisable: sys.UnraisableHookArgs) -> None:
    """A stop signal that lands in a garbage-collection callback cannot raise there: say nothing
    (it is recorded and acted on at the next safe point); anything else as Python would."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt | Terminated):
        return
    sys.__unraisablehook__(unraisable)


def install_signal_handlers() -> None:
    """SIGINT and SIGTERM -> :func:`_on_stop_signal`, in the launching process only (launcher
    workers keep theirs); outside the main thread ``signal()`` raises ValueError: left as is."""
    import multiprocessing

    if multiprocessing.parent_process() is not None:
        return
    sys.unraisablehook = _quiet_unraisable
    with contextlib.suppress(ValueError):
        signal.signal(signal.SIGTERM, _on_stop_signal)
        signal.signal(signal.SIGINT, _on_stop_signal)


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="train")
def job(cfg: DictConfig) -> float:
    """Run one job (see the module docstring for errors and interrupts)."""
    install_signal_handlers()
    hydra_cfg = HydraConfig.get()
    overrides = list(hydra_cfg.overrides.task)
    if hydra_cfg.mode == RunMode.MULTIRUN:
        job_num = str(hydra_cfg.job.num)
        try:
            with search_trial(hydra_cfg.sweep.dir, job_num) as trial:
                outcome = pipeline.run(
                    cfg,
                    overrides=overrides,
                    parent_run_id=parent_run_id_for(hydra_cfg.sweep.dir),
                    extra_tags=sweep_tags(hydra_cfg.sweep.dir) | {"ltr.job_num": job_num},
                    varying=varying_keys_for(hydra_cfg.sweep.dir),
                )
        except LtrUserError as exc:
            log.error("job %s failed: %s", job_num, exc)
            record_job_error(hydra_cfg.runtime.output_dir, str(exc))
            return math.nan
        except Exception as exc:
            log.exception("job %s failed", job_num)
            record_job_error(hydra_cfg.runtime.output_dir, f"{type(exc).__name__}: {exc}")
            return math.nan
        return trial.result(outcome.objective_value, outcome.metrics)

    try:
        outcome = pipeline.run(cfg, overrides=overrides)
    except LtrUserError as exc:
        raise _UserErrorInJob(exc) from exc
    if outcome.run_id:
        local = not str(cfg.tracking.uri or "").startswith(("http://", "https://"))
        print(
            f"MLflow run {outcome.run_id} in experiment {cfg.tracking.experiment!r}: {outcome.run_url}"
            + ("  (serve it with: ltr ui)" if local else "")
        )
    return outcome.objective_value


def one_line(exc: BaseException) -> str:
    """Hydra's or OmegaConf's message (and its cause's) on one line, without search paths."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    override = getattr(exc, "override", None)
    if isinstance(exc, OverrideParseException) and override and override not in text:
        text = f"cannot parse {override!r}: {text}"
    cause = exc.__cause__
    if isinstance(cause, OmegaConfBaseException) and str(cause).strip():
        text = f"{text}: {str(cause).strip().splitlines()[0]}"
    return text


_GRAMMAR = set(",[]{}()'\"$=:\\ ")


def quote_non_ascii(override: str) -> str:
    """``key=value`` with a non-ASCII value (``data.train=/data/données/train.txt``) quoted, as
    Hydra's override grammar needs; values with grammar characters (sweeps, lists) are left to
    the user (and get a one-line hint when Hydra refuses them)."""
    key, sep, value = override.partition("=")
    if not sep or value.isascii() or _GRAMMAR & set(value) or key.startswith("-"):
        return override
    return f"{key}='{value}'"


def main(argv: list[str]) -> int:
    """``ltr train ARGV``: run the Hydra app; config mistakes become one-line `LtrUserError`s."""
    os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra re-raises; ltr.cli.main prints one line
    argv = [quote_non_ascii(arg) for arg in argv]
    sys.argv = ["ltr train", *argv]
    try:
        job()
        raise_if_stop_requested()  # stopped after the run ended: exit 130 / 143 all the same
    except (_UserErrorInJob, SweepRefused) as wrapped:
        raise wrapped.error from None
    except (HydraException, OmegaConfBaseException) as exc:
        message = one_line(exc)
        if "LexerNoViableAlt" in message and not all(arg.isascii() for arg in argv):
            message += " (quote a value with non-ASCII characters: \"key='/path/données'\")"
        raise LtrUserError(message) from exc
    return 0

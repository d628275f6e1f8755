"""The Hydra application behind ``ltr train``: compose the config, call :func:`ltr.pipeline.run`.

Returns valid NDCG@10 (our conventions) so sweepers can maximise it.

- A single run: a user error (bad data, bad setting) prints one line and exits 2; Ctrl-C or
  SIGTERM ends the MLflow run KILLED and exits 130 / 143.
- A multirun job: any error is logged, the job's run ends FAILED and the job returns NaN, so
  the other jobs still run; the sweep's summary lists the failures and the sweep exits 1.
"""

from __future__ import annotations

import contextlib
import logging
import math
import signal
import sys
from pathlib import Path
from types import FrameType

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from ltr.config import register_configs
from ltr.errors import LtrUserError

CONF_DIR = str(Path(__file__).resolve().parents[1] / "conf")

register_configs()
log = logging.getLogger(__name__)


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    from ltr.pipeline import Terminated

    raise Terminated(f"signal {signum}")


def _install_sigterm_handler() -> None:
    """SIGTERM -> :class:`Terminated`, in the launching process only (not in launcher workers)."""
    import multiprocessing

    if multiprocessing.parent_process() is not None:
        return
    # Outside the main thread signal() raises ValueError: leave SIGTERM as is.
    with contextlib.suppress(ValueError):
        signal.signal(signal.SIGTERM, _raise_terminated)


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="train")
def main(cfg: DictConfig) -> float:
    """Run one job (see the module docstring for errors and interrupts)."""
    from ltr import pipeline
    from ltr.sweep import parent_run_id_for

    _install_sigterm_handler()
    hydra_cfg = HydraConfig.get()
    overrides = list(hydra_cfg.overrides.task)
    if hydra_cfg.mode == RunMode.MULTIRUN:
        job_num = str(hydra_cfg.job.num)
        try:
            outcome = pipeline.run(
                cfg,
                overrides=overrides,
                parent_run_id=parent_run_id_for(hydra_cfg.sweep.dir),
                extra_tags={"ltr.sweep_id": str(Path(hydra_cfg.sweep.dir).resolve()), "ltr.job_num": job_num},
            )
        except LtrUserError as exc:
            log.error("job %s failed: %s", job_num, exc)
            return math.nan
        except Exception:
            log.exception("job %s failed", job_num)
            return math.nan
        return outcome.objective_value

    try:
        outcome = pipeline.run(cfg, overrides=overrides)
    except LtrUserError as exc:
        print(f"ltr: error: {exc}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("ltr: interrupted; the run is marked KILLED", file=sys.stderr)
        sys.exit(130)
    except pipeline.Terminated:
        print("ltr: terminated (SIGTERM); the run is marked KILLED", file=sys.stderr)
        sys.exit(143)
    if outcome.run_id:
        print(f"MLflow run {outcome.run_id} in experiment {cfg.tracking.experiment!r}; open the UI with: ltr ui  (or make ui)")
    return outcome.objective_value

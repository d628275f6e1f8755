"""The Hydra application behind ``ltr train``: compose the config, call :func:`ltr.pipeline.run`.

Returns valid NDCG@10 (our conventions) so sweepers can maximise it.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from types import FrameType

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from ltr.config import register_configs
from ltr.errors import LtrUserError

CONF_DIR = str(Path(__file__).resolve().parents[1] / "conf")

register_configs()


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    from ltr.pipeline import Terminated

    raise Terminated(f"signal {signum}")


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="train")
def main(cfg: DictConfig) -> float:
    """Run one job; a user error ends it with one line on stderr and exit code 2."""
    from ltr import pipeline

    signal.signal(signal.SIGTERM, _raise_terminated)
    overrides = list(HydraConfig.get().overrides.task)
    try:
        outcome = pipeline.run(cfg, overrides=overrides)
    except LtrUserError as exc:
        print(f"ltr: error: {exc}", file=sys.stderr)
        sys.exit(2)
    if outcome.run_id:
        print(f"MLflow run {outcome.run_id} in {cfg.tracking.experiment!r}; open the UI with: ltr ui  (or make ui)")
    return outcome.objective_value

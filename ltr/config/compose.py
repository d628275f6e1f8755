"""The ``ltr train`` config composed outside the Hydra app: ``ltr rerun``, ``ltr predict`` and
the Python API compose the same ``ltr/conf`` (package data) the command line does.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.errors import HydraException, OverrideParseException
from omegaconf import DictConfig
from omegaconf.errors import OmegaConfBaseException

from ltr.config.store import register_configs
from ltr.errors import LtrUserError

#: The config groups, shipped inside the package (package data), so a wheel installed anywhere
#: composes the same configs as the repository.
CONF_DIR = str(Path(__file__).resolve().parents[1] / "conf")


def one_line(exc: BaseException) -> str:
    """Hydra's or OmegaConf's message (and its cause's) on one line, without search paths."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    text = lines[0] if lines else type(exc).__name__
    if text.endswith("raised while composing config:") and len(lines) > 1:
        # "In 'debug/default': ConfigKeyError raised while composing config:" says neither key nor why
        where = text.split(":", 1)[0]
        full_key = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("full_key:")), "")
        text = f"{where}: {lines[1]}" + (f" (it sets {full_key})" if full_key else "")
        if where == "In 'debug/default'" and full_key.startswith("data."):
            text += "; debug=default shrinks the synthetic data: with file data leave it out and set fit.num_boost_round"
    override = getattr(exc, "override", None)
    if isinstance(exc, OverrideParseException) and override and override not in text:
        text = f"cannot parse {override!r}: {text}"
    cause = exc.__cause__
    if isinstance(cause, OmegaConfBaseException) and str(cause).strip():
        text = f"{text}: {str(cause).strip().splitlines()[0]}"
    return text


def compose_train(overrides: Sequence[str] = (), *, what: str = "the config") -> DictConfig:
    """The ``ltr train`` config of ``overrides`` (Hydra's ``hydra.*`` keys left out), composed
    from ``ltr/conf``; a composition error is one :class:`LtrUserError` line (``cannot compose
    {what}: ...``)."""
    register_configs()
    kept = [o for o in overrides if not o.lstrip("+~").startswith(("hydra.", "hydra/"))]
    try:
        with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
            return compose(config_name="train", overrides=kept)
    except (HydraException, OmegaConfBaseException) as exc:
        raise LtrUserError(f"cannot compose {what}: {one_line(exc)}") from exc

"""``ltr train`` composes its config once, not twice (issue 31: a config error in a blink).

Hydra 1.3's ``@hydra.main`` composes the config twice for a single run: ``Hydra.get_mode`` composes
it in multirun mode only to read ``hydra.mode`` (a config may set ``hydra: mode: MULTIRUN``, as
``experiment=letor_cv`` does) and returns None when that fails; then ``Hydra.run`` composes it
again in run mode (with ``hydra.mode=RUN`` appended when the mode was None) and raises the error
the user sees. Composing is most of what ``ltr train --help`` and a config error cost.

:func:`compose_once` replaces ``get_mode`` for a single run (no ``--multirun``): it composes the
config the way ``Hydra.run`` will, reads the mode from it, and hands that same config to
``Hydra.run``'s composition (applying the ``hydra.mode=RUN`` override Hydra appends, exactly as
composing with it would), so a run and a config error compose once. The error is the one
``Hydra.run`` raises today: a run-mode composition fails whenever the multirun one does, at
the same step, and the appended ``hydra.mode=RUN`` is applied last. Hydra's own ``get_mode`` still
runs where the two compositions differ: ``--multirun``; a sweep override (``a=1,2``, which only a
config that sets ``hydra.mode: MULTIRUN`` accepts without ``-m``); a config group left ``???``
(skipped in multirun mode, an error in run mode).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra._internal.hydra import Hydra
from hydra._internal.utils import get_args_parser
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import ConfigCompositionException
from hydra.types import RunMode
from omegaconf import DictConfig

#: The override Hydra appends for a single run whose config leaves ``hydra.mode`` unset.
RUN_OVERRIDE = "hydra.mode=RUN"


def _differs_in_multirun_mode(exc: Exception) -> bool:
    """A run-mode composition error that a multirun-mode one does not raise: a config group left
    ``???`` (Hydra's defaults list skips it in multirun mode)."""
    if isinstance(exc, ConfigCompositionException):
        return str(exc).startswith("You must specify")
    return isinstance(exc, ValueError) and str(exc).startswith("Missing ConfigDefault")


def _sweep_override_in(overrides: list[str]) -> bool:
    """Whether an override is a sweep (``a=1,2``) or fails to parse (Hydra's own path then raises
    the parse error before composing anything)."""
    try:
        parsed = OverridesParser.create().parse_overrides(overrides=overrides)
        ConfigLoaderImpl.validate_sweep_overrides_legal(overrides=parsed, run_mode=RunMode.RUN, from_shell=True)
    except Exception:
        return True
    return False


def _hand_over(loader: Any, name: str | None, given: list[str], outcome: DictConfig | Exception) -> None:
    """Make ``loader``'s next ``load_configuration`` give ``outcome`` (the composed config, or the
    error composing it raised) if it is ``Hydra.run``'s composition of the same config: ``given``
    overrides, plus ``hydra.mode=RUN`` when the config leaves the mode unset (as an error does for
    Hydra's ``get_mode``). Any other call composes as usual. One use either way."""
    mode = outcome.hydra.mode if isinstance(outcome, DictConfig) else None
    expected = [*given, RUN_OVERRIDE] if mode is None else list(given)
    compose = loader.load_configuration

    def load_configuration(
        config_name: str | None,
        overrides: list[str],
        run_mode: RunMode,
        from_shell: bool = True,
        validate_sweep_overrides: bool = True,
    ) -> DictConfig:
        del loader.load_configuration  # one use: back to the class's method
        if (config_name, list(overrides), run_mode, from_shell, validate_sweep_overrides) != (
            name, expected, RunMode.RUN, True, True
        ):
            return compose(  # type: ignore[no-any-return]
                config_name=config_name, overrides=overrides, run_mode=run_mode,
                from_shell=from_shell, validate_sweep_overrides=validate_sweep_overrides,
            )  # fmt: skip
        if isinstance(outcome, Exception):
            raise outcome
        if mode is None:  # what composing with the appended override does: set it, and list it
            parsed = OverridesParser.create().parse_overrides(overrides=[RUN_OVERRIDE])
            ConfigLoaderImpl._apply_overrides_to_config(parsed, outcome)
            outcome.hydra.overrides.hydra.append(RUN_OVERRIDE)
        return outcome

    loader.load_configuration = load_configuration


def compose_once(original: Callable[..., Any]) -> Callable[..., Any]:
    """``Hydra.get_mode`` that composes a single run's config once (see the module docstring);
    ``original`` is Hydra's, used where the run-mode and multirun-mode compositions differ."""

    def get_mode(self: Hydra, config_name: str | None, overrides: list[str]) -> Any:
        if get_args_parser().parse_args().multirun or _sweep_override_in(overrides):
            return original(self, config_name=config_name, overrides=overrides)
        outcome: DictConfig | Exception
        try:
            outcome = self.config_loader.load_configuration(
                config_name=config_name, overrides=list(overrides), run_mode=RunMode.RUN
            )
        except Exception as exc:
            if _differs_in_multirun_mode(exc):
                return original(self, config_name=config_name, overrides=overrides)
            outcome = exc  # Hydra's get_mode says None; Hydra.run's composition raises it
        if isinstance(outcome, DictConfig) and outcome.hydra.mode == RunMode.MULTIRUN:
            return RunMode.MULTIRUN  # Hydra.multirun composes its own (multirun-mode) config
        _hand_over(self.config_loader, config_name, overrides, outcome)
        return None if isinstance(outcome, Exception) else outcome.hydra.mode

    get_mode.ltr_compose_once = True  # type: ignore[attr-defined]
    get_mode.original = original  # type: ignore[attr-defined]  # Hydra's, for the tests' cross-check
    return get_mode


def install() -> None:
    """Replace ``Hydra.get_mode`` with :func:`compose_once` (once per process)."""
    if not getattr(Hydra.get_mode, "ltr_compose_once", False):
        Hydra.get_mode = compose_once(Hydra.get_mode)  # type: ignore[method-assign]

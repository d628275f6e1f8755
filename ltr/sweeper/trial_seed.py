"""A sampler made afresh for each trial, seeded from the search's seed and the trial's number.

Searches that share one study (an invocation resuming it, or several started at the same moment
from other hosts) get distinct trial numbers from the storage, so their samplers draw distinct
points, where samplers seeded only from the config's seed would draw the same points in each
search started on the same study state; the same commands still give the same trials.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import optuna
from optuna.distributions import BaseDistribution
from optuna.trial import FrozenTrial, TrialState


class TrialSeeded(optuna.samplers.BaseSampler):
    """Delegates to ``make(trial.number)``, made when the trial starts (``before_trial``); the
    trials of a study draw their points from samplers seeded by their numbers."""

    def __init__(self, make: Callable[[int], optuna.samplers.BaseSampler]) -> None:
        self._make = make
        self.current = make(0)

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        self.current = self._make(trial.number)
        self.current.before_trial(study, trial)

    def infer_relative_search_space(self, study: optuna.Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        return self.current.infer_relative_search_space(study, trial)

    def sample_relative(
        self, study: optuna.Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        return self.current.sample_relative(study, trial, search_space)

    def sample_independent(
        self, study: optuna.Study, trial: FrozenTrial, param_name: str, param_distribution: BaseDistribution
    ) -> Any:
        return self.current.sample_independent(study, trial, param_name, param_distribution)

    def after_trial(
        self, study: optuna.Study, trial: FrozenTrial, state: TrialState, values: Sequence[float] | None
    ) -> None:
        self.current.after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        self.current.reseed_rng()

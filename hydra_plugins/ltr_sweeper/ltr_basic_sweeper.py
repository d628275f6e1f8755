"""``hydra/sweeper=basic`` (a grid: ``ltr train -m``'s sweeper): Hydra's basic sweeper, that does
not compose a job again that ltr's start check has composed.

Hydra's :class:`~hydra._internal.core_plugins.basic_sweeper.BasicSweeper` composes every job of a
batch once to see that it can be composed (``validate_batch_is_legal``), then the launcher composes
it again to run it. In ``ltr train -m`` the sweep's start check (:func:`ltr.cli.sweeps.checks.check_grid`,
from Hydra's ``on_multirun_start``, before the sweeper exists) has already composed every job of the
grid and checked it, and refused the whole sweep in one line if any job could not run; it records the
jobs it checked (:func:`ltr.sweeper.job_checks.mark_checked`). A batch of those jobs is not composed
again here (a quarter to half a CPU-second a job); any other batch is validated as Hydra does.
Everything else (the grid, its order, ``max_batch_size``, the launcher) is the basic sweeper's.
"""

from __future__ import annotations

from collections.abc import Sequence

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

from ltr.config.groups.sweeper import register_sweeper_config

register_sweeper_config()


class LtrBasicSweeper(BasicSweeper):
    """Hydra's basic sweeper that skips its validation of jobs ltr's start check composed (module docstring)."""

    def validate_batch_is_legal(self, batch: Sequence[Sequence[str]]) -> None:
        """Compose each job of ``batch`` as Hydra does, unless ltr's start check composed them all."""
        # imported here, not at Hydra's scan of its plugins, which every ltr train runs
        from ltr.sweeper.job_checks import were_checked

        if not were_checked(batch):
            super().validate_batch_is_legal(batch)

"""Hydra discovers ltr's Optuna sweeper here (plugins must live in the ``hydra_plugins``
namespace); the work is in :mod:`ltr.sweeper`."""

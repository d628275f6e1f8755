"""Hydra structured configs: the schemas of every group (``schema.py``, ``data.py``), the fixed
choices as Enums (``choices.py``), and their registration in Hydra's ConfigStore (``store.py``).

Importing a schema does not import Hydra; only :func:`ltr.config.store.register_configs` does.
"""

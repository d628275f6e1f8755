"""Multirun sweeps in MLflow: the Hydra callback, the start checks, the parent run and stopped sweeps."""

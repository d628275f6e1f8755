"""ltr: a learning-to-rank experiment harness (Hydra configs, LightGBM rankers, exact NDCG, MLflow).

Heavy libraries (mlflow, lightgbm, matplotlib) are imported by the modules that need them, not here.
"""

__version__ = "0.1.0"

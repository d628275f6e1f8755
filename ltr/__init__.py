"""ltr: a learning-to-rank experiment harness (Hydra configs, LightGBM rankers, exact NDCG, MLflow).

Heavy libraries (mlflow, lightgbm, matplotlib) are imported by the modules that need them, not here.
Importing ``ltr`` sets one thing for the process: OpenMP's spin count, unless the user set it
(:mod:`ltr.openmp`), before LightGBM or numba can load OpenMP.
"""

from ltr.openmp import limit_spinning

limit_spinning()

__version__ = "0.1.0"

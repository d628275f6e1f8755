"""ltr: a learning-to-rank experiment harness (Hydra configs, LightGBM rankers, exact NDCG, MLflow).

Heavy libraries (mlflow, lightgbm, matplotlib) are imported by the modules that need them, not here.
Importing ``ltr`` sets two things for the process, each unless the user set it, before anything
of ltr loads the library that reads it: OpenMP's spin count (:mod:`ltr.runtime.openmp`, read when LightGBM
or numba loads OpenMP) and numpy's huge pages (:mod:`ltr.runtime.hugepages`, read when numpy is imported).
"""

from ltr.runtime.hugepages import prefer_small_pages
from ltr.runtime.openmp import limit_spinning

limit_spinning()
prefer_small_pages()

__version__ = "0.1.0"

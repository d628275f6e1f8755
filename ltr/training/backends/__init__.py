"""The libraries that train a run's model: LightGBM, XGBoost, CatBoost, behind one interface.

A backend module (:mod:`.lightgbm`, :mod:`.xgboost`, :mod:`.catboost`) gives:

- ``check(model, fit, seed)``: its settings refused in one line, before any data is read;
- a :class:`ltr.training.trainer.Trainer` (``trainer(spec)``): it fits on ``splits.train`` with
  early stopping on our nDCG on ``valid`` (the run's conventions, :mod:`.rounds`) and a progress
  line, and returns a :class:`ltr.training.local.TrainResult` whose ``predict`` gives the best
  round's scores;
- its model as a :class:`ScoringModel` (the trees up to the best round), saved as the run's
  ``model_text/`` file and logged in the library's MLflow flavour.

Evaluation never asks which backend trained: it reads scores (:mod:`ltr.experiment.evaluation`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from ltr.config.groups.backends import BACKENDS, backend_of, objective_of, require_library
from ltr.training.backends import lightgbm

__all__ = ["BACKENDS", "MODEL_FILES", "ScoringModel", "backend_of", "load_model", "objective_of", "require_library"]

#: The run's model file of each backend (under ``model_text/``): each library's own format.
MODEL_FILES = {"lightgbm": "model.txt", "xgboost": "model.json", "catboost": "model.cbm"}


class ScoringModel(Protocol):
    """A trained model as ltr uses it (a LightGBM ``Booster`` is one; XGBoost's and CatBoost's
    are wrapped): scores of float rows, its feature names and count, its rounds, importances."""

    def predict(self, data: Any, num_iteration: int | None = None) -> Any:
        """Scores of the rows of ``data`` (float features, shape (n_rows, n_features))."""
        ...

    def feature_name(self) -> list[str]: ...

    def num_feature(self) -> int: ...

    def current_iteration(self) -> int: ...

    def feature_importance(self, importance_type: str = "split") -> NDArray[np.float64]: ...

    def save_model(self, filename: str) -> Any: ...


def load_model(backend: str, path: Path) -> Any:
    """The model of ``backend`` saved at ``path`` (a run's ``model_text/`` file), as a
    :class:`ScoringModel`; raises ``ValueError`` when the file is not such a model."""
    if backend == "xgboost":
        from ltr.training.backends.xgboost import XGBoostModel

        return XGBoostModel.load(path)
    if backend == "catboost":
        from ltr.training.backends.catboost import CatBoostModel

        return CatBoostModel.load(path)
    import lightgbm as lgb

    try:
        return lgb.Booster(model_file=str(path))
    except lgb.basic.LightGBMError as exc:
        raise ValueError(f"not a LightGBM model: {exc}") from exc


def check_backend(model: Any, fit: Any, *, seed: int) -> None:
    """The backend's settings refused in one line, before any data is read: its library
    installed (else the extra that installs it), then what the library itself refuses."""
    backend = backend_of(model)
    require_library(backend, option=str(model.name))
    if backend == "xgboost":
        from ltr.training.backends.xgboost import check as check_xgboost

        check_xgboost(model, fit, seed=seed)
    elif backend == "catboost":
        from ltr.training.backends.catboost import check as check_catboost

        check_catboost(model, fit, seed=seed)
    else:
        lightgbm.check(model, fit, seed=seed)


def reranks(spec: Any) -> bool:
    """True when the run re-ranks the model's order (``rerank=...``)."""
    return str(spec.config.rerank.kind) != "none"


def local_trainer(spec: Any, binned_store: Any = None) -> Any:
    """The :class:`ltr.training.trainer.Trainer` that trains ``spec``'s model in this process."""
    backend = backend_of(spec.config.model)
    if backend == "xgboost":
        from ltr.training.backends.xgboost import XGBoostTrainer

        return XGBoostTrainer(spec.config.model, spec.config.fit, spec.conventions, spec.table_ks, reranks(spec))
    if backend == "catboost":
        from ltr.training.backends.catboost import CatBoostTrainer

        return CatBoostTrainer(spec.config.model, spec.config.fit, spec.conventions, spec.table_ks, reranks(spec))
    return lightgbm.trainer(spec, binned_store)

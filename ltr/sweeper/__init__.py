"""ltr's Optuna sweeper (``hydra/sweeper=optuna``, ``hparams_search=optuna``), over Optuna's
ask-and-tell API: :mod:`~ltr.sweeper.search` runs the search, :mod:`~ltr.sweeper.space` reads
the search space, :mod:`~ltr.sweeper.link` connects jobs to their trials (pruning),
:mod:`~ltr.sweeper.record` writes what the search found on the sweep's parent run.

Why not hydra-optuna-sweeper: its latest release (1.3.0) requires optuna < 3, and optuna 2.10
fails on SQLAlchemy 2 (which MLflow needs), so persistent studies crashed; it has no pruning
and no constraints.
"""

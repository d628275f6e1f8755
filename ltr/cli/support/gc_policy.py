"""The garbage collector of an ``ltr`` process: full collections rare, young ones as Python's.

CPython collects cyclic garbage by generations: a young collection every 700 net allocations of
container objects, a generation-1 one every 10 of those, and a full one, which visits every
tracked object of the process, every 10 generation-1 collections once the objects that outlived
them have grown by a quarter since the last. An ``ltr train`` imports MLflow, SQLAlchemy, pandas,
LightGBM and scikit-learn: about 450,000 tracked objects, nearly all of them module state that
lives as long as the process. The heap grows through those imports by a quarter again and again:
the default experiment ran 8 full collections, 0.68 s of CPU on the 2-core machine (0.15 s with
``tracking=none``), each finding next to nothing to free (``benchmarks/README.md``).

:func:`collect_rarely` raises the generation-2 threshold to :data:`FULL_EVERY` generation-1
collections: a full collection comes after about 7 million net container allocations instead of
70,000, so a command of ltr's size runs none, and a long process (a sweep's jobs in one process,
``ltr ui``) still runs them, rarely. Young collections, which free nearly all cyclic garbage, are
Python's; the default experiment's peak memory is the same. Only the ``ltr`` process entry
(:func:`ltr.cli.main.run`) calls it: ``import ltr``, the Python API and in-process callers of
:func:`ltr.cli.main.main` (the tests) leave the host's collector as they find it.
"""

from __future__ import annotations

import gc

#: Generation-1 collections between two full collections (CPython's default: 10).
FULL_EVERY = 1000


def collect_rarely() -> None:
    """Keep the young generations' thresholds, raise the full collection's to :data:`FULL_EVERY`."""
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_EVERY)

"""A hook on the watched validation metric after every boosting round (a search's pruner).

Training calls the hook set with :func:`watching_rounds` (if any) after every round with the
1-based round and the valid value early stopping watches (``fit.early_stopping_metric``, our
nDCG@10 by default). A hook that returns True stops training there, as early stopping would:
the model keeps its best round so far. The hook lives in a context variable, so the trainers
need no parameter for it and a run without one is unchanged. Only the local trainer calls it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

#: ``hook(round, value) -> stop?``: ``round`` is 1-based, ``value`` the watched valid metric.
RoundHook = Callable[[int, float], bool]

_HOOK: ContextVar[RoundHook | None] = ContextVar("ltr_round_hook", default=None)


def current_round_hook() -> RoundHook | None:
    """The hook :func:`watching_rounds` set in this context, or None."""
    return _HOOK.get()


@contextmanager
def watching_rounds(hook: RoundHook | None) -> Iterator[None]:
    """Training inside this block calls ``hook`` after every round (None: no hook)."""
    token = _HOOK.set(hook)
    try:
        yield
    finally:
        _HOOK.reset(token)

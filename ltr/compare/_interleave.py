"""Team-draft interleaving of two rankings, for many sessions at once, compiled with numba.

``cache=True``: the one-time compile is stored next to this file and reused by later processes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba
import numpy as np
from numpy.typing import NDArray

F = TypeVar("F", bound=Callable[..., Any])


def _jit(fn: F) -> F:
    return cast(F, numba.njit(cache=True, nogil=True)(fn))


@_jit
def _team_draft(
    starts: Any, sizes: Any, slot_offsets: Any, order_a: Any, order_b: Any, coins: Any, position: Any, team: Any, taken: Any
) -> None:  # fmt: skip
    for s in range(starts.shape[0]):
        lo = starts[s]
        n = sizes[s]
        out = slot_offsets[s]
        for i in range(n):
            taken[lo + i] = False
        ia = 0
        ib = 0
        n_a = 0
        n_b = 0
        for p in range(n):
            a_turn = n_a < n_b or (n_a == n_b and coins[out + p])
            if a_turn:
                while taken[lo + order_a[lo + ia]]:
                    ia += 1
                row = order_a[lo + ia]
                n_a += 1
            else:
                while taken[lo + order_b[lo + ib]]:
                    ib += 1
                row = order_b[lo + ib]
                n_b += 1
            taken[lo + row] = True
            position[out + row] = p
            team[out + row] = 0 if a_turn else 1


def team_draft(
    starts: NDArray[np.int64],
    sizes: NDArray[np.int64],
    order_a: NDArray[np.int64],
    order_b: NDArray[np.int64],
    coins: NDArray[np.bool_],
) -> tuple[NDArray[np.int64], NDArray[np.int8]]:
    """Team-draft interleave (Chapelle et al., TOIS 2012) one query's two rankings per session.

    Parameters
    ----------
    starts, sizes : int64, shape (n_sessions,)
        The first row and the number of rows of each session's query.
    order_a, order_b : int64, shape (n_rows,)
        Per query, the rows in ranking A's (B's) order, as offsets within the query: the rows
        ``starts[s] + order_a[starts[s]:starts[s] + sizes[s]]`` are A's list, best first.
    coins : bool, shape (sizes.sum(),)
        One coin per slot of every session (flat, sessions in order); at a round where both teams
        have picked as often, team A picks first when the slot's coin is True.

    Returns
    -------
    position : int64, shape (sizes.sum(),)
        For slot ``j`` of session ``s`` (the ``j``-th row of its query), that row's 0-based
        position in the interleaved list.
    team : int8, same shape
        0 when team A contributed the row, 1 when team B did.

    Examples
    --------
    >>> pos, team = team_draft(np.array([0]), np.array([3]), np.array([0, 1, 2]), np.array([2, 1, 0]),
    ...                        np.array([True, False, False]))
    >>> pos.tolist(), team.tolist()  # A picks row 0, B row 2, then the coin says B first: row 1
    ([0, 2, 1], [0, 1, 1])
    """
    # the kernel's one signature (ltr.compiled.kernel_signatures): C-contiguous int64 / bool, any writability
    starts, sizes, order_a, order_b = (np.ascontiguousarray(a, dtype=np.int64) for a in (starts, sizes, order_a, order_b))
    coins = np.ascontiguousarray(coins, dtype=np.bool_)
    slot_offsets = np.zeros(sizes.shape[0], dtype=np.int64)
    np.cumsum(sizes[:-1], out=slot_offsets[1:])
    total = int(sizes.sum())
    position = np.empty(total, dtype=np.int64)
    team = np.empty(total, dtype=np.int8)
    taken = np.zeros(order_a.shape[0], dtype=np.bool_)
    _team_draft(starts, sizes, slot_offsets, order_a, order_b, coins, position, team, taken)
    return position, team

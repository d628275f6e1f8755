"""`RankingData`: the one in-memory form of a learning-to-rank data set.

Layout (the same as LightGBM's query boundaries):

- ``features``: float32, shape ``(n_rows, n_features)``, C-contiguous.
- ``labels``: int32, shape ``(n_rows,)``, graded relevance (0 = not relevant).
- ``qids``: int64, shape ``(n_queries,)``, one id per query, in row order.
- ``offsets``: int64, shape ``(n_queries + 1,)``; the rows of query ``i`` are
  ``offsets[i]:offsets[i + 1]``. ``offsets[0] == 0`` and ``offsets[-1] == n_rows``;
  every query has at least one row, so ``offsets`` is strictly increasing.
- ``positions`` (optional): int32, shape ``(n_rows,)``, the 0-based position at which each row
  was shown in a logged ranking (0 = first), for unbiased learning to rank from clicks; None when
  the data has no positions.
- ``behaviours`` (optional): named float64 columns, shape ``(n_rows,)`` each, of what users did
  with each row (``click``, ``dwell``, ``cart``, ``purchase``): the input of label recipes
  (:mod:`ltr.data.feedback.recipes`); never features. None when the data has none.
- ``doc_ids`` (optional): object array of Python ``str``, shape ``(n_rows,)``, the id of every
  row's document (LETOR ``#docid = X`` comments, a Parquet / CSV ``data.doc_id_column``); None
  when the data has none. Carried through every subset, reorder and concatenation; never used
  for training, never hashed into the data fingerprint.

Rows of a query are contiguous by construction: a reader that meets interleaved rows must
regroup them before building a ``RankingData``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

if TYPE_CHECKING:
    import pandas as pd


def text_feature_names(n_features: int) -> list[str]:
    """``f1 .. f{n_features}``: the names of features numbered as in LETOR/SVMlight files
    (``f1`` is feature ``1:``, column 0), for data whose columns have no names of their own.

    >>> text_feature_names(3)
    ['f1', 'f2', 'f3']
    """
    return [f"f{j + 1}" for j in range(n_features)]


@dataclass(frozen=True, slots=True)
class RankingData:
    """Features, graded labels and query boundaries of one split.

    Parameters
    ----------
    features : float32 array, shape (n_rows, n_features)
    labels : int32 array, shape (n_rows,)
    qids : int64 array, shape (n_queries,)
    offsets : int64 array, shape (n_queries + 1,)
    feature_names : names of the feature columns, length n_features
    name : a short name of the data set (for tracking)
    positions : int array, shape (n_rows,), values >= 0, or None
        Logged display position of every row (0-based); stored as int32.
    behaviours : mapping of name to float64 array, shape (n_rows,), or None
        Behaviour columns (clicks, dwell, ...) that label recipes turn into grades.
    doc_ids : object array of str, shape (n_rows,), or None
        The document id of every row, in row order (any sequence of str is stored as an
        object array).
    qid_names : object array of str, shape (n_queries,), or None
        Every query's qid as written, when the input's qids are ids (strings) that ``qids``
        numbers 0, 1, ...: what ``ltr predict`` writes in its TREC run and per-query table.

    Examples
    --------
    >>> import numpy as np
    >>> d = RankingData.from_group_sizes(
    ...     np.zeros((3, 1), np.float32), np.array([1, 0, 2]), np.array([7, 9]), np.array([2, 1]))
    >>> d.offsets.tolist(), d.row_qids().tolist()
    ([0, 2, 3], [7, 7, 9])
    """

    features: NDArray[np.float32]
    labels: NDArray[np.int32]
    qids: NDArray[np.int64]
    offsets: NDArray[np.int64]
    feature_names: tuple[str, ...] = field(default=())
    name: str = "data"
    positions: NDArray[np.int32] | None = None
    behaviours: Mapping[str, NDArray[np.float64]] | None = None
    doc_ids: NDArray[np.object_] | None = None
    qid_names: NDArray[np.object_] | None = None

    def __post_init__(self) -> None:
        if self.features.ndim != 2:
            raise ValueError(f"features must be 2-D, got shape {self.features.shape}")
        n_rows = self.features.shape[0]
        if self.labels.shape != (n_rows,):
            raise ValueError(f"labels have shape {self.labels.shape}, expected ({n_rows},)")
        if self.offsets.shape != (self.qids.shape[0] + 1,):
            raise ValueError(
                f"offsets have {self.offsets.shape[0]} entries for {self.qids.shape[0]} queries; "
                "expected n_queries + 1"
            )
        if self.offsets[0] != 0 or self.offsets[-1] != n_rows:
            raise ValueError(
                f"offsets must run from 0 to n_rows={n_rows}, got {self.offsets[0]}..{self.offsets[-1]}"
            )
        if np.any(np.diff(self.offsets) <= 0):
            raise ValueError("every query must have at least one row (offsets strictly increasing)")
        if self.feature_names and len(self.feature_names) != self.features.shape[1]:
            raise ValueError(
                f"{len(self.feature_names)} feature names for {self.features.shape[1]} features"
            )
        if self.positions is not None:
            object.__setattr__(self, "positions", _checked_positions(self.positions, n_rows))
        if self.behaviours is not None:
            columns = {str(k): np.asarray(v, dtype=np.float64) for k, v in self.behaviours.items()}
            bad = [k for k, v in columns.items() if v.shape != (n_rows,)]
            if bad:
                raise ValueError(f"behaviour column {bad[0]!r} has shape {columns[bad[0]].shape}, expected ({n_rows},)")
            object.__setattr__(self, "behaviours", columns)
        if self.doc_ids is not None:
            object.__setattr__(self, "doc_ids", _checked_doc_ids(self.doc_ids, n_rows))
        if self.qid_names is not None:
            names = np.asarray(self.qid_names, dtype=object)
            if names.shape != self.qids.shape:
                raise ValueError(f"qid_names have shape {names.shape}, expected ({self.qids.shape[0]},): one per query")
            object.__setattr__(self, "qid_names", names)

    @classmethod
    def from_group_sizes(
        cls,
        features: NDArray[np.floating],
        labels: NDArray[np.integer],
        qids: NDArray[np.integer],
        group_sizes: NDArray[np.integer],
        *,
        feature_names: tuple[str, ...] = (),
        name: str = "data",
        positions: NDArray[np.integer] | None = None,
        doc_ids: NDArray[np.object_] | None = None,
    ) -> RankingData:
        """Build from per-query group sizes (LightGBM's ``group``), converting dtypes."""
        offsets = np.zeros(len(group_sizes) + 1, dtype=np.int64)
        np.cumsum(group_sizes, out=offsets[1:])
        return cls(
            features=np.ascontiguousarray(features, dtype=np.float32),
            labels=np.asarray(labels, dtype=np.int32),
            qids=np.asarray(qids, dtype=np.int64),
            offsets=offsets,
            feature_names=feature_names,
            name=name,
            positions=None if positions is None else np.asarray(positions, dtype=np.int32),
            doc_ids=doc_ids,
        )

    @property
    def n_rows(self) -> int:
        return int(self.features.shape[0])

    @property
    def n_queries(self) -> int:
        return int(self.qids.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.features.shape[1])

    @property
    def group_sizes(self) -> NDArray[np.int64]:
        """Rows per query, shape (n_queries,): LightGBM's ``group`` argument."""
        return np.diff(self.offsets)

    def written_qids(self) -> NDArray[np.generic]:
        """Every query's qid as the input wrote it: ``qid_names`` when given, else ``qids``."""
        return self.qids if self.qid_names is None else self.qid_names

    def with_written_qids(self, table: pd.DataFrame) -> pd.DataFrame:
        """``table`` (one row per query of this data, ``qid`` holding ``qids``) with its qids as
        written: :func:`with_written_qids` of ``qids`` and ``qid_names``."""
        return with_written_qids(table, self.qids, self.qid_names)

    def row_qids(self) -> NDArray[np.int64]:
        """The qid of every row, shape (n_rows,)."""
        return np.repeat(self.qids, self.group_sizes)

    def take_queries(self, query_index: NDArray[np.integer], *, name: str | None = None) -> RankingData:
        """A new `RankingData` with the queries at ``query_index``, in that order."""
        query_index = np.asarray(query_index, dtype=np.int64)
        sizes = self.group_sizes[query_index]
        starts = self.offsets[query_index]
        # Row index of every kept row, without a per-query loop: start of its query plus rank within.
        new_offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
        np.cumsum(sizes, out=new_offsets[1:])
        within = np.arange(new_offsets[-1], dtype=np.int64) - np.repeat(new_offsets[:-1], sizes)
        rows = np.repeat(starts, sizes) + within
        return RankingData(
            features=self.features[rows],
            labels=self.labels[rows],
            qids=self.qids[query_index],
            offsets=new_offsets,
            feature_names=self.feature_names,
            name=self.name if name is None else name,
            positions=None if self.positions is None else self.positions[rows],
            behaviours=None if self.behaviours is None else {k: v[rows] for k, v in self.behaviours.items()},
            doc_ids=None if self.doc_ids is None else self.doc_ids[rows],
            qid_names=None if self.qid_names is None else self.qid_names[query_index],
        )


def written_qids_of(numbers: ArrayLike, qids: NDArray[np.integer], names: NDArray[np.object_]) -> NDArray[np.object_]:
    """The qid as written of every query number of ``numbers``: ``names[i]`` where ``qids[i]`` is
    the number (the readers number string qids 0, 1, ...; :attr:`RankingData.qid_names`).

    Raises
    ------
    ValueError
        a number that is not one of ``qids`` (a table of other queries than the data's).

    Examples
    --------
    >>> written_qids_of([5, 2], np.array([2, 5]), np.array(["q-a", "q-b"], dtype=object)).tolist()
    ['q-b', 'q-a']
    """
    wanted = np.asarray(numbers, dtype=np.int64)
    known = np.asarray(qids, dtype=np.int64)
    if np.array_equal(wanted, known):  # a table in the data's own query order: no search
        return np.asarray(names, dtype=object).copy()
    order = np.argsort(known, kind="stable")
    at = np.searchsorted(known, wanted, sorter=order)
    found = at < known.shape[0]
    found[found] = known[order[at[found]]] == wanted[found]
    if not found.all():
        raise ValueError(f"query number {int(wanted[~found][0])} is not one of the data's {known.shape[0]} queries")
    return np.asarray(names, dtype=object)[order[at]]


def with_written_qids(
    table: pd.DataFrame, qids: NDArray[np.integer], names: NDArray[np.object_] | None
) -> pd.DataFrame:
    """A per-query table with its qids as the input wrote them: ``qid`` numbers of ``qids``
    replaced by their ``names`` (:func:`written_qids_of`), when the data's qids were strings;
    ``table`` itself, untouched, when ``names`` is None (integer qids: the same frame, the same
    bytes when written). With :func:`written_qids_of` (``ltr evaluate``'s columns), the one way
    every per-query table ltr writes (``ltr train``'s ``per_query/{split}`` artifacts, local or
    Dask; ``ltr predict --per-query``; ``ltr evaluate --data ... --per-query``) turns the readers'
    numbers back into the qids as written: the metric kernels work on the numbers."""
    if names is None:
        return table
    return table.assign(qid=written_qids_of(table["qid"].to_numpy(), qids, names))


def _checked_positions(positions: NDArray[np.integer], n_rows: int) -> NDArray[np.int32]:
    """``positions`` as int32 after checking shape, dtype and sign (ValueError otherwise)."""
    arr = np.asarray(positions)
    if arr.shape != (n_rows,):
        raise ValueError(f"positions have shape {arr.shape}, expected ({n_rows},): one per row")
    if not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"positions must be integers, got dtype {arr.dtype}")
    if arr.size and int(arr.min()) < 0:
        row = int(np.argmin(arr))
        raise ValueError(f"position {int(arr[row])} at row {row} is negative; positions are 0, 1, 2, ...")
    if arr.size and int(arr.max()) > np.iinfo(np.int32).max:
        raise ValueError(f"position {int(arr.max())} does not fit a 32-bit integer")
    return np.ascontiguousarray(arr, dtype=np.int32)


def _checked_doc_ids(doc_ids: Any, n_rows: int) -> NDArray[np.object_]:
    """``doc_ids`` as a 1-D object array of str after checking its shape (ValueError otherwise).

    An object array is kept as it is (its elements are the readers' ``str``); any other array or
    sequence is converted element by element with ``str``.
    """
    arr = doc_ids if isinstance(doc_ids, np.ndarray) and doc_ids.dtype == object else None
    if arr is None:
        arr = np.asarray(doc_ids)
        if arr.ndim == 1:
            arr = arr.astype(str).astype(object)
    if arr.shape != (n_rows,):
        raise ValueError(f"doc_ids have shape {arr.shape}, expected ({n_rows},): one per row")
    return arr

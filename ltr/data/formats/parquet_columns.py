"""A Parquet file's columns, read from the file when asked for, so a wide file is never decoded whole.

:class:`ParquetColumns` answers what the table readers ask of a :class:`pyarrow.Table`
(``column_names``, ``schema``, ``num_rows``, ``column(name)``) from the file's footer, and reads
a column's data only when it is asked for. :func:`ltr.data.formats.table_features.feature_matrix` asks
for the feature columns a few at a time (:func:`columns_per_read`), converts them into the
float32 matrix and lets them go: reading a file of N float32 feature columns holds the matrix,
plus a few columns of Arrow data (memory Arrow's allocator reuses from one read to the next), not
the whole decoded table and the file's bytes beside it. The values are those of one read of the
whole table: each column is decoded on its own in either case.

The file is opened once, when the object is made, and read through that handle until
:meth:`ParquetColumns.close` (the object is a context manager): a file replaced meanwhile (a new
file renamed over the path) is not mixed into what is read. A file Arrow cannot read is a
:class:`ltr.errors.DataError` naming it, as a read of the whole table says it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

import pyarrow as pa

from ltr.errors import DataError

#: Bytes of decoded Arrow data a read of several columns aims at (8 bytes a value: an int64 or
#: float64 column; a float32 column takes half).
READ_BYTES = 64 * 2**20


def columns_per_read(n_rows: int) -> int:
    """How many columns of ``n_rows`` rows one read takes: :data:`READ_BYTES` of 8-byte values, at least one."""
    return max(1, READ_BYTES // (8 * max(n_rows, 1)))


def cannot_read(path: Path | str, kind: str, exc: Exception) -> DataError:
    """The one line saying Arrow could not read ``path`` as ``kind`` (``parquet``, ``csv``)."""
    return DataError(f"cannot read {path} as {kind}: {' '.join(str(exc).split())}")


class ParquetColumns:
    """The columns ``names`` of the Parquet file ``path``, in that order (None: all of them; a
    name the file lacks is left out, for the caller to report by name), read on demand.

    ``column_names``, ``schema`` and ``num_rows`` come from the footer; :meth:`column` reads one
    column (kept: the qid and label columns are asked for more than once), :meth:`read` several
    at once (not kept). Raises `DataError` (:func:`cannot_read`) when the file cannot be read.
    """

    def __init__(self, path: Path | str, names: Sequence[str] | None = None) -> None:
        import pyarrow.parquet as pq  # Parquet's reader only where a Parquet file is read

        self.path = Path(path)
        try:
            self._file = pq.ParquetFile(self.path)
        except (pa.ArrowInvalid, OSError) as exc:
            raise cannot_read(self.path, "parquet", exc) from None
        schema = self._file.schema_arrow
        #: every column of the file, asked for or not (what a message on a missing column lists)
        self.file_column_names: list[str] = list(schema.names)
        if names is not None:
            schema = pa.schema([schema.field(n) for n in names if n in schema.names])
        self.schema: pa.Schema = schema
        self.column_names: list[str] = list(self.schema.names)
        self.num_rows: int = int(self._file.metadata.num_rows)
        self._kept: dict[str, pa.ChunkedArray] = {}

    def require(self, names: Sequence[str], hint: str) -> None:
        """Raise `DataError` naming the first of ``names`` the file lacks, then ``hint``."""
        missing = [name for name in names if name not in self.column_names]
        if missing:
            raise DataError(f"{self.path} has no column {missing[0]!r}; {hint}")

    def column(self, name: str) -> pa.ChunkedArray:
        """Column ``name``, read once and kept."""
        if name not in self._kept:
            self._kept[name] = self.read([name])[0]
        return self._kept[name]

    def read(self, names: Sequence[str]) -> list[pa.ChunkedArray]:
        """Columns ``names`` (in that order), read in one pass over the file (Arrow decodes them
        in parallel); not kept."""
        try:
            table = self._file.read(columns=list(names))
        except (pa.ArrowInvalid, OSError) as exc:
            raise cannot_read(self.path, "parquet", exc) from None
        return [table.column(i) for i in range(table.num_columns)]

    def close(self) -> None:
        """Close the file (and forget the kept columns)."""
        self._kept.clear()
        self._file.close()

    def __enter__(self) -> ParquetColumns:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

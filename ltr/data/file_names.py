"""What a data file's name says about its format: the one suffix rule of every reader and check.

A table is known by its last suffix, after a compression suffix: ``.parquet`` / ``.pq`` are
Parquet, ``.csv`` / ``.tsv`` CSV (``train.csv.gz`` too). Any other name is a text file (LETOR /
SVMlight, or LightGBM's with a ``.query`` file), whose form only its content tells
(:func:`ltr.data.readers.detect_format`). No import beyond the standard library: config checks use it.
"""

from __future__ import annotations

from pathlib import Path

#: Compression suffixes stripped before the format's suffix.
COMPRESSIONS = (".gz", ".bz2", ".zst")


def table_format_by_name(path: str | Path) -> str | None:
    """``"parquet"`` or ``"csv"`` as the name of ``path`` says, else None (a text file).

    Examples
    --------
    >>> [table_format_by_name(p) for p in ("a.parquet", "a.PQ", "a.tsv", "a.csv.gz", "a.txt", "a.csv.txt", "a")]
    ['parquet', 'parquet', 'csv', 'csv', None, None, None]
    """
    suffixes = [s.lower() for s in Path(path).suffixes]
    if suffixes and suffixes[-1] in COMPRESSIONS:
        suffixes = suffixes[:-1]
    last = suffixes[-1] if suffixes else ""
    if last in (".parquet", ".pq"):
        return "parquet"
    if last in (".csv", ".tsv"):
        return "csv"
    return None


def written_table_format(path: str | Path) -> str:
    """The format a per-query table is written in, by the name it is written to: ``"csv"`` for
    a ``.csv`` name, ``"parquet"`` for any other (``.parquet``, ``.pq``, ...): never Parquet
    under a ``.csv`` name (``ltr evaluate --per-query``, ``ltr predict --per-query``).

    >>> written_table_format("t.CSV"), written_table_format("t.pq")
    ('csv', 'parquet')
    """
    return "csv" if Path(path).suffix.lower() == ".csv" else "parquet"

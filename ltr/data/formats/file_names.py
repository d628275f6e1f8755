"""What a data file's name says about its format: the one suffix rule of every reader and check.

A table is known by its last suffix, after a compression suffix: ``.parquet`` / ``.pq`` are
Parquet, ``.csv`` / ``.tsv`` CSV (``train.csv.gz`` too). Any other name is a text file (LETOR /
SVMlight, or LightGBM's with a ``.query`` file), whose form only its content tells
(:func:`ltr.data.formats.readers.detect_format`). No import beyond the standard library: config checks use it.

Files that hold (query, document) pairs (``ltr evaluate --qrels/--run``, ``ltr labels``) follow
the same rule, then their content: :func:`pairs_file_kind` tells a table from a TREC qrels or
run file whatever its other suffix (``run.txt``, ``qrels.old``).
"""

from __future__ import annotations

import gzip
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


def pairs_file_kind(path: str | Path) -> str:
    """``"table"`` or ``"trec"``: how a file of (query, document) pairs is read, the one rule of
    every command. A table by name (:func:`table_format_by_name`: ``.csv``, ``.tsv``,
    ``.parquet``, ``.pq``) is a table; any other name is read by content: its first data line
    (blank and ``#`` lines skipped) is TREC when it is a qrels line (4 fields, the last a number)
    or a run line (6 or more fields, the fifth a number); anything else (a header such as
    ``qid docno label``) is a tab-separated table. A file that cannot be read is TREC (its
    reader says why).

    Examples
    --------
    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> for name, text in [("run.txt", "1 Q0 d1 1 0.5 x\\n"), ("q.old", "1 0 d1 2\\n"), ("t.txt", "qid\\tdocno\\tlabel\\n")]:
    ...     _ = open(os.path.join(d, name), "w").write(text)
    >>> [pairs_file_kind(os.path.join(d, n)) for n in ("run.txt", "q.old", "t.txt", "x.csv")]
    ['trec', 'trec', 'table', 'table']
    """
    if table_format_by_name(path) is not None:
        return "table"
    try:
        with open(path, "rb") as raw:
            head = raw.read(2)
        opener = gzip.open if head == b"\x1f\x8b" else open
        with opener(path, "rb") as f:
            for _ in range(1000):
                line = f.readline()
                if not line:
                    break
                fields = line.split()
                if not fields or fields[0].startswith(b"#"):
                    continue
                return "trec" if _is_trec_line(fields) else "table"
    except OSError:
        pass
    return "trec"


def _is_trec_line(fields: list[bytes]) -> bool:
    def number(b: bytes) -> bool:
        try:
            float(b)
        except ValueError:
            return False
        return True

    return (len(fields) == 4 and number(fields[3])) or (len(fields) >= 6 and number(fields[4]))

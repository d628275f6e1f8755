"""The feature count a data option fixes before its data is read.

The synthetic generators' width follows from their settings: ``n_informative + n_noise`` and one
query-level feature (:func:`ltr.data.synthetic.generate_synthetic`), and the click log adds
``popularity`` (:mod:`ltr.data.feedback.clicks`). A file option's ``data.n_features`` fixes it (a text
file's width; a table's feature columns must match it), and so does a table's
``data.feature_columns``. Any other data's width is known once it is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ltr.data.formats.file_names import table_format_by_name


@dataclass(frozen=True, slots=True)
class ConfiguredWidth:
    """``n_features`` columns, and the settings the count follows from (for a message)."""

    n_features: int
    source: str


def configured_width(data: Any) -> ConfiguredWidth | None:
    """The training data's feature count as the data option ``data`` fixes it, or None when
    only reading the data tells (text without ``data.n_features``, a table without
    ``data.feature_columns``, partitions).

    Examples
    --------
    >>> from ltr.config.groups.data import SyntheticDataConfig
    >>> configured_width(SyntheticDataConfig(n_informative=3, n_noise=2))
    ConfiguredWidth(n_features=6, source='data.n_informative + data.n_noise + 1')
    """
    kind = str(getattr(data, "kind", ""))
    if kind in ("synthetic", "synthetic_clicks"):
        extra = 1 if kind == "synthetic" else 2
        what = "1" if kind == "synthetic" else "2 (query_terms, popularity)"
        return ConfiguredWidth(int(data.n_informative) + int(data.n_noise) + extra, f"data.n_informative + data.n_noise + {what}")
    fixed = getattr(data, "n_features", None)
    if fixed is not None:
        return ConfiguredWidth(int(fixed), "data.n_features")
    columns = getattr(data, "feature_columns", None)
    if columns is not None and _reads_a_table(data):
        return ConfiguredWidth(len(columns), "data.feature_columns")
    return None


def _reads_a_table(data: Any) -> bool:
    """True when the training file of ``data`` is read as a table (Parquet / CSV), where
    ``feature_columns`` applies; a text file ignores it."""
    fmt = str(getattr(data, "format", "auto"))
    if fmt != "auto":
        return fmt in ("parquet", "csv")
    train = getattr(data, "train", None)
    return isinstance(train, str) and table_format_by_name(train) is not None

"""configured_width: the feature count a data option fixes before its data is read, equal to the
width of the data the option then gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from ltr.config.groups.data import (
    LetorDataConfig,
    ParquetDataConfig,
    ParquetPartitionsDataConfig,
    SplitConfig,
    SvmlightDataConfig,
    SyntheticClicksDataConfig,
    SyntheticDataConfig,
)
from ltr.data.feedback.clicks import generate_click_log
from ltr.data.formats.width import ConfiguredWidth, configured_width
from ltr.data.load import load_splits
from ltr.data.synthetic import generate_synthetic


@pytest.mark.parametrize(("n_informative", "n_noise"), [(8, 8), (3, 0), (1, 5)])
def test_synthetic_width_is_the_generated_width(n_informative: int, n_noise: int) -> None:
    cfg = SyntheticDataConfig(n_queries=10, n_informative=n_informative, n_noise=n_noise)
    data = generate_synthetic(cfg, seed=1)
    assert configured_width(cfg) == ConfiguredWidth(n_informative + n_noise + 1, "data.n_informative + data.n_noise + 1")
    assert data.n_features == n_informative + n_noise + 1


def test_click_log_width_is_the_generated_width() -> None:
    cfg = SyntheticClicksDataConfig(n_queries=10, n_informative=4, n_noise=2)
    width = configured_width(cfg)
    assert width is not None
    assert width.n_features == generate_click_log(cfg, seed=1).data.n_features == 8  # 4 + 2 + query_terms + popularity


def _text(path: Path) -> str:
    path.write_text("".join(f"{q % 2} qid:{q} 1:0.5 2:{q / 10}\n" for q in range(12)))
    return str(path)


def test_file_width_from_n_features_or_feature_columns(tmp_path: Path) -> None:
    text = _text(tmp_path / "train.txt")
    assert configured_width(SvmlightDataConfig(train=text)) is None  # only reading tells
    fixed = SvmlightDataConfig(train=text, n_features=5, cache=False)
    assert configured_width(fixed) == ConfiguredWidth(5, "data.n_features")
    # the text file's width is fixed to it
    assert load_splits(fixed, SplitConfig(), seed=1).train.n_features == 5
    assert configured_width(LetorDataConfig(root=str(tmp_path), n_features=7)) == ConfiguredWidth(7, "data.n_features")
    # a table's feature columns; a text file read through data=parquet ignores them
    columns = ["a", "b", "c"]
    assert configured_width(ParquetDataConfig(train="t.parquet", feature_columns=columns)) == ConfiguredWidth(3, "data.feature_columns")
    assert configured_width(ParquetDataConfig(train="t.csv.gz", feature_columns=columns)) == ConfiguredWidth(3, "data.feature_columns")
    assert configured_width(ParquetDataConfig(train=text, feature_columns=columns)) is None
    assert configured_width(ParquetDataConfig(train="t.parquet")) is None
    assert configured_width(ParquetPartitionsDataConfig(root=str(tmp_path))) is None


def test_table_width_from_feature_columns_is_the_read_width(tmp_path: Path) -> None:
    path = tmp_path / "train.csv"
    rows = [f"{q},{q % 3},{q / 10},{q % 4},7,9" for q in range(12) for _ in range(3)]
    path.write_text("qid,label,f1,f2,f3,extra\n" + "\n".join(rows) + "\n")
    cfg = ParquetDataConfig(train=str(path), feature_columns=["f1", "f3"], cache=False)
    width = configured_width(cfg)
    assert width is not None
    assert load_splits(cfg, SplitConfig(), seed=1).train.n_features == width.n_features == 2


@pytest.mark.parametrize(
    ("name", "table"),
    [("a.parquet", "parquet"), ("a.PQ", "parquet"), ("a.tsv", "csv"), ("a.csv.gz", "csv"), ("a.txt", None),
     ("a.csv.txt", None), ("a", None), ("a.txt.gz", None)],
)  # fmt: skip
def test_one_name_rule_for_the_reader_the_width_and_evaluate(name: str, table: str | None) -> None:
    """The reader's format detection, the configured width and ``ltr evaluate --n-features`` all
    read a name with :func:`ltr.data.formats.file_names.table_format_by_name`."""
    from ltr.data.formats.file_names import table_format_by_name

    assert table_format_by_name(name) == table


@pytest.mark.parametrize(("name", "written"), [("t.csv", "csv"), ("t.CSV", "csv"), ("t.parquet", "parquet"), ("t.pq", "parquet"), ("t", "parquet")])
def test_one_rule_for_the_per_query_tables_of_evaluate_and_predict(name: str, written: str) -> None:
    from ltr.data.formats.file_names import written_table_format

    assert written_table_format(name) == written

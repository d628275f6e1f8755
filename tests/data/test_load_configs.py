"""The data config options (conf/data/*.yaml over their dataclasses) and ``load_splits``."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig, OmegaConf

from ltr.config.groups.data import DATA_OPTIONS, SplitConfig
from ltr.config.store import register_configs
from ltr.data.load import letor_parts_rotation, load_splits
from ltr.errors import DataError
from tests.data.conftest import SHARED_DATA, needs_shared_data

CONF = Path(__file__).resolve().parents[2] / "ltr" / "conf"


def _data_cfg(option: str, overrides: Sequence[str] = ()) -> DictConfig:
    register_configs()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose(config_name="train", overrides=[f"data={option}", *overrides])
    data = cfg.data
    assert isinstance(data, DictConfig)
    return data


def _split(**kwargs: object) -> DictConfig:
    cfg = OmegaConf.structured(SplitConfig)
    for k, v in kwargs.items():
        cfg[k] = v
    assert isinstance(cfg, DictConfig)
    return cfg


def _letor_lines(first_qid: int, n_queries: int, rng: np.random.Generator) -> str:
    return "".join(
        f"{rng.integers(0, 3)} qid:{q} 1:{rng.random():.4f} 2:{rng.random():.4f}\n"
        for q in range(first_qid, first_qid + n_queries)
        for _ in range(3)
    )


@pytest.mark.parametrize("option", ["letor", "svmlight", "parquet", "mq2008"])
def test_each_option_composes_with_its_schema(option: str) -> None:
    data = _data_cfg(option)
    assert data.kind == ("letor_parts" if option == "mq2008" else option)
    schema = DATA_OPTIONS[option]
    assert set(data.keys()) == {f.name for f in dataclasses.fields(schema)}
    with pytest.raises(Exception, match="max_label"):
        _data_cfg(option, ["data.max_label=three"])  # typed by the schema


def test_mq2008_root_defaults_to_shared_data(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LTR_SHARED_DATA", "/somewhere")
    assert _data_cfg("mq2008").root == "/somewhere/mq2008"


def test_letor_rotation_follows_folds_readme() -> None:
    assert letor_parts_rotation(5, fold=3) == {"train": [2, 3, 4], "valid": [0], "test": [1]}
    with pytest.raises(DataError, match=r"data.fold=6 must lie in 1..5"):
        letor_parts_rotation(5, fold=6)


def test_letor_fold_folder(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    fold = tmp_path / "Fold2"
    fold.mkdir()
    (fold / "train.txt").write_text(_letor_lines(1, 20, rng))
    (fold / "vali.txt").write_text(_letor_lines(100, 5, rng))
    (fold / "test.txt").write_text(_letor_lines(200, 6, rng))
    cfg = _data_cfg("letor", [f"data.root={tmp_path}", "data.fold=2", f"data.cache_dir={tmp_path / 'c'}"])
    splits = load_splits(cfg, _split(), seed=0)
    assert [d.n_queries for _, d in splits.items()] == [20, 5, 6]


def test_letor_folder_without_vali_holds_out_validation(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    (tmp_path / "train.txt").write_text(_letor_lines(1, 20, rng))
    (tmp_path / "test.txt").write_text(_letor_lines(200, 6, rng))
    cfg = _data_cfg("letor", [f"data.root={tmp_path}", "data.cache=false"])
    splits = load_splits(cfg, _split(valid_fraction=0.25), seed=0)
    assert [d.n_queries for _, d in splits.items()] == [15, 5, 6]


def test_letor_errors_name_the_setting(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"data.root is not set"):
        load_splits(_data_cfg("letor"), _split(), seed=0)
    with pytest.raises(DataError, match=r"data.root folder .*Fold3 does not exist"):
        load_splits(_data_cfg("letor", [f"data.root={tmp_path}", "data.fold=3"]), _split(), seed=0)
    with pytest.raises(DataError, match=r"no train.txt \(or train.txt.gz\) in"):
        load_splits(_data_cfg("letor", [f"data.root={tmp_path}"]), _split(), seed=0)


def test_svmlight_single_file_is_split_by_query_or_kfold(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "all.txt"
    path.write_text(_letor_lines(1, 30, np.random.default_rng(1)))
    cfg = _data_cfg("svmlight", [f"data.train={path}", "data.cache=false"])
    with caplog.at_level(logging.WARNING):
        splits = load_splits(cfg, _split(), seed=3)
    assert [d.n_queries for _, d in splits.items()] == [18, 6, 6]
    assert not caplog.records  # query-level: no qid in two splits
    folds = [load_splits(cfg, _split(n_folds=3, fold=k), seed=3).test.qids for k in (1, 2, 3)]
    assert sorted(np.concatenate(folds).tolist()) == list(range(1, 31))
    with pytest.raises(DataError, match=r"data.train is not set"):
        load_splits(_data_cfg("svmlight"), _split(), seed=0)


def test_parquet_option(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    frames = {}
    for split, first in (("train", 0), ("test", 100)):
        n = 30
        frames[split] = pd.DataFrame(
            {"q": np.repeat(np.arange(first, first + 10), 3), "rel": rng.integers(0, 3, n),
             "f1": rng.random(n), "f2": rng.random(n)}
        )
        frames[split].to_parquet(tmp_path / f"{split}.parquet")
    cfg = _data_cfg("parquet", [
        f"data.train={tmp_path / 'train.parquet'}", f"data.test={tmp_path / 'test.parquet'}",
        "data.qid_column=q", "data.label_column=rel", "data.feature_columns=[f2]",
        f"data.cache_dir={tmp_path / 'cache'}",
    ])
    splits = load_splits(cfg, _split(valid_fraction=0.2), seed=0)
    assert (splits.train.n_queries, splits.valid.n_queries, splits.test.n_queries) == (8, 2, 10)
    assert splits.test.feature_names == ("f2",)


@needs_shared_data
def test_mq2008_option_composes_and_loads(tmp_path: Path) -> None:
    cfg = _data_cfg("mq2008", [f"data.root={SHARED_DATA / 'mq2008'}", f"data.cache_dir={tmp_path}"])
    splits = load_splits(cfg, _split(), seed=0)
    assert (splits.train.n_rows, splits.valid.n_rows, splits.test.n_rows) == (2933 + 3635 + 3062, 2707, 2874)
    assert splits.train.name == "mq2008"

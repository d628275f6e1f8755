"""Positions in data files: a LightGBM ``.position`` side file, or a Parquet / CSV column.

Every test writes real files into ``tmp_path`` and reads them through the public readers.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ltr.data.fingerprint import content_hash
from ltr.data.formats import readers
from ltr.data.formats.readers import read_ranking_file, read_split_files
from ltr.data.load import load_splits, reader_options
from ltr.data.ranking_data import RankingData
from ltr.errors import DataError
from ltr.experiment import run as pipeline
from tests.conftest import compose_train
from tests.data.conftest import WriteFile

LETOR = "2 qid:7 1:0.5 3:1\n0 qid:7 2:1.5\n1 qid:9 1:2\n0 qid:9 2:1\n"
LETOR_POSITIONS = [0, 1, 0, 1]


def _no_parse(*args: object, **kwargs: object) -> None:
    raise AssertionError("parsed although the cache should have answered")


def _one_line(exc: pytest.ExceptionInfo[DataError]) -> str:
    message = str(exc.value)
    assert "\n" not in message, message
    return message


def _positions(data: RankingData) -> list[int]:
    assert data.positions is not None, "no positions were read"
    assert data.positions.dtype == np.int32
    return data.positions.tolist()


# ---------------------------------------------------------------------------------------------
# .position side files of text data


def test_letor_file_with_position_file_gives_its_positions(write: WriteFile) -> None:
    path = write(LETOR, "rank.train")
    write("0\n1\n0\n1\n", "rank.train.position")
    data = read_ranking_file(path)
    assert _positions(data) == LETOR_POSITIONS
    assert data.n_features == 3  # the side file adds no feature


def test_without_position_file_there_are_no_positions(write: WriteFile) -> None:
    assert read_ranking_file(write(LETOR, "rank.train")).positions is None


def test_positions_follow_their_rows_when_rows_are_regrouped(write: WriteFile) -> None:
    # qid 7 comes back after qid 9: rows are regrouped stably (7: lines 1, 3; 9: lines 2, 4)
    path = write("2 qid:7 1:1\n1 qid:9 1:2\n0 qid:7 1:3\n0 qid:9 1:4\n", "rank.train")
    write("5\n6\n7\n8\n", "rank.train.position")
    data = read_ranking_file(path)
    assert data.qids.tolist() == [7, 9]
    assert data.features[:, 0].tolist() == [1, 3, 2, 4]
    assert _positions(data) == [5, 7, 6, 8]


def test_gzipped_text_finds_the_plain_position_file(write: WriteFile) -> None:
    path = write(LETOR, "rank.train.gz")
    write("3\n2\n1\n0\n", "rank.train.position")
    assert _positions(read_ranking_file(path)) == [3, 2, 1, 0]


def test_lightgbm_query_form_reads_its_position_file(write: WriteFile) -> None:
    path = write("1 1:0.5\n0 1:1\n2 1:2\n", "rank.train")
    write("2\n1\n", "rank.train.query")
    write("0\n1\n0\n", "rank.train.position")
    data = read_ranking_file(path)
    assert data.offsets.tolist() == [0, 2, 3]
    assert _positions(data) == [0, 1, 0]


def test_positions_come_back_from_the_cache(
    write: WriteFile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write("2 qid:7 1:1\n1 qid:9 1:2\n0 qid:7 1:3\n0 qid:9 1:4\n", "rank.train")
    write("5\n6\n7\n8\n", "rank.train.position")
    cache = tmp_path / "cache"
    first = read_ranking_file(path, cache_dir=cache)
    monkeypatch.setattr(readers, "_parse", _no_parse)
    second = read_ranking_file(path, cache_dir=cache)
    assert _positions(second) == _positions(first) == [5, 7, 6, 8]


def test_a_changed_position_file_is_read_again(write: WriteFile, tmp_path: Path) -> None:
    path = write(LETOR, "rank.train")
    cache = tmp_path / "cache"
    assert read_ranking_file(path, cache_dir=cache).positions is None  # cached without positions
    pfile = write("0\n1\n0\n1\n", "rank.train.position")  # a new side file
    assert _positions(read_ranking_file(path, cache_dir=cache)) == [0, 1, 0, 1]
    stat = pfile.stat()
    pfile.write_text("1\n0\n1\n0\n")  # same size
    os.utime(pfile, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # and the same mtime
    assert _positions(read_ranking_file(path, cache_dir=cache)) == [1, 0, 1, 0]
    pfile.write_text("3\n3\n3\n3\n")
    assert _positions(read_ranking_file(path, cache_dir=cache)) == [3, 3, 3, 3]
    pfile.unlink()  # a removed side file: no positions, not the cached ones
    assert read_ranking_file(path, cache_dir=cache).positions is None


def test_a_split_of_several_files_keeps_positions_with_their_rows(write: WriteFile) -> None:
    a = write("2 qid:7 1:1\n0 qid:7 1:2\n", "a.txt")
    write("0\n1\n", "a.txt.position")
    b = write("1 qid:9 1:3\n0 qid:7 1:4\n", "b.txt")  # qid 7 again: regrouped across the parts
    write("4\n2\n", "b.txt.position")
    data = read_split_files({"train": [a, b]})["train"]
    assert data.qids.tolist() == [7, 9]
    assert data.features[:, 0].tolist() == [1, 2, 4, 3]
    assert _positions(data) == [0, 1, 2, 4]


def test_a_split_with_positions_in_only_some_files_is_an_error(write: WriteFile) -> None:
    a = write("2 qid:7 1:1\n", "a.txt")
    write("0\n", "a.txt.position")
    b = write("1 qid:9 1:3\n", "b.txt")
    with pytest.raises(DataError, match="b has no positions") as exc:
        read_split_files({"train": [a, b]})
    _one_line(exc)


@pytest.mark.parametrize(
    ("positions", "message"),
    [
        ("0\n-1\n0\n1\n", r"position -1 at line 2 of .*rank\.train\.position \(qid 7\) is negative"),
        ("0\n1\n0.5\n1\n", r"line 3 of .*rank\.train\.position \(qid 9\) '0\.5' is not an integer"),
        ("0\n1\nx\n1\n", r"line 3 of .*rank\.train\.position \(qid 9\) 'x' is not an integer"),
        ("0\n\n0\n1\n", r"line 2 of .*rank\.train\.position \(qid 7\) is blank"),
        ("0\n1\n0\n", r"rank\.train\.position has 3 positions but .*rank\.train has 4 data rows"),
        ("0\n1\n0\n1\n2\n", r"rank\.train\.position has 5 positions but .*rank\.train has 4 data rows"),
    ],
    ids=["negative", "non-integer", "not-a-number", "blank-line", "too-few", "too-many"],
)
def test_bad_position_files_stop_with_one_line(write: WriteFile, positions: str, message: str) -> None:
    path = write(LETOR, "rank.train")
    write(positions, "rank.train.position")
    with pytest.raises(DataError, match=message) as exc:
        read_ranking_file(path)
    _one_line(exc)


def test_a_bad_position_file_is_not_hidden_by_the_cache(write: WriteFile, tmp_path: Path) -> None:
    path = write(LETOR, "rank.train")
    pfile = write("0\n1\n0\n1\n", "rank.train.position")
    cache = tmp_path / "cache"
    read_ranking_file(path, cache_dir=cache)
    pfile.write_text("0\n-1\n0\n1\n")
    with pytest.raises(DataError, match="is negative"):
        read_ranking_file(path, cache_dir=cache)


# ---------------------------------------------------------------------------------------------
# position columns of Parquet / CSV tables


def _parquet(path: Path, **columns: list[Any]) -> Path:
    pq.write_table(pa.table(columns), path)
    return path


def test_parquet_position_column_gives_positions_not_a_feature(tmp_path: Path) -> None:
    path = _parquet(
        tmp_path / "train.parquet",
        qid=[7, 7, 9, 9], label=[2, 0, 1, 0], f1=[0.5, 1.5, 2.0, 1.0], pos=[1, 0, 0, 1],
        f2=[1.0, 0.0, 0.0, 1.0],
    )
    data = read_ranking_file(path, position_column="pos")
    assert _positions(data) == [1, 0, 0, 1]
    assert data.feature_names == ("f1", "f2")
    assert data.features.tolist() == [[0.5, 1.0], [1.5, 0.0], [2.0, 0.0], [1.0, 1.0]]
    # without position_column the column is an ordinary feature (nothing hidden by default)
    plain = read_ranking_file(path)
    assert plain.positions is None
    assert "pos" in plain.feature_names


def test_csv_position_column_gives_positions_not_a_feature(write: WriteFile) -> None:
    path = write("qid,label,f1,position\n9,1,0.5,2\n7,2,1.0,0\n9,0,2.0,1\n7,0,3.0,1\n", "train.csv")
    data = read_ranking_file(path, position_column="position")
    assert data.qids.tolist() == [9, 7]  # regrouped: positions follow their rows
    assert data.features[:, 0].tolist() == [0.5, 2.0, 1.0, 3.0]
    assert _positions(data) == [2, 1, 0, 1]
    assert data.feature_names == ("f1",)


def test_explicit_feature_columns_still_read_the_position_column(tmp_path: Path) -> None:
    path = _parquet(tmp_path / "t.parquet", qid=[1, 1], label=[1, 0], f1=[0.1, 0.2], pos=[0, 1])
    data = read_ranking_file(path, position_column="pos", feature_columns=["f1"])
    assert _positions(data) == [0, 1]
    with pytest.raises(DataError, match=r"also in data\.feature_columns") as exc:
        read_ranking_file(path, position_column="pos", feature_columns=["f1", "pos"])
    _one_line(exc)


def test_table_positions_come_back_from_the_cache(
    write: WriteFile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write("qid,label,f1,pos\n1,1,0.5,3\n1,0,1.0,4\n", "train.csv")
    cache = tmp_path / "cache"
    assert read_ranking_file(path, position_column="pos", cache_dir=cache).positions is not None
    monkeypatch.setattr(readers, "_parse", _no_parse)
    assert _positions(read_ranking_file(path, position_column="pos", cache_dir=cache)) == [3, 4]


@pytest.mark.parametrize(
    ("pos", "message"),
    [
        ("0|-2|1", r"position -2 at line 3 of .*t\.csv \(qid 7\) is negative"),
        ("0|1.5|1", r"position 1.5 at line 3 of .*t\.csv \(qid 7\) is not an integer"),
        ("0||1", r"position at line 3 of .*t\.csv \(qid 7\) is missing"),
        ("0|top|1", r"position 'top' at line 3 of .*t\.csv \(qid 7\) is not a number"),
    ],
    ids=["negative", "non-integer", "missing-value", "text"],
)
def test_bad_csv_positions_stop_with_one_line(write: WriteFile, pos: str, message: str) -> None:
    values = pos.split("|")
    rows = [f"7,1,0.5,{values[0]}", f"7,0,1.0,{values[1]}", f"9,1,2.0,{values[2]}"]
    path = write("qid,label,f1,pos\n" + "\n".join(rows) + "\n", "t.csv")
    with pytest.raises(DataError, match=message) as exc:
        read_ranking_file(path, position_column="pos")
    _one_line(exc)


def test_bad_parquet_position_names_the_row(tmp_path: Path) -> None:
    path = _parquet(tmp_path / "t.parquet", qid=[3, 3, 4], label=[1, 0, 1], f1=[0.1, 0.2, 0.3], pos=[0, 1, -1])
    with pytest.raises(DataError, match=r"position -1 at row 3 of .*t\.parquet \(qid 4\) is negative") as exc:
        read_ranking_file(path, position_column="pos")
    _one_line(exc)


@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_a_missing_position_column_is_an_error(write: WriteFile, tmp_path: Path, kind: str) -> None:
    if kind == "csv":
        path = write("qid,label,f1\n1,1,0.5\n", "t.csv")
    else:
        path = _parquet(tmp_path / "t.parquet", qid=[1], label=[1], f1=[0.5])
    with pytest.raises(DataError, match=r"t\.(csv|parquet) has no position column 'pos'.*data\.position_column") as exc:
        read_ranking_file(path, position_column="pos")
    _one_line(exc)
    # and with explicit feature columns (Parquet reads only the named columns)
    with pytest.raises(DataError, match="has no position column 'pos'"):
        read_ranking_file(path, position_column="pos", feature_columns=["f1"])


def test_parquet_config_passes_position_column(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    for i, split in enumerate(("train", "valid", "test")):
        n = 40
        _parquet(
            tmp_path / f"{split}.parquet", qid=np.repeat(np.arange(10) + 100 * i, 4).tolist(),
            label=rng.integers(0, 3, n).tolist(), f1=rng.random(n).tolist(),
            rank=np.tile(np.arange(4), 10).tolist(),
        )
    cfg = compose_train([
        "data=parquet", f"data.train={tmp_path / 'train.parquet'}", f"data.valid={tmp_path / 'valid.parquet'}",
        f"data.test={tmp_path / 'test.parquet'}", "data.position_column=rank", "data.cache=false",
    ])
    assert reader_options(cfg.data)["position_column"] == "rank"
    splits = load_splits(cfg.data, cfg.split, seed=0)
    for _, split in splits.items():
        assert _positions(split) == np.tile(np.arange(4), 10).tolist()
        assert split.feature_names == ("f1",)


# ---------------------------------------------------------------------------------------------
# fingerprint


def _legacy_hash(data: RankingData) -> str:
    h = hashlib.sha256()
    for name in ("features", "labels", "qids", "offsets"):
        arr = np.ascontiguousarray(getattr(data, name))
        arr = arr.astype(arr.dtype.newbyteorder("<"), copy=False)
        h.update(f"{name}:{arr.dtype.str}:{arr.shape}".encode())
        h.update(arr.reshape(-1).view(np.uint8).data)
    return h.hexdigest()[:16]


def test_fingerprint_hashes_positions_only_when_present(write: WriteFile) -> None:
    path = write(LETOR, "rank.train")
    plain = read_ranking_file(path)
    assert content_hash(plain) == _legacy_hash(plain)  # data without positions hashes as before
    pfile = write("0\n1\n0\n1\n", "rank.train.position")
    with_positions = read_ranking_file(path)
    pfile.write_text("1\n0\n1\n0\n")
    other_positions = read_ranking_file(path)
    hashes = {content_hash(plain), content_hash(with_positions), content_hash(other_positions)}
    assert len(hashes) == 3
    assert content_hash(dataclasses.replace(with_positions, positions=None)) == content_hash(plain)


# ---------------------------------------------------------------------------------------------
# end to end: position-bias training on LETOR files with .position side files


def _write_logged_split(path: Path, rng: np.random.Generator, *, n_queries: int = 60, n_docs: int = 10,
                        first_qid: int = 0) -> np.ndarray:
    lines, positions = [], []
    for q in range(first_qid, first_qid + n_queries):
        x = rng.random((n_docs, 4))
        grade = np.clip(np.round(3 * x[:, 0] + 0.5 * rng.standard_normal(n_docs)), 0, 4).astype(int)
        shown = np.argsort(-(grade + rng.standard_normal(n_docs)), kind="stable")
        pos = np.empty(n_docs, dtype=int)
        pos[shown] = np.arange(n_docs)
        for d in range(n_docs):
            feats = " ".join(f"{j + 1}:{x[d, j]:.4f}" for j in range(4))
            lines.append(f"{grade[d]} qid:{q} {feats}")
        positions.extend(pos.tolist())
    path.write_text("\n".join(lines) + "\n")
    path.with_name(path.name + ".position").write_text("\n".join(map(str, positions)) + "\n")
    return np.asarray(positions, dtype=np.int32)


def test_position_bias_run_trains_on_letor_files_with_position_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(3)
    files = {s: tmp_path / f"{s}.txt" for s in ("train", "valid", "test")}
    written = {s: _write_logged_split(p, rng, first_qid=1000 * i) for i, (s, p) in enumerate(files.items())}
    from ltr.training import local as training

    seen: list[np.ndarray] = []
    original = training.lgb.Dataset

    def spy(*args: Any, **kwargs: Any) -> Any:  # the data sets LightGBM trains on, as built
        if kwargs.get("position") is not None:
            seen.append(kwargs["position"])
        return original(*args, **kwargs)

    monkeypatch.setattr(training.lgb, "Dataset", spy)
    cfg = compose_train([
        "data=svmlight", f"data.train={files['train']}", f"data.valid={files['valid']}",
        f"data.test={files['test']}", f"data.cache_dir={tmp_path / 'cache'}", "tracking=none",
        "model.position_bias=true", "model.num_leaves=7", "fit.num_boost_round=20",
        "fit.early_stopping_rounds=5", "fit.show_progress=false",
    ])
    out = pipeline.run(cfg)
    assert len(seen) == 1, "the training set was built without positions"
    np.testing.assert_array_equal(seen[0], written["train"])
    assert out.best_iteration >= 1
    assert 0.0 < out.metrics["test/ndcg_at_10"] <= 1.0

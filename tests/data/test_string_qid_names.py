"""String qids read by ``ltr train``'s table reader keep their written form
(``RankingData.qid_names``, what ``ltr predict`` writes), through regrouping and the parse cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ltr.data import cache as data_cache
from ltr.data import readers
from ltr.data.readers import concat_ranking_data, read_ranking_file


def _never(*args: object, **kwargs: object) -> object:
    raise AssertionError("parsed again: the cache was not used")


def test_string_qids_keep_their_names_through_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(data_cache, "RECENT_ENTRIES", 0)  # every read meets the disk
    path = tmp_path / "q.csv"
    # "b" is split in two runs: regrouped after its first run (a warning), numbered in order of first appearance
    path.write_text("qid,label,f1\nb,1,0.5\nb,0,0.25\nQ 7,2,1\nb,1,3\né,0,2\n")
    first = read_ranking_file(path, cache_dir=tmp_path / "cache")
    assert first.qids.tolist() == [0, 1, 2]
    assert first.qid_names is not None
    assert first.qid_names.tolist() == ["b", "Q 7", "é"]
    assert first.offsets.tolist() == [0, 3, 4, 5]
    assert first.features[:, 0].tolist() == [0.5, 0.25, 3.0, 1.0, 2.0]
    monkeypatch.setattr(readers, "_parse", _never)
    second = read_ranking_file(path, cache_dir=tmp_path / "cache")
    assert second.qid_names is not None
    assert second.qid_names.tolist() == ["b", "Q 7", "é"]
    assert second.qids.tolist() == first.qids.tolist()
    kept = first.take_queries(np.array([2, 0]))
    assert kept.qid_names is not None
    assert kept.qid_names.tolist() == ["é", "b"]


def test_files_of_string_qids_join_by_name(tmp_path: Path) -> None:
    """Each file numbers its string qids from 0; stacked, a qid is its written name: "c" of the
    second file is not "a" of the first, and "a" in both is one query (regrouped)."""
    (tmp_path / "x.csv").write_text("qid,label,f1\na,1,1\na,0,2\nb,2,3\n")
    (tmp_path / "y.csv").write_text("qid,label,f1\nc,1,4\na,0,5\n")
    (tmp_path / "z.csv").write_text("qid,label,f1\n7,1,6\n")
    parts = [read_ranking_file(tmp_path / f"{n}.csv") for n in "xyz"]
    data = concat_ranking_data(parts, name="xyz")
    assert data.qids.tolist() == [0, 1, 2, 3]
    assert data.qid_names is not None
    assert data.qid_names.tolist() == ["a", "b", "c", "7"]
    assert data.offsets.tolist() == [0, 3, 4, 5, 6]
    assert data.features[:, 0].tolist() == [1.0, 2.0, 5.0, 3.0, 4.0, 6.0]

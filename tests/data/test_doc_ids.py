"""Document ids: LETOR ``#docid = X`` comments, kept with their rows through regrouping and splits."""

from __future__ import annotations

import json
import logging
import re
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

from ltr.config.groups.data import LetorPartsDataConfig, SplitConfig
from ltr.data import cache as data_cache
from ltr.data.formats import read_text, readers
from ltr.data.formats.read_text import parse_svmlight
from ltr.data.formats.readers import concat_ranking_data, read_ranking_file
from ltr.data.load import load_splits, reader_options
from ltr.data.ranking_data import RankingData
from ltr.data.splits import kfold_split, split_queries
from ltr.errors import DataError
from tests.conftest import compose_train, examples
from tests.data.conftest import SHARED_DATA, WriteFile

#: The contract, written independently of the kernel: the first ``docid = X`` (any case, optional
#: spaces or tabs around ``=``) that starts the comment or follows a space, tab or ``#``; X runs
#: to the next space, tab or CR.
_DOCID = re.compile(r"(?:^|(?<=[ \t#]))docid[ \t]*=[ \t]*([^ \t\r\n]+)", re.IGNORECASE | re.ASCII)


def reference_doc_id(line: str) -> str | None:
    if "#" not in line:
        return None
    found = _DOCID.search(line.split("#", 1)[1])
    return None if found is None else found.group(1)


@pytest.mark.parametrize(
    ("comment", "expected"),
    [
        ("#docid = GX000-00-0000000 inc = 1 prob = 0.0212", "GX000-00-0000000"),  # MQ2008's form
        ("#docid=X1", "X1"),
        ("# docid = A b", "A"),
        ("#docid = B#2 inc = 1", "B#2"),  # a '#' inside the id is part of it
        ("# first # docid = C3", "C3"),  # a second '#' is comment text
        ("#docid = D4   ", "D4"),  # trailing spaces
        ("#docid = E5\r", "E5"),  # CRLF line end
        ("#\tDOCID\t=\tF6", "F6"),  # any case, tabs
        ("#docid = \tG7", "G7"),
        ("#docid\r docid = G8", "G8"),  # a docid without a value is passed over
        ("#mydocid = H8", None),  # not at the start of a word
        ("#docids = I9", None),
        ("#docid: J10", None),
        ("#docid =", None),
        ("# just a comment", None),
        ("", None),
    ],
)
def test_comment_table(write: WriteFile, comment: str, expected: str | None) -> None:
    table = parse_svmlight(write(f"1 qid:3 1:0.5 {comment}\n"))
    assert reference_doc_id(f"1 qid:3 1:0.5 {comment}") == expected  # the reference agrees
    assert (None if table.doc_ids is None else table.doc_ids.tolist()) == (None if expected is None else [expected])


_NOISE = st.text(alphabet=st.sampled_from(list(" \t#=-_.:xyzDOCIDdocidé0123")), max_size=12)
_VALUE = st.text(alphabet=st.sampled_from(list("AZaz09-_.#:/=é")), min_size=1, max_size=10)


@st.composite
def _line(draw: st.DrawFn, qid: int) -> tuple[str, str]:
    """A data line with a comment around a docid (most of the time), and its line end."""
    comment = draw(_NOISE)
    if draw(st.integers(0, 9)) > 0:
        key = draw(st.sampled_from(["docid", "DocId", "DOCID"]))
        eq = draw(st.sampled_from(["=", " = ", "\t=\t", " =", "= "]))
        comment += draw(st.sampled_from([" ", "\t", "#", ""])) + key + eq + draw(_VALUE) + draw(_NOISE)
    features = draw(st.sampled_from(["1:0.5", "1:0.5 2:1", "3:2"]))
    gap = draw(st.sampled_from([" ", "", "\t"]))
    end = draw(st.sampled_from(["\n", "\r\n", "  \n", " \r\n"]))
    return f"{draw(st.integers(0, 4))} qid:{qid} {features}{gap}#{comment}", end


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_doc_ids_match_the_reference_parser(write: WriteFile, data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 12))
    lines = [data.draw(_line(qid=i // 3)) for i in range(n)]
    table = parse_svmlight(write("".join(text + end for text, end in lines)))
    expected = [reference_doc_id(text + end) for text, end in lines]
    if all(e is not None for e in expected):
        assert table.doc_ids is not None
        assert table.doc_ids.tolist() == expected
        assert all(type(d) is str for d in table.doc_ids)
        assert table.notes == ()
    else:
        assert table.doc_ids is None
        if any(e is not None for e in expected):  # some lines name a document, some do not
            first = next(i for i, e in enumerate(expected) if e is None) + 1
            assert len(table.notes) == 1
            assert f"but line {first} does not" in table.notes[0]
        else:
            assert table.notes == ()


def test_files_without_comments_have_no_doc_ids(write: WriteFile) -> None:
    data = read_ranking_file(write("1 qid:1 1:1\n0 qid:1 2:1\n"))
    assert data.doc_ids is None


def test_some_lines_without_docid_give_none_and_one_warning(
    write: WriteFile, caplog: pytest.LogCaptureFixture
) -> None:
    path = write("# header\n1 qid:1 1:1 #docid = a\n0 qid:1 2:1 # other\n1 qid:2 1:1 #docid = c\n")
    with caplog.at_level(logging.WARNING):
        data = read_ranking_file(path)
    assert data.doc_ids is None
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [f"{path}: 2 of 3 data lines name a document (# docid = ...) but line 3 does not; "
                        "the rows get no doc ids (give every line a docid, or none)"]


def test_regrouped_rows_keep_their_doc_ids(write: WriteFile) -> None:
    data = read_ranking_file(write("2 qid:7 1:2 #docid = a\n0 qid:9 1:0 #docid = b\n1 qid:7 1:1 #docid = c\n"))
    assert data.qids.tolist() == [7, 9]
    assert data.doc_ids is not None
    assert data.doc_ids.tolist() == ["a", "c", "b"]
    assert data.features[:, 0].tolist() == [2, 1, 0]  # each id stays beside its own row


def _docid_file(write: WriteFile, n: int = 3000) -> tuple[Path, list[str]]:
    rng = np.random.default_rng(3)
    lines, ids = [], []
    for i in range(n):
        if i % 97 == 0:
            lines.append("# a comment line, docid = not-a-row")
        if i % 89 == 0:
            lines.append("")
        doc = f"GX{i:05d}-{rng.integers(0, 99):02d}"
        ids.append(doc)
        lines.append(f"{rng.integers(0, 5)} qid:{i // 9} 1:{rng.normal():.5g} {rng.integers(2, 300)}:1 #docid = {doc} inc = 1")
    return write("\n".join(lines)), ids  # no final newline


@pytest.mark.parametrize(("threads", "chunk"), [(1, 1 << 12), (2, 1 << 12), (3, 1 << 25)])
def test_chunked_and_parallel_parses_keep_the_doc_ids(
    write: WriteFile, monkeypatch: pytest.MonkeyPatch, threads: int, chunk: int
) -> None:
    path, ids = _docid_file(write)
    monkeypatch.setattr(read_text, "PARSE_THREADS", threads)
    monkeypatch.setattr(read_text, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(read_text, "CHUNK_BYTES", chunk)
    table = parse_svmlight(path)
    assert table.doc_ids is not None
    assert table.doc_ids.tolist() == ids


def _data_with_ids(n_queries: int = 40) -> RankingData:
    rng = np.random.default_rng(0)
    sizes = rng.integers(1, 6, n_queries)
    n = int(sizes.sum())
    return RankingData.from_group_sizes(
        np.arange(n, dtype=np.float32)[:, None], rng.integers(0, 3, n), np.arange(100, 100 + n_queries), sizes,
        doc_ids=np.array([f"d{i}" for i in range(n)], dtype=object),
    )


def test_splits_keep_each_rows_doc_id() -> None:
    data = _data_with_ids()
    parts = [*split_queries(data, valid_fraction=0.2, test_fraction=0.2, seed=1).items()]
    parts += [*kfold_split(data, n_folds=4, fold=2, valid_fraction=0.25, seed=1).items()]
    for _, part in parts:
        assert part.doc_ids is not None
        # feature 0 is the row's index in `data`, so the row's id must be d<feature 0>
        assert part.doc_ids.tolist() == [f"d{int(v)}" for v in part.features[:, 0]]
    n = sum(p.n_rows for _, p in parts[:3])
    assert n == data.n_rows


def test_concatenation_keeps_doc_ids_and_drops_them_when_a_part_has_none(caplog: pytest.LogCaptureFixture) -> None:
    a, b = _data_with_ids(5), _data_with_ids(3)
    both = concat_ranking_data([a, b.take_queries(np.arange(3), name="b")], name="ab")
    assert both.doc_ids is not None
    assert both.doc_ids.tolist() == [f"d{int(v)}" for v in both.features[:, 0]]
    import dataclasses

    with caplog.at_level(logging.WARNING):
        mixed = concat_ranking_data([a, dataclasses.replace(b, doc_ids=None, name="plain")], name="m")
    assert mixed.doc_ids is None
    assert "plain has no doc ids but data has" in caplog.text


def test_ranking_data_checks_the_doc_ids_shape() -> None:
    data = _data_with_ids(3)
    with pytest.raises(ValueError, match=r"doc_ids have shape \(2,\), expected"):
        RankingData(data.features, data.labels, data.qids, data.offsets, doc_ids=np.array(["a", "b"], dtype=object))
    as_list = RankingData(data.features, data.labels, data.qids, data.offsets, doc_ids=[str(i) for i in range(data.n_rows)])  # type: ignore[arg-type]
    assert as_list.doc_ids is not None
    assert as_list.doc_ids.dtype == object
    assert type(as_list.doc_ids[0]) is str


def test_cache_round_trip_keeps_doc_ids_and_the_partial_warning(
    write: WriteFile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(data_cache, "RECENT_ENTRIES", 0)  # every read meets the disk
    ids = ["GX-1", "é\u4e2d", "b#2", "x=y"]  # any UTF-8
    path = write("".join(f"{i % 3} qid:{i // 2} 1:{i} #docid = {d}\n" for i, d in enumerate(ids)))
    cache = tmp_path / "cache"
    plain = write("1 qid:1 1:1\n", "plain.txt")
    partial = write("1 qid:1 1:1 #docid = a\n1 qid:1 1:1\n", "partial.txt")
    first = read_ranking_file(path, cache_dir=cache)
    read_ranking_file(plain, cache_dir=cache)
    read_ranking_file(partial, cache_dir=cache)
    entry = cache / data_cache.cache_key([path], _options_of(path))
    assert {"doc_id_utf8.npy", "doc_id_offsets.npy"} <= {p.name for p in entry.iterdir()}
    monkeypatch.setattr(readers, "_parse", _no_parse)
    second = read_ranking_file(path, cache_dir=cache)
    assert first.doc_ids is not None
    assert second.doc_ids is not None
    assert second.doc_ids.tolist() == first.doc_ids.tolist() == ids
    assert all(type(d) is str for d in second.doc_ids)
    # a file without doc ids stays without; one with some lines unnamed repeats its warning
    assert read_ranking_file(plain, cache_dir=cache).doc_ids is None
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert read_ranking_file(partial, cache_dir=cache).doc_ids is None
    assert "but line 2 does not" in caplog.text


def test_a_cache_entry_with_one_doc_id_array_is_replaced(write: WriteFile, tmp_path: Path) -> None:
    path = write("1 qid:1 1:1 #docid = a\n")
    cache = tmp_path / "cache"
    read_ranking_file(path, cache_dir=cache)
    entry = cache / data_cache.cache_key([path], _options_of(path))
    meta = json.loads((entry / "meta.json").read_text())
    del meta["arrays"]["doc_id_offsets"]
    meta["digest"] = data_cache.meta_digest(meta)
    (entry / "meta.json").write_text(json.dumps(meta))
    (entry / "doc_id_offsets.npy").unlink()
    data_cache.forget_recent()
    assert data_cache.load_cached(cache, [path], _options_of(path)) is None  # refused, removed
    assert not entry.exists()


def _options_of(path: Path) -> dict[str, object]:
    """The reader options :func:`read_ranking_file` keys a LETOR file's entry with (defaults)."""
    from ltr.data.validate import LIGHTGBM_MAX_DEFAULT_LABEL, LIGHTGBM_MAX_LIST_LEN

    return {
        "format": "letor", "n_features": None, "qid_column": "qid", "label_column": "label",
        "feature_columns": None, "delimiter": None, "position_column": None,
        "integer_labels": True, "max_label": LIGHTGBM_MAX_DEFAULT_LABEL, "max_list_len": LIGHTGBM_MAX_LIST_LEN,
    }


def _no_parse(*args: object, **kwargs: object) -> None:
    raise AssertionError("parsed although the cache should have answered")


MQ2008 = SHARED_DATA / "mq2008"


def _raw_line(path: Path, line: int) -> str:
    """Line ``line`` of a gzipped file, read by the system's tools (not by ltr)."""
    out = subprocess.run(f"zcat {path} | sed -n '{line}p'", shell=True, capture_output=True, text=True, check=True)
    return out.stdout


def _grep_count(path: Path, pattern: str) -> int:
    out = subprocess.run(["bash", "-c", f"zcat {path} | grep -c -F -e '{pattern}'"], capture_output=True, text=True)
    return int(out.stdout.strip() or 0)


@pytest.mark.slow  # zcat and grep as the reference, in subprocesses: e2e
@pytest.mark.skipif(not MQ2008.is_dir(), reason=f"{MQ2008} is absent")
def test_mq2008_through_the_data_config_keeps_the_docids(tmp_path: Path) -> None:
    cfg = OmegaConf.structured(LetorPartsDataConfig(root=str(MQ2008), fold=1))  # test = S5, valid = S4
    cfg.cache_dir = str(tmp_path)
    data_cache.forget_recent()
    first = load_splits(cfg, OmegaConf.structured(SplitConfig), seed=0)
    data_cache.forget_recent()
    splits = load_splits(cfg, OmegaConf.structured(SplitConfig), seed=0)  # from the disk cache
    rng = np.random.default_rng(0)
    for split, part in (("test", "S5"), ("valid", "S4")):
        data: RankingData = getattr(splits, split)
        assert data.doc_ids is not None
        assert data.doc_ids.tolist() == getattr(first, split).doc_ids.tolist()
        row_qids = data.row_qids()
        for row in rng.choice(data.n_rows, size=4, replace=False):
            # MQ2008's parts hold one line per row, queries contiguous: row r is line r + 1
            line = _raw_line(MQ2008 / f"{part}.txt.gz", int(row) + 1)
            label, qid = line.split()[:2]
            assert (int(label), qid) == (int(data.labels[row]), f"qid:{row_qids[row]}")
            found = re.search(r"#docid = (\S+) ", line)
            assert found is not None
            assert data.doc_ids[row] == found.group(1)
            assert _grep_count(MQ2008 / f"{part}.txt.gz", f"qid:{row_qids[row]} ") > 0
            assert _grep_count(MQ2008 / f"{part}.txt.gz", f"#docid = {data.doc_ids[row]} ") >= 1
    train = splits.train  # S1 + S2 + S3, stacked
    assert train.doc_ids is not None
    assert len(train.doc_ids) == train.n_rows
    s1 = read_ranking_file(MQ2008 / "S1.txt.gz")
    assert s1.doc_ids is not None
    assert train.doc_ids[: s1.n_rows].tolist() == s1.doc_ids.tolist()
    assert _grep_count(MQ2008 / "S3.txt.gz", f"#docid = {train.doc_ids[-1]} ") >= 1


# ---------------------------------------------------------------------------------------------
# Parquet / CSV: data.doc_id_column


def _table(tmp_path: Path, kind: str, **columns: list[object]) -> Path:
    path = tmp_path / f"t.{kind}"
    frame = pd.DataFrame(columns)
    if kind == "parquet":
        frame.to_parquet(path)
    else:
        frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("kind", ["parquet", "csv"])
def test_doc_id_column_is_read_as_text_and_is_not_a_feature(tmp_path: Path, kind: str) -> None:
    path = _table(
        tmp_path, kind, qid=[9, 7, 9], label=[1, 0, 2], f1=[0.5, 1.5, 2.5], url=["u/a", "u b", "u,c"]
    )
    data = read_ranking_file(path, doc_id_column="url")
    assert data.feature_names == ("f1",)
    assert data.doc_ids is not None
    assert data.doc_ids.tolist() == ["u/a", "u,c", "u b"]  # regrouped with their rows: qid 9, 9, 7
    assert data.features[:, 0].tolist() == [0.5, 2.5, 1.5]
    assert read_ranking_file(path, feature_columns=["f1"]).doc_ids is None  # not asked: none
    numbers = _table(tmp_path, kind, qid=[1, 1], label=[1, 0], f1=[0.0, 1.0], doc=[101, 7])
    ids = read_ranking_file(numbers, doc_id_column="doc", feature_columns=["f1"]).doc_ids
    assert ids is not None
    assert ids.tolist() == ["101", "7"]


@pytest.mark.parametrize("kind", ["parquet", "csv"])
def test_doc_id_column_errors_are_one_line(tmp_path: Path, kind: str) -> None:
    path = _table(tmp_path, kind, qid=[1, 1, 2], label=[1, 0, 2], f1=[0.5, 1.5, 2.5], url=["a", None, "c"])
    with pytest.raises(DataError, match=rf"^{re.escape(str(path))} has no doc id column 'docno' \(columns: qid, label, f1, url\); set data.doc_id_column=<name>$"):
        read_ranking_file(path, doc_id_column="docno")
    where = "line 3" if kind == "csv" else "row 2"  # CSV: the header is line 1
    null = "an empty string" if kind == "csv" else "null"  # CSV has no null text
    with pytest.raises(DataError, match=rf"^doc id column 'url' of .*: {where} has no document id \({null}\); "):
        read_ranking_file(path, doc_id_column="url")
    with pytest.raises(DataError, match="a document id is not a feature"):
        read_ranking_file(path, doc_id_column="url", feature_columns=["f1", "url"])


def test_doc_id_column_on_a_text_file_is_refused(write: WriteFile) -> None:
    path = write("1 qid:1 1:1 #docid = a\n")
    with pytest.raises(DataError, match=r"^data.doc_id_column='url' names a column of a Parquet / CSV table, but .* set data.doc_id_column=null$"):
        read_ranking_file(path, doc_id_column="url")


def test_parquet_config_passes_doc_id_column_and_the_cache_keeps_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(data_cache, "RECENT_ENTRIES", 0)
    rng = np.random.default_rng(0)
    for i, split in enumerate(("train", "valid", "test")):
        n = 40
        pd.DataFrame({
            "qid": np.repeat(np.arange(10) + 100 * i, 4), "label": rng.integers(0, 3, n),
            "f1": rng.random(n), "docno": [f"{split}-{j}" for j in range(n)],
        }).to_parquet(tmp_path / f"{split}.parquet")
    overrides = [
        "data=parquet", f"data.train={tmp_path / 'train.parquet'}", f"data.valid={tmp_path / 'valid.parquet'}",
        f"data.test={tmp_path / 'test.parquet'}", f"data.cache_dir={tmp_path / 'cache'}",
    ]
    cfg = compose_train([*overrides, "data.doc_id_column=docno"])
    assert reader_options(cfg.data)["doc_id_column"] == "docno"
    for _ in range(2):  # parsed, then from the cache
        splits = load_splits(cfg.data, cfg.split, seed=0)
        for name, split in splits.items():
            assert split.feature_names == ("f1",)
            assert split.doc_ids is not None
            assert split.doc_ids.tolist() == [f"{name}-{j}" for j in range(40)]
    plain = load_splits(compose_train([*overrides, "data.feature_columns=[f1]"]).data, cfg.split, seed=0)
    assert plain.test.doc_ids is None  # another cache entry: the option is part of the key


def test_doc_ids_are_not_part_of_the_fingerprint(write: WriteFile) -> None:
    from ltr.data.fingerprint import fingerprint

    lines = ["2 qid:7 1:0.5 3:1", "0 qid:7 2:1.5", "1 qid:9 1:2"]
    plain = read_ranking_file(write("\n".join(lines) + "\n", "plain.txt"))
    named = read_ranking_file(write("".join(f"{x} #docid = d{i}\n" for i, x in enumerate(lines)), "named.txt"))
    assert named.doc_ids is not None
    assert plain.doc_ids is None
    assert fingerprint(named) == fingerprint(plain)


def test_docstring_examples_run() -> None:
    import doctest

    from ltr.data import ranking_data
    from ltr.data.formats import doc_ids

    for module in (doc_ids, ranking_data):
        result = doctest.testmod(module)
        assert result.attempted > 0
        assert result.failed == 0, module.__name__


def test_encode_decode_round_trip_any_text() -> None:
    from ltr.data.formats.doc_ids import decode, encode

    ids = np.array(["", "a\nb", "é中", "x" * 1000, " spaced "], dtype=object)
    data, offsets = encode(ids)
    assert offsets.dtype == np.int64
    assert offsets.tolist()[0] == 0
    assert decode(data, offsets).tolist() == ids.tolist()
    with pytest.raises(ValueError, match="not valid UTF-8"):
        decode(np.array([0xFF], dtype=np.uint8), np.array([0, 1]))
    with pytest.raises(ValueError, match="offsets must run from 0 to 1"):
        decode(np.array([65], dtype=np.uint8), np.array([0, 2]))

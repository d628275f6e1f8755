"""The sparse-text parser: LETOR / SVMlight / LightGBM lines into dense float32."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ltr.data.formats import _text_kernel, read_text
from ltr.data.formats.read_text import parse_svmlight
from ltr.data.formats.readers import read_ranking_file
from tests.conftest import examples
from tests.data.conftest import WriteFile


def test_sparse_to_dense_with_comments_blank_lines_and_crlf(write: WriteFile) -> None:
    text = (
        "# a header comment\n"
        "2 qid:7 1:0.5 3:1 #docid = GX-1 inc = 1\n"
        "\n"
        "0\tqid:7\t2:1.5e1\r\n"
        "   \n"
        "1 qid:9 4:-2 # trailing\n"
        "3 qid:9 1:nan 2:+.25 3:NAN"  # no final newline (inf is refused: test_input_holes.py)
    )
    table = parse_svmlight(write(text))
    assert table.features.dtype == np.float32
    assert table.features.shape == (4, 4)
    np.testing.assert_array_equal(
        table.features,
        np.array(
            [[0.5, 0, 1, 0], [0, 15, 0, 0], [0, 0, 0, -2], [np.nan, 0.25, np.nan, 0]], np.float32
        ),
    )
    assert table.labels.tolist() == [2, 0, 1, 3]
    assert table.row_qids.tolist() == [7, 7, 9, 9]
    assert table.row_lines.tolist() == [2, 4, 6, 7]


def test_width_is_the_largest_index_and_missing_is_zero(write: WriteFile) -> None:
    table = parse_svmlight(write("0 qid:1 2:1\n1 qid:1 130:2\n"))
    assert table.features.shape == (2, 130)
    assert table.features[1, 129] == 2
    assert table.features[0].sum() == 1


def test_fixed_width(write: WriteFile) -> None:
    table = parse_svmlight(write("0 qid:1 2:1\n"), n_features=5)
    assert table.features.shape == (1, 5)


def test_gzip_is_read_by_magic_bytes(write: WriteFile) -> None:
    plain = parse_svmlight(write("1 qid:3 1:0.1 2:0.2\n", "a.txt"))
    gz = parse_svmlight(write("1 qid:3 1:0.1 2:0.2\n", "a.txt.gz"))
    np.testing.assert_array_equal(plain.features, gz.features)


@pytest.mark.parametrize("chunk", [4096, 64])  # 64: most lines are longer than a chunk
def test_small_chunks_and_row_growth_give_the_same_result(
    write: WriteFile, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    rng = np.random.default_rng(0)
    lines = []
    for i in range(3000):
        idx = np.sort(rng.choice(np.arange(1, 400), size=rng.integers(1, 30), replace=False))
        feats = " ".join(f"{j}:{rng.normal():.6g}" for j in idx)
        lines.append(f"{rng.integers(0, 5)} qid:{i // 7} {feats} # row {i}")
    path = write("\n".join(lines) + "\n")
    whole = parse_svmlight(path)
    monkeypatch.setattr(read_text, "CHUNK_BYTES", chunk)
    chunked = parse_svmlight(path)
    np.testing.assert_array_equal(whole.features, chunked.features)
    np.testing.assert_array_equal(whole.labels, chunked.labels)
    np.testing.assert_array_equal(whole.row_lines, chunked.row_lines)
    assert whole.row_lines[-1] == 3000


def test_matches_sklearn_on_a_random_file(write: WriteFile) -> None:
    from sklearn.datasets import load_svmlight_file

    rng = np.random.default_rng(1)
    lines = [
        f"{rng.integers(0, 3)} qid:{i // 5} "
        + " ".join(f"{j}:{rng.random() * 10.0 ** rng.integers(-8, 8):.9g}" for j in range(1, 21))
        for i in range(500)
    ]
    path = write("\n".join(lines) + "\n")
    x, y, q = load_svmlight_file(str(path), query_id=True)
    data = read_ranking_file(path)
    np.testing.assert_array_equal(data.features, x.toarray().astype(np.float32))
    np.testing.assert_array_equal(data.labels, y.astype(np.int32))
    np.testing.assert_array_equal(data.row_qids(), q)


finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


@settings(max_examples=examples(200), deadline=None)
@given(values=st.lists(finite, min_size=1, max_size=20), fmt=st.sampled_from(["{!r}", "{:.6f}", "{:.17g}", "{:e}"]))
def test_numbers_round_like_python_float_then_float32(values: list[float], fmt: str) -> None:
    line = "0 qid:1 " + " ".join(f"{j + 1}:{fmt.format(v)}" for j, v in enumerate(values))
    buf = np.frombuffer(line.encode(), dtype=np.uint8)
    n = len(values)
    features = np.zeros((1, n), np.float32)
    status = _text_kernel.parse_chunk(
        buf, 0, 0, 0, features, np.zeros(1), np.zeros(1, np.int64), np.zeros(1, np.int64),
        np.full(n, -1, np.int64), 1, 0, _text_kernel.POW10, np.full((1, 2), -1, np.int64),
    )[0]
    with np.errstate(over="ignore"):
        expected = np.array([np.float32(float(fmt.format(v))) for v in values], np.float32)
    infinite = np.isinf(expected)
    if infinite.any():  # beyond float32: refused at the first such value, the ones before it parsed
        assert status == _text_kernel.INF_VALUE
        first = int(np.argmax(infinite))
        np.testing.assert_array_equal(features[0, :first], expected[:first])
        return
    assert status == 0
    np.testing.assert_array_equal(features[0], expected)


@pytest.mark.parametrize(
    "token",
    ["9223372036854776.000000", "123456789012345678901234", "1e-45", "3.4028236e38", "-0", "00012",
     ".5", "5.", "1E5", "+7", "1e+400", "0.000000000000000000000001", "-Infinity", "NaN"],
)
def test_edge_numbers(write: WriteFile, token: str) -> None:
    from ltr.errors import DataError

    with np.errstate(over="ignore"):
        expected = np.float32(float(token))
    if np.isinf(expected):  # inf, or beyond float32: refused, naming the line
        with pytest.raises(DataError, match=r"feature 1 has infinite value .* at line 1 of"):
            parse_svmlight(write(f"0 qid:1 1:{token}\n"))
        return
    table = parse_svmlight(write(f"0 qid:1 1:{token}\n"))
    np.testing.assert_array_equal(table.features[0, 0], expected)


@pytest.mark.parametrize("token", ["1e", "1.2.3", "--1", ".", "e5", "0x10", "1,5", "nanx", "inf5"])
def test_malformed_numbers_are_errors(write: WriteFile, token: str) -> None:
    from ltr.errors import DataError

    with pytest.raises(DataError, match=r"feature 1 has non-numeric value"):
        parse_svmlight(write(f"0 qid:1 1:{token}\n"))


def test_progress_bar_can_be_forced_on(write: WriteFile) -> None:
    table = parse_svmlight(write("1 qid:1 1:1\n"), progress=True)
    assert table.n_rows == 1


def test_docstring_examples_run() -> None:
    import doctest

    from ltr.data import fingerprint, load
    from ltr.data.formats import readers

    for module in (readers, fingerprint, load):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0, module.__name__


def test_row_estimate_too_low_grows(write: WriteFile, monkeypatch: pytest.MonkeyPatch) -> None:
    long = "".join(f"1 qid:1 {' '.join(f'{j}:{j}.5' for j in range(1, 301))}\n" for _ in range(50))
    short = "".join(f"0 qid:{2 + i // 10} 1:{i}\n" for i in range(5000))
    path = write(long + short)
    monkeypatch.setattr(read_text, "CHUNK_BYTES", 4096)
    grown: list[tuple[int, ...]] = []
    real_grow = read_text._grow

    def spy(a: np.ndarray, shape: tuple[int, ...], fill: int = 0) -> np.ndarray:
        grown.append(shape)
        return real_grow(a, shape, fill)

    monkeypatch.setattr(read_text, "_grow", spy)
    table = parse_svmlight(path)
    assert grown  # both the rows and the width had to grow
    assert table.n_rows == 5050
    assert table.features.shape == (5050, 300)
    assert table.features[-1, 0] == 4999
    assert table.features[0, 299] == 300.5
    assert table.row_lines[-1] == 5050


def test_utf8_byte_order_mark_is_skipped(write: WriteFile) -> None:
    data = read_ranking_file(write("\ufeff1 qid:1 1:2\n"))
    assert data.labels.tolist() == [1]


def test_truncated_gzip_is_a_data_error(write: WriteFile) -> None:
    import gzip

    from ltr.errors import DataError

    path = write("", "t.txt.gz")
    path.write_bytes(gzip.compress(b"1 qid:1 1:2\n" * 1000)[:-20])
    with pytest.raises(DataError, match=r"cannot read .*t.txt.gz: "):
        read_ranking_file(path)


def _messy_file(write: WriteFile, n: int = 2000) -> Path:
    rng = np.random.default_rng(5)
    lines = []
    for i in range(n):
        if i % 97 == 0:
            lines.append("# a comment line")
        if i % 89 == 0:
            lines.append("")
        idx = np.sort(rng.choice(np.arange(1, 60 + i // 10), size=rng.integers(1, 12), replace=False))
        feats = " ".join(f"{j}:{rng.normal():.5g}" for j in idx)
        lines.append(f"{rng.integers(0, 5)} qid:{i // 9} {feats}")
    return write("\n".join(lines))  # no final newline


@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("chunk", [1 << 12, 1 << 25])
def test_parallel_parse_equals_sequential(
    write: WriteFile, monkeypatch: pytest.MonkeyPatch, threads: int, chunk: int
) -> None:
    path = _messy_file(write)
    monkeypatch.setattr(read_text, "PARSE_THREADS", 1)
    sequential = parse_svmlight(path)
    monkeypatch.setattr(read_text, "PARSE_THREADS", threads)
    monkeypatch.setattr(read_text, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(read_text, "CHUNK_BYTES", chunk)
    parallel = parse_svmlight(path)
    for field in ("features", "labels", "row_qids", "row_lines"):
        np.testing.assert_array_equal(getattr(parallel, field), getattr(sequential, field))
    assert sequential.features.shape[1] == parallel.features.shape[1] > 200


@pytest.mark.parametrize("threads", [1, 2])
def test_parallel_parse_reports_the_right_line(write: WriteFile, monkeypatch: pytest.MonkeyPatch, threads: int) -> None:
    from ltr.errors import DataError

    text = "".join(f"1 qid:{i} 1:{i}\n" if i != 1500 else "# c\n\n1 qid:3 2:1 2:2\n" for i in range(3000))
    path = write(text)
    monkeypatch.setattr(read_text, "PARSE_THREADS", threads)
    monkeypatch.setattr(read_text, "PARALLEL_MIN_BYTES", 0)
    with pytest.raises(DataError, match=rf"feature index 2 appears twice at line 1503 of {path}"):
        parse_svmlight(path)

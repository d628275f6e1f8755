"""`ltr.compiled.kernels`: every kernel gives the same bits compiled (numba) and interpreted (CPython).

Each property runs the public function that calls a kernel twice, once under
``kernels.forced("compiled")`` and once under ``kernels.forced("interpreted")``, on generated
inputs that reach the kernels' branches (ties of every kind, empty lists, label values past the
counting-sort limit, gains near float64's range, scores numpy has to parse, topic tables that
grow, errors), and compares every output array bit for bit (NaN included).
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ltr.data.formats.trec as trec
from ltr.compiled import kernels
from ltr.data.formats.trec import read_qrels, read_run, read_trec
from ltr.errors import DataError
from ltr.metrics import MetricConventions
from ltr.metrics.table import HIST_MAX_LABELS, measure_arrays
from tests.conftest import examples
from tests.data.test_trec_reader import trec_files

SETTINGS = settings(
    max_examples=examples(150), deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)  # fmt: skip


def same_bits(a: Any, b: Any) -> bool:
    """Equal arrays of the same dtype, floats compared by their bits (-0.0 != 0.0, NaN == NaN)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind == "f":
        a, b = a.view(f"u{a.itemsize}"), b.view(f"u{b.itemsize}")
    return bool(np.array_equal(a, b))


def both_ways(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    """``fn(*args, **kwargs)`` compiled, then interpreted: (result or error, result or error)."""
    out = []
    for way in ("compiled", "interpreted"):
        with kernels.forced(way):  # type: ignore[arg-type]
            try:
                out.append(fn(*args, **kwargs))
            except (DataError, ValueError) as exc:
                out.append(f"{type(exc).__name__}: {exc}")
    return out[0], out[1]


@st.composite
def measure_inputs(draw: st.DrawFn) -> dict[str, Any]:
    """Ranked lists (empty ones too) with separately judged ideal labels, coarse scores (ties),
    labels from -1 up to beyond the counting sort's limit or near the exp gain's bound."""
    n_q = draw(st.integers(1, 6))
    sizes = draw(st.lists(st.integers(0, 14), min_size=n_q, max_size=n_q))
    ideal_sizes = draw(st.lists(st.integers(0, 14), min_size=n_q, max_size=n_q))
    top_label = draw(st.sampled_from([4, 4, 4, HIST_MAX_LABELS + 20, 1020]))
    label = st.one_of(st.integers(-1, 4), st.just(top_label))
    n, m = sum(sizes), sum(ideal_sizes)
    labels = np.array(draw(st.lists(label, min_size=n, max_size=n)), dtype=np.int64)
    ideal = np.array(draw(st.lists(label, min_size=m, max_size=m)), dtype=np.int64)
    score = st.one_of(st.integers(-2, 2).map(float), st.sampled_from([-0.0, 0.1, 1e300, -1e-300, 0.30000000000000004]))
    scores = np.array(draw(st.lists(score, min_size=n, max_size=n)), dtype=np.float64)
    ties = draw(st.sampled_from(["average", "stable", "pessimistic", "optimistic", "docno_desc"]))
    conventions = MetricConventions(
        gain=draw(st.sampled_from(["exp", "linear"])) if top_label < 1000 else "exp",
        ties=ties,
        zero_idcg=draw(st.sampled_from(["zero", "one", "skip"])),
        rel_threshold=draw(st.integers(0, 3)),
        discount=draw(st.sampled_from(["log2_rank_plus_1", "jarvelin"])),
    )
    tie_keys = np.array(draw(st.permutations(range(n))), dtype=np.float64) if ties == "docno_desc" else None
    return {
        "labels": labels, "scores": scores,
        "offsets": np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
        "ideal_labels": ideal, "ideal_offsets": np.concatenate([[0], np.cumsum(ideal_sizes)]).astype(np.int64),
        "ks": draw(st.lists(st.integers(1, 16), min_size=1, max_size=4, unique=True)),
        "conventions": conventions, "tie_keys": tie_keys, "full_ap": draw(st.booleans()),
    }  # fmt: skip


@SETTINGS
@given(measure_inputs())
def test_every_measure_has_the_same_bits_both_ways(inputs: dict[str, Any]) -> None:
    compiled, interpreted = both_ways(measure_arrays, **inputs)
    assert type(compiled) is type(interpreted)
    if isinstance(compiled, str):
        assert compiled == interpreted
        return
    for field in dataclasses.fields(compiled):
        a, b = getattr(compiled, field.name), getattr(interpreted, field.name)
        assert same_bits(a, b) if isinstance(a, np.ndarray) else a == b, field.name


def _read_all(run: Path, qrels: Path, missing: str, max_docs: int | None) -> dict[str, Any] | str:
    """Every field of `read_trec`'s result, of `read_qrels` and of `read_run` (or the error)."""
    try:
        inp = read_trec(run, qrels, missing_topics=missing, max_docs=max_docs)
        fields = {f.name: getattr(inp, f.name) for f in dataclasses.fields(inp)}
        fields["qrels"] = dataclasses.astuple(read_qrels(qrels))
        fields["run"] = dataclasses.astuple(read_run(run))
    except DataError as exc:
        return f"DataError: {exc}"
    return fields


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray):
        return same_bits(a, b)
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@SETTINGS
@given(
    files=trec_files(), missing=st.sampled_from(["skip", "empty", "error"]), max_docs=st.sampled_from([None, 1, 2]),
    damage=st.sampled_from([b"", b"1 Q0 short\n", b"1 Q0 a 1 x1.5 t\n", b"1 Q0 a 1 0x1p-3 t\n", b"1 Q0 a 1 1e400 t\n"]),
)  # fmt: skip
def test_trec_files_read_the_same_both_ways(
    files: tuple[bytes, bytes], missing: str, max_docs: int | None, damage: bytes, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setattr(trec, "WINDOW_BYTES", 37)  # many kernel calls, lines across their edges
    monkeypatch.setattr(trec, "SLOW_ROWS", 2)  # the kernel returns early for numpy's scores
    monkeypatch.setattr(trec, "TOPICS_START", 1)  # the topic table grows in the qrels and in the run
    run, qrels = files
    (tmp_path / "run").write_bytes(run + damage)
    (tmp_path / "qrels").write_bytes(qrels)
    compiled, interpreted = both_ways(_read_all, tmp_path / "run", tmp_path / "qrels", missing, max_docs)
    assert type(compiled) is type(interpreted)
    if isinstance(compiled, str):
        assert compiled == interpreted
        return
    assert compiled.keys() == interpreted.keys()
    for name in compiled:
        assert _same(compiled[name], interpreted[name]), name


@pytest.mark.parametrize(
    ("qrels", "run"),
    [
        ("1 0 a 1\n1 0 a 2\n", "1 Q0 a 1 1 t\n"),  # a docno judged twice
        ("1 0 a one\n", "1 Q0 a 1 1 t\n"),  # a relevance that is no integer
        ("1 0 a\n", "1 Q0 a 1 1 t\n"),  # a short qrels line
        ("1 0 a 1\n", "1 Q0 a 1 1 t\n1 Q0 a 2 0.5 t\n"),  # a docno ranked twice
        ("# only a comment\n", "1 Q0 a 1 1 t\n"),  # no judgment
    ],
)
def test_errors_are_the_same_both_ways(qrels: str, run: str, tmp_path: Path) -> None:
    (tmp_path / "q").write_text(qrels)
    (tmp_path / "r").write_text(run)
    compiled, interpreted = both_ways(_read_all, tmp_path / "r", tmp_path / "q", "skip", None)
    assert isinstance(compiled, str)
    assert compiled.startswith("DataError: ")
    assert compiled == interpreted


def test_the_topic_table_grows_the_same_both_ways(tmp_path: Path) -> None:
    # one judged topic, 300 run topics: the table grows several times while the run is read
    (tmp_path / "r").write_text("".join(f"t{i} Q0 d{i % 7} 1 {i % 3}.5 r\n" for i in range(300)) + "t1 Q0 x 2 9 r\n")
    (tmp_path / "q").write_text("t1 0 x 1\n")
    compiled, interpreted = both_ways(_read_all, tmp_path / "r", tmp_path / "q", "skip", None)
    assert isinstance(compiled, dict)
    assert compiled["n_run_topics_unjudged"] == 299
    assert all(_same(compiled[k], interpreted[k]) for k in compiled)


def test_interpreted_modules_are_plain_python_and_refuse_other_modules() -> None:
    module = kernels.interpreted("ltr.metrics._kernel")
    assert module is kernels.interpreted("ltr.metrics._kernel")  # one per process
    assert module.grouped_kernel.__wrapped__.__code__.co_filename.endswith("ltr/metrics/_kernel.py")
    assert kernels.threads(module) == 1
    with pytest.raises(ValueError, match=r"ltr\.rerank\._kernel is not an interpretable kernel module"):
        kernels.interpreted("ltr.rerank._kernel")
    with pytest.raises(ValueError, match="way='fast' is not 'compiled' or 'interpreted'"), kernels.forced("fast"):  # type: ignore[arg-type]
        pass


PROBE = """
import sys
import numpy as np
from ltr.metrics.table import INTERPRET_MAX_ROWS, measure_arrays
rows = INTERPRET_MAX_ROWS // 2 + {extra}  # ranked and judged: the same labels, counted twice
labels = np.arange(rows) % 3
measure_arrays(labels, -np.arange(rows, dtype=float), np.array([0, rows]))
print("numba" in sys.modules)
"""


@pytest.mark.slow
def test_small_inputs_run_interpreted_until_numba_is_loaded_and_larger_ones_compiled(tmp_path: Path) -> None:
    """In a fresh interpreter: up to the limit nothing imports numba; one row more loads it; the
    values are the same."""
    small, large = (
        subprocess.run([sys.executable, "-c", PROBE.format(extra=extra)], capture_output=True, text=True, cwd=tmp_path, timeout=300)
        for extra in (0, 1)
    )  # fmt: skip
    assert small.returncode == 0, small.stderr
    assert large.returncode == 0, large.stderr
    assert small.stdout.strip() == "False"
    assert large.stdout.strip() == "True"


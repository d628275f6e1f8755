"""``ltr data write``: a built-in data set written as files reads back as the data it was.

Everything runs for real: the command writes into a tmp folder, the files are read by the
project's readers through the very ``ltr train`` command line it printed (``load_splits`` of that
composed config), training on them matches training on the built-in data, ``ltr predict`` scores
them, and the click file is read by the click reader. Every user error is one line, exit 2,
with nothing written.
"""

from __future__ import annotations

import contextlib
import io
import shlex
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from omegaconf import OmegaConf

from ltr.cli.main import main as ltr_main
from ltr.config.groups.data import SplitConfig, SyntheticClicksDataConfig, SyntheticDataConfig
from ltr.data.feedback.click_file import read_click_file
from ltr.data.feedback.clicks import BEHAVIOURS, generate_click_log
from ltr.data.load import load_click_splits, load_splits
from ltr.data.ranking_data import RankingData
from ltr.data.splits import Splits
from ltr.experiment import run as pipeline
from tests.conftest import compose_train, made_store

SMALL = ["data.n_queries=300"]
#: What ``debug=default`` sets beyond the data's size (file data takes no ``data.n_queries``).
DEBUG_FIT = ["fit.num_boost_round=20", "fit.early_stopping_rounds=5", "model.num_leaves=7", "fit.show_progress=false"]


def _write(out: Path, name: str, *args: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """Run ``ltr data write NAME --out OUT ARGS``; returns the ``ltr train`` overrides it printed."""
    assert ltr_main(["data", "write", name, "--out", str(out), *args]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1].startswith("train on them: ltr train ")
    written = [line for line in lines[:-1] if line.startswith("wrote ")]
    assert len(written) == len(lines) - 1
    for line in written:
        assert Path(line.split()[1].rstrip(":")).is_file()
    return shlex.split(lines[-1].removeprefix("train on them: "))[2:]


def _read_back(train_overrides: list[str]) -> Splits:
    """The splits ``ltr train`` reads with the printed overrides (no parse cache)."""
    config: Any = OmegaConf.to_object(compose_train([*train_overrides, "data.cache=false"]))
    return load_splits(config.data, config.split, seed=int(config.seed))


def _doc_ids(data: RankingData) -> list[str]:
    sizes = data.group_sizes
    return [f"{q}-{i}" for q, n in zip(data.qids.tolist(), sizes.tolist(), strict=True) for i in range(n)]


def _assert_same_rows(got: RankingData, want: RankingData) -> None:
    np.testing.assert_array_equal(got.qids, want.qids)
    np.testing.assert_array_equal(got.offsets, want.offsets)
    np.testing.assert_array_equal(got.labels, want.labels)
    assert got.features.dtype == np.float32
    np.testing.assert_array_equal(got.features.view(np.uint32), want.features.view(np.uint32))  # bit for bit
    assert got.doc_ids is not None
    assert list(got.doc_ids) == _doc_ids(want)


@pytest.mark.parametrize("fmt", ["letor", "parquet", "csv"])
def test_written_synthetic_splits_read_back_bit_identical(
    fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    overrides = _write(tmp_path / "d", "synthetic", "--format", fmt, *SMALL, capsys=capsys)
    want = load_splits(SyntheticDataConfig(n_queries=300), SplitConfig(), seed=42)  # the default run's data
    got = _read_back(overrides)
    for (split, a), (_, b) in zip(got.items(), want.items(), strict=True):
        _assert_same_rows(a, b)
        if fmt != "letor":
            assert a.feature_names == b.feature_names, split
    suffix = {"letor": ".txt", "parquet": ".parquet", "csv": ".csv"}[fmt]
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == sorted(f"{s}{suffix}" for s in ("test", "train", "valid"))


def test_overrides_and_debug_size_change_the_data_as_in_ltr_train(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    overrides = _write(tmp_path / "a", "synthetic", "data.seed=7", "split.seed=3", "data.n_noise=2", capsys=capsys)
    want = load_splits(SyntheticDataConfig(n_queries=3000, n_noise=2, seed=7), SplitConfig(seed=3), seed=42)
    for (_, a), (_, b) in zip(_read_back(overrides).items(), want.items(), strict=True):
        _assert_same_rows(a, b)
    debug = _read_back(_write(tmp_path / "b", "synthetic", "debug=default", capsys=capsys))
    assert sum(d.n_queries for _, d in debug.items()) == 200


@pytest.mark.parametrize("fmt", ["letor", "parquet"])
def test_written_click_log_reads_back_with_its_labels_positions_and_clicks(
    fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    overrides = _write(tmp_path / "c", "synthetic_clicks", "--format", fmt, *SMALL, capsys=capsys)
    cfg = SyntheticClicksDataConfig(n_queries=300)
    views = load_click_splits(cfg, SplitConfig(), seed=42)
    want = views.training_view("clicks", "relevance", "relevance")  # what data=synthetic_clicks trains on
    got = _read_back(overrides)
    for (_, a), (_, b) in zip(got.items(), want.items(), strict=True):
        _assert_same_rows(a, b)
        assert a.positions is not None
        assert b.positions is not None
        np.testing.assert_array_equal(a.positions, b.positions)
        if fmt == "parquet":
            assert a.behaviours is not None
            assert b.behaviours is not None
            assert sorted(a.behaviours) == sorted(BEHAVIOURS)  # the click column, then the others
            for key in BEHAVIOURS:
                np.testing.assert_array_equal(a.behaviours[key], b.behaviours[key])
    log = generate_click_log(cfg, seed=42)
    clicks = read_click_file(tmp_path / "c" / "clicks.parquet", query_column="query")
    np.testing.assert_array_equal(clicks.qids.astype(np.int64), log.data.row_qids())
    np.testing.assert_array_equal(clicks.positions, log.data.positions)
    np.testing.assert_array_equal(clicks.clicks, log.clicks)
    table = pd.read_parquet(tmp_path / "c" / "clicks.parquet")
    assert list(table.columns) == ["query", "doc_id", "position", *BEHAVIOURS, "relevance"]
    assert table["doc_id"].tolist() == _doc_ids(log.data)
    np.testing.assert_array_equal(table["relevance"].to_numpy(), log.data.labels)


def test_click_log_as_csv_is_read_by_the_click_reader(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(tmp_path / "c", "synthetic_clicks", "--format", "csv", "debug=default", capsys=capsys)
    log = generate_click_log(SyntheticClicksDataConfig(n_queries=200), seed=42)
    clicks = read_click_file(tmp_path / "c" / "clicks.csv", query_column="query")
    np.testing.assert_array_equal(clicks.qids.astype(np.int64), log.data.row_qids())
    np.testing.assert_array_equal(clicks.clicks, log.clicks)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A run on the written LETOR files of ``debug=default`` (logged, for ``ltr predict``) and
    the ``debug=default`` run on the built-in data (not logged)."""
    root = tmp_path_factory.mktemp("datawrite")
    out = root / "d"
    assert ltr_main(["data", "write", "synthetic", "--out", str(out), "debug=default"]) == 0
    uri = made_store(root / "mlflow.db")
    files = [
        "data=svmlight", f"data.train={out / 'train.txt'}", f"data.valid={out / 'valid.txt'}",
        f"data.test={out / 'test.txt'}", "data.cache=false",
    ]
    on_files = pipeline.run(
        compose_train([*files, *DEBUG_FIT, f"tracking.uri={uri}", "tracking.run_name=files"]), print_summary=False
    )
    built_in = pipeline.run(compose_train(["debug=default", "fit.show_progress=false", "tracking=none"]), print_summary=False)
    # the click log as Parquet tables, trained with position-bias correction (positions from the files)
    clicks = root / "clicks"
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        assert ltr_main(["data", "write", "synthetic_clicks", "--out", str(clicks), "--format", "parquet", "debug=default"]) == 0
    command = shlex.split(printed.getvalue().splitlines()[-1].removeprefix("train on them: "))[2:]
    # both runs estimate the examination curve one way from their (equal) logs: the printed
    # command's em, here the log's click-through rate by position (quicker, and the same thing
    # on both sides is what this compares)
    unbiased = ["model.position_bias=true", "tracking=none", "eval.clicks.propensity=estimated"]
    clicks_files = pipeline.run(compose_train([*command, "data.cache=false", *DEBUG_FIT, *unbiased]), print_summary=False)
    clicks_built_in = pipeline.run(
        compose_train(["data=synthetic_clicks", "debug=default", "fit.show_progress=false", *unbiased]), print_summary=False
    )
    return {
        "root": root, "out": out, "uri": uri, "files": on_files, "built_in": built_in,
        "clicks_files": clicks_files, "clicks_built_in": clicks_built_in,
    }


def test_training_on_the_written_files_gives_the_built_in_runs_metrics(store: dict[str, Any]) -> None:
    """The files hold the same splits (same queries, rows in the same order, bit-identical
    float32 features, same labels), so LightGBM bins and boosts the same: every metric of every
    split is equal, not merely close."""
    files, built_in = store["files"], store["built_in"]
    assert files.best_iteration == built_in.best_iteration
    assert files.summaries == built_in.summaries
    assert files.summaries["test"]["ndcg_at_10"] > 0


def test_training_on_the_written_click_tables_gives_the_built_in_click_runs_metrics(store: dict[str, Any]) -> None:
    """The same for the click log's tables (trained on clicks with position-bias correction,
    validated and tested on the true grades): every metric both runs have is equal, the click
    metrics of the log (``clicks/``, ``clicks_ips/``) included, as the printed command reads the
    tables as a click log. The built-in run has more: what only the simulator's true click model
    allows (``clicks_truth/``; ``online/``: simulated sessions), which a run on files cannot compute."""
    files, built_in = store["clicks_files"], store["clicks_built_in"]
    assert files.best_iteration == built_in.best_iteration
    for split in ("valid", "test"):
        ours, theirs = files.summaries[split], built_in.summaries[split]
        assert set(ours) < set(theirs)
        assert {k.split("/")[0] for k in set(theirs) - set(ours)} == {"clicks_truth", "online"}
        assert any(k.startswith("clicks_ips/") for k in ours)
        assert {k: ours[k] for k in ours} == {k: theirs[k] for k in ours}
        assert "ndcg_at_10" in ours
        assert "tail_at_10" in ours


def test_predict_scores_the_written_test_file_as_the_run_scored_it(
    store: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    test_file = store["out"] / "test.txt"
    args = ["predict", "files", "--data", str(test_file), "--tracking-uri", store["uri"]]
    outputs = ["--out", str(tmp_path / "scores.txt"), "--trec-run", str(tmp_path / "run.trec"),
               "--per-query", str(tmp_path / "pq.csv")]  # fmt: skip
    assert ltr_main([*args, *outputs]) == 0, capsys.readouterr().err
    test = _read_back(["data=svmlight", f"data.train={test_file}", f"data.valid={test_file}", f"data.test={test_file}"]).test
    scores = np.loadtxt(tmp_path / "scores.txt")
    assert scores.shape == (test.n_rows,)
    trec = pd.read_csv(tmp_path / "run.trec", sep=" ", header=None, dtype=str)
    assert set(trec[2]) == set(_doc_ids(test))  # the doc ids of the '# docid =' comments
    per_query = pd.read_csv(tmp_path / "pq.csv")
    assert len(per_query) == test.n_queries
    assert per_query["ndcg_at_10"].mean() == pytest.approx(store["files"].summaries["test"]["ndcg_at_10"], abs=1e-12)


def test_existing_files_are_refused_without_force_and_replaced_with_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "d"
    out.mkdir()
    (out / "valid.txt").write_text("mine\n")
    assert ltr_main(["data", "write", "synthetic", "--out", str(out), "debug=default"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [f"ltr: error: {out / 'valid.txt'} exists; pass --force to replace it"]
    assert [p.name for p in out.iterdir()] == ["valid.txt"]
    assert (out / "valid.txt").read_text() == "mine\n"
    _write(out, "synthetic", "debug=default", "--force", capsys=capsys)
    assert sorted(p.name for p in out.iterdir()) == ["test.txt", "train.txt", "valid.txt"]  # no temporary left
    assert (out / "valid.txt").read_text() != "mine\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["synthtic"], "unknown built-in data set 'synthtic'; did you mean 'synthetic'? built-in: synthetic, synthetic_clicks"),
        (["svmlight"], "unknown built-in data set 'svmlight' (it reads files of your own)"),
        (["synthetic", "data.n_querys=300"], "data.n_querys is not a config key; did you mean data.n_queries?"),
        (["synthetic", "+data.n_querys=300"], "data.n_querys is not a config key"),
        (["synthetic", "data.n_queries=2"], "data.n_queries=2 is out of range"),
        (["synthetic", "model.num_leaves=3"], "'model.num_leaves=3' does not change the data"),
        (["synthetic", "data.short_share=0.9"], "data.short_share + data.medium_share + data.long_share must be 1"),
        (["synthetic", "--format", "json"], "invalid choice: 'json'"),
    ],
    ids=["name", "file-data", "key", "plus-key", "value", "not-data", "generator", "format"],
)
def test_a_user_error_is_one_line_exit_2_and_writes_nothing(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "d"
    assert ltr_main(["data", "write", *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("ltr: error: ")
    assert message in err[0]
    assert not out.exists()


def test_an_unwritable_out_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    for out, message in ((afile, "is a file, not a folder"), (afile / "d", "cannot be written")):
        assert ltr_main(["data", "write", "synthetic", "--out", str(out), "debug=default"]) == 2
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1, err
        assert err[0].startswith(f"ltr: error: --out {out}")
        assert message in err[0]
    assert [p.name for p in tmp_path.iterdir()] == ["afile"]
    assert afile.read_text() == "x"


def test_an_unknown_action_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert ltr_main(["data", "wirte", "synthetic"]) == 2
    assert capsys.readouterr().err.strip() == "ltr: error: ltr data: unknown action 'wirte'; did you mean 'write'? actions: write"
    assert ltr_main(["data", "write", "--help"]) == 0  # --help returns 0 through the verb skeleton
    assert "usage: ltr data write" in capsys.readouterr().out


def test_doctests_of_the_work() -> None:
    import doctest

    import ltr.data.write

    assert doctest.testmod(ltr.data.write).failed == 0


@pytest.mark.parametrize("when", ["before the renames", "during the renames"])
def test_a_stop_signal_renames_every_file_or_none(
    when: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real SIGINT: before the renames it stops the command (130, no file); one that comes while
    the files are renamed into place waits for the last rename, and the command, its work done,
    ends with 0 and every file (the exit-code rule of docs/guide/errors.md)."""
    import os
    import signal

    import ltr.data.write as write

    real_replace, real_fsync = os.replace, os.fsync
    fired: list[bool] = []

    def fsync_then_stop(fd: int) -> None:  # the last file's fsync: just before the renames
        real_fsync(fd)
        if when == "before the renames" and len(list(out.glob(".*.partial"))) == 3 and not fired:
            fired.append(True)
            os.kill(os.getpid(), signal.SIGINT)

    def replace_then_stop(src: Any, dst: Any) -> None:
        real_replace(src, dst)
        if not fired:
            fired.append(True)
            os.kill(os.getpid(), signal.SIGINT)  # after the first of three renames

    out = tmp_path / "out"
    monkeypatch.setattr(write.os, "fsync", fsync_then_stop)
    if when == "during the renames":
        monkeypatch.setattr(write.os, "replace", replace_then_stop)
    code = ltr_main(["data", "write", "synthetic", "--out", str(out), "debug=default"])
    printed = capsys.readouterr()
    assert fired
    files = sorted(p.name for p in out.iterdir()) if out.exists() else []
    assert not [f for f in files if f.endswith(".partial")]
    if when == "before the renames":
        assert code == 130
        assert printed.err.strip().splitlines()[-1] == "ltr: interrupted"
        assert files == []
    else:
        assert code == 0
        assert "interrupted" not in printed.err
        assert files == ["test.txt", "train.txt", "valid.txt"]

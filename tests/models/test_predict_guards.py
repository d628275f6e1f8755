"""``ltr predict`` never scores other data as a run's split, and needs only the run's model to
score new data.

One tiny run trained on LETOR files named by relative paths (``data.train=tr.txt``), as a user
trains in a folder. The run records that folder (tag ``ltr.workdir``), and ``--split test`` takes
the relative paths from it, from any folder; from the current folder when the run's folder is
not on this machine or the run did not record it. It makes the split again and checks it
against the run's logged fingerprint: a test file rewritten since the run, or the same names in
another folder, is one line and exit 2 with nothing written (it printed the other rows' table as
the run's); a split that did not change is scored while another did (with a warning); a run
without a fingerprint is scored with a warning. ``--data`` scores a file after the run's training files are gone (it
asked for them), with the scores it gave before, bit for bit. A file given twice is refused as
given twice; a text file wider than the model names the model's width; ``--per-query pq.csv``
writes CSV.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from ltr.cli.main import main as ltr_main
from ltr.config.groups.data import SyntheticDataConfig
from ltr.data.formats.readers import read_ranking_file
from ltr.data.query_parts import write_query_partitions
from ltr.data.ranking_data import RankingData
from ltr.data.synthetic import generate_synthetic
from ltr.experiment import run as pipeline
from ltr.tracking.records import RunRecord
from tests.conftest import compose_train

FIT = ["fit.num_boost_round=8", "fit.early_stopping_rounds=null", "fit.show_progress=false", "model.num_leaves=7"]
FILES = ["data=svmlight", "data.train=tr.txt", "data.valid=va.txt", "data.test=te.txt"]
RUN = "files"


def _letor(data: RankingData, path: Path) -> None:
    qids = data.row_qids()
    path.write_text("".join(
        f"{int(data.labels[row])} qid:{int(qids[row])} "
        + " ".join(f"{j + 1}:{float(v)!r}" for j, v in enumerate(data.features[row]))
        + "\n"
        for row in range(data.n_rows)
    ))  # fmt: skip


def _write_files(folder: Path) -> None:
    """tr.txt, va.txt, te.txt and new.txt (queries the run never saw) in ``folder``."""
    data = generate_synthetic(SyntheticDataConfig(n_queries=120, n_informative=4, n_noise=2), seed=7)
    for i, name in enumerate(["tr", "va", "te", "new"]):
        _letor(data.take_queries(np.arange(i * 30, (i + 1) * 30)), folder / f"{name}.txt")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """The store of the run trained in ``folder`` on ``tr.txt``, ``va.txt``, ``te.txt``."""
    root = tmp_path_factory.mktemp("guards")
    folder = root / "work"
    folder.mkdir()
    _write_files(folder)
    uri = f"sqlite:///{root / 'mlflow.db'}"
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        pipeline.run(compose_train([*FILES, *FIT, f"tracking.uri={uri}", f"tracking.run_name={RUN}"]))
    return uri, folder


def _copy(folder: Path, to: Path) -> Path:
    shutil.copytree(folder, to)
    return to


def _store_copy(uri: str, tmp_path: Path, *, workdir: Path | None, name: str = "copy") -> str:
    """A copy of the store (its artifacts stay where the run logged them) whose run records
    ``workdir`` as the folder it was trained in (``None``: no ``ltr.workdir`` tag, an old run)."""
    db = tmp_path / f"{name}.db"
    shutil.copy(uri.removeprefix("sqlite:///"), db)
    copy = f"sqlite:///{db}"
    client = MlflowClient(copy)
    run_id = client.search_runs([client.get_experiment_by_name("ltr").experiment_id])[0].info.run_id
    if workdir is None:
        client.delete_tag(run_id, "ltr.workdir")
    else:
        client.set_tag(run_id, "ltr.workdir", str(workdir))
    return copy


def _one_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    errors = [line for line in err if line.startswith("ltr: error: ")]
    assert len(errors) == 1, err
    return errors[0]


def _warnings(capsys: pytest.CaptureFixture[str]) -> list[str]:
    """The warning lines ``ltr predict`` printed (its console log)."""
    return [line for line in capsys.readouterr().err.splitlines() if "WARNING" in line]


def test_split_of_rewritten_data_is_refused_in_one_line_and_writes_nothing(
    store: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    uri, folder = store
    here = _copy(folder, tmp_path / "work")
    uri = _store_copy(uri, tmp_path, workdir=here)  # as if trained in the copy
    monkeypatch.chdir(here)
    out = tmp_path / "scores.txt"
    assert ltr_main(["predict", RUN, "--split", "test", "--out", str(out), "--tracking-uri", uri]) == 0
    assert out.is_file()
    out.unlink()
    capsys.readouterr()
    # every third row relabelled: the user's repro (it printed a table, rc 0, no warning)
    lines = (here / "te.txt").read_text().splitlines(keepends=True)
    (here / "te.txt").write_text("".join("2" + line[1:] if i % 3 == 2 else line for i, line in enumerate(lines)))
    assert ltr_main(["predict", RUN, "--split", "test", "--out", str(out), "--tracking-uri", uri]) == 2
    error = _one_error(capsys)
    assert "the test split of run" in error
    assert "data.test=te.txt" in error
    assert "logged" in error
    assert not out.exists()
    assert not list(tmp_path.glob(".scores.txt*"))


def test_split_is_made_from_the_folder_the_run_was_trained_in_from_any_folder(
    store: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Relative paths are the run's: from an empty folder (and one holding other files under the
    run's names) ``--split test`` scores the run's own test split, with its logged metrics."""
    uri, folder = store
    client = MlflowClient(uri)
    run = client.search_runs([client.get_experiment_by_name("ltr").experiment_id])[0]
    assert run.data.tags["ltr.workdir"] == str(folder)
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(folder / "new.txt", other / "te.txt")  # another file under the run's name, ignored
    monkeypatch.chdir(other)
    per_query = tmp_path / "pq.csv"
    assert ltr_main(["predict", RUN, "--split", "test", "--per-query", str(per_query), "--tracking-uri", uri]) == 0
    assert _warnings(capsys) == []
    table = pd.read_csv(per_query)
    assert table["ndcg_at_10"].mean() == run.data.metrics["test/ndcg_at_10"]


def test_without_the_runs_folder_relative_paths_are_taken_from_here(
    store: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run whose folder is not on this machine (a copied store), or that did not record it (an
    old run), takes relative paths from the current folder: no files is one line naming the key
    and the folder, and why; other files under the run's names are caught by the fingerprint."""
    uri, folder = store
    other = tmp_path / "other"
    other.mkdir()
    monkeypatch.chdir(other)
    gone = _store_copy(uri, tmp_path, workdir=tmp_path / "gone", name="gone")
    assert ltr_main(["predict", RUN, "--split", "test", "--tracking-uri", gone]) == 2
    error = _one_error(capsys)
    assert "data.train=tr.txt does not exist" in error
    assert f"the current folder, {other}" in error
    assert f"the folder the run was trained in, {tmp_path / 'gone'}, is not on this machine" in error
    untagged = _store_copy(uri, tmp_path, workdir=None, name="untagged")
    assert ltr_main(["predict", RUN, "--split", "test", "--tracking-uri", untagged]) == 2
    assert "the run did not record its folder" in _one_error(capsys)
    for name in ("tr", "va"):
        shutil.copy(folder / f"{name}.txt", other / f"{name}.txt")
    shutil.copy(folder / "new.txt", other / "te.txt")  # another file under the run's name
    for copy in (gone, untagged):
        assert ltr_main(["predict", RUN, "--split", "test", "--tracking-uri", copy]) == 2
        error = _one_error(capsys)
        assert "data.test=te.txt" in error
        assert f"another file in {other}" in error


def test_a_split_that_did_not_change_is_scored_while_another_did(
    store: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    uri, folder = store
    here = _copy(folder, tmp_path / "work")
    uri = _store_copy(uri, tmp_path, workdir=here)  # as if trained in the copy
    shutil.copy(folder / "new.txt", here / "te.txt")
    monkeypatch.chdir(here)
    assert ltr_main(["predict", RUN, "--split", "valid", "--tracking-uri", uri]) == 0
    warned = _warnings(capsys)
    assert len(warned) == 1
    assert "data.test=te.txt" in warned[0]
    assert "valid split is the one it evaluated" in warned[0]


def test_a_run_without_a_fingerprint_is_scored_with_a_warning(
    store: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    uri, folder = store
    db = tmp_path / "mlflow.db"
    shutil.copy(uri.removeprefix("sqlite:///"), db)  # the artifacts stay where the run logged them
    copy = f"sqlite:///{db}"
    client = MlflowClient(copy)
    run_id = client.search_runs([client.get_experiment_by_name("ltr").experiment_id])[0].info.run_id
    client.delete_tag(run_id, "ltr.data.fingerprint")
    monkeypatch.chdir(folder)
    assert ltr_main(["predict", RUN, "--split", "test", "--tracking-uri", copy]) == 0
    warned = _warnings(capsys)
    assert len(warned) == 1
    assert "logged no data fingerprint" in warned[0]


def test_new_data_is_scored_after_the_training_files_are_gone_bit_for_bit(
    store: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scoring new data needs the run's model, feature names and conventions, not its training
    files: they are deleted, and the scores of another file are those given before, in another
    folder too (it asked for ``data.train=tr.txt``; the run as if trained in a copy of its
    folder, the copy deleted)."""
    uri, folder = store
    train_dir = _copy(folder, tmp_path / "train")
    new = tmp_path / "new.txt"
    shutil.move(train_dir / "new.txt", new)
    uri = _store_copy(uri, tmp_path, workdir=train_dir)  # as if trained in the copy
    monkeypatch.chdir(train_dir)
    before, after = tmp_path / "before.txt", tmp_path / "after.txt"
    assert ltr_main(["predict", RUN, "--data", str(new), "--out", str(before), "--tracking-uri", uri]) == 0
    shutil.rmtree(train_dir)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert ltr_main(["predict", RUN, "--data", str(new), "--out", str(after), "--tracking-uri", uri]) == 0
    assert after.read_text() == before.read_text()
    assert len(after.read_text().splitlines()) == sum(1 for _ in new.open())


def test_a_logged_config_whose_data_root_is_gone_is_read(tmp_path: Path) -> None:
    """``data=mq2008`` without ``LTR_SHARED_DATA`` (another machine): the run's settings are read;
    its data folder is asked for only by ``--split``."""
    from omegaconf import OmegaConf

    from ltr.models.logged import run_spec

    text = OmegaConf.to_yaml(compose_train(["data=mq2008", f"data.root={tmp_path / 'gone' / 'mq2008'}"]))
    record = RunRecord("0" * 32, "mq", "1", "FINISHED", {})
    spec = run_spec(text, record)
    assert spec.config.data.root == str(tmp_path / "gone" / "mq2008")


def test_a_file_given_twice_is_refused_as_given_twice(
    store: tuple[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Text or Parquet, by one path or two (it said a qid's rows are not contiguous)."""
    uri, folder = store
    parquet = write_query_partitions(read_ranking_file(folder / "te.txt"), tmp_path / "te", n_partitions=1)[0]
    (tmp_path / "link.parquet").symlink_to(parquet)
    for given in ([folder / "te.txt", folder / "te.txt"], [parquet, parquet], [parquet, tmp_path / "link.parquet"], [parquet.parent, parquet]):
        assert ltr_main(["predict", RUN, "--data", *map(str, given), "--tracking-uri", uri]) == 2
        error = _one_error(capsys)
        assert "is given twice" in error, error


def test_a_wider_text_file_is_refused_at_the_models_width(
    store: tuple[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The width is the model's: the line does not advise raising n_features."""
    uri, folder = store
    lines = (folder / "te.txt").read_text().splitlines(keepends=True)
    lines[4] = lines[4].rstrip("\n") + " 60:1.0\n"
    wide = tmp_path / "wide.txt"
    wide.write_text("".join(lines))
    assert ltr_main(["predict", RUN, "--data", str(wide), "--tracking-uri", uri]) == 2
    error = _one_error(capsys)
    assert "feature index 60 at line 5 of" in error
    assert "is above n_features=7, the width of the model of run" in error
    assert "raise n_features" not in error


def test_per_query_csv_is_written_as_csv(store: tuple[str, Path], tmp_path: Path) -> None:
    """``--per-query pq.csv`` writes CSV (it wrote Parquet under the name), the same table as
    ``pq.parquet``, floats with round-trip precision."""
    uri, folder = store
    csv, parquet = tmp_path / "pq.csv", tmp_path / "pq.parquet"
    for target in (csv, parquet):
        assert ltr_main(["predict", RUN, "--data", str(folder / "te.txt"), "--per-query", str(target), "--tracking-uri", uri]) == 0
    want = pd.read_parquet(parquet)
    got = pd.read_csv(csv)
    assert list(got.columns) == list(want.columns)
    floats = [c for c in want.columns if want[c].dtype.kind == "f"]
    assert floats
    pd.testing.assert_frame_equal(got[floats], want[floats], check_exact=True)


def test_a_registered_model_names_the_run_that_logged_it(
    store: tuple[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``models:/NAME@ALIAS`` and ``models:/NAME/VERSION`` (what ``ltr promote`` made) score as
    the run itself, byte for byte; an alias or model that does not exist is one line."""
    uri, folder = store
    assert ltr_main(["promote", RUN, "--name", "guarded", "--tracking-uri", uri]) == 0
    written = {}
    for ref in (RUN, "models:/guarded@champion", "models:/guarded/1"):
        out = tmp_path / f"{len(written)}.txt"
        assert ltr_main(["predict", ref, "--data", str(folder / "new.txt"), "--out", str(out), "--tracking-uri", uri]) == 0
        written[ref] = out.read_bytes()
    printed = capsys.readouterr().out
    assert "models:/guarded@champion is version 1 of 'guarded'" in printed
    assert written["models:/guarded@champion"] == written[RUN]
    assert written["models:/guarded/1"] == written[RUN]
    for ref in ("models:/guarded@nobody", "models:/nothing/1", "models:/guarded"):
        assert ltr_main(["predict", ref, "--data", str(folder / "new.txt"), "--tracking-uri", uri]) == 2
        assert ref in _one_error(capsys)

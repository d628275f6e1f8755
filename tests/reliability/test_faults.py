"""The one-line rule, fault by fault and verb by verb (issue 45): whatever goes wrong around a
command (its output closed or full, a hostile run name in the store, a logged config that
reaches for the environment, an argument Hydra's parser refuses), the user sees one line (or
nothing, for a reader that has gone), the documented exit code, no traceback, and a terminal
nobody else drives.

In-process calls of :func:`ltr.cli.main.main`, case by case. Every verb under every fault (a
closed or full standard output, a read-only or full store, stop signals under load, a hostile
run name), each in a real process: :mod:`tests.reliability.test_fault_matrix`."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ltr.cli.main import main
from ltr.runtime.terminal import console, visible

HOSTILE = "b\x1b]0;PWNED\x07"
SMALL = ["data.n_queries=300", "fit.num_boost_round=10", "fit.early_stopping_rounds=5", "fit.show_progress=false", "model.num_leaves=7"]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A store with two finished runs, the first one renamed ``b<ESC>]0;PWNED<BEL>`` (a name
    Hydra's override grammar refuses, so written as MLflow's tag), and small data files."""
    import mlflow

    folder = tmp_path_factory.mktemp("faults")
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    cwd = Path.cwd()
    os.chdir(folder)  # Hydra's outputs/ folder of each run
    try:
        for name in ("hostile", "plain"):
            assert main(["train", *SMALL, f"tracking.uri={uri}", f"tracking.run_name={name}"]) == 0
    finally:
        os.chdir(cwd)
    client = mlflow.MlflowClient(uri)
    runs = {run.info.run_name: run.info.run_id for run in client.search_runs(["1"])}
    client.set_tag(runs["hostile"], "mlflow.runName", HOSTILE)
    (folder / "d.txt").write_text("1 qid:1 1:0\n0 qid:1 1:0\n1 qid:2 1:0\n0 qid:2 1:0\n2 qid:3 1:0\n1 qid:3 1:0\n")
    (folder / "d.s").write_text("1\n0\n0\n1\n1\n0\n")
    (folder / "a.qrels").write_text("1 0 D1 1\n1 0 D2 0\n2 0 D3 2\n2 0 D4 1\n")
    (folder / "b.qrels").write_text("1 0 D1 1\n1 0 D2 1\n2 0 D3 2\n2 0 D4 0\n")
    return {"uri": uri, "hostile": runs["hostile"], "plain": runs["plain"], "folder": str(folder)}


def _assert_no_control(text: str) -> None:
    assert "\x1b" not in text, text
    assert "\x07" not in text, text
    assert "Traceback" not in text


# --- the output layer: every verb that prints a run name prints it escaped -------------------


def test_visible_escapes_control_characters_but_newline_and_tab() -> None:
    assert visible("a\tb\nc\x1b]0;x\x07\r\x7f\x9b") == "a\tb\nc\\x1b]0;x\\x07\\r\\x7f\\x9b"
    assert visible("données ✓") == "données ✓"


def test_a_rich_table_of_ltr_escapes_its_cells(capsys: pytest.CaptureFixture[str]) -> None:
    from rich.table import Table

    table = Table(title=HOSTILE)
    table.add_column("run")
    table.add_row(HOSTILE)
    console().print(table)
    console().print(HOSTILE, markup=False)
    out = capsys.readouterr().out
    _assert_no_control(out)
    assert "b\\x1b]0;PWNED" in out


@pytest.mark.parametrize("output", ["--markdown", "--json"])
def test_a_hostile_run_name_is_printed_escaped_in_every_output_of_compare(store: dict[str, str], output: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The default output of every verb: tests/reliability/test_fault_matrix.py; here compare's others."""
    assert main(["compare", store["hostile"], store["plain"], output, "--tracking-uri", store["uri"]]) == 0
    out, err = capsys.readouterr()
    _assert_no_control(out + err)
    assert ("\\u001b]0;PWNED" if output == "--json" else "b\\x1b]0;PWNED") in out


# --- usage errors of Hydra's parser: one line ------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["--bogus"], "ltr: error: unrecognized arguments: --bogus (ltr train --help)"),
        (["seed=1", "--cfg"], "ltr: error: argument --cfg/-c: expected one argument (ltr train --help)"),
    ],
)
def test_an_argument_hydra_refuses_is_one_line(argv: list[str], line: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["train", *argv]) == 2
    out, err = capsys.readouterr()
    assert (out, err.strip()) == ("", line)


# --- a logged config is data ------------------------------------------------------------------


def test_a_logged_config_calling_a_resolver_is_read_as_text_without_its_value(
    store: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import mlflow

    client = mlflow.MlflowClient(store["uri"])
    run = client.get_run(store["plain"])
    text = Path(client.download_artifacts(run.info.run_id, "config/config.yaml", str(tmp_path))).read_text()
    monkeypatch.setenv("HOME", "/secret/home/of/the/reader")
    copy = tmp_path / "copy.db"
    copy.write_bytes(Path(store["uri"].removeprefix("sqlite:///")).read_bytes())
    uri = f"sqlite:///{copy}"
    mlflow.set_tracking_uri(uri)
    hacked = text.replace("kind: synthetic\n", "kind: ${oc.env:HOME}\n", 1)
    assert hacked != text
    with mlflow.start_run(experiment_id="1", run_name="hacked") as hack:
        mlflow.log_text(hacked, "config/config.yaml")
        mlflow.log_text("tree\n", "model_text/model.txt")
    mlflow.set_tracking_uri("")
    capsys.readouterr()  # MLflow's download progress above
    code = main(["predict", hack.info.run_id, "--data", str(Path(store["folder"]) / "d.txt"), "--tracking-uri", uri])
    out, err = capsys.readouterr()
    assert code == 2, err  # its model is no model: one line, and nothing of the reader's HOME
    (line,) = err.strip().splitlines()
    assert line.startswith("ltr: error: ")
    assert "/secret/home" not in out + err


def test_a_logged_config_reads_a_resolver_call_as_its_text(monkeypatch: pytest.MonkeyPatch) -> None:
    from ltr.config.logged import read_logged_config

    monkeypatch.setenv("HOME", "/secret/home/of/the/reader")
    config = read_logged_config("data:\n  kind: ${oc.env:HOME}\n  root: ${oc.env:LTR_SHARED_DATA,../shared/data}/mq2008\n", "run x")
    assert config.data.kind == "${oc.env:HOME}"
    assert config.data.root == "${oc.env:LTR_SHARED_DATA,../shared/data}/mq2008"


def test_a_logged_config_reads_its_own_interpolations() -> None:
    from ltr.config.logged import read_logged_config

    config = read_logged_config("a: 1\nb: ${a}\n", "run x")
    assert config.b == 1


# --- a real standard output (every verb: tests/reliability/test_fault_matrix.py) -------------------


@pytest.mark.slow
def test_a_verbs_help_into_a_closed_pipe_is_exit_141_and_nothing_said() -> None:
    """``ltr compare --help | true`` once exited 0."""
    reader, writer = os.pipe()
    os.close(reader)
    try:
        proc = subprocess.Popen([sys.executable, "-m", "ltr", "compare", "--help"], stdout=writer, stderr=subprocess.PIPE, text=True)
    finally:
        os.close(writer)
    _, err = proc.communicate(timeout=120)
    assert (proc.returncode, err) == (141, "")


# --- labels and bad values follow the same rules in every verb --------------------------------


def test_labels_refuses_a_negative_grade_as_train_and_evaluate_do(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.qrels").write_text("1 0 D1 1\n1 0 D2 0\n")
    (tmp_path / "b.qrels").write_text("1 0 D1 -1\n1 0 D2 0\n")
    assert main(["labels", str(tmp_path / "a.qrels"), str(tmp_path / "b.qrels")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == (
        f"ltr: error: label -1 of {tmp_path / 'b.qrels'} (row 1, qid '1', docno 'D1') is negative; "
        "relevance grades must be 0, 1, 2, ... (shift or clip the labels)"
    )


def test_promote_refuses_zero_resamples_even_when_no_comparison_is_due(store: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["promote", store["plain"], "--name", "nobody-holds-this", "--n-resamples", "0", "--tracking-uri", store["uri"]])
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert (code, line) == (2, "ltr: error: --n-resamples=0 is too few for a confidence interval or a p-value: give at least 100 (default 10000)")


# --- a store that can only be read ------------------------------------------------------------


@pytest.fixture
def read_only_store(store: dict[str, str], tmp_path: Path) -> Iterator[dict[str, str]]:
    """A copy of :func:`store` with a run whose process died (RUNNING: a store that can be written
    would have it reaped, marked KILLED), made immutable (``chattr +i``: sqlite opens it read-only
    and its writes fail with "attempt to write a readonly database", for root too)."""
    import mlflow

    from ltr.tracking.store import process_identity, process_tags

    db = tmp_path / "mlflow.db"
    db.write_bytes(Path(store["uri"].removeprefix("sqlite:///")).read_bytes())
    uri = f"sqlite:///{db}"
    gone = subprocess.Popen(["true"])
    gone.wait()
    identity = {key: str(gone.pid) if key == "pid" else value for key, value in process_identity().items() if key != "start"}
    dead = mlflow.MlflowClient(uri).create_run("1", tags=process_tags(identity), run_name="dead").info.run_id
    if subprocess.run(["chattr", "+i", str(db)], capture_output=True, check=False).returncode != 0:
        pytest.skip("chattr +i is not available here (not root, or a file system without it)")
    try:
        yield {**store, "uri": uri, "dead": dead, "db": str(db)}
    finally:
        subprocess.run(["chattr", "-i", str(db)], check=True)


def test_sqlite_finds_an_immutable_store_read_only(read_only_store: dict[str, str], store: dict[str, str]) -> None:
    from ltr.tracking.store import sqlite_read_only

    assert sqlite_read_only(Path(read_only_store["db"]))
    assert not sqlite_read_only(Path(store["uri"].removeprefix("sqlite:///")))


@pytest.mark.parametrize("verb", ["compare", "predict"])
def test_readers_of_a_read_only_store_reap_nothing_and_say_no_traceback(
    read_only_store: dict[str, str], verb: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import mlflow

    s = read_only_store
    argv = {
        "compare": ["compare", s["hostile"], s["plain"], "--n-resamples", "100", "--json"],
        "predict": ["predict", s["dead"][:12], "--data", str(Path(s["folder"]) / "d.txt")],  # through MLflow: not a finished local run
    }[verb]
    code = main([*argv, "--tracking-uri", s["uri"]])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "readonly" not in err
    if verb == "compare":
        assert (code, err) == (0, "")
    else:  # the dead run did not finish: refused in one line, and left RUNNING
        (line,) = err.strip().splitlines()
        assert code == 2
        assert " is RUNNING, not FINISHED" in line
    assert mlflow.MlflowClient(s["uri"]).get_run(s["dead"]).info.status == "RUNNING"


def test_promote_into_a_read_only_store_is_one_line(read_only_store: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    s = read_only_store
    code = main(["promote", s["plain"], "--name", "ro", "--n-resamples", "100", "--tracking-uri", s["uri"]])
    err = capsys.readouterr().err
    (line,) = err.strip().splitlines()
    assert (code, line) == (
        2,
        f"ltr: error: the store {s['db']} can only be read: ltr promote registers the model of run {s['plain'][:8]} "
        "in its Model Registry; promote in a store you can write",
    )


# --- a full device, found in any error ------------------------------------------------------------


def test_a_full_device_is_found_in_any_error_and_names_its_path() -> None:
    import doctest
    import errno

    import ltr.errors
    from ltr.errors import DeviceFull, LtrUserError, full_device, write_failed

    assert doctest.testmod(ltr.errors).failed == 0
    enospc = OSError(errno.ENOSPC, "No space left on device", "/data/out/part-0.parquet")
    arrow = OSError("Error writing bytes to file. Detail: [errno 28] No space left on device")  # pyarrow sets no errno
    quota = OSError(errno.EDQUOT, "Disk quota exceeded")
    try:
        try:
            raise enospc
        except OSError as inner:
            raise RuntimeError("while logging") from inner
    except RuntimeError as outer:
        chained = outer
    assert full_device(chained) == "/data/out/part-0.parquet: No space left on device"
    assert full_device(arrow, store="/data/out") == "/data/out: No space left on device"
    assert full_device(quota, store="/data/out") == "/data/out: Disk quota exceeded"
    assert full_device(DeviceFull("/s/mlflow.db: the database or its disk is full")) == "/s/mlflow.db: the database or its disk is full"
    assert full_device(OSError(errno.EACCES, "Permission denied", "/data/out")) is None
    assert full_device(RuntimeError("(sqlite3.OperationalError) attempt to write a readonly database")) is None
    refused = write_failed(OSError(errno.EACCES, "Permission denied"), "cannot write /data/out: Permission denied", path="/data/out")
    assert isinstance(refused, LtrUserError)
    assert str(refused) == "cannot write /data/out: Permission denied"
    full = write_failed(arrow, "cannot write /data/out: ...", path="/data/out")
    assert isinstance(full, DeviceFull)
    assert str(full) == "/data/out: No space left on device"

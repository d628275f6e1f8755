"""The one output guard (issue 56): every verb that writes refuses, in one line and exit 2 before
any work, an output that is the tracking store (its database, WAL, journal, lock file), lies in
the store's artifact folder, or is the command's input; and no byte of the store, of a run's
artifact or of the input changes. ``-`` is standard output where text is written.

:data:`WRITERS` holds, per verb that writes a file or a folder, its invocation with ``{target}``
for the output; a verb added to the dispatcher without a row here or a reason in
:data:`NO_FILE_OUTPUT` fails :func:`test_every_verb_that_writes_has_a_row`. Each case runs the
real ``ltr`` command in this process on one world: a sqlite store with a trained run (its model
artifact), its data files, qrels and a TREC run, a table of past A/B tests.
"""

from __future__ import annotations

import hashlib
import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from ltr.cli.main import VERBS, main


@dataclass(frozen=True)
class World:
    folder: Path
    db: Path
    model: Path  # the run's model artifact, in mlartifacts/
    run_id: str


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    folder = tmp_path_factory.mktemp("guard")
    cwd = Path.cwd()
    os.chdir(folder)
    try:
        assert main(["data", "write", "synthetic", "--out", "d", "data.n_queries=60"]) == 0
        assert main([
            "train", "data=svmlight", f"data.train={folder}/d/train.txt", f"data.valid={folder}/d/valid.txt",
            f"data.test={folder}/d/test.txt", "fit.num_boost_round=3", "fit.show_progress=false",
            "model.num_leaves=7", "tracking.log_model=false", "tracking.run_name=P",
        ]) == 0  # fmt: skip
    finally:
        os.chdir(cwd)
    (folder / "a.qrels").write_text("1 0 D1 1\n1 0 D2 0\n2 0 D3 2\n2 0 D4 1\n")
    (folder / "a.run").write_text("1 Q0 D1 1 2.0 s\n1 Q0 D2 2 1.0 s\n2 Q0 D4 1 2.0 s\n2 Q0 D3 2 1.0 s\n")
    (folder / "past.csv").write_text("experiment,ndcg_at_10,gmv_pct\na,0.012,0.41\nb,-0.004,-0.22\nc,0.021,0.35\nd,0.035,1.02\n")
    (model,) = (folder / "mlartifacts").rglob("model.txt")
    return World(folder, folder / "mlflow.db", model, model.parts[-4])


#: Per verb that writes: its invocation (``{target}``: the output) and its input as ``{target}``
#: would name it (None: it reads no file).
WRITERS: dict[str, list[tuple[str, str | None]]] = {
    "predict": [
        ("predict P --data d/test.txt --out {target}", "d/test.txt"),
        ("predict P --data d/test.txt --trec-run {target}", "d/test.txt"),
        ("predict P --data d/test.txt --per-query {target}", "d/test.txt"),
    ],
    "explain": [("explain P --data d/test.txt --out {target}", "d/test.txt")],
    "evaluate": [("evaluate --qrels a.qrels --run a.run --per-query {target}", "a.run")],
    "calibrate": [("calibrate past.csv --offline ndcg_at_10 --online gmv_pct --figure {target}", "past.csv")],
    "data": [("data write synthetic --out {target} data.n_queries=30", None)],
    "partition": [("partition --train d/train.txt -o {target}", "d/train.txt")],
    "cache": [("cache clear --dir {target}", None)],
    "abtest": [("abtest P P --figure {target}", None)],
}
#: Verbs whose guard call is the lead's to add (their module is another engineer's): strict
#: xfail, so the row fails (XPASS) once the call is there and the mark must go.
PENDING: dict[str, str] = {}
#: The verbs that write no file of a name the user gives, and why.
NO_FILE_OUTPUT = {
    "train": "writes its run into the store and Hydra's outputs/ folder; no output path is an option",
    "rerun": "as train",
    "promote": "registers a model in the store; no output path",
    "compare": "prints; --log writes a run into the store",
    "ope": "prints; logs its estimates on the run in the store",
    "exposure": "prints",
    "labels": "prints",
    "ui": "serves the store",
    "completion": "prints the script",
}

#: The outputs every writer is refused: what the error line says of each.
TARGETS = {
    "store": ("mlflow.db", "is the tracking store's database"),
    "wal": ("mlflow.db-wal", "is the tracking store's write-ahead log"),
    "journal": ("mlflow.db-journal", "is the tracking store's journal"),
    "lock": ("mlflow.db.lock", "is the tracking store's lock file"),
    "artifact": ("{model}", "the artifact folder of the tracking store"),
    "mlruns": ("mlruns", "the artifact folder of the tracking store"),
    "input": ("{input}", "input"),
}


def test_every_verb_that_writes_has_a_row() -> None:
    assert set(WRITERS) | set(NO_FILE_OUTPUT) == set(VERBS)
    assert not set(WRITERS) & set(NO_FILE_OUTPUT)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "absent"


def _cases() -> list[Any]:
    out = []
    for verb, rows in WRITERS.items():
        for i, (argv, given) in enumerate(rows):
            for name, (target, message) in TARGETS.items():
                if name == "input" and given is None:
                    continue
                marks = [pytest.mark.xfail(strict=True, reason=PENDING[verb])] if verb in PENDING else []
                out.append(pytest.param(argv, target, message, given, id=f"{verb}{i}-{name}", marks=marks))
    return out


@pytest.mark.parametrize(("argv", "target", "message", "given"), _cases())
def test_an_output_onto_the_store_its_artifacts_or_the_input_is_refused_and_nothing_changes(
    world: World, argv: str, target: str, message: str, given: str | None,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.chdir(world.folder)
    monkeypatch.setenv("LTR_CACHE_DIR", str(world.folder / "cache"))
    for var in ("LTR_TRACKING_URI", "MLFLOW_TRACKING_URI"):
        monkeypatch.delenv(var, raising=False)
    path = target.format(model=world.model.relative_to(world.folder), input=given)
    watched = [world.db, world.model, *([world.folder / given] if given else []), world.folder / path]
    before = {p: _digest(p) for p in watched}
    listing = sorted(str(p) for p in world.folder.rglob("*"))
    code = main(argv.format(target=path).split())
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2, err
    assert len(err) == 1, err
    assert err[0].startswith("ltr: error: "), err
    assert message in err[0], err[0]
    assert {p: _digest(p) for p in watched} == before
    assert sorted(str(p) for p in world.folder.rglob("*")) == listing  # nothing made either


def test_predict_out_dash_writes_the_scores_to_standard_output(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(world.folder)
    scores = tmp_path / "scores.txt"
    assert main(["predict", "P", "--data", "d/test.txt", "--out", str(scores)]) == 0
    capsys.readouterr()
    assert main(["predict", "P", "--data", "d/test.txt", "--out", "-"]) == 0
    captured = capsys.readouterr()
    assert captured.out == scores.read_text()  # the scores only: the report went to stderr
    assert len(captured.out.splitlines()) == len((world.folder / "d" / "test.txt").read_text().splitlines())
    assert "ltr: scored " in captured.err
    assert not (world.folder / "-").exists()


def test_predict_per_query_and_trec_run_dash(world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(world.folder)
    table, run = tmp_path / "pq.csv", tmp_path / "run.txt"
    assert main(["predict", "P", "--data", "d/test.txt", "--per-query", str(table), "--trec-run", str(run)]) == 0
    capsys.readouterr()
    assert main(["predict", "P", "--data", "d/test.txt", "--per-query", "-"]) == 0
    assert capsys.readouterr().out == table.read_text()
    assert main(["predict", "P", "--data", "d/test.txt", "--trec-run", "-"]) == 0
    assert capsys.readouterr().out == run.read_text()
    assert main(["predict", "P", "--data", "d/test.txt", "--trec-run", "-", "--out", "-"]) == 2
    assert "only one output can go to standard output" in capsys.readouterr().err


def test_evaluate_per_query_dash_is_the_csv_on_standard_output(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(world.folder)
    table = tmp_path / "pq.csv"
    assert main(["evaluate", "--qrels", "a.qrels", "--run", "a.run", "--per-query", str(table)]) == 0
    capsys.readouterr()
    assert main(["evaluate", "--qrels", "a.qrels", "--run", "a.run", "--per-query", "-"]) == 0
    captured = capsys.readouterr()
    assert captured.out == table.read_text()
    assert pd.read_csv(io.StringIO(captured.out))["qid"].tolist() == [1, 2]
    assert "nDCG@5" in captured.err  # the summary beside it
    assert main(["evaluate", "--qrels", "a.qrels", "--run", "a.run", "--per-query", "-", "--json"]) == 2
    assert "both write to standard output" in capsys.readouterr().err


def test_a_store_named_by_the_environment_and_its_recorded_artifact_root_are_guarded(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """From another folder: the store of ``$LTR_TRACKING_URI`` and the artifact location its
    experiments record (not this folder's ``mlartifacts``)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LTR_TRACKING_URI", f"sqlite:///{world.db}")
    before = _digest(world.model)
    assert main(["evaluate", "--qrels", str(world.folder / "a.qrels"), "--run", str(world.folder / "a.run"), "--per-query", str(world.model)]) == 2
    assert "the artifact folder of the tracking store" in capsys.readouterr().err
    assert main(["evaluate", "--qrels", str(world.folder / "a.qrels"), "--run", str(world.folder / "a.run"), "--per-query", f"{world.db}-shm"]) == 2
    assert "shared-memory file" in capsys.readouterr().err
    assert _digest(world.model) == before


def test_the_guard_rule_by_rule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ltr.cli.support.output_guard import check_outputs
    from ltr.errors import LtrUserError

    monkeypatch.chdir(tmp_path)
    for var in ("LTR_TRACKING_URI", "MLFLOW_TRACKING_URI"):
        monkeypatch.delenv(var, raising=False)
    parts = tmp_path / "parts"
    parts.mkdir()
    elsewhere = tmp_path / "elsewhere.parquet"
    elsewhere.write_bytes(b"x")
    (parts / "part-0.parquet").symlink_to(elsewhere)
    assert check_outputs({"--out": None, "--per-query": None}) == {}
    assert check_outputs({"--out": "-"}, stdout={"--out"}) == {"--out": None}
    assert check_outputs({"--out": "s.txt"}, inputs=[parts]) == {"--out": Path("s.txt")}
    refusals = [
        ({"outputs": {"--out": "a.txt", "--trec-run": "./a.txt"}}, "--out and --trec-run name the same file a.txt"),
        ({"outputs": {"--out": str(elsewhere)}, "inputs": [parts]}, "is the input"),  # a partition is a link to it
        ({"outputs": {"--out": tmp_path}, "inputs": [parts / "part-0.parquet"], "folders": {"--out"}}, "holds the input"),
        ({"outputs": {"--out": "-"}, "folders": {"--out"}}, "--out -: '-' (standard output) is for text, and --out writes a folder"),
        ({"outputs": {"--figure": "-"}}, "--figure writes a file that is not text"),
        ({"outputs": {"--out": "mlflow.db-journal"}}, "is the tracking store's journal"),
        ({"outputs": {"--out": "x.db"}, "tracking_uri": f"sqlite:///{tmp_path}/x.db"}, "is the tracking store's database"),
    ]
    for kwargs, message in refusals:
        with pytest.raises(LtrUserError, match=message.replace("(", r"\(").replace(")", r"\)")):
            check_outputs(**kwargs)  # type: ignore[arg-type]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere.parquet", "parts"]  # the guard made nothing

"""``ltr rerun``: the same run again gives the same metrics bit for bit; a changed data file is said."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from mlflow.tracking import MlflowClient

from ltr.cli.main import main
from ltr.experiment.names import MAX_RUN_NAME, check_run_name
from ltr.experiment.rerun import (
    config_differences,
    metric_differences,
    plan_rerun,
    rerun_name,
    rerun_note,
    thread_change,
)
from ltr.tracking.gitinfo import git_state
from ltr.tracking.records import RunRecord
from ltr.training import local

SMALL = ["fit.show_progress=false", "fit.num_boost_round=30", "fit.early_stopping_rounds=10", "model.num_leaves=7",
         "tracking.log_model=false"]



def _only_run(tmp: Path, **tags: str) -> str:
    client = MlflowClient(f"sqlite:///{tmp / 'mlflow.db'}")
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()])
    found = [r for r in runs if all(r.data.tags.get(k) == v for k, v in tags.items())]
    assert len(found) == 1, [r.data.tags for r in runs]
    return str(found[0].info.run_id)


def _clean_note() -> str:
    _, dirty = git_state(Path(__file__).resolve().parent)
    return "the source run's tree had uncommitted changes; this tree has uncommitted changes" if dirty else "nothing differs"


def test_rerun_gives_bit_identical_metrics_and_says_a_pruned_or_killed_source_and_refuses_a_sweep_parent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same run again gives the same metrics bit for bit. Then, on the same source run (one
    training for both halves): a pruned trial's rerun trains to the end and says the source was
    pruned (not "nothing differs" beside moved metrics); a killed run's rerun exits 0 and
    compares nothing (what the source logged is partial); a sweep's parent and tracking=none are
    refused before training."""
    monkeypatch.chdir(tmp_path)
    assert main(["train", "data.n_queries=300", *SMALL]) == 0
    source = _only_run(tmp_path)
    capsys.readouterr()
    assert main(["rerun", source[:8]]) == 0
    out = capsys.readouterr().out
    rerun = _only_run(tmp_path, **{"ltr.rerun_of": source})
    (line,) = [line for line in out.splitlines() if line.startswith("ltr: rerun of")]
    name = "nq=300 nl=7 nbr=30 esr=10 (lambdarank)"
    assert line == f"ltr: rerun of {source[:8]} ({name}) as {rerun[:8]} ({name} (rerun)): {_clean_note()}"
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    old, new = client.get_run(source).data.metrics, client.get_run(rerun).data.metrics
    n_keys = len([k for k in old if not k.endswith("_seconds")])
    assert n_keys > 100
    assert f"identical metrics, bit for bit ({n_keys} keys)" in out
    assert {k: v for k, v in old.items() if not k.endswith("_seconds")} == {k: v for k, v in new.items() if not k.endswith("_seconds")}
    # the rerun is not named as its source; its description links the source and says the outcome
    got = client.get_run(rerun)
    assert got.info.run_name == f"{name} (rerun)"
    experiment = got.info.experiment_id
    note = got.data.tags["mlflow.note.content"]
    first, _, rest = note.partition("\n\n")
    link = f"[{name} ({source[:8]})](#/experiments/{experiment}/runs/{source}?workflowType=machine_learning)"
    assert first.startswith(f"**Rerun** of {link}: identical metrics, bit for bit ({n_keys} keys).")
    assert rest == client.get_run(source).data.tags["mlflow.note.content"].replace(name, f"{name} (rerun)")  # then the run's summary
    # a rerun of the rerun keeps one suffix; tracking.run_name= names it as asked
    capsys.readouterr()
    assert main(["rerun", rerun, "tracking.run_name=again"]) == 0
    assert _only_name(tmp_path, _only_run(tmp_path, **{"ltr.rerun_of": rerun})) == "again"

    # the same source run, pruned, then killed, then a sweep's parent
    client.set_tag(source, "ltr.pruned_at_round", "10")
    capsys.readouterr()
    assert main(["rerun", source[:8]]) == 0
    (line,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("ltr: rerun of")]
    assert "the source run was pruned by its Optuna search at round 10 (the rerun trains to the end)" in line

    client.set_terminated(source, "KILLED")
    assert main(["rerun", source[:8]]) == 0
    out = capsys.readouterr().out
    assert "the source run was killed (status KILLED: interrupted before it finished)" in out
    (last,) = [line for line in out.splitlines() if line.startswith("(the source run did not finish")]
    assert last.endswith("is FINISHED)")
    assert "metric keys moved" not in out

    n_runs = len(client.search_runs([client.get_experiment_by_name("ltr").experiment_id]))
    assert main(["rerun", source[:8], "tracking=none"]) == 2
    assert capsys.readouterr().err.strip() == (
        "ltr: error: a rerun with tracking=none would log nothing to compare: leave tracking=none out"
    )
    client.set_tag(source, "ltr.role", "sweep")
    assert main(["rerun", source[:8]]) == 2
    assert "is a sweep's parent, not a trained run: rerun one of its jobs" in capsys.readouterr().err
    assert len(client.search_runs([client.get_experiment_by_name("ltr").experiment_id])) == n_runs  # nothing trained


def test_rerun_after_the_data_file_changed_says_so_and_lists_the_moved_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(1)
    rows = [(int(rng.integers(0, 3)), q, rng.random(4)) for q in range(120) for _ in range(int(rng.integers(2, 30)))]

    def write(labels_shift: int) -> None:
        (tmp_path / "train.txt").write_text("".join(
            f"{(label + labels_shift * (q % 2)) % 3} qid:{q} " + " ".join(f"{j + 1}:{x:.4f}" for j, x in enumerate(f)) + "\n"
            for label, q, f in rows
        ))

    write(0)
    data = ["data=svmlight", f"data.train={tmp_path / 'train.txt'}", f"data.cache_dir={tmp_path / 'cache'}", "model.min_child_samples=2"]
    assert main(["train", *data, *SMALL]) == 0
    source = _only_run(tmp_path)
    write(1)  # the same file, other labels on half the queries
    capsys.readouterr()
    assert main(["rerun", source]) == 0
    out = capsys.readouterr().out
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    rerun = _only_run(tmp_path, **{"ltr.rerun_of": source})
    old_sha = client.get_run(source).data.tags["ltr.data.fingerprint"]
    new_sha = client.get_run(rerun).data.tags["ltr.data.fingerprint"]
    assert old_sha != new_sha
    (line,) = [line for line in out.splitlines() if line.startswith("ltr: rerun of")]
    assert line.endswith(f"data fingerprint {old_sha} -> {new_sha} (a changed data file or data setting)")
    old, new = client.get_run(source).data.metrics, client.get_run(rerun).data.metrics
    moved = metric_differences(old, new)
    assert f"{len(moved)} metric keys moved (rerun - source):" in out
    assert any(key == "test/ndcg_at_10" for key, _, _ in moved)
    key, a, b = moved[0]  # the largest change is listed first
    lines = out.splitlines()
    first = lines[lines.index(f"{len(moved)} metric keys moved (rerun - source):") + 1]
    assert first == f"  {key}: {a:.6g} -> {b:.6g} ({b - a:+.6g})"
    assert "nDCG@10 on test" in out  # the per-stratum comparison follows


def test_rerun_on_a_machine_of_other_cores_says_the_thread_count_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``fit.num_threads=0`` takes the machine's physical cores: the rerun on a machine with one
    core more (ltr's own core count stood in for) trains on another thread count and says so."""
    monkeypatch.chdir(tmp_path)
    assert main(["train", "data.n_queries=200", *SMALL]) == 0
    source = _only_run(tmp_path)
    cores = local.physical_cores()
    monkeypatch.setattr(local, "physical_cores", lambda: cores + 1)
    capsys.readouterr()
    assert main(["rerun", source]) == 0
    out = capsys.readouterr().out
    rerun = _only_run(tmp_path, **{"ltr.rerun_of": source})
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert client.get_run(source).data.params["lightgbm.n_jobs"] == str(cores)
    assert client.get_run(rerun).data.params["lightgbm.n_jobs"] == str(cores + 1)
    (line,) = [line for line in out.splitlines() if line.startswith("ltr: rerun of")]
    assert f"LightGBM threads {cores} -> {cores + 1} (its sums depend on the thread count;" in line


def test_thread_change_only_when_both_runs_logged_other_counts() -> None:
    assert thread_change({"lightgbm.n_jobs": "8"}, {"lightgbm.n_jobs": "2"}) is not None
    assert "LightGBM threads 8 -> 2" in str(thread_change({"lightgbm.n_jobs": "8"}, {"lightgbm.n_jobs": "2"}))
    assert thread_change({"lightgbm.n_jobs": "2"}, {"lightgbm.n_jobs": "2"}) is None
    assert thread_change({}, {"lightgbm.n_jobs": "2"}) is None  # a run logged before the param


def test_plan_logs_in_the_store_read_from_unless_told() -> None:
    """The source run's own tracking overrides (the store it was logged in) give way to the
    store it was read from; extra ones win over both."""
    source = ["tracking.uri=sqlite:////A/mlflow.db", "model.num_leaves=7", "tracking.experiment=old"]
    plan = plan_rerun(source, [], tracking_uri="sqlite:////B/mlflow.db", experiment="study")
    assert plan.overrides == ["model.num_leaves=7", "tracking.uri=sqlite:////B/mlflow.db", "tracking.experiment=study"]
    plan = plan_rerun(source, ["tracking.uri=sqlite:////C/mlflow.db"], tracking_uri="sqlite:////B/mlflow.db", experiment="s")
    assert plan.overrides == ["tracking.uri=sqlite:////C/mlflow.db", "model.num_leaves=7", "tracking.experiment=s"]


def test_plan_replaces_overrides_of_the_same_key_and_keeps_the_store() -> None:
    plan = plan_rerun(["model=rank_xendcg", "model.num_leaves=7", "+model.params.path_smooth=1"],
                      ["model.num_leaves=63", "seed=3"], tracking_uri="sqlite:////x/mlflow.db", experiment="study")
    assert plan.overrides == [
        "model=rank_xendcg", "model.num_leaves=63", "+model.params.path_smooth=1", "seed=3",
        "tracking.uri=sqlite:////x/mlflow.db", "tracking.experiment=study",
    ]
    assert plan.changed == ["model.num_leaves", "seed"]


def test_config_differences_ignore_the_store_and_the_keys_changed_on_purpose() -> None:
    old = "seed: 42\nmodel:\n  num_leaves: 7\n  max_bin: 255\ntracking:\n  uri: a\n"
    new = "seed: 42\nmodel:\n  num_leaves: 63\n  max_bin: 63\ntracking:\n  uri: b\n"
    assert config_differences(old, new, ignore=["model.num_leaves"]) == ["model.max_bin: 255 -> 63"]


def test_metric_differences_are_bit_exact() -> None:
    assert metric_differences({"a": 0.1 + 0.2, "t_seconds": 1.0}, {"a": 0.3, "t_seconds": 2.0}) == [("a", 0.1 + 0.2, 0.3)]
    assert metric_differences({"a": float("nan")}, {"a": float("nan")}) == []
    assert metric_differences({"a": 1.0}, {"a": 1.0, "b": 2.0})[0][0] == "b"


def test_a_reruns_name_and_note_say_whose_rerun_it_is_and_what_moved() -> None:
    assert [rerun_name(n) for n in ("mine_a", "mine_a (rerun)", "")] == ["mine_a (rerun)", "mine_a (rerun)", "run (rerun)"]
    # a name tracking.run_name refuses (a run logged by other means): what it can hold
    assert rerun_name("b\x1b]0;PWNED\x07") == "b]0;PWNED (rerun)"
    long = rerun_name("x" * 300)
    assert (len(long), long[-9:]) == (MAX_RUN_NAME, "x (rerun)")
    check_run_name(long)
    source = RunRecord("ab" * 16, "mine_a", "3", "FINISHED", {})
    link = f"[mine_a (abababab)](#/experiments/3/runs/{'ab' * 16}?workflowType=machine_learning)"
    moved = metric_differences({"test/ndcg_at_10": 0.5, "valid/ndcg_at_10": 0.25}, {"test/ndcg_at_10": 0.75, "valid/ndcg_at_10": 0.25})
    assert rerun_note(source, moved, n_keys=2, changes=["LightGBM 4.6.0 -> 4.7.0"]) == (
        f"**Rerun** of {link}: 1 of 2 metric keys moved; the most: test/ndcg_at_10 0.5 -> 0.75. "
        "What differed: LightGBM 4.6.0 -> 4.7.0."
    )
    assert rerun_note(source, [], n_keys=186) == f"**Rerun** of {link}: identical metrics, bit for bit (186 keys)."
    assert rerun_note(source, None, n_keys=0, same_store=False) == (
        f"**Rerun** of run {'ab' * 16} (mine_a) of another store: the source run did not finish, so no metric was compared."
    )


def test_rerun_of_a_copied_store_records_in_the_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 30: a store copied from A to B, A removed: the rerun reads and records in B (its
    artifacts under B too), never recreating A; ``tracking.uri=`` sends it elsewhere."""
    import shutil

    a, b, c = tmp_path / "A", tmp_path / "B", tmp_path / "C"
    a.mkdir()
    monkeypatch.chdir(a)
    assert main(["train", "data.n_queries=200", f"tracking.uri=sqlite:///{a / 'mlflow.db'}", *SMALL]) == 0
    source = _only_run(a)
    shutil.copytree(a, b)
    shutil.rmtree(a)
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["rerun", source[:8], "--tracking-uri", f"sqlite:///{b / 'mlflow.db'}"]) == 0
    out = capsys.readouterr().out
    assert "identical metrics, bit for bit" in out
    assert not a.exists(), "the original store's folder was recreated"
    rerun = _only_run(b, **{"ltr.rerun_of": source})
    client = MlflowClient(f"sqlite:///{b / 'mlflow.db'}")
    assert client.get_run(rerun).info.artifact_uri.startswith((b / "mlartifacts").as_uri())
    assert client.get_run(source).info.artifact_uri.startswith((b / "mlartifacts").as_uri())
    # tracking.uri= given: the rerun goes there, read from B all the same
    assert main(["rerun", source[:8], "--tracking-uri", f"sqlite:///{b / 'mlflow.db'}", f"tracking.uri=sqlite:///{c / 'mlflow.db'}"]) == 0
    assert "identical metrics, bit for bit" in capsys.readouterr().out
    _only_run(c, **{"ltr.rerun_of": source})
    assert len(client.search_runs([client.get_experiment_by_name("ltr").experiment_id])) == 2


def test_a_run_of_your_own_config_folder_reruns_from_it_and_one_logged_before_folders_were_recorded_is_told_to_pass_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """README "Installed with pip: your own configs": ``ltr train --config-dir DIR model=wide``
    records DIR (tag ``ltr.config_dirs``), ``ltr rerun`` composes from it again (bit-identical
    metrics); a folder gone is one line; ``--config-dir`` or ``hydra.searchpath`` name another.
    The same run without the tag (as an older ltr logged it) is told to pass ``--config-dir``,
    and reruns with it."""
    import shutil

    from ltr.config.search_path import TAG, decode

    conf = tmp_path / "ltr-conf"
    (conf / "model").mkdir(parents=True)
    (conf / "model" / "wide.yaml").write_text("defaults:\n  - lambdarank\nnum_leaves: 5\n")
    monkeypatch.chdir(tmp_path)
    small = [o for o in SMALL if not o.startswith("model.")]
    assert main(["train", "--config-dir", "ltr-conf", "model=wide", "data.n_queries=200", "tracking.run_name=wide1", *small]) == 0
    source = _only_run(tmp_path)
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    run = client.get_run(source)
    assert decode(run.data.tags[TAG]) == [str(conf)]  # absolute, though given relative
    assert run.data.params["model.num_leaves"] == "5"
    assert "hydra" not in run.data.tags["ltr.overrides"]
    capsys.readouterr()

    assert main(["rerun", source]) == 0
    out = capsys.readouterr().out
    rerun = _only_run(tmp_path, **{"ltr.rerun_of": source})
    assert f"ltr: rerun of {source[:8]} (wide1) as {rerun[:8]} (wide1 (rerun)): {_clean_note()}" in out
    assert "identical metrics, bit for bit" in out
    assert decode(client.get_run(rerun).data.tags[TAG]) == [str(conf)]  # a rerun of the rerun finds it too

    moved = tmp_path / "moved-conf"
    shutil.move(conf, moved)
    assert main(["rerun", source]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"ltr: error: run {source[:8]} (wide1) was trained with the config folder {conf}, which is gone "
        f"(tag {TAG}); pass --config-dir DIR with its options (model/..., local/...)\n"
    )
    assert main(["rerun", source, "--config-dir", str(moved)]) == 0
    out = capsys.readouterr().out
    assert f"config folders {conf} -> {moved}" in out
    assert "identical metrics, bit for bit" in out
    assert main(["rerun", source, f"hydra.searchpath=[file://{moved}]"]) == 0
    assert "identical metrics, bit for bit" in capsys.readouterr().out
    reruns = client.search_runs([run.info.experiment_id], filter_string=f"tags.`ltr.rerun_of` = '{source}'")
    assert sorted(decode(r.data.tags[TAG])[0] for r in reruns) == [str(conf), str(moved), str(moved)]

    # a run logged before config folders were recorded: told to pass one
    client.delete_tag(source, TAG)  # as an older ltr logged it
    assert main(["rerun", source]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ltr: error: cannot compose the rerun: model=wide is not an option of model")
    assert err.endswith(f"; if run {source[:8]} ({_only_name(tmp_path, source)}) used your own config folder, pass --config-dir DIR\n")
    assert main(["rerun", source, "--config-dir", str(moved)]) == 0
    assert "identical metrics, bit for bit" in capsys.readouterr().out


def _only_name(tmp: Path, run_id: str) -> str:
    return str(MlflowClient(f"sqlite:///{tmp / 'mlflow.db'}").get_run(run_id).info.run_name)

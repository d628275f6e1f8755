"""``ltr compare`` on real runs in a tmp MLflow store (built once, see ``conftest.py``)."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import lightgbm as lgb
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from ltr.cli.compare import _log, main
from ltr.compare.loading import (
    CONVENTION_TAGS,
    LoadedComparison,
    check_compatible,
    load_comparison,
)
from ltr.errors import LtrUserError
from ltr.tracking.runs import RunRecord, RunStore
from tests.compare.conftest import Store

N_RESAMPLES = 4000


def _compare(store: Store, *refs: str, metrics: tuple[str, ...] = ("ndcg_at_10",)) -> LoadedComparison:
    return load_comparison(list(refs), tracking_uri=store.uri, n_resamples=N_RESAMPLES, metrics=metrics)


def _logged_table(store: Store, name: str, tmp_path: Path) -> pd.DataFrame:
    """The per-query test table of a run, read with MLflow directly (not through ltr)."""
    client = MlflowClient(store.uri)
    path = client.download_artifacts(store.run_ids[name], "per_query/test.parquet", str(tmp_path / name))
    return pd.read_parquet(path)


def test_runs_differing_only_in_seed_show_no_significant_difference(store: Store, tmp_path: Path) -> None:
    """base vs seed2 (same data, config and split; seed 1 vs 2, subsampling on).

    Asserted: the runs really differ on some queries; on nDCG@5 and @10, overall and in every
    stratum, both Holm-adjusted p-values are >= 0.05; the overall 95% CIs of the deltas
    contain 0.
    """
    comparison = _compare(store, "base", "seed2", metrics=("ndcg_at_5", "ndcg_at_10")).comparison
    tested = [r for r in comparison.rows if not r.is_baseline]
    assert len(tested) == 2 * 4
    assert any(r.wins + r.losses > 0 for r in tested), "the seed should change the model"
    for row in tested:
        assert row.p_t_holm >= 0.05, row
        assert row.p_rand_holm >= 0.05, row
    for row in (r for r in tested if r.stratum == "all"):
        assert row.delta_ci_low < 0.0 < row.delta_ci_high, row
    base, seed2 = _logged_table(store, "base", tmp_path), _logged_table(store, "seed2", tmp_path)
    assert not base["ndcg_at_10"].equals(seed2["ndcg_at_10"])


def test_degraded_run_is_significantly_worse_and_wins_losses_are_a_direct_count(
    store: Store, tmp_path: Path
) -> None:
    """weak (1 round, 2 leaves) vs base: overall delta < 0 with the whole CI below 0 and both
    Holm-adjusted p-values < 0.01; W/T/L in every group equal a count on the logged tables."""
    comparison = _compare(store, "base", "weak").comparison
    rows = {r.stratum: r for r in comparison.rows_for("ndcg_at_10", baseline=False)}
    overall = rows["all"]
    assert overall.delta < 0
    assert overall.delta_ci_high < 0
    assert overall.p_t_holm < 0.01
    assert overall.p_rand_holm < 0.01

    base, weak = _logged_table(store, "base", tmp_path), _logged_table(store, "weak", tmp_path)
    pairs = base.merge(weak, on="qid", suffixes=("_base", "_weak"))
    assert len(pairs) == len(base) == overall.n
    groups = {"all": pairs, **{str(s): g for s, g in pairs.groupby("stratum_base")}}
    assert set(groups) == set(rows)
    for stratum, group in groups.items():
        w, b = group["ndcg_at_10_weak"], group["ndcg_at_10_base"]
        assert (rows[stratum].wins, rows[stratum].ties, rows[stratum].losses) == (
            int((w > b).sum()), int((w == b).sum()), int((w < b).sum())
        ), stratum
        assert rows[stratum].mean == pytest.approx(w.mean())


def test_mismatched_fingerprints_are_refused_in_one_line(store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(LtrUserError) as info:
        main(["base", "other-data", "--tracking-uri", store.uri])
    message = str(info.value)
    assert "\n" not in message
    # what they are compared on (issue 48): the test split's evaluation data, and which part differs
    assert "ltr.data.eval_fingerprint.test differs" in message
    assert "the evaluation data (queries, documents, grades) differs" in message
    assert "different data" in message
    assert "--force" in message
    assert main(["base", "other-data", "--tracking-uri", store.uri, "--force", "--json", "--n-resamples", "200"]) == 0
    out, err = capsys.readouterr()
    assert "--force" in err
    assert "ltr.data.eval_fingerprint.test" in err
    data = json.loads(out)
    assert data["n_queries"] < 60
    assert data["n_dropped"]["other-data"] > 0


def test_different_conventions_are_refused_unless_forced() -> None:
    tags = {"ltr.data.fingerprint": "0123456789abcdef", **dict.fromkeys(CONVENTION_TAGS, "x")}
    a = RunRecord("a" * 32, "a", "1", "FINISHED", tags)
    b = RunRecord("b" * 32, "b", "1", "FINISHED", tags | {"ltr.eval.ties": "stable"})
    with pytest.raises(LtrUserError, match=r"different metric conventions: ltr.eval.ties differs \('a'=x, 'b'=stable\)"):
        check_compatible([a, b], ["a", "b"], force=False)
    assert check_compatible([a, b], ["a", "b"], force=True)
    assert check_compatible([a, a], ["a", "a2"], force=False) == []


def test_run_references_by_id_name_and_prefix(store: Store) -> None:
    runs = RunStore(store.uri)
    weak_id = store.run_ids["weak"]
    for ref in (weak_id, "weak", weak_id[:10]):
        assert runs.resolve(ref, experiment="ltr").run_id == weak_id
    with pytest.raises(LtrUserError, match="no run 'nope' in experiment 'ltr'"):
        runs.resolve("nope", experiment="ltr")
    # a 1-digit prefix is tried too (issue 30: `ltr compare A 8` said "no run")
    first = weak_id[0]
    all_ids = [r.info.run_id for r in runs.client.search_runs([runs.experiment_id("ltr")], max_results=1000)]
    sharing = [i for i in all_ids if i.startswith(first)]
    if len(sharing) == 1:
        assert runs.resolve(first, experiment="ltr").run_id == weak_id
    else:
        with pytest.raises(LtrUserError, match=f"run id prefix '{first}' matches"):
            runs.resolve(first, experiment="ltr")
    unused = next(c for c in "0123456789abcdef" if not any(i.startswith(c) for i in all_ids))
    with pytest.raises(LtrUserError, match=f"no run '{unused}' in experiment 'ltr'"):
        runs.resolve(unused, experiment="ltr")
    with pytest.raises(LtrUserError, match="no experiment 'other'"):
        runs.resolve("weak", experiment="other")
    with pytest.raises(LtrUserError, match="no MLflow store"):
        RunStore(f"sqlite:///{store.root / 'missing.db'}")


def test_terminal_markdown_and_json_outputs(store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    common = ["--tracking-uri", store.uri, "--n-resamples", "500"]
    assert main(["base", "weak", "seed2", "--metric", "ndcg_at_10", "--metric", "err_at_10", *common]) == 0
    terminal = capsys.readouterr().out
    for text in ("nDCG@10 on test", "ERR@10 on test", "51+", "11-50", "weak", "seed2", "Holm over the 16"):
        assert text in terminal
    assert main(["weak", "--baseline", "base", "--markdown", *common]) == 0
    markdown = capsys.readouterr().out
    assert "| stratum | n | run |" in markdown
    assert "| all | 60 | base |" in markdown
    assert main(["base", "weak", "--json", "--split", "valid", *common]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["split"] == "valid"
    assert data["baseline"] == "base"
    assert [r["run_id"] for r in data["runs"]] == [store.run_ids["base"], store.run_ids["weak"]]
    assert len(data["rows"]) == 4 * 2


def test_default_store_is_the_one_ltr_train_uses(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(store.root)  # ltr train's default: sqlite:///<cwd>/mlflow.db
    assert main(["base", "seed2", "--json", "--n-resamples", "100"]) == 0


def test_log_records_the_comparison_as_a_linked_run(
    store: Store, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    args = ["base", "weak", "--tracking-uri", store.uri, "--n-resamples", "300", "--json", "--log"]
    assert main(args) == 0
    out, err = capsys.readouterr()
    run_id = err.strip().split("MLflow run ")[1].split()[0]
    client = MlflowClient(store.uri)
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED"
    assert run.data.tags["ltr.kind"] == "comparison"
    # in the comparisons experiment beside the training runs' (whose chart view it would crowd)
    assert client.get_experiment(run.info.experiment_id).name == "ltr (comparisons)"
    assert "ltr (comparisons)" in err
    training = client.get_experiment_by_name("ltr")
    assert training is not None
    assert not [
        r for r in client.search_runs([training.experiment_id]) if r.data.tags.get("ltr.kind") == "comparison"
    ]
    assert run.data.tags["ltr.compare.run_ids"] == f"{store.run_ids['base']},{store.run_ids['weak']}"
    assert run.data.tags["ltr.compare.baseline_run_id"] == store.run_ids["base"]
    assert {a.path for a in client.list_artifacts(run_id, "comparison")} == {
        "comparison/summary.md", "comparison/comparison.json",
    }
    logged = client.download_artifacts(run_id, "comparison/comparison.json", str(tmp_path))
    assert json.loads(Path(logged).read_text()) == json.loads(out)
    # Two comparisons of the same runs share a name: the name names the latest, with a note.
    assert main(args) == 0
    capsys.readouterr()
    runs_store = RunStore(store.uri)
    latest = runs_store.resolve(run.info.run_name, experiment="ltr (comparisons)")
    assert latest.run_id != run.info.run_id
    assert client.get_run(latest.run_id).info.start_time >= run.info.start_time
    assert runs_store.notes == [
        f"run name {run.info.run_name!r} matches 2 runs; using the latest finished one, "
        f"{latest.run_id[:8]} (pass a run id for another)"
    ]
    # the comparison run itself holds no per-query table: comparing it says what it is
    with pytest.raises(LtrUserError) as info:
        load_comparison([latest.run_id, "base"], tracking_uri=store.uri, n_resamples=100)
    assert str(info.value) == (
        f"run {latest.run_name!r} ({latest.short_id}) is an `ltr compare --log` run, not a trained one: compare "
        f"the runs it compared ({store.run_ids['base'][:8]}, {store.run_ids['weak'][:8]})"
    )


def test_a_stop_signal_once_the_comparison_is_logged_stops_nothing(store: Store) -> None:
    """Logging the comparison makes ``ltr compare --log``'s work final (``committing``): a SIGINT
    after it (the "logged the comparison" line, the command's return) ends the command with the
    run logged and exit 0, not exit 130 with a store the user is told was not written."""
    from ltr.runtime.stops import stop_signals_recorded

    loaded = _compare(store, "base", "weak")
    with stop_signals_recorded():
        run_id = _log(loaded, experiment="ltr", markdown="| a |", explained=[])
        signal.raise_signal(signal.SIGINT)  # handled here, by the block's handler: no KeyboardInterrupt
    run = MlflowClient(store.uri).get_run(run_id)
    assert run.info.status == "FINISHED"
    assert run.data.tags["ltr.compare.run_ids"] == f"{store.run_ids['base']},{store.run_ids['weak']}"


def test_a_sweep_parent_is_refused_as_what_it_is(tmp_path: Path) -> None:
    """A grid sweep's parent has no per-query table of its own: one line says so (not a missing
    tag or artifact)."""
    from ltr.tracking.base import RunStatus
    from ltr.tracking.mlflow_tracker import MlflowTracker

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    tracker = MlflowTracker(uri, "ltr")
    ids = []
    for name, tags in (("grid", {"ltr.role": "sweep"}), ("job", {})):
        ids.append(tracker.start_run(name, tags))
        tracker.end_run(RunStatus.FINISHED)
    with pytest.raises(LtrUserError) as info:
        load_comparison(["grid", "job"], tracking_uri=uri, n_resamples=100)
    assert str(info.value) == (
        f"run 'grid' ({ids[0][:8]}) is a sweep's parent: its jobs are the trained runs; compare two of them "
        "(the parent's description lists them), or two cross-validation parents"
    )


def test_a_killed_run_is_said_to_be_killed(tmp_path: Path) -> None:
    """Issue 30: ``ltr compare`` / ``ltr rerun`` of a killed run said nothing about it."""
    from ltr.experiment.rerun import describe_changes
    from ltr.tracking.base import RunStatus
    from ltr.tracking.mlflow_tracker import MlflowTracker

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    tracker = MlflowTracker(uri, "ltr")
    run_id = tracker.start_run("half done", {})
    tracker.log_metrics({"valid/ndcg_at_10": 0.5})
    tracker.end_run(RunStatus.KILLED, error="KeyboardInterrupt: interrupted")
    runs = RunStore(uri)
    record = runs.resolve(run_id[:6], experiment="ltr")
    assert record.status == "KILLED"
    assert runs.notes == [f"run {run_id[:8]} (half done) was killed (status KILLED: interrupted before it finished)"]
    with pytest.raises(LtrUserError, match=r"\('half done'\) was killed .* has no artifact per_query/test.parquet"):
        runs.per_query_table(record, "test")
    assert describe_changes(record, [])[0] == "the source run was killed (status KILLED: interrupted before it finished)"


def test_a_rerun_in_another_folder_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The run's folder (``ltr.workdir``) is where its relative data paths were taken from: a
    rerun elsewhere says which folder it takes them from now; in the same folder nothing."""
    from ltr.experiment.rerun import describe_changes
    from ltr.tracking.records import RunRecord

    trained, other = tmp_path / "trained", tmp_path / "other"
    trained.mkdir()
    other.mkdir()
    record = RunRecord("0" * 32, "r", "1", "FINISHED", {"ltr.workdir": str(trained), "ltr.lightgbm_version": lgb.__version__})
    monkeypatch.chdir(trained)
    assert not [line for line in describe_changes(record, []) if line.startswith("folder")]
    monkeypatch.chdir(other)
    assert f"folder {trained} -> {other} (relative data paths are taken from here)" in describe_changes(record, [])

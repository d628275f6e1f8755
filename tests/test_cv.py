"""``experiment=letor_cv`` on MQ2008: five fold runs, and the parent's mean and std over them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from ltr.cli.main import main
from tests.conftest import SHARED_DATA

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (SHARED_DATA / "mq2008").exists(), reason="../shared/data/mq2008 is absent"),
]


def _cv(capsys: pytest.CaptureFixture[str], uri: str, *extra: str) -> pytest.CaptureResult[str]:
    """``ltr train experiment=letor_cv ...`` in this process (the test's working directory): what it printed."""
    capsys.readouterr()
    returned = main(["train", "experiment=letor_cv", "fit.num_boost_round=10", "fit.show_progress=false",
                     "tracking.log_model=false", f"tracking.uri={uri}", *extra])  # fmt: skip
    printed = capsys.readouterr()
    assert returned == 0, printed.err[-3000:]
    return printed


def test_letor_cv_parent_reports_mean_and_std_over_the_five_folds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LTR_SHARED_DATA", str(SHARED_DATA))
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    proc = _cv(capsys, uri)
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("ltr")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id])
    (parent,) = [r for r in runs if r.data.tags.get("ltr.role") == "sweep"]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert sorted(c.data.params["data.fold"] for c in children) == ["1", "2", "3", "4", "5"]
    assert all(c.info.status == "FINISHED" for c in [parent, *children])
    metrics = parent.data.metrics
    assert metrics["cv/n_folds"] == 5
    ordered = sorted(children, key=lambda c: c.data.params["data.fold"])
    for key in ("test/ndcg_at_10", "test/ndcg_at_10/len_11-50", "valid/ndcg_at_10"):  # headline: its own key
        values = np.array([c.data.metrics[key] for c in ordered])
        assert metrics[key] == values.mean()
        assert metrics[f"{key}/sd"] == values.std(ddof=1)
    assert not any(k.startswith(("cv/test", "cv/valid", "sweep/best")) for k in metrics)  # no fold is "best"
    assert "ltr.sweep.best_run_id" not in parent.data.tags
    # every other key's mean and sd: one table
    table = pd.read_json(client.download_artifacts(parent.info.run_id, "report/cv_metrics.json", str(tmp_path)), orient="split")
    rows = table.set_index("key")
    for key in ("test/ndcg_at_5/len_11-50", "valid/err_at_10", "test/n_queries"):
        values = np.array([c.data.metrics[key] for c in ordered])
        # MLflow rounds JSON tables to about 10 digits (README; 9 significant here); the headline keys above are exact
        assert rows.loc[key, "mean"] == pytest.approx(values.mean(), rel=1e-8, abs=1e-12)
        assert rows.loc[key, "sd"] == pytest.approx(values.std(ddof=1), rel=1e-8, abs=1e-12)
    # every fold's test split is one part of MQ2008: together they hold each query once
    assert rows.loc["test/n_queries", "mean"] * 5 == sum(c.data.metrics["test/n_queries"] for c in children)
    description = parent.data.tags["mlflow.note.content"]
    mean, std = metrics["test/ndcg_at_10"], metrics["test/ndcg_at_10/sd"]
    assert description.startswith(f"**test nDCG@10 {mean:.4f} ± {std:.4f}** over 5 folds (data.fold = 1, 2, 3, 4, 5)\n\n")
    assert description.partition("\n\n")[2].startswith("### lambdarank on mq2008: mean ± sd over 5 folds")
    assert f"| all | {rows.loc['test/n_queries', 'mean']:.1f} |" in description
    assert f"{mean:.4f} ± {std:.4f} |" in description
    table_md, _, jobs = description.partition("\n\n")[2].partition("\n\n**Fold runs**: 5 of 5 finished.")
    assert table_md in proc.out  # the fold table, as printed
    assert "best" not in description.lower()
    assert all(f"/runs/{c.info.run_id}?workflowType=machine_learning)" in jobs for c in children)  # then the folds

    # a second CV sweep, compared with the first fold by fold: paired over folds and over queries
    _cv(capsys, uri, "model.num_leaves=3", "tracking.run_name=small")
    parents = [r for r in MlflowClient(uri).search_runs([experiment.experiment_id]) if r.data.tags.get("ltr.role") == "sweep"]
    second = next(r for r in parents if r.info.run_id != parent.info.run_id)
    capsys.readouterr()
    assert main(["compare", parent.info.run_id, second.info.run_id, "--tracking-uri", uri, "--n-resamples", "500"]) == 0
    captured = capsys.readouterr()
    out = captured.out + captured.err
    assert "784 queries aligned by qid" in out  # MQ2008: every query once, in its test fold
    assert "paired over 5 folds, mean of the fold deltas of test/ndcg_at_10" in out
    second_means = [c.data.metrics["test/ndcg_at_10"] for c in MlflowClient(uri).search_runs(
        [experiment.experiment_id], filter_string=f"tags.mlflow.parentRunId = '{second.info.run_id}'")]
    delta = np.mean(second_means) - metrics["test/ndcg_at_10"]
    assert f"{delta:+.4f} (t-test p=" in out

"""What a run's page says, read back from a real sqlite MLflow store: a click-log run's description
(its click column, propensities with their intervals or none, the off-policy summary), the lead
line every trained run's description opens with, and a cross-validation parent's name (what
tells it from other CVs, not the fold list every CV shares)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from ltr.experiment import run as pipeline
from tests.conftest import compose_train
from tests.test_sweeps import train_in_process

SMALL = ["debug=default", "fit.show_progress=false", "tracking.log_model=false"]


def _only_run(uri: str) -> tuple[dict[str, float], str, str]:
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("ltr")
    assert experiment is not None
    (run,) = client.search_runs([experiment.experiment_id])
    return dict(run.data.metrics), run.data.tags["mlflow.note.content"], str(run.info.run_name)


def test_a_click_log_run_says_its_clicks_propensities_and_off_policy_summary(tracking_uri: str) -> None:
    overrides = ["data=synthetic_clicks"]
    pipeline.run(compose_train([*SMALL, f"tracking.uri={tracking_uri}", *overrides]), overrides=overrides)
    m, description, _ = _only_run(tracking_uri)
    lead, _, body = description.partition("\n\n")
    assert lead == (
        f"**valid nDCG@10 {m['valid/ndcg_at_10']:.4f} · test nDCG@10 {m['test/ndcg_at_10']:.4f}** · "
        f"best round {m['best_iteration']:.0f} of {m['n_rounds']:.0f} · click column `click`, trained on `clicks`, propensities `config`"
    )
    assert body.startswith("### lambdarank on synthetic_clicks: our nDCG")  # the title, then the table
    assert "| 51+ |" in body
    assert "#### Clicks\n\nClick column `click`; trained on `clicks`, judged on `relevance`.\n" in body
    # the simulator's curve 1/position, given: no interval
    assert (
        "Propensities (`eval.clicks.propensity=config`), positions 1-5: 1: 1.000 · 2: 0.500 · 3: 0.333 · 4: 0.250 · "
        "5: 0.200 (no interval); every position: `data/propensity.json`." in body
    )
    assert m["propensity/pos_3"] == 1 / 3
    assert m["propensity/pos_3/low"] == m["propensity/pos_3/high"]
    for split in ("valid", "test"):  # the off-policy summary: the run's own metrics, 4 decimals
        cells = [m[f"{split}/{key}/ndcg_at_10"] for key in ("clicks", "clicks_ips", "clicks_truth")]
        ctr = f"{m[f'{split}/online/ctr']:.4f} [{m[f'{split}/online/ctr_ci_low']:.4f}, {m[f'{split}/online/ctr_ci_high']:.4f}]"
        row = f"| {split} | {m[f'{split}/ndcg_at_10']:.4f} | " + " | ".join(f"{v:.4f}" for v in cells) + f" | {ctr} |"
        assert row in body
    assert body.index("#### Clicks") < body.index("#### Beside LightGBM's own metric")


def test_an_estimated_curve_says_it_has_no_interval(tracking_uri: str) -> None:
    """The CTR ratio never earns an interval (it is unbiased on a random logger only): the run
    logs no ``/low`` or ``/high``, and its page shows the values with ``(no interval)``."""
    overrides = ["data=synthetic_clicks", "eval.clicks.propensity=estimated"]
    pipeline.run(compose_train([*SMALL, f"tracking.uri={tracking_uri}", *overrides]), overrides=overrides)
    m, description, _ = _only_run(tracking_uri)
    assert description.partition("\n\n")[0].endswith("propensities `estimated`")
    assert not [key for key in m if key.startswith("propensity/") and key.endswith(("/low", "/high"))]
    shown = [f"{k}: {m[f'propensity/pos_{k}']:.3f}" if f"propensity/pos_{k}" in m else f"{k}: not identified" for k in range(1, 6)]
    assert f"positions 1-5: {' · '.join(shown)} (no interval);" in description


def test_a_run_without_clicks_has_the_lead_and_no_clicks_section(tracking_uri: str) -> None:
    pipeline.run(compose_train([*SMALL, f"tracking.uri={tracking_uri}"]), overrides=[])
    m, description, name = _only_run(tracking_uri)
    assert name == "lambdarank"
    assert description.partition("\n\n")[0] == (
        f"**valid nDCG@10 {m['valid/ndcg_at_10']:.4f} · test nDCG@10 {m['test/ndcg_at_10']:.4f}** · "
        f"best round {m['best_iteration']:.0f} of {m['n_rounds']:.0f}"
    )
    assert "Clicks" not in description
    assert "propensit" not in description.lower()


@pytest.mark.slow
def test_cv_parents_are_named_by_what_differs_not_by_their_folds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    common = ["-m", *SMALL, "split.n_folds=2", "split.fold=1,2", "cv.fold_key=split.fold", f"tracking.uri={uri}"]
    for extra in ([], ["model.num_leaves=3"], ["model=rank_xendcg"]):
        proc = train_in_process(tmp_path, capsys, *common, *extra)
        assert proc.returncode == 0, proc.stderr[-3000:]
    client = MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name("ltr").experiment_id])  # type: ignore[union-attr]
    parents = {r.info.run_name for r in runs if r.data.tags.get("ltr.role") == "sweep"}
    assert parents == {
        "debug=default (lambdarank, 2-fold CV)",
        "nl=3 debug=default (lambdarank, 2-fold CV)",
        "rank_xendcg debug=default (2-fold CV)",
    }
    children = {r.info.run_name for r in runs if r.data.tags.get("mlflow.parentRunId")}
    assert children == {"fold=1", "fold=2"}  # a fold's run: the value its sweep varies
    (parent,) = [r for r in runs if r.info.run_name == "nl=3 debug=default (lambdarank, 2-fold CV)"]
    m = parent.data.metrics
    lead = parent.data.tags["mlflow.note.content"].partition("\n\n")[0]
    assert lead == f"**test nDCG@10 {m['test/ndcg_at_10']:.4f} ± {m['test/ndcg_at_10/sd']:.4f}** over 2 folds (split.fold = 1, 2)"

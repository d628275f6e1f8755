"""``ltr compare`` checks the data it compares on (issue 48): the evaluation data's fingerprint
(queries, documents, grades of the judged split), not the training data's."""

from __future__ import annotations

import json

import pytest

from ltr.cli.compare import main
from ltr.compare.loading import CONVENTION_TAGS, check_compatible
from ltr.errors import LtrUserError
from ltr.tracking.runs import RunRecord
from tests.conftest import compose_train

CONVENTIONS = dict.fromkeys(CONVENTION_TAGS, "x")


def _run(name: str, whole: str, evaluated: str, trained: str) -> RunRecord:
    tags = {
        "ltr.data.fingerprint": whole, "ltr.data.eval_fingerprint": evaluated,
        "ltr.data.eval_fingerprint.test": evaluated, "ltr.data.train_fingerprint": trained, **CONVENTIONS,
    }  # fmt: skip
    return RunRecord(name * 32, name, "1", "FINISHED", tags)


def test_other_training_data_same_evaluation_data_compares() -> None:
    a, b = _run("a", "1111", "e", "t1"), _run("b", "2222", "e", "t2")
    notes = check_compatible([a, b], ["a", "b"], force=False, split="test")
    assert notes == [
        "the runs trained on different data but are judged on the same test data "
        "(ltr.data.eval_fingerprint.test): compared"
    ]


def test_other_evaluation_data_is_refused_naming_the_part() -> None:
    a, b = _run("a", "1111", "e1", "t"), _run("b", "2222", "e2", "t")
    with pytest.raises(LtrUserError, match=(
        r"different data: ltr.data.eval_fingerprint.test differs \('a'=e1, 'b'=e2\) \(the evaluation data "
        r"\(queries, documents, grades\) differs; the training data is the same\); pass --force"
    )):  # fmt: skip
        check_compatible([a, b], ["a", "b"], force=False, split="test")


def test_runs_without_the_part_tags_check_the_whole_data() -> None:
    old = RunRecord("c" * 32, "c", "1", "FINISHED", {"ltr.data.fingerprint": "1111", **CONVENTIONS})
    with pytest.raises(LtrUserError, match=r"ltr.data.fingerprint differs"):
        check_compatible([old, _run("a", "2222", "e", "t")], ["c", "a"], force=False, split="test")


CLICKS = (
    "data=synthetic_clicks", "data.n_queries=160", "fit.num_boost_round=6", "fit.early_stopping_rounds=3",
    "fit.show_progress=false", "fit.num_threads=1", "model.num_leaves=7", "tracking.log_model=false",
    "eval.clicks.online_sessions=0",
)  # fmt: skip


def test_clicks_trained_and_relevance_trained_runs_of_one_log_compare(
    tracking_uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from ltr.experiment import run as pipeline

    uri = tracking_uri
    ids = {}
    for name, extra in (("clicks", ()), ("relevance", ("data.train_labels=relevance",)), ("other", ("data.n_queries=150",))):
        overrides = [*CLICKS, *extra, f"tracking.uri={uri}", f"tracking.run_name={name}"]
        outcome = pipeline.run(compose_train(overrides), overrides=overrides)
        assert outcome.run_id is not None
        ids[name] = outcome.run_id
    capsys.readouterr()  # the runs' own summaries
    assert main([ids["clicks"], ids["relevance"], "--tracking-uri", uri, "--json", "--n-resamples", "200"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["n_queries"] > 0
    assert "judged on the same test data" in err
    with pytest.raises(LtrUserError, match=r"different data: ltr.data.eval_fingerprint.test differs .*the evaluation data"):
        main([ids["clicks"], ids["other"], "--tracking-uri", uri])
    # a composite in the syntax of ltr evaluate --composite, computed on each run's table
    blend = "blend=0.5*ndcg_at_5+0.5*ndcg_at_10"
    assert main([ids["clicks"], ids["relevance"], "--tracking-uri", uri, "--json", "--n-resamples", "200", "--composite", blend]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["metrics"] == ["blend"]

"""Oracle: the ``trec_eval`` preset reproduces trec_eval's published outputs (trec_eval test/)."""

from __future__ import annotations

import numpy as np
import pytest

from ltr.data.formats.trec import read_trec, read_trec_eval_output
from ltr.metrics import PRESETS, per_query_table, resolve_conventions, summarize

from .conftest import SHARED_DATA

TREC = SHARED_DATA / "trec_eval_test"
pytestmark = pytest.mark.skipif(not TREC.is_dir(), reason=f"{TREC} is absent")

CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
FULL = 100_000  # longer than any ranking and any judgment list: trec_eval's uncut ndcg


@pytest.mark.parametrize(
    ("qrels", "run", "expected", "rel_threshold", "missing_topics"),
    [
        # graded NDCG; -l2: binary measures count relevance >= 2
        pytest.param("qrels.rel_level", "results.test", "out.test.aql", 2, "skip", id="aql-graded"),
        pytest.param("qrels.test", "results.test", "out.test.a", 1, "skip", id="a-binary"),
        pytest.param("qrels.test", "results.test", "out.test.aq", 1, "skip", id="aq-per-query"),
        # -c with a truncated run missing topic 302: 302 is an empty query scoring 0
        pytest.param(
            "qrels.test", "results.trunc", "out.test.aqc", 1, "empty", id="aqc-missing-topic"
        ),
    ],
)
def test_trec_eval_outputs(
    qrels: str, run: str, expected: str, rel_threshold: int, missing_topics: str
) -> None:
    inp = read_trec(TREC / run, TREC / qrels, missing_topics=missing_topics)
    conv = resolve_conventions("trec_eval", rel_threshold=rel_threshold)
    table = per_query_table(
        inp.labels, inp.scores, inp.offsets, inp.qids, ks=(*CUTS, FULL), conventions=conv,
        ideal_labels=inp.ideal_labels, ideal_offsets=inp.ideal_offsets, tie_keys=inp.tie_keys,
    )  # fmt: skip
    summary = summarize(table)
    want = read_trec_eval_output(TREC / expected)
    ours: dict[str, tuple[str, str]] = {"ndcg": (f"ndcg_at_{FULL}", ""), "recip_rank": ("rr", "")}
    for k in CUTS:
        ours[f"ndcg_cut_{k}"] = (f"ndcg_at_{k}", "")
        ours[f"P_{k}"] = (f"p_at_{k}", "")
    checked = 0
    for measure, (col, _) in ours.items():
        values = want[measure]
        assert int(want["num_q"]["all"]) == len(table)
        assert values["all"] == pytest.approx(summary[col], abs=5e-5), measure
        checked += 1
        for topic, v in values.items():
            if topic == "all":
                continue
            row = table.index[table["qid"] == topic]
            assert len(row) == 1, topic
            assert table.loc[row[0], col] == pytest.approx(v, abs=5e-5), (measure, topic)
            checked += 1
    assert checked >= 20
    # RR@k (ir_measures' RR@k, ranx's mrr@k): trec_eval's recip_rank where the first relevant
    # document ranks within k, else 0 (no ties under this preset: the rank is exact)
    rr = table["rr"].to_numpy()
    with np.errstate(divide="ignore"):
        first = np.where(rr > 0, 1.0 / rr, np.inf)
    for k in (*CUTS, FULL):
        assert (table[f"rr_at_{k}"].to_numpy() == np.where(np.rint(first) <= k, rr, 0.0)).all(), k


def test_ties_by_docno_matter_only_in_6th_decimal() -> None:
    # results.test has tied scores; docno order vs input order moves topic 301 by < 1e-5 only
    inp = read_trec(TREC / "results.test", TREC / "qrels.rel_level")
    kw = {
        "ideal_labels": inp.ideal_labels,
        "ideal_offsets": inp.ideal_offsets,
        "tie_keys": inp.tie_keys,
    }
    a = per_query_table(
        inp.labels,
        inp.scores,
        inp.offsets,
        inp.qids,
        ks=[FULL],
        conventions=PRESETS["trec_eval"],
        **kw,
    )  # type: ignore[arg-type]
    b = per_query_table(
        inp.labels,
        inp.scores,
        inp.offsets,
        inp.qids,
        ks=[FULL],
        conventions=resolve_conventions("trec_eval", ties="stable"),
        **kw,
    )  # type: ignore[arg-type]
    diff = (a[f"ndcg_at_{FULL}"] - b[f"ndcg_at_{FULL}"]).abs()
    assert diff.max() < 1e-5

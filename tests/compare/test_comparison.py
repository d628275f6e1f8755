"""`compare_runs` on hand-made per-query tables: alignment, strata, NaN pairs, Holm family."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, replace

import numpy as np
import pandas as pd
import pytest

from ltr.compare import compare_runs, holm, paired_t_pvalue, sign_flip_pvalue, wins_ties_losses
from ltr.compare.align import UnpairedQids
from ltr.compare.render import display_name, rich_tables, to_json, to_markdown
from ltr.errors import LtrUserError


def _table(values: list[float], *, qids: list[int] | None = None) -> pd.DataFrame:
    lens = [3, 8, 15, 40, 60, 5, 22, 70]
    labels = ["1-10" if n <= 10 else "11-50" if n <= 50 else "51+" for n in lens]
    return pd.DataFrame(
        {"qid": qids or list(range(101, 109)), "list_len": lens, "stratum": labels, "ndcg_at_10": values}
    )


BASE = _table([0.5, 0.6, 0.7, 0.1, 0.4, 0.9, 0.3, 0.2])
RUN = _table([0.6, 0.6, 0.9, 0.0, 0.5, 0.8, 0.4, 0.2])


def test_rows_match_the_statistics_computed_directly() -> None:
    c = compare_runs([BASE, RUN], ["base", "run"], n_resamples=2000, seed=4)
    assert c.strata == ("1-10", "11-50", "51+")
    rows = {r.stratum: r for r in c.rows_for("ndcg_at_10", baseline=False)}
    base, run = BASE["ndcg_at_10"].to_numpy(), RUN["ndcg_at_10"].to_numpy()
    for stratum, mask in [("all", np.ones(8, bool)), *[(s, (BASE["stratum"] == s).to_numpy()) for s in c.strata]]:
        row = rows[stratum]
        assert row.n == mask.sum()
        assert row.mean == pytest.approx(run[mask].mean())
        assert row.delta == pytest.approx((run - base)[mask].mean())
        assert row.delta_ci_low <= row.delta <= row.delta_ci_high
        assert (row.wins, row.ties, row.losses) == wins_ties_losses(run[mask], base[mask])
        assert row.p_t == pytest.approx(paired_t_pvalue(run[mask], base[mask]), nan_ok=True)
        assert row.p_rand == pytest.approx(sign_flip_pvalue((run - base)[mask], n_resamples=2000, seed=4))
    # Holm over the 4 comparisons shown (one run x 4 groups), per test.
    tested = c.rows_for("ndcg_at_10", baseline=False)
    expected = holm([r.p_rand for r in tested])
    assert [r.p_rand_holm for r in tested] == pytest.approx(expected.tolist())


def test_tables_are_aligned_by_qid_not_by_row_order() -> None:
    shuffled = RUN.sample(frac=1.0, random_state=0).reset_index(drop=True)
    a = compare_runs([BASE, RUN], ["base", "run"], n_resamples=200)
    b = compare_runs([BASE, shuffled], ["base", "run"], n_resamples=200)
    assert a.rows == b.rows


def test_only_shared_queries_are_compared_and_counted() -> None:
    fewer = RUN.iloc[2:].reset_index(drop=True)
    c = compare_runs([BASE, fewer], ["base", "run"], n_resamples=200)
    assert c.n_queries == 6
    assert c.n_dropped == (2, 0)
    assert c.rows_for("ndcg_at_10")[0].n == 6


def test_a_query_without_a_value_in_some_run_is_left_out_of_that_metric_only() -> None:
    """zero_idcg=skip leaves NaN; every row of the metric drops the query, other metrics keep it."""
    base, run = BASE.assign(rr=BASE["ndcg_at_10"]), RUN.assign(rr=RUN["ndcg_at_10"])
    run["ndcg_at_10"] = [math.nan, *RUN["ndcg_at_10"].iloc[1:]]
    c = compare_runs([base, run], ["base", "run"], metrics=["ndcg_at_10", "rr"], n_resamples=200)
    base_all, run_all = c.rows_for("ndcg_at_10")[:2]
    assert (base_all.n, run_all.n) == (7, 7)
    assert base_all.mean == pytest.approx(BASE["ndcg_at_10"].iloc[1:].mean())
    assert run_all.delta == pytest.approx((RUN["ndcg_at_10"] - BASE["ndcg_at_10"]).iloc[1:].mean())
    assert [r.n for r in c.rows_for("rr")][:2] == [8, 8]


def test_a_row_does_not_depend_on_the_other_runs_shown() -> None:
    """The same seed gives the same draws for the same queries: only Holm sees the family."""
    two = compare_runs([BASE, RUN], ["base", "run"], n_resamples=500, seed=9)
    three = compare_runs([BASE, RUN, _table([0.3] * 8)], ["base", "run", "c"], n_resamples=500, seed=9)
    only_run = [asdict(replace(r, p_t_holm=0.0, p_rand_holm=0.0)) for r in three.rows if r.run != "c"]
    expected = [asdict(replace(r, p_t_holm=0.0, p_rand_holm=0.0)) for r in two.rows]
    assert len(only_run) == len(expected)
    for got, want in zip(only_run, expected, strict=True):
        floats = [k for k, v in want.items() if isinstance(v, float)]
        assert {k: got[k] for k in want if k not in floats} == {k: want[k] for k in want if k not in floats}
        assert [got[k] for k in floats] == pytest.approx([want[k] for k in floats], rel=1e-12, abs=1e-15, nan_ok=True)


def test_holm_family_spans_metrics_and_runs() -> None:
    tables = [t.assign(rr=t["ndcg_at_10"] ** 2) for t in (BASE, RUN, _table([0.1] * 8))]
    c = compare_runs(tables, ["a", "b", "c"], metrics=["ndcg_at_10", "rr"], n_resamples=300)
    tested = [r for r in c.rows if not r.is_baseline]
    assert len(tested) == 2 * 4 * 2  # metrics x groups x non-baseline runs
    assert [r.p_t_holm for r in tested] == pytest.approx(holm([r.p_t for r in tested]).tolist(), nan_ok=True)


def test_string_qids_align_by_name_as_integers_do() -> None:
    """Tables naming their queries as written pair as their integer twins: the same rows."""
    name = {q: f"q-{q}" for q in BASE["qid"]}
    shuffled = RUN.sample(frac=1.0, random_state=1).reset_index(drop=True)
    as_ints = compare_runs([BASE, shuffled], ["base", "run"], n_resamples=200)
    as_text = compare_runs(
        [BASE.assign(qid=BASE["qid"].map(name)), shuffled.assign(qid=shuffled["qid"].map(name))], ["base", "run"],
        n_resamples=200,
    )
    assert as_text.rows == as_ints.rows
    assert as_text.n_dropped == (0, 0)


def test_string_qids_are_never_paired_with_integers() -> None:
    """A table logged before ltr kept string qids as written numbers them: refused in one line,
    whichever run comes first, never a silent pairing by position or by number."""
    text = BASE.assign(qid=[f"{q}" for q in BASE["qid"]])  # even digits: a string is not its number
    expected = (
        "run 'new' names its queries as written (qid '101') but run 'old' by numbers (qid 101): a run logged "
        "before ltr kept string qids as written numbers them 0, 1, ..., which pairs no query reliably; re-run "
        "'old' (ltr rerun) to compare them"
    )
    for tables, labels in (([text, RUN], ["new", "old"]), ([RUN, text], ["old", "new"])):
        with pytest.raises(UnpairedQids) as caught:
            compare_runs(tables, labels, n_resamples=200)
        assert str(caught.value) == expected
    mixed = pd.concat([text.iloc[:4], RUN.iloc[4:]], ignore_index=True)
    with pytest.raises(LtrUserError, match=r"^the per-query table of run 'b' names its queries by strings and by numbers \('101', '102', '103', \.\.\.\)$"):
        compare_runs([RUN, mixed], ["a", "b"], n_resamples=200)


def test_user_errors() -> None:
    with pytest.raises(LtrUserError, match="no column ndcg_at_20"):
        compare_runs([BASE, RUN], ["a", "b"], metrics=["ndcg_at_20"])
    with pytest.raises(LtrUserError, match="share no query"):
        compare_runs([BASE, _table([0.1] * 8, qids=list(range(8)))], ["a", "b"])
    with pytest.raises(LtrUserError, match="qid 101 more than once"):
        compare_runs([BASE, pd.concat([RUN, RUN.iloc[:1]])], ["a", "b"])


def test_renderings() -> None:
    c = compare_runs([BASE, RUN], ["base", "run [new]"], n_resamples=200)
    data = json.loads(to_json(c))
    assert data["baseline"] == "base"
    assert len(data["rows"]) == 4 * 2
    assert data["rows"][0]["delta"] is None  # the baseline's own row
    markdown = to_markdown(c)
    assert "| stratum | n | run |" in markdown
    assert "nDCG@10" in markdown
    assert display_name("err_at_5") == "ERR@5"
    from rich.console import Console

    console = Console(width=200, record=True)
    for table in rich_tables(c):
        console.print(table)
    assert "run [new]" in console.export_text()  # markup in run names is escaped

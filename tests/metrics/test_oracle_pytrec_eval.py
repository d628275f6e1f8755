"""Oracle: the ``trec_eval`` preset matches pytrec_eval per query on LETOR 4.0 MQ2008."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
from numpy.typing import NDArray

from ltr.metrics import per_query_table, resolve_conventions

from .conftest import SHARED_DATA

pytrec_eval = pytest.importorskip("pytrec_eval")
MQ = SHARED_DATA / "mq2008"
pytestmark = pytest.mark.skipif(not MQ.is_dir(), reason=f"{MQ} is absent")


def _read_mq2008() -> tuple[
    NDArray[np.int64], NDArray[np.str_], NDArray[np.str_], NDArray[np.float64]
]:
    """Labels, qids, docids and feature 1 of S1..S5 (LETOR: ``label qid:q 1:v ... #docid = X``)."""
    labels, qids, docids, feat = [], [], [], []
    for i in range(1, 6):
        with gzip.open(MQ / f"S{i}.txt.gz", "rt") as fh:
            for line in fh:
                body, _, comment = line.partition("#")
                f = body.split()
                labels.append(int(f[0]))
                qids.append(f[1].removeprefix("qid:"))
                feat.append(float(f[2].partition(":")[2]))
                docids.append(comment.split()[2])
    return np.array(labels), np.array(qids), np.array(docids), np.array(feat)


def test_trec_eval_preset_matches_pytrec_eval_on_mq2008() -> None:
    labels, qids, docids, feature = _read_mq2008()
    # rows of a qid are contiguous in each file, but a qid may recur across files: group stably
    order = np.argsort(qids, kind="stable")
    labels, qids, docids, feature = labels[order], qids[order], docids[order], feature[order]
    uq, starts = np.unique(qids, return_index=True)
    offsets = np.append(starts, len(qids)).astype(np.int64)
    rng = np.random.default_rng(0)
    measures = {"ndcg_cut_5", "ndcg_cut_10", "ndcg", "P_5", "P_10", "recip_rank"}
    qrels = {str(q): {} for q in uq}
    for q, d, lab in zip(qids, docids, labels, strict=True):
        qrels[str(q)][str(d)] = int(lab)
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, {"ndcg_cut.5,10", "ndcg", "P.5,10", "recip_rank"}
    )
    _, docno_rank = np.unique(docids, return_inverse=True)
    # feature 1 (many exact ties, broken by docno) and random scores
    for scores in (feature, np.round(rng.random(len(labels)), 2)):
        run = {str(q): {} for q in uq}
        for q, d, s in zip(qids, docids, scores, strict=True):
            run[str(q)][str(d)] = float(s)
        theirs = evaluator.evaluate(run)
        table = per_query_table(
            labels, scores, offsets, uq, ks=(5, 10, 1000),
            conventions=resolve_conventions("trec_eval"), tie_keys=docno_rank,
        )  # fmt: skip
        cols = {"ndcg_cut_5": "ndcg_at_5", "ndcg_cut_10": "ndcg_at_10", "ndcg": "ndcg_at_1000",
                "P_5": "p_at_5", "P_10": "p_at_10", "recip_rank": "rr"}  # fmt: skip
        assert set(cols) == measures
        for measure, col in cols.items():
            expected = np.array([theirs[str(q)][measure] for q in uq])
            np.testing.assert_allclose(
                table[col].to_numpy(), expected, rtol=0, atol=1e-12, err_msg=measure
            )

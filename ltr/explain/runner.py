"""``ltr explain RUN`` as a function: a run's model explained on a split of the run or on files,
batch by batch, with the memory of ``ltr predict``.

The batches are ``ltr predict``'s (:func:`ltr.models.predict.predict_input`: the same readers,
checks, read-ahead and scores); each scored batch is explained as it comes
(:func:`ltr.explain.contributions.contributions`), written to the ``--out`` file, added to the
importance sums and, for ``--query``, kept when it holds that query. Memory holds what
``ltr predict`` holds plus one batch's contributions (``batch_rows x (n_features + 1)``
float64, twice with the centred copy).

What is explained is the model's score. A run that re-ranks (``rerank=...``) orders its lists
by more than those scores: :attr:`Explanation.reranked` names the re-ranker, and the views
list documents in the run's final order while their contributions explain the model's scores.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ltr.explain.contributions import centre, contributions, query_means
from ltr.explain.files import ContributionsFile
from ltr.explain.importance import Importance, ImportanceSums
from ltr.explain.logged import logged_importance
from ltr.explain.views import QueryRows, doc_names
from ltr.models.inputs import PredictInput, split_input
from ltr.models.logged import LoggedRun
from ltr.models.predict import ScoredBatch, predict_input


@dataclass
class Explanation:
    """What :func:`explain_input` gives back: the importance overall and per stratum, the kept
    query's rows (``--query``), counts, and the largest difference between a row's contributions
    plus ``expected_value`` and its score (``ltr predict``'s; rounding of float64 sums)."""

    importance: Importance
    query: QueryRows | None
    n_rows: int
    n_queries: int
    seconds: float
    largest_gap: float
    reranked: str | None
    summary: dict[str, float] = field(default_factory=dict)
    #: the first qids of the input, as written (for a message on a --query not found)
    first_qids: list[str] = field(default_factory=list)


class _Explainer:
    """The sink of :func:`predict_input`: explains each scored batch as it comes."""

    def __init__(self, run: LoggedRun, out: ContributionsFile | None, *, centred: bool, query: str | None, labelled: bool) -> None:
        self.run = run
        self.out = out
        self.centred = centred
        self.query = query
        self.labelled = labelled
        self.sums = ImportanceSums(run.feature_names, run.spec.strata)
        self.kept: QueryRows | None = None
        self.largest_gap = 0.0
        self.first_qids: list[str] = []

    def write(self, batch: ScoredBatch) -> None:
        data = batch.data
        if len(self.first_qids) < 5:
            self.first_qids += [str(q) for q in data.written_qids()[: 5 - len(self.first_qids)].tolist()]
        contrib, expected = contributions(self.run.booster, data.features)
        gap = np.abs(contrib.sum(axis=1) + expected - batch.model_scores)
        self.largest_gap = max(self.largest_gap, float(gap.max(initial=0.0)))
        centred = centre(contrib, data.offsets)
        labels = data.labels if self.labelled else None
        sizes = np.diff(data.offsets)
        qids = np.repeat(data.written_qids(), sizes)
        if self.out is not None:
            if self.centred:
                base = np.repeat(query_means(batch.model_scores, data.offsets), sizes)
                self.out.write(qids, data.doc_ids, labels, batch.model_scores, base, centred)
            else:
                self.out.write(qids, data.doc_ids, labels, batch.model_scores, expected, contrib)
        if self.query is not None and self.kept is None:
            self._keep(batch, contrib, centred)
        self.sums.add(centred, data.offsets, overwrite=True)  # last: centred is not read after

    def _keep(self, batch: ScoredBatch, contrib: np.ndarray[Any, Any], centred: np.ndarray[Any, Any]) -> None:
        data = batch.data
        found = np.flatnonzero(data.written_qids().astype(str) == self.query)
        if self.query is None or found.size == 0:
            return
        q = int(found[0])
        rows = slice(int(data.offsets[q]), int(data.offsets[q + 1]))
        n = rows.stop - rows.start
        self.kept = QueryRows(
            self.query, doc_names(self.query, None if data.doc_ids is None else data.doc_ids[rows].tolist(), n),
            data.labels[rows].copy() if self.labelled else None, batch.model_scores[rows].copy(),
            batch.scores[rows].copy(), contrib[rows].copy(), centred[rows].copy(), tuple(self.run.feature_names),
        )  # fmt: skip


def explain_input(
    run: LoggedRun,
    source: PredictInput,
    *,
    out: ContributionsFile | None = None,
    centred: bool = False,
    query: str | None = None,
    meta: dict[str, Any] | None = None,
) -> Explanation:
    """Explain every batch of ``source`` with ``run``'s model (module docstring).

    ``out``: the contributions file, written batch by batch (the caller finishes it);
    ``centred``: write centred contributions; ``query``: keep that query's rows (its qid as the
    input wrote it); ``meta``: what the importance's JSON says of its source.
    """
    t0 = time.perf_counter()
    explainer = _Explainer(run, out, centred=centred, query=query, labelled=source.labelled)
    prediction = predict_input(run, source, sink=explainer)
    rerank = str(run.spec.config.rerank.kind)
    return Explanation(
        importance=explainer.sums.result(meta),
        query=explainer.kept,
        n_rows=prediction.n_rows,
        n_queries=prediction.n_queries,
        seconds=time.perf_counter() - t0,
        largest_gap=explainer.largest_gap,
        reranked=None if rerank == "none" else rerank,
        summary=prediction.summary,
        first_qids=explainer.first_qids,
    )


def split_meta(run: LoggedRun, split: str) -> dict[str, Any]:
    """What ``importance.json`` says of an explanation of ``run``'s own ``split``."""
    return {"run_id": run.run_id, "split": split, "rerank": str(run.spec.config.rerank.kind)}


def run_importance(run: LoggedRun, split: str) -> Importance:
    """``run``'s importance on its own ``split``: the one logged on the run
    (``explain/importance.json``) when it was of that split, else computed here (nothing logged)."""
    logged = logged_importance(run)
    if logged is not None and logged.meta.get("split") == split:
        return logged
    return explain_input(run, split_input(run, split), meta=split_meta(run, split)).importance

"""``ltr labels``' report as terminal tables (:func:`print_label_audit`), for the agreement of
:func:`ltr.metrics.reports.label_audit.label_agreement` and the nDCG of :func:`ltr.metrics.reports.label_audit.ndcg_under_both`."""

from __future__ import annotations

import math

from ltr.metrics.reports.label_audit import LabelAgreement
from ltr.metrics.strata import Strata
from ltr.runtime.terminal import console as terminal_console

__all__ = ["print_label_audit"]


def print_label_audit(
    agreement: LabelAgreement, ndcg: dict[str, dict[str, float]] | None, ks: list[int], name_a: str, name_b: str, n_queries: int
) -> None:
    """Print ``ltr labels``' report: the two sets' names, pairs, queries, exact agreement and
    quadratic-weighted kappa; the confusion matrix; the shift per grade of A; with ``ndcg``
    (:func:`ltr.metrics.reports.label_audit.ndcg_under_both`), nDCG@k of each of ``ks`` under A, B and
    B - A, overall and per list-length stratum, and what the labels moved nDCG@max(ks) by."""
    from rich.table import Table

    console = terminal_console()
    kappa = "n/a (one grade only)" if math.isnan(agreement.kappa) else f"{agreement.kappa:.4f}"
    console.print(
        f"A = {name_a}\nB = {name_b}\n{agreement.n_pairs} pairs in {n_queries} queries: exact agreement "
        f"{agreement.exact:.1%}, Cohen's kappa (quadratic) {kappa}"
    )
    conf = Table(title="confusion (rows: grade in A, columns: grade in B)", title_justify="left")
    conf.add_column("A \\ B", justify="right")
    for g in agreement.grades:
        conf.add_column(str(g), justify="right")
    for i, g in enumerate(agreement.grades):
        conf.add_row(str(g), *(str(int(v)) for v in agreement.confusion[i]))
    console.print(conf)
    shift = Table(title="shift per grade of A (B - A)", title_justify="left")
    for col in ("grade", "pairs", "mean shift", "down", "same", "up"):
        shift.add_column(col, justify="right")
    for g, s in agreement.shift.items():
        shift.add_row(str(g), f"{s['n']:.0f}", f"{s['mean_shift']:+.3f}", f"{s['down']:.1%}", f"{s['same']:.1%}", f"{s['up']:.1%}")
    console.print(shift)
    if ndcg is None:
        return
    strata = Strata()
    table = Table(title="the same ranking under each label set", title_justify="left")
    for col in ("measure", "stratum", "queries", "A", "B", "B - A"):
        table.add_column(col, justify="right")
    for k in ks:
        key = f"ndcg_at_{k}"
        for suffix, label in (("", "all"), *((f"/{s}", lab) for s, lab in zip(strata.keys, strata.labels, strict=True))):
            n = ndcg["a"].get(f"n_queries{suffix}", 0.0)
            if not n:
                continue
            cells = [ndcg[side].get(key + suffix, float("nan")) for side in ("a", "b", "b_minus_a")]
            table.add_row(f"nDCG@{k}", label, f"{n:.0f}", f"{cells[0]:.4f}", f"{cells[1]:.4f}", f"{cells[2]:+.4f}")
    console.print(table)
    k = max(ks)
    moved = ndcg["b_minus_a"].get(f"ndcg_at_{k}", float("nan"))
    console.print(f"same ranking, the labels moved nDCG@{k} by {moved:+.4f}")

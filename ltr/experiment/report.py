"""The end-of-run summary: one table of NDCG per split, overall and per list-length stratum.

The same rows are printed to the terminal (rich) and logged as ``report/summary.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ltr.metrics import Strata
from ltr.runtime.terminal import console as terminal_console

Summary = Mapping[str, float]


def summary_rows(
    summaries: Mapping[str, Summary], *, ks: Sequence[int], strata: Strata
) -> tuple[list[str], list[list[str]]]:
    """Header and rows: one row per stratum (``all`` first), per split: queries and NDCG@k."""
    header = ["stratum"]
    for split in summaries:
        header += [f"{split} queries"] + [f"{split} nDCG@{k}" for k in ks]
    rows: list[list[str]] = []
    for label, suffix in [("all", "")] + [(lab, f"/{key}") for lab, key in zip(strata.labels, strata.keys, strict=True)]:
        row = [label]
        for summary in summaries.values():
            n = summary.get(f"n_queries{suffix}", 0.0)
            row.append(str(int(n)))
            for k in ks:
                value = summary.get(f"ndcg_at_{k}{suffix}")
                row.append("-" if value is None else f"{value:.4f}")
        rows.append(row)
    return header, rows


def rerank_rows(
    metrics: Mapping[str, float], *, splits: Sequence[str], k: int, measures: Sequence[str], strata: Strata
) -> tuple[list[str], list[list[str]]]:
    """Header and rows of a re-ranked run's before/after table: one row per stratum (``all``
    first); per split and measure (``ndcg``, ``ild``, ...) at cut-off ``k`` a cell ``model's
    order -> final order (difference)`` from the flat ``metrics`` (``valid/pre_rerank/ndcg_at_10``
    and ``valid/ndcg_at_10``, per stratum with the ``/len_...`` suffix)."""
    names = {"ndcg": "nDCG", "ild": "ILD", "coverage": "coverage", "alpha_ndcg": "alpha-nDCG"}
    header = ["stratum"] + [f"{split} {names.get(m, m)}@{k}" for split in splits for m in measures]
    rows: list[list[str]] = []
    for label, suffix in [("all", "")] + [(lab, f"/{key}") for lab, key in zip(strata.labels, strata.keys, strict=True)]:
        row = [label]
        for split in splits:
            for measure in measures:
                before = metrics.get(f"{split}/pre_rerank/{measure}_at_{k}{suffix}")
                after = metrics.get(f"{split}/{measure}_at_{k}{suffix}")
                row.append("-" if before is None or after is None else f"{before:.4f} → {after:.4f} ({after - before:+.4f})")
        rows.append(row)
    return header, rows


def to_markdown(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def print_table(header: list[str], rows: list[list[str]], *, title: str) -> None:
    """Print the table to stdout with rich."""
    from rich.table import Table

    table = Table(title=title)
    for i, name in enumerate(header):
        table.add_column(name, justify="left" if i == 0 else "right")
    for row in rows:
        table.add_row(*row)
    terminal_console().print(table)

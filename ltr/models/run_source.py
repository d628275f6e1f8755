"""The input a logged run's model is applied to, as ``ltr predict`` and ``ltr explain`` take it:
the run's own split made again from its config, or data files read as the run's training read
them (:func:`run_source`); the batch size of a Parquet input checked (:func:`check_batch_rows`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ltr.errors import LtrUserError
from ltr.models.inputs import DEFAULT_BATCH_ROWS, PredictInput, open_input, split_input
from ltr.models.logged import LoggedRun

__all__ = ["check_batch_rows", "run_source"]


def check_batch_rows(batch_rows: int | None) -> None:
    """Refuse ``--batch-rows`` below 1 (None: the default, :data:`DEFAULT_BATCH_ROWS`)."""
    if batch_rows is not None and batch_rows < 1:
        raise LtrUserError(f"--batch-rows={batch_rows} must be >= 1")


def run_source(
    run: LoggedRun,
    *,
    split: str | None,
    data: Sequence[Path] | None,
    fmt: str,
    batch_rows: int | None,
    qid_column: str | None,
    label_column: str | None,
    doc_id_column: str | None,
) -> PredictInput:
    """``run``'s split ``split`` made again (:func:`ltr.models.inputs.split_input`), or, without
    one, the files ``data`` in format ``fmt`` (:func:`ltr.models.inputs.open_input`: Parquet in
    batches of ``batch_rows`` whole-query rows, default :data:`DEFAULT_BATCH_ROWS`; the columns
    default to the run's)."""
    if split is not None:
        return split_input(run, split)
    return open_input(
        run, data or (), fmt=fmt, batch_rows=DEFAULT_BATCH_ROWS if batch_rows is None else batch_rows,
        qid_column=qid_column, label_column=label_column, doc_id_column=doc_id_column,
    )  # fmt: skip

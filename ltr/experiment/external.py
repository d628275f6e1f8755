"""Evaluate rankings made elsewhere (what ``ltr evaluate`` computes, as a function).

Inputs: a TREC qrels file and a TREC run, or a data file in any format ``ltr`` reads plus one
score per row (a scores file, as LightGBM's ``predict`` writes, or an array). Every option is
checked before any file is read; a mistake is one `LtrUserError` line that names the option as
``ltr evaluate`` spells it (``--k``, ``--strata``, ...). The summary's keys are the MLflow keys
of a run (``ndcg_at_10``, ``ndcg_at_10/len_1-10``, ``n_queries``, ...).
"""

from __future__ import annotations

import difflib
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ltr.data.formats.file_names import table_format_by_name, written_table_format
from ltr.data.formats.trec import read_trec
from ltr.data.ranking_data import written_qids_of
from ltr.errors import DataError, LtrUserError, write_failed
from ltr.metrics import MetricConventions, Strata, resolve_conventions
from ltr.metrics.composite_rules import composite_ks, parse_composite
from ltr.metrics.conventions import DISCOUNTS, position_weights
from ltr.metrics.measures import Measure, table_measures
from ltr.metrics.reports.idcg_report import low_idcg_note
from ltr.metrics.reports.k_check import k_notes
from ltr.metrics.summary import is_metric_column, summarize
from ltr.metrics.table import as_table, per_query_columns
from ltr.runtime.stops import committing

if TYPE_CHECKING:
    import pandas as pd

#: The largest cut-off: a list is never cut deeper than its length, but the discount table is
#: ``max(k)`` long (8 bytes each).
MAX_K = 1_000_000
#: The default list-length strata (lower edges).
DEFAULT_STRATA = (1, 11, 51)
#: Suffixes of a per-query table file.
TABLE_SUFFIXES = (".csv", ".parquet", ".pq")
#: The measures ``--measure`` may ask for (each at every ``--k``; ``rr`` and ``ap`` also over the
#: whole list), in the order reports show them.
MEASURE_NAMES = ("ndcg", "err", "p", "recall", "ap", "rr", "dcg", "idcg")


@dataclass(frozen=True)
class RankingEvaluation:
    """What an evaluation of outside rankings gives.

    ``summary``: every key of the measures asked for always (a mean over no queries is None),
    the counts (``n_queries``, ``no_result_rate``, ``n_skipped_zero_idcg``, the TREC input
    counts) included; ``columns``: the per-query columns as numpy arrays (``qid``, list length,
    ``n_relevant``, the measures asked for); ``table``: the per-query table of them, a
    DataFrame with the stratum too, made (with pandas) when first read; ``counts``: TREC input
    counts (``n_run_topics_unjudged``, ...; empty for data + scores); ``measures``: the names
    asked for; ``low_idcg_note``: whenever nDCG is among them, the line of
    :func:`ltr.metrics.reports.idcg_report.low_idcg_note` at the largest cut-off (None when low-IDCG
    queries do not dominate), computed from IDCG, nDCG and ERR whether or not those are shown.
    """

    summary: dict[str, float | None]
    columns: dict[str, NDArray[Any]]
    ks: tuple[int, ...]
    strata: Strata
    conventions: MetricConventions
    counts: dict[str, int] = field(default_factory=dict)
    measures: tuple[str, ...] = MEASURE_NAMES
    low_idcg_note: str | None = None
    #: the notes of :func:`ltr.metrics.reports.k_check.k_notes`: a K the lists cannot fill
    k_notes: tuple[str, ...] = ()
    #: the composites asked for (``--composite``), by name: their parts and weights
    composites: dict[str, dict[str, float]] = field(default_factory=dict)

    @cached_property
    def table(self) -> pd.DataFrame:
        """One row per query: :attr:`columns` and the stratum of each list."""
        return as_table(self.columns, self.strata)

    def table_measures(self) -> list[Measure]:
        """The measures of the summary and table, in report order."""
        return selected_measures(list(self.ks), self.measures)


def selected_measures(ks: list[int], names: Sequence[str]) -> list[Measure]:
    """The measures of :func:`ltr.metrics.measures.table_measures` whose name is in ``names``.

    Examples
    --------
    >>> [m.display for m in selected_measures([5, 10], ["ndcg", "rr"])]
    ['nDCG@5', 'nDCG@10', 'RR@5', 'RR@10', 'RR']
    """
    return [m for m in table_measures(ks) if m.name in names]


def parse_measures(measures: Sequence[str] | str | None) -> tuple[str, ...]:
    """The measure names asked for (``"ndcg,p"`` or a sequence), in report order; None: all.

    Raises
    ------
    LtrUserError
        An unknown name (with the closest known one).
    """
    if measures is None:
        return MEASURE_NAMES
    items = measures.split(",") if isinstance(measures, str) else [m for part in measures for m in str(part).split(",")]
    names = [item.strip().lower() for item in items if item.strip()]
    for name in names:
        if name not in MEASURE_NAMES:
            close = difflib.get_close_matches(name, MEASURE_NAMES, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise LtrUserError(f"--measure {name!r} is not a measure; {hint}give some of {', '.join(MEASURE_NAMES)}")
    if not names:
        raise LtrUserError(f"--measure: give some of {', '.join(MEASURE_NAMES)}")
    return tuple(m for m in MEASURE_NAMES if m in names)


def evaluate_rankings(
    *,
    qrels: str | Path | None = None,
    run: str | Path | None = None,
    data: str | Path | None = None,
    scores: str | Path | ArrayLike | None = None,
    k: Sequence[int] = (5, 10),
    preset: str | None = None,
    gain: str | None = None,
    label_gain: Sequence[float] | str | None = None,
    ties: str | None = None,
    zero_idcg: str | None = None,
    rel_threshold: int | None = None,
    discount: str | Path | Sequence[float] | None = None,
    discount_base: float | None = None,
    err_max_grade: int | None = None,
    strata: Sequence[int] | str = DEFAULT_STRATA,
    missing_topics: str = "empty",
    max_docs: int | None = None,
    per_query: str | Path | None = None,
    measures: Sequence[str] | str | None = None,
    qid_column: str = "qid",
    label_column: str = "label",
    n_features: int | None = None,
    composite: Sequence[str] | str | None = None,
) -> RankingEvaluation:
    """Evaluate ``run`` against ``qrels``, or ``scores`` (one per row) against ``data``.

    ``data`` is read for its queries and labels only: a Parquet / CSV table's ``qid_column`` and
    ``label_column`` (its other columns are never read), a text file's ``qid:`` and labels
    (``n_features``: the width of a text file whose feature indices go beyond 1,000,000).

    The options are ``ltr evaluate``'s (``ltr evaluate --help``); ``label_gain`` and ``strata``
    may be sequences or the command line's comma-separated text; ``per_query`` writes the
    per-query table (``.csv`` or ``.parquet``). ``measures``: names of :data:`MEASURE_NAMES`
    (None: all); the summary and table hold those only, each value exactly what the full
    evaluation gives, and AP over the whole list (the one measure that may sort a whole list)
    is computed only when ``ap`` is asked for. ``gain="value"``: the labels (qrels relevance,
    a table's label column, a text file's labels) are real values >= 0 and the gains themselves.
    ``discount``: a name, or explicit position weights (a sequence, ``"1,0.7,0.5"``, or a file
    of weights, one per position; positions beyond them weigh 0). ``composite``: composites as
    ``name=0.4*ndcg_at_3+0.6*ndcg_at_10`` (one or a sequence), each in the summary overall and
    per stratum and a column of the per-query table, as ``ltr train`` logs them.

    Raises
    ------
    LtrUserError
        A bad option (before any file is read), or input that cannot be evaluated (a `DataError`
        naming the file and line).
    """
    ks = list(k)
    if len(set(ks)) != len(ks) or not ks or min(ks) < 1 or max(ks) > MAX_K:
        raise LtrUserError(f"--k values must be distinct integers from 1 to {MAX_K:,}, got {ks}")
    if rel_threshold is not None and rel_threshold < 0:
        raise LtrUserError(
            f"--rel-threshold {rel_threshold} is negative; give an integer >= 0 (a label >= "
            "it is relevant; 0 counts every judged document, as trec_eval's relevance_level 0)"
        )
    if max_docs is not None and max_docs < 1:
        raise LtrUserError(f"--max-docs {max_docs}: give an integer >= 1")
    if err_max_grade is not None and err_max_grade < 0:
        raise LtrUserError(f"--err-max-grade {err_max_grade}: give a label >= 0")
    if missing_topics not in ("empty", "skip", "error"):
        raise LtrUserError(f"--missing-topics {missing_topics!r}: give empty, skip or error")
    parsed_strata = parse_strata(strata)
    gains = parse_label_gain(label_gain)
    names = parse_measures(measures)
    composites = parse_composites(composite)
    full_ap = "ap" in names
    try:
        conventions = resolve_conventions(
            preset, gain=gain, label_gain=gains, ties=ties, zero_idcg=zero_idcg, rel_threshold=rel_threshold,
            discount=parse_discount(discount), discount_base=discount_base,
        )
    except ValueError as exc:
        raise LtrUserError(f"--{exc!s}" if str(exc).startswith(("preset ", "discount")) else str(exc)) from None
    if conventions.gain == "value" and err_max_grade is not None:
        raise LtrUserError("--err-max-grade is a grade; with --gain value ERR normalises by the largest value of the data")
    table_ks = ks + [c for c in composite_ks(composites) if c not in ks]  # a composite's part may be cut elsewhere

    trec_pair = (Path(qrels), Path(run)) if qrels is not None and run is not None else None
    data_pair = (Path(data), scores) if data is not None and scores is not None else None
    given = [x is not None for x in (qrels, run, data, scores)]
    if sum(given) != 2 or (trec_pair is None and data_pair is None):
        raise LtrUserError("give either --qrels and --run, or --data and --scores")
    if per_query is not None and Path(per_query).suffix.lower() not in TABLE_SUFFIXES:
        raise LtrUserError(f"--per-query {per_query}: the name must end in .csv or .parquet")

    counts: dict[str, int] = {}
    try:
        if trec_pair is not None:
            columns, counts = _evaluate_trec(
                trec_pair[1], trec_pair[0], table_ks, conventions,
                missing_topics=missing_topics, max_docs=max_docs, err_max_grade=err_max_grade, full_ap=full_ap,
            )  # fmt: skip
        elif data_pair is not None:
            columns = _evaluate_data(
                *data_pair, table_ks, conventions, err_max_grade=err_max_grade, full_ap=full_ap,
                qid_column=qid_column, label_column=label_column, n_features=n_features,
            )  # fmt: skip
    except ValueError as exc:  # a convention that does not fit the data (e.g. label_gain)
        raise LtrUserError(str(exc)) from None
    note = low_idcg_note(columns, max(ks)) if "ndcg" in names else None  # from the columns of every measure
    # summarised whole (n_skipped_zero_idcg reads the nDCG columns), then cut to the measures asked for
    shown = selected_measures(ks, names)
    keys = {m.key for m in shown}
    full = summarize(columns, strata=parsed_strata)
    kept = {key: v for key, v in full.items() if not is_metric_column(key.split("/")[0]) or key.split("/")[0] in keys}
    extra: dict[str, NDArray[Any]] = {}
    if composites:  # as ltr train computes them: the same functions on the per-query table
        from ltr.metrics.composite import composite_columns, summarize_composites

        frame = as_table(columns, parsed_strata)
        made = composite_columns(frame, composites)
        frame[list(made.columns)] = made
        kept |= summarize_composites(frame, list(made.columns), strata=parsed_strata)
        extra = {str(c): made[c].to_numpy() for c in made.columns}
    columns = {c: v for c, v in columns.items() if not is_metric_column(c)} | {m.key: columns[m.key] for m in shown} | extra
    summary = _complete(kept, shown, parsed_strata)
    summary.update({key: float(value) for key, value in counts.items()})
    notes = tuple(k_notes(columns["list_len"], ks))
    result = RankingEvaluation(
        summary, columns, tuple(ks), parsed_strata, conventions, counts, names, note, notes, dict(composites)
    )
    if per_query is not None:
        write_table(result.table, Path(per_query))
    return result


def parse_composites(composite: Sequence[str] | str | None) -> dict[str, dict[str, float]]:
    """``--composite`` values (``name=0.4*ndcg_at_3+0.6*ndcg_at_10``, one or several) by name."""
    if composite is None:
        return {}
    texts = [composite] if isinstance(composite, str) else list(composite)
    out: dict[str, dict[str, float]] = {}
    for text in texts:
        one = parse_composite(str(text))
        dup = set(one) & set(out)
        if dup:
            raise LtrUserError(f"--composite {sorted(dup)[0]!r} is given twice")
        out |= one
    return out


def parse_discount(discount: str | Sequence[float] | Path | None) -> str | tuple[float, ...] | None:
    """``--discount``: a discount's name, explicit position weights (``"1,0.7,0.5"`` or a
    sequence), or a file of weights (one per position, by line, comma or space; ``#`` comments),
    for DCG and IDCG alike; positions beyond the weights weigh 0.

    Examples
    --------
    >>> parse_discount("jarvelin"), parse_discount("1,0.7,0.5"), parse_discount([1, 0.5])
    ('jarvelin', (1.0, 0.7, 0.5), (1.0, 0.5))
    """
    if discount is None:
        return None
    if isinstance(discount, str) and discount in DISCOUNTS:
        return discount
    text: object = discount
    if isinstance(discount, Path) or (isinstance(discount, str) and not _looks_numeric(discount)):
        return weights_file(Path(discount))
    try:
        return position_weights(text)
    except ValueError as exc:
        raise LtrUserError(f"--{exc}") from None


def weights_file(path: Path) -> tuple[float, ...]:
    r"""The position weights of a ``--discount`` file: numbers by line, comma or space, ``#``
    comments; each refusal one line naming the file and, for its content, the line.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     f = Path(tmp) / "w.txt"
    ...     _ = f.write_text("1.0\nabc\n")
    ...     try:
    ...         weights_file(f)
    ...     except LtrUserError as exc:
    ...         print(str(exc).replace(tmp, "T"))
    --discount T/w.txt, line 2: 'abc' is not a number (a weights file holds one weight per position)
    """
    if not path.is_file():
        what = "is a folder" if path.is_dir() else "does not exist"
        raise LtrUserError(
            f"--discount {path} {what}: give a file of weights, one of {', '.join(DISCOUNTS)}, or weights such as 1,0.7,0.5"
        )
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise LtrUserError(f"cannot read --discount {path}: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
        bad = text.find("\0")
    except UnicodeDecodeError as exc:
        bad = exc.start
    if bad >= 0:
        line = data[:bad].count(b"\n") + 1
        raise LtrUserError(f"--discount {path}, line {line}: not text (a binary file?); a weights file holds one weight per position")
    weights: list[float] = []
    for number, line_text in enumerate(text.splitlines(), start=1):
        for token in line_text.split("#")[0].replace(",", " ").split():
            try:
                w = float(token)
            except ValueError:
                raise LtrUserError(
                    f"--discount {path}, line {number}: {token!r} is not a number (a weights file holds one weight per position)"
                ) from None
            if not (math.isfinite(w) and w >= 0):
                raise LtrUserError(f"--discount {path}, line {number}: weight {token} must be finite and >= 0")
            weights.append(w)
    if not weights:
        raise LtrUserError(f"--discount {path} holds no weight: give one per position, one per line")
    try:
        return position_weights(weights)
    except ValueError as exc:
        raise LtrUserError(f"--discount {path}: {str(exc).split(': ', 1)[-1]}") from None


def _looks_numeric(text: str) -> bool:
    return all(ch in "0123456789.,eE+- " for ch in text) and any(ch.isdigit() for ch in text)


def parse_strata(strata: Sequence[int] | str) -> Strata:
    """Lower edges of the list-length strata, from ``"1,11,51"`` or ``(1, 11, 51)``."""
    text = strata if isinstance(strata, str) else ",".join(str(edge) for edge in strata)
    example = "give increasing list lengths starting at 1, e.g. --strata 1,11,51"
    edges = []
    for item in text.split(","):
        try:
            edges.append(int(item))
        except ValueError:
            raise LtrUserError(f"--strata {text!r}: {item.strip()!r} is not an integer; {example}") from None
    try:
        return Strata(tuple(edges))
    except ValueError as exc:
        raise LtrUserError(f"--strata {text!r}: {exc}; {example}") from None


def parse_label_gain(label_gain: Sequence[float] | str | None) -> tuple[float, ...] | None:
    """The gain of each label 0, 1, 2, ..., from ``"0,3,9"`` or ``(0, 3, 9)``; None stays None."""
    if label_gain is None:
        return None
    text = label_gain if isinstance(label_gain, str) else ",".join(str(g) for g in label_gain)
    try:
        gains = tuple(float(g) for g in text.split(","))
    except ValueError:
        raise LtrUserError(f"--label-gain {text!r} is not a comma-separated list of numbers") from None
    bad = [g for g in gains if not (math.isfinite(g) and g >= 0)]
    if bad:
        raise LtrUserError(
            f"--label-gain {text!r} has gain {bad[0]}; every gain must be a finite "
            "number >= 0 (one per label 0, 1, 2, ...)"
        )
    return gains


def _complete(summary: dict[str, float], measures: list[Measure], strata: Strata) -> dict[str, float | None]:
    """Every key of the summary, always: a mean over no values (or not finite) is None."""
    suffixes = [*strata.keys]
    if "n_queries/len_empty" in summary:
        suffixes.append("len_empty")
    keys = [m.key for m in measures]
    out: dict[str, float | None] = {}
    for key, value in summary.items():
        out[key] = value if math.isfinite(value) else None
    for key in keys:
        for full in (key, *(f"{key}/{sfx}" for sfx in suffixes)):
            out.setdefault(full, None)
    return out


def _evaluate_trec(
    run: Path,
    qrels: Path,
    ks: list[int],
    conventions: MetricConventions,
    *,
    missing_topics: str,
    max_docs: int | None,
    err_max_grade: int | None,
    full_ap: bool = True,
) -> tuple[dict[str, NDArray[Any]], dict[str, int]]:
    value = conventions.gain == "value"
    inp = read_trec(run, qrels, missing_topics=missing_topics, max_docs=max_docs, values=value)
    max_gain = _max_gain(err_max_grade, conventions, inp.labels, inp.ideal_labels)
    labels, ideal = inp.value_labels() if value else (inp.labels, inp.ideal_labels)
    columns = per_query_columns(
        labels, inp.scores, inp.offsets, inp.qids, ks=ks, conventions=conventions,
        ideal_labels=ideal, ideal_offsets=inp.ideal_offsets,
        tie_keys=inp.tie_keys, max_gain=max_gain, full_ap=full_ap,
    )  # fmt: skip
    return columns, inp.counts()


def _max_gain(
    err_max_grade: int | None, conventions: MetricConventions, *labels: np.ndarray[Any, Any]
) -> float | None:
    """ERR's largest gain from ``err_max_grade`` (None: the data's largest gain)."""
    if err_max_grade is None:
        return None
    grade = int(err_max_grade)
    top = max((int(a.max()) for a in labels if a.size), default=0)
    if top > grade:
        raise LtrUserError(
            f"--err-max-grade {grade}: the data has label {top}; give a grade >= {top} (ERR's "
            "stop probability gain / (gain(G) + 1) must stay below 1)"
        )
    return float(conventions.gains_of(np.array([grade], dtype=np.int64))[0])


def _evaluate_data(
    data_path: Path,
    scores: str | Path | ArrayLike,
    ks: list[int],
    conventions: MetricConventions,
    *,
    err_max_grade: int | None,
    full_ap: bool = True,
    qid_column: str = "qid",
    label_column: str = "label",
    n_features: int | None = None,
) -> dict[str, NDArray[Any]]:
    if conventions.ties == "docno_desc":
        raise LtrUserError("--ties docno_desc needs docnos: use it with --qrels and --run")
    # ltr's file readers (their doc ids are pyarrow arrays) only for --data: not for TREC input
    from ltr.data.formats.readers import read_ranking_file

    if n_features is not None and table_format_by_name(data_path) is not None:
        raise LtrUserError(f"--n-features is the width of a text file; {data_path} is a table (its features are not read)")
    try:
        data = read_ranking_file(
            data_path, max_label=None, qid_column=qid_column, label_column=label_column,
            feature_columns=[], n_features=n_features, value_labels=conventions.gain == "value",
        )  # fmt: skip
    except DataError as exc:  # the reader's advice names training's config keys: here they are flags
        message = str(exc)
        head, sep, _ = message.partition(" is not an integer; ranking objectives")
        if sep:  # a real-valued label: say where, and that it is a value gain
            column = f" (column {label_column!r})" if table_format_by_name(data_path) is not None else ""
            message = f"{head}{column} is not an integer grade; --gain value evaluates real values (revenue, margin) as gains"
        raise DataError(_as_flags(message)) from None
    if isinstance(scores, str | Path):
        values, where = read_scores(Path(scores)), f"scores file {scores}"
    else:
        values, where = score_array(scores), "scores"
    if values.shape[0] != data.n_rows:
        raise DataError(
            f"{where} has {values.shape[0]} scores; data file {data_path} has "
            f"{data.n_rows} rows (one score per row, in row order)"
        )
    max_gain = _max_gain(err_max_grade, conventions, np.asarray(data.labels))
    columns = per_query_columns(
        data.labels, values, data.offsets, data.qids, ks=ks, conventions=conventions,
        max_gain=max_gain, full_ap=full_ap, qid_names=data.qid_names,
    )  # fmt: skip
    if data.qid_names is not None:  # the table names the queries as written, not by their numbers
        columns["qid"] = written_qids_of(columns["qid"], data.qids, data.qid_names)
    return columns


#: The reader's advice in config keys, and the ``ltr evaluate`` flag that does the same.
_FLAGS = {"data.qid_column=": "--qid-column ", "data.label_column=": "--label-column ", "data.n_features=": "--n-features "}


def _as_flags(message: str) -> str:
    """A reader's message with its config-key advice (``set data.qid_column=<name>``) as flags."""
    for key, flag in _FLAGS.items():
        message = message.replace(key, flag)
    return message


def score_array(scores: ArrayLike) -> np.ndarray[Any, np.dtype[np.float64]]:
    """Scores given as an array: one finite float per row, 1-D."""
    try:
        values = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataError(f"scores are not numbers: {exc}") from None
    if values.ndim != 1:
        raise DataError(f"scores must be one score per row (1-D), got shape {values.shape}")
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        raise DataError(f"score {values[bad[0]]} at row {bad[0]} is not a finite number")
    return values


def read_scores(path: Path) -> np.ndarray[Any, np.dtype[np.float64]]:
    """One finite float per line (LightGBM's predict output).

    Raises
    ------
    DataError
        Unreadable file, a line that is not exactly one number, NaN or infinite scores; the
        message names the file and line.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DataError(f"cannot read scores file {path}: {exc.strerror or exc}") from None
    lines = text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        raise DataError(f"scores file {path} is empty")
    import pandas as pd  # its number parser; the rest of ltr evaluate needs no pandas

    col = pd.Series(lines, dtype=object).str.strip()
    values = pd.to_numeric(col, errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        what = (
            "is not a finite number"
            if not math.isnan(values[i]) or col[i].lower() == "nan"
            else "is not a number"
        )
        raise DataError(f"line {i + 1} of {path}: score {col[i]!r} {what}")
    return values


def write_table(table: pd.DataFrame, path: Path) -> None:
    """The per-query table as CSV or Parquet (by suffix), written whole or not at all (a
    hidden temporary sibling, renamed); an unwritable path is one line (a full device:
    :class:`ltr.errors.DeviceFull`, exit 1)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if written_table_format(path) == "csv":
            table.to_csv(tmp, index=False)
        else:
            table.to_parquet(tmp, index=False)
        with committing():
            os.replace(tmp, path)
    except OSError as exc:
        raise write_failed(exc, f"cannot write --per-query {path}: {exc.strerror or exc}", path=path) from None
    finally:
        tmp.unlink(missing_ok=True)

"""``python -m ltr.warmup``: compile every numba kernel of ``ltr`` once, at install time.

``ltr``'s kernels are compiled with ``cache=True``: the first call of a kernel in a process
compiles it (seconds each, 9 s for all of them on an idle 2-core machine, minutes on a busy
one) and stores the machine code in numba's cache; every later process loads it from there in
milliseconds. ``make install`` runs this module so that a fresh clone's first ``ltr train`` or
``ltr evaluate`` pays no compile. It is idempotent, and quick when the cache is warm (about as
long as loading the cached kernels).

Without the warm-up, the first ``ltr`` command that needs a kernel puts the machine code a wheel
ships into numba's cache (:mod:`ltr.compiled.precompiled`) or, where none fits, runs the same compile
itself, with one line of progress on stderr (:mod:`ltr.compiled.kernel_signatures`); the warm-up moves
either to install time (a Docker image build, ``make install``).

Every kernel entry point has one declared signature (:data:`ltr.compiled.kernel_signatures.SIGNATURES`),
compiled first; then each is called through the public function that calls it, on tiny inputs,
with further compiles disabled, so a data path whose arguments do not fit the declared signature
fails here, loudly; the warm-up forces the compiled kernels (:func:`ltr.compiled.kernels.forced`), which
inputs this small would otherwise run interpreted.

It also makes one MLflow store, so that the empty-store template exists and a fresh clone's first
run copies its store instead of running MLflow's migrations (:mod:`ltr.tracking.sqlite.template`).

It also writes the Python bytecode of ``ltr``'s own modules (and of its Hydra sweeper plugin),
as ``pip install`` does for a wheel: with ``PYTHONDONTWRITEBYTECODE`` set (some images and CI
runners set it) an editable install would otherwise compile every ``ltr`` module from source in
every process (0.3 s of each ``ltr`` start on a 2-core machine). A folder that cannot be written
is left as it is.

Where the cache lives (numba's own rules): a ``__pycache__`` folder next to each kernel's source
(``ltr/metrics/__pycache__/_kernel.*.nbi`` / ``.nbc``) when it is writable, e.g. an editable
install or a clone; else (a wheel in a read-only ``site-packages``) numba's user-wide cache
(``~/.cache/numba``); ``NUMBA_CACHE_DIR`` overrides both. Run the warm-up as the user (and with the
``NUMBA_CACHE_DIR``) that runs ``ltr``. The cache is keyed by the source file's modification time
and numba's version, so editing a kernel's file or upgrading numba recompiles it once.
"""

from __future__ import annotations

import compileall
import importlib.util
import logging
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ltr.api import evaluate
from ltr.compare.abtest import ClickModel, simulate_abtest
from ltr.compiled import kernels
from ltr.compiled.kernel_signatures import SIGNATURES, prepare_all
from ltr.data.formats.readers import read_ranking_file
from ltr.data.formats.trec import read_qrels, read_run
from ltr.metrics.table import measure_arrays, per_query_table
from ltr.rerank.diversify import diversify
from ltr.tracking.store import ensure_store

log = logging.getLogger(__name__)

#: The modules that hold ``ltr``'s numba kernels (every ``cache=True`` dispatcher is in one).
KERNEL_MODULES = tuple(SIGNATURES)


def _letor_text() -> str:
    """A LETOR file of 2 queries with ``#docid`` comments (the text parser's every kernel)."""
    lines = [
        f"{label} qid:{qid} 1:{0.5 * row:.3f} 2:{row} 3:-1.25 # docid = D{row} inc = 1"
        for row, (qid, label) in enumerate([(1, 2), (1, 0), (1, 1), (2, 0), (2, 3)])
    ]
    return "\n".join(lines) + "\n"


def _metrics_and_readers(tmp: Path) -> None:
    """Text and TREC readers, every metric kernel (through ``ltr evaluate``'s API, which also
    reads the TREC files), the per-round metric of training (`measure_arrays`)."""

    letor = tmp / "tiny.letor"
    letor.write_text(_letor_text())
    data = read_ranking_file(letor)
    scores = np.linspace(1.0, 0.0, data.labels.shape[0])
    per_query_table(data.labels, scores, data.offsets, data.qids)
    measure_arrays(data.labels, scores, data.offsets, full_ap=False)

    # the run's topics out of byte order (grouped by a kernel) and more than the qrels' lines
    # (the topic table grows): the TREC join's every kernel
    qrels, run = tmp / "tiny.qrels", tmp / "tiny.run"
    qrels.write_text("1 0 d1 2\n1 0 d2 0\n1 0 d3 1\n2 0 d4 1\n")
    run.write_text(
        "".join(f"{topic} Q0 d{topic} 1 0.5 r\n" for topic in range(20, 2, -1))
        + "2 Q0 d4 1 0.5 r\n1 Q0 d1 1 2.0 r\n1 Q0 d3 2 2.0 r\n1 Q0 d9 3 1.0 r\n"
    )
    read_qrels(qrels)
    read_run(run)
    evaluate(qrels=qrels, run=run)
    evaluate(qrels=qrels, run=run, preset="trec_eval")


def _rerank_and_interleave(tmp: Path) -> None:
    """The diversity re-ranker (cosine and category similarity) and team-draft interleaving."""

    scores, offsets = np.array([3.0, 2.0, 1.8, 1.0, 0.5]), np.array([0, 3, 5], dtype=np.int64)
    features = np.arange(10, dtype=np.float32).reshape(5, 2)
    diversify(scores, offsets, features, alpha=0.5, similarity="cosine")
    diversify(scores, offsets, np.array([7, 7, 8, 9, 9]), alpha=0.5, similarity="category")
    labels = np.array([2, 0, 1, 0, 3])
    model = ClickModel(eta=1.0, click_noise=0.1, click_max=0.9)
    # 10 sessions (with the default 5 % traffic share the sessions round to none, and no kernel runs)
    simulate_abtest(labels, offsets, scores, scores[::-1].copy(), model, sessions_per_day=10.0, traffic_share=1.0, days=1.0)


def _store_template(tmp: Path) -> None:
    """An MLflow store made once, so that its empty copy is kept as the template every later new
    store is copied from (:mod:`ltr.tracking.sqlite.template`; quick when one exists)."""
    ensure_store(f"sqlite:///{tmp / 'mlflow.db'}")


def _kernels(tmp: Path) -> None:
    """Every kernel entry point of :data:`ltr.compiled.kernel_signatures.SIGNATURES`, compiled (its one
    progress line on stderr) or loaded from numba's cache."""
    prepare_all()


#: What the warm-up runs, in order: (what, function of a scratch directory).
STEPS: tuple[tuple[str, Callable[[Path], None]], ...] = (
    ("kernels", _kernels),
    ("readers and metrics", _metrics_and_readers),
    ("re-ranking and interleaving", _rerank_and_interleave),
    ("an empty MLflow store to copy", _store_template),
)


#: The packages whose bytecode :func:`compile_bytecode` writes.
BYTECODE_PACKAGES = ("ltr", "hydra_plugins.ltr_sweeper")


def compile_bytecode() -> bool:
    """Write the bytecode of :data:`BYTECODE_PACKAGES` next to their sources (``__pycache__``),
    whatever ``PYTHONDONTWRITEBYTECODE`` says; False when a module could not be compiled or
    written (a read-only install: Python then compiles in memory, as before)."""
    ok = True
    for name in BYTECODE_PACKAGES:
        spec = importlib.util.find_spec(name)
        for folder in (spec.submodule_search_locations or []) if spec is not None else []:
            ok = bool(compileall.compile_dir(folder, quiet=2)) and ok
    return ok


def warm_up() -> dict[str, float]:
    """Compile (or load from numba's cache) every kernel of :data:`KERNEL_MODULES`; the seconds
    each step of :data:`STEPS` took.

    Examples
    --------
    >>> seconds = warm_up()  # doctest: +SKIP
    >>> sorted(seconds)  # doctest: +SKIP
    ['an empty MLflow store to copy', 'bytecode', 're-ranking and interleaving', 'readers and metrics']
    """
    seconds: dict[str, float] = {}
    t = time.perf_counter()
    compile_bytecode()
    seconds["bytecode"] = time.perf_counter() - t
    with tempfile.TemporaryDirectory(prefix="ltr-warmup-") as tmp, kernels.forced("compiled"):
        for what, step in STEPS:
            t = time.perf_counter()
            step(Path(tmp))
            seconds[what] = time.perf_counter() - t
    return seconds


def main() -> int:
    """Run :func:`warm_up` and print one line of what it took."""
    t = time.perf_counter()
    seconds = warm_up()
    parts = ", ".join(f"{what} {s:.1f} s" for what, s in seconds.items())
    print(f"ltr: bytecode written, numba kernels compiled or loaded from cache, store template made in {time.perf_counter() - t:.1f} s ({parts})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

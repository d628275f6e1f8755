"""``notebooks/compare_runs.ipynb`` executes top to bottom against the tmp store."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

from tests.compare.conftest import Store

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "compare_runs.ipynb"


def test_notebook_outputs_are_stripped() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code)
    assert any("parameters" in c.metadata.get("tags", []) for c in code)


def test_notebook_executes_top_to_bottom(store: Store, tmp_path: Path) -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
    overrides = (
        f"tracking_uri = {store.uri!r}\n"
        f"run_ids = [{store.run_ids['base']!r}, {store.run_ids['weak']!r}]\n"
        "n_resamples = 1000"
    )
    nb.cells.insert(at + 1, nbformat.v4.new_code_cell(overrides))
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 2  # per-stratum NDCG with CIs; the two IDCG histograms side by side
    assert any("weak" in o.get("data", {}).get("text/markdown", "") for o in outputs)

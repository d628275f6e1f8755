"""The real command: ``python -m ltr compare ...`` in a subprocess."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.compare.conftest import Store


@pytest.mark.slow
def test_python_m_ltr_compare(store: Store) -> None:
    common = ["--tracking-uri", store.uri, "--n-resamples", "500"]
    proc = subprocess.run(
        [sys.executable, "-m", "ltr", "compare", "base", "weak", *common],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    for text in ("nDCG@10 on test", "51+", "weak"):
        assert text in proc.stdout
    assert store.run_ids["weak"] in proc.stdout

    refused = subprocess.run(
        [sys.executable, "-m", "ltr", "compare", "base", "other-data", *common],
        capture_output=True, text=True, timeout=120,
    )
    assert refused.returncode == 2
    assert "Traceback" not in refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert "ltr.data.eval_fingerprint.test differs" in lines[0]  # names the part of the data that differs
    assert "--force" in lines[0]

"""Fixtures of the data-layer tests: small files written into tmp dirs, and the shared real data."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path

import pytest

#: ``../shared/data`` beside the repo (CI copies ``shared/`` next to its clone).
SHARED_DATA = (Path(__file__).resolve().parents[2] / ".." / "shared" / "data").resolve()

needs_shared_data = pytest.mark.skipif(
    not (SHARED_DATA / "stats.json").is_file(), reason=f"shared data not found at {SHARED_DATA}"
)

WriteFile = Callable[..., Path]


@pytest.fixture
def write(tmp_path: Path) -> WriteFile:
    """``write(text, name="data.txt")`` writes a file (gzipped if the name ends in .gz)."""

    def _write(text: str, name: str = "data.txt") -> Path:
        path = tmp_path / name
        data = text.encode()
        path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
        return path

    return _write

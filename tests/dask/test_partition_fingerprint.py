"""The data fingerprint of ``ltr partition``'s output is the content hash a local run logs.

``ltr partition`` records the splits' content fingerprint in ``OUT/fingerprint.json``; a
``data=parquet_partitions`` run logs it while the partition files are exactly those recorded,
so ``ltr compare`` accepts the partitions run beside a local run of the same files. A file
rewritten, added or missing, or a manifest that cannot be read, falls back to the files'
metadata with one warning. Both fingerprints are taken as the runs take them
(:func:`ltr.experiment.sources.open_source` of a composed ``ltr train`` config); no rows are
read for the partitions and no Dask cluster is started. Real files: ``ltr partition``'s output
of each kind of data is made once for the module (:func:`partitioned`, with the fingerprint of a
local run of its files); a test that changes files changes a copy in its ``tmp_path``.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from ltr.cli.main import main
from ltr.compare.loading import FINGERPRINT_TAG, check_compatible
from ltr.dask.partition_writer.manifest import CONTENT_METHOD, MANIFEST_NAME
from ltr.data.cache import wait_for_stores
from ltr.errors import LtrUserError
from ltr.experiment.checks import check_config
from ltr.experiment.sources import open_source
from ltr.tracking.records import RunRecord
from tests.conftest import compose_train
from tests.dask.test_partition_cli import _files
from tests.experiment.test_string_qid_tables import INTS, NAMES, write_rows

METADATA_METHOD = "parquet file metadata: relative path, bytes, rows"
#: the keys a local run logs for the whole set and for each split, and the manifest carries
SHARED_KEYS = ("sha256", "shape", "n_rows", "n_queries", "n_features", "labels")


def _config(overrides: list[str]) -> Any:
    """The checked config of an ``ltr train`` of ``overrides`` (composed once; a test that takes
    the fingerprint again after changing files passes the same config again)."""
    return check_config(compose_train(overrides))


def _fingerprint(config: Any) -> dict[str, Any]:
    """The fingerprint a run of ``config`` logs (``data/fingerprint.json``), taken as the run takes
    it (the parse cache's entries written before it returns, as a run waits for them)."""
    try:
        return dict(open_source(config).fingerprint)
    finally:
        wait_for_stores()


def _logged_fingerprint(overrides: list[str]) -> dict[str, Any]:
    return _fingerprint(_config(overrides))


def _partitions_config(root: Path, *extra: str) -> Any:
    return _config(["data=parquet_partitions", f"data.root={root}", "trainer=dask", *extra])


def _partitioned(tmp_path: Path, case: str) -> tuple[Path, list[str]]:
    """``ltr partition`` of the data of ``case`` into ``tmp_path/parts``, and the data overrides
    of a local run of the same source files."""
    out = tmp_path / "parts"
    if case == "letor fold: three files":  # integer qids, valid narrower than train (widened)
        files = _files(tmp_path)
        args = [a for split, path in files.items() for a in (f"--{split}", str(path))]
        local = ["data=letor", f"data.root={tmp_path}"]
    else:  # one CSV, valid and test cut from it by query (seed 42) as ltr train cuts it
        path = write_rows(tmp_path / "rows.csv", NAMES if case == "csv: string qids" else INTS)
        args = ["--train", str(path)]
        local = ["data=parquet", f"data.train={path}"]
    assert main(["partition", *args, "--out", str(out), "--partitions", "3"]) == 0
    return out, local


@dataclass(frozen=True)
class Partitioned:
    """``ltr partition``'s output of one case, and what a local run of the same files logs."""

    out: Path  # read only: a test that changes files copies it (:func:`_copy`)
    local_overrides: list[str]
    local: dict[str, Any]  # the fingerprint of a local run without the parse cache


@pytest.fixture(scope="module")
def partitioned(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Partitioned]:
    """``case`` -> its :class:`Partitioned`, made on first use, once for the module."""
    made: dict[str, Partitioned] = {}

    def get(case: str) -> Partitioned:
        if case not in made:
            out, local_overrides = _partitioned(tmp_path_factory.mktemp("partitioned"), case)
            made[case] = Partitioned(out, local_overrides, _logged_fingerprint([*local_overrides, "data.cache=false"]))
        return made[case]

    return get


def _copy(out: Path, tmp_path: Path) -> Path:
    """A copy of the partition directory ``out`` (files and manifest) in ``tmp_path``."""
    return Path(shutil.copytree(out, tmp_path / out.name))


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The warnings logged so far; the INFO lines of the runs before are captured too when an
    earlier test in the same worker left the root logger at INFO."""
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def _run(fingerprint: dict[str, Any], name: str) -> RunRecord:
    return RunRecord(f"{name}-0000", name, "0", "FINISHED", {FINGERPRINT_TAG: str(fingerprint["sha256"])})


@pytest.mark.parametrize("case", ["csv: string qids", "csv: integer qids", "letor fold: three files"])
def test_a_partitions_run_logs_the_fingerprint_of_a_local_run_of_the_same_files(
    partitioned: Callable[[str], Partitioned], tmp_path: Path, case: str
) -> None:
    made = partitioned(case)
    out, local = made.out, made.local
    # a local run reading through the parse cache (ltr train's default) logs the same
    cached = _config([*made.local_overrides, "data.cache=true", f"data.cache_dir={tmp_path / 'cache'}"])
    assert _fingerprint(cached) == _fingerprint(cached) == local  # parsed, then from the cache
    assert list((tmp_path / "cache").iterdir())  # the first one wrote it
    parts = _fingerprint(_partitions_config(out))

    assert parts["method"] == CONTENT_METHOD
    assert {k: parts[k] for k in SHARED_KEYS} == {k: local[k] for k in SHARED_KEYS}
    for split in ("train", "valid", "test"):
        assert {k: parts[split][k] for k in SHARED_KEYS} == {k: local[split][k] for k in SHARED_KEYS}
        files = sorted((out / split).glob("*.parquet"))
        assert parts[split]["files"] == [
            {"path": f"{split}/{f.name}", "bytes": f.stat().st_size, "rows": pq.read_metadata(f).num_rows}
            for f in files
        ]
        assert sum(f["rows"] for f in parts[split]["files"]) == local[split]["n_rows"]
    # ltr compare's check: the same data, nothing to note, no --force needed
    assert check_compatible([_run(local, "local"), _run(parts, "partitions")], ["local", "partitions"], force=False) == []
    assert sorted(p.name for p in out.iterdir()) == [MANIFEST_NAME, "test", "train", "valid"]
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # no temporary directory left
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temporary manifest


def _rewrite_fewer_rows(out: Path) -> str:
    """Rewrite ``train/part-00001.parquet`` without its last row."""
    path = out / "train" / "part-00001.parquet"
    table = pq.read_table(path)
    pq.write_table(table.slice(0, table.num_rows - 1), path)
    return "changed: train/part-00001.parquet"


def _rewrite_same_rows(out: Path) -> str:
    """Rewrite ``valid/part-00000.parquet`` with the same rows, other bytes (no compression)."""
    path = out / "valid" / "part-00000.parquet"
    before = path.stat().st_size
    pq.write_table(pq.read_table(path), path, compression="none")
    assert path.stat().st_size != before
    return "changed: valid/part-00000.parquet"


def _add_a_file(out: Path) -> str:
    (out / "test" / "extra.parquet").write_bytes((out / "test" / "part-00000.parquet").read_bytes())
    return "added: test/extra.parquet"


def _remove_a_file(out: Path) -> str:
    (out / "train" / "part-00002.parquet").unlink()
    return "missing: train/part-00002.parquet"


def _garble_the_manifest(out: Path) -> str:
    (out / MANIFEST_NAME).write_text('{"format": 1, "content": ')
    return f"{out / MANIFEST_NAME} cannot be read (Expecting value: line 1 column 26 (char 25))"


def _manifest_of_another_shape(out: Path) -> str:
    manifest = json.loads((out / MANIFEST_NAME).read_text())
    manifest["content"]["train"]["sha256"] = "not a digest"
    (out / MANIFEST_NAME).write_text(json.dumps(manifest))
    return f"{out / MANIFEST_NAME} cannot be read (no sha256 of every split)"


CHANGES = {
    "a file rewritten with fewer rows": _rewrite_fewer_rows,
    "a file rewritten with the same rows, other bytes": _rewrite_same_rows,
    "a file added": _add_a_file,
    "a file removed": _remove_a_file,
    "an unreadable manifest": _garble_the_manifest,
    "a manifest of another shape": _manifest_of_another_shape,
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_partitions_not_as_recorded_fall_back_to_the_metadata_fingerprint_with_one_warning(
    partitioned: Callable[[str], Partitioned], tmp_path: Path, change: str, caplog: pytest.LogCaptureFixture
) -> None:
    made = partitioned("csv: string qids")
    out, local = _copy(made.out, tmp_path), made.local
    config = _partitions_config(out)
    assert _fingerprint(config)["sha256"] == local["sha256"]
    said = CHANGES[change](out)
    with caplog.at_level(logging.INFO, logger="ltr.dask.partitioned"):
        fallback = _fingerprint(config)
    assert fallback["method"] == METADATA_METHOD
    assert fallback["sha256"] != local["sha256"]
    (warning,) = _warnings(caplog)
    assert said in warning
    assert "\n" not in warning
    assert warning.endswith(
        ": the data fingerprint hashes the files' metadata, not their content (no local run of the same data "
        "has it); write the partitions again with ltr partition to record it"
    )
    if "manifest" not in change:
        assert warning.startswith(f"the partition files are not those {out / MANIFEST_NAME} records (")
    # the fallback is the metadata fingerprint of the files as they are: what no manifest gives
    (out / MANIFEST_NAME).unlink()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="ltr.dask.partitioned"):
        assert _fingerprint(config) == fallback
    assert [r.levelname for r in caplog.records if r.name == "ltr.dask.partitioned"] == ["INFO"]
    with pytest.raises(LtrUserError, match=r"^runs were evaluated on different data: ltr.data.fingerprint differs"):
        check_compatible([_run(local, "local"), _run(fallback, "partitions")], ["local", "partitions"], force=False)


def test_a_run_reading_other_columns_than_recorded_does_not_use_the_manifest(
    partitioned: Callable[[str], Partitioned], caplog: pytest.LogCaptureFixture
) -> None:
    out = partitioned("csv: integer qids").out  # read, not changed
    with caplog.at_level(logging.WARNING, logger="ltr.dask.partitioned"):
        fallback = _fingerprint(_partitions_config(out, "data.label_column=f1"))
    assert fallback["method"] == METADATA_METHOD
    (warning,) = _warnings(caplog)
    assert warning.startswith(
        f"{out / MANIFEST_NAME} records the columns qid='qid', label='label', but the run reads qid='qid', label='f1': "
    )


def test_a_value_rewritten_in_a_file_of_the_same_size_and_rows_falls_back(
    partitioned: Callable[[str], Partitioned], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A rewrite that keeps a file's size and row count (plain encoding, no compression: every
    float32 is 4 bytes) still changes its footer (the column's min / max statistics)."""
    import pyarrow as pa

    from ltr.dask.partition_writer.manifest import write_manifest

    made = partitioned("csv: integer qids")
    out, local = _copy(made.out, tmp_path), made.local
    path = out / "train" / "part-00000.parquet"
    plain = {"compression": "none", "use_dictionary": False}
    table = pq.read_table(path)
    pq.write_table(table, path, **plain)
    manifest = json.loads((out / MANIFEST_NAME).read_text())
    (out / MANIFEST_NAME).unlink()
    write_manifest(out, manifest["content"], qid_column="qid", label_column="label", doc_id_column=None)  # records it
    config = _partitions_config(out)
    assert _fingerprint(config)["sha256"] == local["sha256"]

    size = path.stat().st_size
    column = table.column_names[-1]  # a feature: its first value becomes a new maximum
    values = table.column(column).to_numpy().copy()
    values[0] = values.max() + 1
    pq.write_table(table.set_column(table.column_names.index(column), column, pa.array(values)), path, **plain)
    assert path.stat().st_size == size
    assert pq.read_metadata(path).num_rows == table.num_rows
    with caplog.at_level(logging.WARNING, logger="ltr.dask.partitioned"):
        fallback = _fingerprint(config)
    assert fallback["method"] == METADATA_METHOD
    (warning,) = _warnings(caplog)
    assert "changed: train/part-00000.parquet" in warning

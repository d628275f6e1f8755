"""``ltr predict`` on the partitions of a run trained with ``data=parquet_partitions``.

One real run (``trainer=dask``) on partitions written without doc ids, in a real sqlite store.
Its ``data.doc_id_column`` is the option's default ``doc_id``: the files have no such column, so
``ltr train`` read them without doc ids and ``ltr predict RUN --data ROOT/test`` scores them the
same way (the rule of :func:`ltr.data.formats.doc_ids.column_of_files`), giving every logged ``test/*``
value and the logged per-query table bit for bit; a column asked for with ``--doc-id-column``
must be there. A folder whose file names have numbers of several widths is read in the order of
the numbers.
"""

from __future__ import annotations

import dataclasses
import math
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from mlflow.tracking import MlflowClient

from ltr import api
from ltr.cli.main import main as ltr_main
from ltr.config.groups.data import SyntheticDataConfig
from ltr.data.query_parts import partition_files, write_query_partitions
from ltr.data.ranking_data import RankingData
from ltr.data.splits import split_queries
from ltr.data.synthetic import generate_synthetic
from ltr.experiment import run as pipeline
from ltr.models.inputs import open_input
from ltr.models.logged import load_run
from ltr.models.predict import Prediction, predict_input
from tests.conftest import compose_train
from tests.processes import dask_cluster

RUN = "partitions-no-ids"


@dataclasses.dataclass(frozen=True)
class TrainedRun:
    uri: str
    root: Path
    run_id: str
    #: the run's logged metrics
    metrics: dict[str, float]
    #: the run's logged per-query table of the test split
    per_query: pd.DataFrame


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The address of the module's Dask cluster (:func:`tests.processes.dask_cluster`): a
    LocalCluster of two worker processes, as
    ``trainer.n_workers=2`` starts; the run trains there and every Dask prediction of two
    workers scores there (one start; a cluster a prediction starts itself:
    :func:`test_a_doc_id_column_asked_for_must_be_in_every_file`,
    tests/models/test_predict_reader_holes.py)."""
    with dask_cluster(2, log=tmp_path_factory.mktemp("cluster") / "cluster.log") as address:
        yield address


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, cluster: str) -> TrainedRun:
    """Synthetic data (no doc ids) as 3 partitions per split, and a run trained on them."""
    tmp = tmp_path_factory.mktemp("partitions")
    root = tmp / "parts"
    data = generate_synthetic(SyntheticDataConfig(n_queries=240), seed=5)
    assert data.doc_ids is None
    for name, split in split_queries(data, valid_fraction=0.2, test_fraction=0.25, seed=5).items():
        write_query_partitions(split, root / name, n_partitions=3)
    assert "doc_id" not in pq.read_schema(root / "test" / "part-00000.parquet").names
    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    cfg = compose_train([
        "data=parquet_partitions", f"data.root={root}", "trainer=dask", f"trainer.scheduler_address='{cluster}'",
        "fit.num_boost_round=12", "fit.early_stopping_rounds=null", "fit.show_progress=false",
        "model.num_leaves=7", f"tracking.uri={uri}", f"tracking.run_name={RUN}",
    ])
    assert cfg.data.doc_id_column == "doc_id"  # the option's default, not asked for
    outcome = pipeline.run(cfg)
    client = MlflowClient(uri)
    run_id = str(outcome.run_id)
    per_query = pd.read_parquet(client.download_artifacts(run_id, "per_query/test.parquet", str(tmp)))
    return TrainedRun(uri, root, run_id, dict(client.get_run(run_id).data.metrics), per_query)


def _assert_logged(prediction: Prediction, trained: TrainedRun) -> None:
    """Every ``test/*`` metric the run logged, recomputed from the predicted scores, bit for bit."""
    compared = [key for key in prediction.summary if f"test/{key}" in trained.metrics]
    assert {"ndcg_at_10", "err_at_10", "n_queries"} <= set(compared)
    for key in compared:
        value, expected = prediction.summary[key], trained.metrics[f"test/{key}"]
        assert value == expected or (math.isnan(value) and math.isnan(expected)), key


def test_predict_scores_partitions_without_doc_ids_as_the_run_read_them(
    trained: TrainedRun, cluster: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    test = trained.root / "test"
    out, run_file, per_query = tmp_path / "scores.txt", tmp_path / "test.run", tmp_path / "pq.parquet"
    code = ltr_main([
        "predict", RUN, "--data", str(test), "--out", str(out), "--trec-run", str(run_file),
        "--per-query", str(per_query), "--tracking-uri", trained.uri,
    ])
    assert code == 0, capsys.readouterr().err
    # the per-query table is the run's, bit for bit, and names no top document (there are no ids)
    table = pd.read_parquet(per_query)
    assert "top_doc_id" not in table.columns
    assert "top_doc_id" not in trained.per_query.columns
    pd.testing.assert_frame_equal(table, trained.per_query, check_exact=True)
    # docnos as for LETOR files without '#docid': {qid}-{i}, i the row's place in its query
    frame = pd.concat([pd.read_parquet(p) for p in partition_files(test)], ignore_index=True)
    lines = [line.split() for line in run_file.read_text().splitlines()]
    assert len(lines) == len(frame)
    within = frame.groupby("qid", sort=False).cumcount()
    assert sorted(line[2] for line in lines) == sorted(f"{q}-{i}" for q, i in zip(frame["qid"], within, strict=True))
    scores = np.array([float(line) for line in out.read_text().splitlines()])
    # the same in Python, streamed in small batches, and on Dask workers
    run = load_run(RUN, tracking_uri=trained.uri)
    local = predict_input(run, open_input(run, [test], batch_rows=29), keep=True)
    _assert_logged(local, trained)
    assert np.array_equal(local.model_scores, scores)
    on_workers = api.predict(RUN, test, tracking_uri=trained.uri, dask=api.TrainerConfig(scheduler_address=cluster))
    _assert_logged(on_workers, trained)
    assert np.array_equal(on_workers.model_scores, scores)
    assert all(batch.doc_ids is None for batch in [*local.batches, *on_workers.batches])


def test_a_doc_id_column_asked_for_must_be_in_every_file(
    trained: TrainedRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    test = trained.root / "test"
    first = partition_files(test)[0]
    out = tmp_path / "test.run"
    for extra in ([], ["--dask", "--workers", "1"]):
        code = ltr_main([
            "predict", RUN, "--data", str(test), "--doc-id-column", "doc_id", "--trec-run", str(out),
            "--tracking-uri", trained.uri, *extra,
        ])
        assert code == 2
        assert capsys.readouterr().err.strip().splitlines() == [
            f"ltr: error: {first} has no document id column 'doc_id' (--doc-id-column)"
        ]
        assert not out.exists()
    # a CSV file: the same rule, on its header
    csv = tmp_path / "test.csv"
    pd.concat([pd.read_parquet(p) for p in partition_files(test)], ignore_index=True).to_csv(csv, index=False)
    code = ltr_main(["predict", RUN, "--data", str(csv), "--doc-id-column", "doc_id", "--tracking-uri", trained.uri])
    assert code == 2
    assert capsys.readouterr().err.strip() == f"ltr: error: {csv} has no document id column 'doc_id' (--doc-id-column)"
    _assert_logged(api.predict(RUN, csv, tracking_uri=trained.uri), trained)  # the run's column: none read


def test_the_runs_doc_id_column_is_read_where_the_files_have_it(trained: TrainedRun, tmp_path: Path) -> None:
    """Partitions of the same rows with a ``doc_id`` column: the run's column is read (TREC docnos,
    the per-query table's top document), and the metrics stay the run's."""
    run = load_run(RUN, tracking_uri=trained.uri)
    frame = pd.concat([pd.read_parquet(p) for p in partition_files(trained.root / "test")], ignore_index=True)
    ids = tmp_path / "ids"
    ids.mkdir()
    frame.insert(2, "doc_id", [f"d{i}" for i in range(len(frame))])
    frame.to_parquet(ids / "part-00000.parquet", index=False)
    prediction = predict_input(run, open_input(run, [ids]), keep=True)
    _assert_logged(prediction, trained)
    doc_ids = [batch.doc_ids for batch in prediction.batches]
    assert np.concatenate([d for d in doc_ids if d is not None]).tolist() == frame["doc_id"].tolist()
    assert all(d is not None for d in doc_ids)
    assert prediction.table is not None
    assert prediction.table["top_doc_id"].str.fullmatch(r"d\d+").all()
    pd.testing.assert_frame_equal(prediction.table.drop(columns="top_doc_id"), trained.per_query, check_exact=True)


def test_a_folder_is_read_in_the_order_of_the_numbers_in_its_file_names(trained: TrainedRun, cluster: str, tmp_path: Path) -> None:
    """The test split cut in 12 files named ``part-0.parquet`` .. ``part-11.parquet`` (as text,
    ``part-10`` and ``part-11`` would come before ``part-2``): scored in the written order."""
    run = load_run(RUN, tracking_uri=trained.uri)
    test = predict_input(run, open_input(run, [trained.root / "test"]), keep=True)
    rows = pd.concat([pd.read_parquet(p) for p in partition_files(trained.root / "test")], ignore_index=True)
    qids = rows["qid"].to_numpy()
    starts = np.flatnonzero(np.concatenate([[True], qids[1:] != qids[:-1]]))
    one = RankingData.from_group_sizes(
        rows[run.feature_names].to_numpy(np.float32), rows["label"].to_numpy(), qids[starts],
        np.diff(np.append(starts, len(qids))), feature_names=tuple(run.feature_names),
    )
    padded = tmp_path / "padded"
    write_query_partitions(one, padded, n_partitions=12)
    widths = tmp_path / "widths"
    widths.mkdir()
    for path in partition_files(padded):
        shutil.copy(path, widths / f"part-{int(path.stem.removeprefix('part-'))}.parquet")
    names = [p.name for p in partition_files(widths)]
    assert names == [f"part-{i}.parquet" for i in range(12)]
    assert sorted(names)[:4] == ["part-0.parquet", "part-1.parquet", "part-10.parquet", "part-11.parquet"]
    for mode in ("local", "dask"):
        prediction = (
            api.predict(RUN, widths, tracking_uri=trained.uri, dask=api.TrainerConfig(scheduler_address=cluster))
            if mode == "dask" else predict_input(run, open_input(run, [widths]), keep=True)
        )
        assert np.array_equal(np.concatenate([b.data.qids for b in prediction.batches]), one.qids), mode
        assert np.array_equal(prediction.model_scores, test.model_scores), mode
        _assert_logged(prediction, trained)

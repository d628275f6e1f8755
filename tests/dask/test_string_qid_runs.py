"""A local run and Dask runs of the same string-qid data log per-query tables with the same qids,
the qids as written, and ``ltr compare`` pairs every query of a local run with a Dask run's.

The Dask runs: ``trainer=dask`` on the splits read in this process (the tables are built here),
and ``ltr partition`` + ``data=parquet_partitions`` (the tables are built on the workers, whose
reader numbers each split's string qids 0, 1, ... afresh, where the local split keeps the whole
file's numbers; its data fingerprint is the content hash ``ltr partition`` recorded, the local
run's, so ``ltr compare`` needs no ``--force``). Real processes (a LocalCluster of one worker
process, whose model is the local one; both Dask runs connect to it with
``trainer.scheduler_address``, one cluster start instead of two), a real sqlite MLflow store.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from mlflow.tracking import MlflowClient

from ltr.cli.main import main as ltr_main
from ltr.compare.loading import load_comparison
from ltr.config.schema import TrainerConfig
from ltr.dask.train import dask_client
from ltr.experiment import run as pipeline
from tests.conftest import compose_train
from tests.experiment.test_string_qid_tables import (
    N_QUERIES,
    NAMES,
    logged_table,
    train_overrides,
    write_rows,
)

#: every run trains all its rounds (the Dask trainer has no early stopping) on one worker
SAME_FIT = ("fit.early_stopping_rounds=null",)
ONE_WORKER = TrainerConfig(n_workers=1, threads_per_worker=1)


@pytest.mark.slow
def test_local_and_dask_runs_name_string_qids_alike_and_compare_query_by_query(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    path = write_rows(tmp_path / "text.csv", NAMES)
    parts = tmp_path / "parts"
    assert ltr_main(["partition", "--train", str(path), "--out", str(parts), "--partitions", "2"]) == 0
    ids = {}
    with dask_client(ONE_WORKER) as client:  # a LocalCluster of one worker process, as trainer.n_workers=1 starts
        dask = ("trainer=dask", f"trainer.scheduler_address='{client.scheduler.address}'")
        configs = {
            "local": train_overrides(path, uri, "local", *SAME_FIT),
            "dask": train_overrides(path, uri, "dask", *SAME_FIT, *dask),
            "partitions": [
                o for o in train_overrides(path, uri, "partitions", *SAME_FIT, *dask)
                if not o.startswith(("data=", "data.train=", "data.cache="))
            ] + ["data=parquet_partitions", f"data.root={parts}"],
        }
        for name, overrides in configs.items():
            outcome = pipeline.run(compose_train(overrides), overrides=overrides)
            assert outcome.run_id is not None
            ids[name] = outcome.run_id

    tags = {name: MlflowClient(uri).get_run(run_id).data.tags for name, run_id in ids.items()}
    assert len({t["ltr.data.fingerprint"] for t in tags.values()}) == 1
    # the MLflow dataset inputs too: the partitions run's (from the files' footers) are the local
    # run's (from its arrays) but for the data's name
    inputs = {
        name: {
            d.tags[0].value: (d.dataset.name.split("/")[-1], d.dataset.digest, d.dataset.schema, d.dataset.profile)
            for d in MlflowClient(uri).get_run(run_id).inputs.dataset_inputs
        }
        for name, run_id in ids.items()
    }
    assert sorted(inputs["local"]) == ["test", "train", "valid"]
    assert inputs["partitions"] == inputs["local"]

    for split in ("valid", "test"):
        tables = {name: logged_table(uri, run_id, split, tmp_path) for name, run_id in ids.items()}
        qids = tables["local"]["qid"].tolist()
        assert len(qids) == N_QUERIES // 5
        assert set(qids) <= set(NAMES)  # as written
        assert tables["dask"]["qid"].tolist() == qids
        assert tables["partitions"]["qid"].tolist() == qids  # not 0, 1, ... of the partition reader
        assert tables["partitions"]["list_len"].tolist() == tables["local"]["list_len"].tolist()
        assert tables["partitions"]["idcg_at_10"].tolist() == tables["local"]["idcg_at_10"].tolist()

    # every run is on the same data (the same fingerprint): the in-memory Dask run hashes the
    # splits as the local run does, the partitions run logs what ltr partition recorded
    for other in ("dask", "partitions"):
        loaded = load_comparison(["local", other], tracking_uri=uri, force=False, n_resamples=200)
        assert not [note for note in loaded.notes if "fingerprint" in note]
        assert loaded.comparison.n_dropped == (0, 0)
        assert loaded.comparison.n_queries == N_QUERIES // 5
        test = logged_table(uri, ids[other], "test", tmp_path).set_index("qid")
        local = logged_table(uri, ids["local"], "test", tmp_path)
        delta = test.loc[local["qid"], "ndcg_at_10"].to_numpy() - local["ndcg_at_10"].to_numpy()
        (row,) = [r for r in loaded.comparison.rows if not r.is_baseline and r.stratum == "all" and r.metric == "ndcg_at_10"]
        assert (row.wins, row.ties, row.losses) == (
            int((delta > 0).sum()), int((delta == 0).sum()), int((delta < 0).sum())
        )
        assert row.delta == pytest.approx(float(np.mean(delta)), abs=1e-12)
        # one worker sees every row: the same bins, the same trees as the local trainer (all
        # rounds), so every query, paired by its written qid, scores what it scores locally
        assert (row.n, row.ties, row.delta) == (N_QUERIES // 5, N_QUERIES // 5, 0.0)

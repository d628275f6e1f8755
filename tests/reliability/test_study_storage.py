"""Faults of an Optuna search's storage (``hydra.sweeper.storage``, issue 46): a sqlite file in a
folder that does not exist is refused before any run; two searches creating one new study at
the same moment both get it, in a sqlite file and in PostgreSQL. (A SIGKILLed search's trial:
``test_liveness.py``.)"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import optuna
import pytest

from ltr.cli.main import main
from ltr.errors import LtrUserError
from ltr.sweeper.search import check_storage

SMALL = ["debug=default", "fit.num_boost_round=5", "fit.show_progress=false"]

#: Two processes, each: wait until both are ready, then at the same agreed moments open (and
#: so create) one new study in each storage, ask a trial and tell it the process's number.
RACER = """
import sys, time
from pathlib import Path

import optuna

from ltr.sweeper.search import open_study

me, folder, urls = int(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
optuna.logging.set_verbosity(optuna.logging.WARNING)
(folder / f"ready-{me}").touch()
while len(list(folder.glob("ready-*"))) < 2:
    time.sleep(0.001)
start = max(p.stat().st_mtime for p in folder.glob("ready-*")) + 0.2
for i, url in enumerate(urls):
    moment = start + 0.4 * i
    time.sleep(max(0.0, moment - time.time() - 0.005))
    while time.time() < moment:
        pass
    study = open_study(url, folder, "shared", optuna.samplers.RandomSampler(seed=me), [optuna.study.StudyDirection.MAXIMIZE])
    trial = study.ask({"x": optuna.distributions.FloatDistribution(0, 1)})
    study.tell(trial, float(me))
"""

#: New studies created at once per test: each try is a race (unserialised, Optuna's creation
#: lost one of two such races here about half the time).
RACES = 3


def test_a_storage_in_a_missing_folder_is_refused_before_any_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    storage = f"sqlite:///{tmp_path / 'no' / 'such' / 'study.db'}"
    returned = main(["train", "hparams_search=optuna", "hydra.sweeper.n_trials=1", f"hydra.sweeper.storage={storage}", *SMALL])
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert returned == 2
    assert line == (
        f"ltr: error: hydra.sweeper.storage={storage!r}: the folder {tmp_path / 'no' / 'such'} does not exist; "
        "create it, or name a file in an existing folder"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no store, no sweep folder, no study file


@pytest.mark.parametrize(
    ("storage", "says"),
    [
        ("sqlite:///missing/study.db", "the folder {cwd}/missing does not exist; create it"),
        ("sqlite:///{cwd}", "{cwd} is a folder; name a file in it"),
        ("sqlite://", "is an in-memory sqlite database, which the search's jobs cannot share"),
        ("sqlite:///:memory:", "is an in-memory sqlite database"),
        ("study.db", "is not a database URL; e.g. hydra.sweeper.storage=sqlite:///study.db"),
    ],
)
def test_a_storage_no_search_can_use_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, storage: str, says: str) -> None:
    monkeypatch.chdir(tmp_path)
    storage = storage.format(cwd=tmp_path)
    with pytest.raises(LtrUserError) as refused:
        check_storage(storage)
    assert str(refused.value).startswith(f"hydra.sweeper.storage={storage!r}")
    assert says.format(cwd=tmp_path) in str(refused.value)
    check_storage(f"sqlite:///{tmp_path / 'study.db'}")  # a file in a folder that exists: fine
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_two_searches_creating_one_new_study_at_once_both_run(tmp_path: Path, study_storage: Callable[[str], str]) -> None:
    urls = [study_storage(f"race{i}") for i in range(RACES)]
    racers = [
        subprocess.Popen([sys.executable, "-c", RACER, str(me), str(tmp_path), *urls], stderr=subprocess.PIPE, text=True)
        for me in (1, 2)
    ]
    errors = [racer.communicate(timeout=300)[1] for racer in racers]
    assert [racer.returncode for racer in racers] == [0, 0], "\n".join(e[-1500:] for e in errors)
    for url in urls:
        (summary,) = optuna.get_all_study_summaries(url)
        assert summary.study_name == "shared"
        values = sorted(t.value for t in optuna.load_study(study_name="shared", storage=url).trials)
        assert values == [1.0, 2.0]

"""One store for every command: ``tracking.uri`` / ``--tracking-uri``, else ``$LTR_TRACKING_URI``,
else ``$MLFLOW_TRACKING_URI``, else ``./mlflow.db`` (readers also the project root's), for
``ltr train`` (``find_tracking_uri(writing=True)``, ``check_tracking_uri(None)``) as for the
readers; and the line a run ends with names the store when it is not ``./mlflow.db``.
No store is opened here (unit tier)."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

import ltr.tracking.uri
from ltr.cli.train import run_line
from ltr.errors import LtrUserError
from ltr.tracking.store import check_tracking_uri
from ltr.tracking.uri import default_tracking_uri, environment_variable_of, find_tracking_uri


def test_docstring_examples() -> None:
    result = doctest.testmod(ltr.tracking.uri)
    assert result.attempted >= 2
    assert result.failed == 0


def test_train_writes_where_the_environment_points_and_readers_read_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    here = f"sqlite:///{tmp_path / 'mlflow.db'}"
    # unset: ./mlflow.db for both (train creates it, readers then find it)
    assert find_tracking_uri(writing=True) == here
    assert check_tracking_uri(None) == here
    elsewhere = f"sqlite:///{tmp_path / 'x' / 'elsewhere.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", elsewhere)
    assert find_tracking_uri(writing=True) == find_tracking_uri() == check_tracking_uri(None) == elsewhere
    assert environment_variable_of(elsewhere) == "MLFLOW_TRACKING_URI"
    assert environment_variable_of(here) is None
    ltr_store = f"sqlite:///{tmp_path / 'ltr.db'}"
    monkeypatch.setenv("LTR_TRACKING_URI", ltr_store)  # ltr's own variable first
    assert find_tracking_uri(writing=True) == find_tracking_uri() == check_tracking_uri(None) == ltr_store
    # an explicit tracking.uri / --tracking-uri beats both
    given = f"sqlite:///{tmp_path / 'given.db'}"
    assert find_tracking_uri(given, writing=True) == find_tracking_uri(given) == check_tracking_uri(given) == given
    # a relative sqlite path in the variable is made absolute against the working directory
    monkeypatch.delenv("LTR_TRACKING_URI")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "sqlite:///rel.db")
    assert check_tracking_uri(None) == f"sqlite:///{tmp_path / 'rel.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "  ")  # blank: as unset
    assert check_tracking_uri(None) == here


def test_train_never_writes_to_the_project_root_store_of_a_subfolder(tmp_path: Path) -> None:
    """Readers in ``notebooks/`` find the root's ``mlflow.db``; ``ltr train`` there writes to
    ``notebooks/mlflow.db`` (the launch directory, as ever), which readers there then find first."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "mlflow.db").write_bytes(b"")
    sub = tmp_path / "notebooks"
    sub.mkdir()
    assert find_tracking_uri(start=sub) == default_tracking_uri(tmp_path)
    assert find_tracking_uri(start=sub, writing=True) == default_tracking_uri(sub)


def test_a_bad_uri_from_the_environment_names_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"file://{tmp_path / 'mlruns'}")
    with pytest.raises(LtrUserError) as info:
        check_tracking_uri(None)
    message = str(info.value)
    assert message == (
        f"tracking URI 'file://{tmp_path / 'mlruns'}': MLflow file stores are not supported; use "
        "tracking.uri=sqlite:///path/mlflow.db (the URI of $MLFLOW_TRACKING_URI: unset it or set tracking.uri)"
    )
    # the same URI given explicitly is refused without naming the variable
    with pytest.raises(LtrUserError) as explicit:
        check_tracking_uri(f"file://{tmp_path / 'mlruns'}")
    assert "$MLFLOW_TRACKING_URI" not in str(explicit.value)


def test_the_run_line_names_the_store_unless_it_is_the_working_directory_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    url = "http://127.0.0.1:5000/#/experiments/1/runs/abc"
    assert run_line("abc", url, "ltr", None) == f"MLflow run abc in experiment 'ltr': {url}  (serve it with: ltr ui)"
    elsewhere = f"sqlite:///{tmp_path / 'x' / 'elsewhere.db'}"
    assert run_line("abc", url, "ltr", elsewhere) == (
        f"MLflow run abc in experiment 'ltr' of {elsewhere}: {url}  (serve it with: ltr ui --uri {elsewhere})"
    )
    monkeypatch.setenv("MLFLOW_TRACKING_URI", elsewhere)  # ltr ui finds it itself then
    assert run_line("abc", url, "ltr", None) == (
        f"MLflow run abc in experiment 'ltr' of {elsewhere} ($MLFLOW_TRACKING_URI): {url}  (serve it with: ltr ui)"
    )
    server = "http://user:secret@mlflow.internal:5000"
    assert run_line("abc", "u", "ltr", server) == "MLflow run abc in experiment 'ltr' of http://user:***@mlflow.internal:5000: u"

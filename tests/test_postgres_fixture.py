"""The tests of a team's server without PostgreSQL: one skip reason for a developer, a failure
under CI (:func:`tests.postgres.require_postgres`)."""

from __future__ import annotations

import pytest

from tests import postgres


def test_missing_binaries_skip_with_one_reason_and_fail_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(postgres, "postgres_bindir", lambda: None)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        postgres.require_postgres()
    assert str(skipped.value) == postgres.MISSING
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI is set: these tests must run in CI"):
        postgres.require_postgres()

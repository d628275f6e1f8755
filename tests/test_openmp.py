"""OpenMP's spin count (ltr.runtime.openmp): set on ``import ltr`` unless the user chose, before OpenMP loads."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ltr.runtime.openmp import SPIN_COUNT, USER_CHOICES, limit_spinning


def test_unset_the_spin_count_is_set() -> None:
    environ = {"PATH": "/bin"}
    assert limit_spinning(environ) is True
    assert environ == {"PATH": "/bin", "GOMP_SPINCOUNT": SPIN_COUNT}
    assert int(SPIN_COUNT) < 300_000  # below libgomp's own default: the point of it


@pytest.mark.parametrize(("name", "value"), [("GOMP_SPINCOUNT", "300000"), ("OMP_WAIT_POLICY", "ACTIVE"), ("OMP_WAIT_POLICY", "")])
def test_a_users_choice_is_kept(name: str, value: str) -> None:
    environ = {name: value}
    assert limit_spinning(environ) is False
    assert environ == {name: value}


PROBE = """
import json, os, sys
def openmp_loaded():
    with open("/proc/self/maps") as maps:
        return any("libgomp" in line for line in maps)
before = openmp_loaded()
import ltr
after_ltr = openmp_loaded()
spin = os.environ.get("GOMP_SPINCOUNT")
import lightgbm
print(json.dumps({"before": before, "after_ltr": after_ltr, "spin": spin, "lightgbm": openmp_loaded()}))
"""


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="libgomp and /proc/self/maps: Linux")
@pytest.mark.parametrize("user", [None, "ACTIVE"])
def test_import_ltr_sets_it_before_anything_loads_openmp(user: str | None) -> None:
    """In a fresh interpreter: no OpenMP before or after ``import ltr`` (so libgomp, loaded by
    LightGBM afterwards, reads the value), the spin count set, or left alone when the user chose."""
    env = {k: v for k, v in os.environ.items() if k not in USER_CHOICES}
    if user is not None:
        env["OMP_WAIT_POLICY"] = user
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=120, check=True)
    got = json.loads(out.stdout)
    assert got == {"before": False, "after_ltr": False, "spin": SPIN_COUNT if user is None else None, "lightgbm": True}

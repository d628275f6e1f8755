"""numpy's huge pages (ltr.runtime.hugepages): off on ``import ltr`` unless the user chose, before numpy loads."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ltr.runtime.hugepages import VARIABLE, prefer_small_pages


def test_unset_small_pages_are_asked_for() -> None:
    environ = {"PATH": "/bin"}
    assert prefer_small_pages(environ) is True
    assert environ == {"PATH": "/bin", VARIABLE: "0"}


@pytest.mark.parametrize("value", ["1", "0", ""])
def test_a_users_choice_is_kept(value: str) -> None:
    environ = {VARIABLE: value}
    assert prefer_small_pages(environ) is False
    assert environ == {VARIABLE: value}


#: In a fresh interpreter: ``import ltr``, then numpy; the kernel's flags of the memory of a 64 MiB
#: array (``/proc/self/smaps``: ``hg`` is ``madvise(MADV_HUGEPAGE)``), read at its middle, since
#: numpy advises from the array's first whole page on.
PROBE = """
import json, os
import ltr
import numpy as np
a = np.ones(16 * 1024 * 1024, dtype=np.float32)
middle = a.ctypes.data + a.nbytes // 2
flags = None
with open("/proc/self/smaps") as smaps:
    inside = False
    for line in smaps:
        head = line.split()[0]
        if "-" in head and not head.endswith(":"):
            low, high = (int(x, 16) for x in head.split("-"))
            inside = low <= middle < high
        elif inside and line.startswith("VmFlags:"):
            flags = line.split()[1:]
print(json.dumps({"variable": os.environ.get("NUMPY_MADVISE_HUGEPAGE"), "huge": "hg" in flags}))
"""


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="madvise and /proc/self/smaps: Linux")
@pytest.mark.parametrize("user", [None, "1"])
def test_import_ltr_sets_it_before_numpy_loads(user: str | None) -> None:
    """The array's memory is not advised for huge pages after ``import ltr``, and is when the user
    asked for them: the variable is set before numpy reads it, and a user's value wins."""
    env = {k: v for k, v in os.environ.items() if k != VARIABLE}
    if user is not None:
        env[VARIABLE] = user
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=120, check=True)
    assert json.loads(out.stdout) == {"variable": "0" if user is None else user, "huge": user is not None}

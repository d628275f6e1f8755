"""The ``ltr`` process's own stop handling, outside a verb's: a stop signal that lands where its
exception cannot be raised (a ``__del__``, a garbage-collection or ctypes callback) prints no
"Exception ignored" traceback.

A real interpreter with the handlers ``ltr.cli.main.run`` installs, and a real SIGTERM delivered
while the main thread runs a ``__del__``.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

SCRIPT = """
import os, signal
from ltr.cli import main

main._handle_stops_outside_verbs()

class Finalized:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGTERM)  # its handler runs at the next instruction: in here
        for _ in range(1000):
            pass

Finalized()
print("went on", flush=True)
"""


@pytest.mark.slow
def test_a_stop_swallowed_in_a_finalizer_prints_no_traceback() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "went on\n"  # the finalizer swallowed it: nothing could raise it
    assert done.stderr == ""  # without the hook: "Exception ignored in: <function Finalized.__del__ ...>" and a traceback

"""Helpers of the tests that start real processes (servers, ``ltr ui``) in their own group."""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Any


def stop_process_group(proc: subprocess.Popen[Any], *, timeout: float = 20) -> None:
    """SIGTERM the whole group (uvicorn workers, job runners), SIGKILL what is left after ``timeout`` s."""
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=timeout)

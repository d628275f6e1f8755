"""Helpers of the tests that start real processes (servers, ``ltr ui``) in their own group."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest


def stop_process_group(proc: subprocess.Popen[Any], *, timeout: float = 20) -> None:
    """SIGTERM the whole group (uvicorn workers, job runners), SIGKILL what is left after ``timeout`` s."""
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=timeout)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    return free_ports(1)[0]


def free_ports(n: int) -> list[int]:
    """``n`` distinct TCP ports on 127.0.0.1 that nothing listens on now.

    Each socket stays bound until all ``n`` are chosen: ports picked one after another, each
    released before the next bind, may repeat (the kernel hands a just-freed port out again).
    """
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for s in sockets:
            s.close()


def wait_for_http(url: str, proc: subprocess.Popen[Any], *, log: Path | None = None, timeout: float = 120) -> None:
    """Poll ``url`` until it answers 200; fail (with the end of ``log``) if ``proc`` exits or
    ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            detail = log.read_text()[-2000:] if log is not None and log.exists() else ""
            pytest.fail(f"nothing answered at {url}: {detail}")
        time.sleep(0.5)

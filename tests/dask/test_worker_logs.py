"""The workers of the LocalCluster ``ltr`` starts write one line per log record to the command's stderr.

A real ``dask_client`` cluster in a child process (its workers inherit that process's stderr, which
the test reads); a worker logs an exception as ``distributed`` does when its heartbeat meets a
closing scheduler.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap

import pytest

from ltr.dask.worker_logs import OneLineFormatter, install

pytestmark = pytest.mark.slow

SCRIPT = textwrap.dedent(
    """
    import logging
    from ltr.config.schema import TrainerConfig
    from ltr.dask.train import dask_client

    def log_a_failed_heartbeat() -> str:
        try:
            try:
                raise ConnectionResetError("Stream is closed")
            except ConnectionResetError as exc:
                raise OSError("in <TCP (closed) ConnectionPool.heartbeat_worker>:\\nStream is closed") from exc
        except OSError:
            logging.getLogger("distributed.worker").exception("Failed to communicate with scheduler during heartbeat.")
        return "logged"

    with dask_client(TrainerConfig(n_workers=1, threads_per_worker=1)) as client:
        print(client.run(log_a_failed_heartbeat))
    """
)


def test_a_worker_logs_an_exception_on_one_line_without_its_traceback() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "'logged'" in done.stdout
    [line] = [line for line in done.stderr.splitlines() if "during heartbeat" in line]
    assert line.endswith(
        "Failed to communicate with scheduler during heartbeat. (OSError: in <TCP (closed) "
        "ConnectionPool.heartbeat_worker>: Stream is closed)"
    ), done.stderr
    assert " - distributed.worker - ERROR - " in line  # distributed's own format, kept
    assert "Traceback" not in done.stderr
    assert "ConnectionResetError" not in done.stderr  # the cause is not traced either


def test_the_formatter_keeps_the_record_whole_for_other_handlers() -> None:
    logger = logging.getLogger("ltr.test.worker_logs")
    logger.propagate = False
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    one, keep = logging.StreamHandler(), Keep()
    one.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    logger.handlers[:] = [one, keep]
    install(logger)
    install(logger)  # once: not wrapped twice
    assert isinstance(one.formatter, OneLineFormatter)
    assert not isinstance(one.formatter.inner, OneLineFormatter)
    try:
        raise ValueError("")
    except ValueError:
        record = logger.makeRecord(logger.name, logging.ERROR, __file__, 1, "two\nlines", None, sys.exc_info())
    assert one.format(record) == "ltr.test.worker_logs: two lines (ValueError)"
    assert record.exc_info is not None
    assert "Traceback" in logging.Formatter().format(record)

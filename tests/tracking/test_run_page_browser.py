"""A click-log run's page as headless Chromium renders it from a real ``mlflow server``: the
description box (MLflow clips it at 100 px, its lower part faded, until *Show more*) shows the
lead line whole and unfaded, and *Show more* renders every table row of the description.

Skipped where Chromium, its driver or Selenium is not installed (Debian: ``chromium``,
``chromedriver``)."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from ltr.experiment import run as pipeline
from tests.conftest import compose_train
from tests.processes import free_port, start_mlflow_server, stop_process_group

webdriver = pytest.importorskip("selenium.webdriver")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (shutil.which("chromium") and shutil.which("chromedriver")), reason="no chromium / chromedriver"),
]

SMALL = ["debug=default", "fit.show_progress=false", "tracking.log_model=false"]
#: MLflow's run page: the description box's height before *Show more*, and the faded share of it.
BOX_PX, FADED_SHARE = 100, 0.6


def _body_text(driver: object) -> str:
    from selenium.webdriver.common.by import By

    return str(driver.find_element(By.TAG_NAME, "body").text)  # type: ignore[attr-defined]


def test_the_description_box_shows_the_lead_whole_and_every_row_on_show_more(tmp_path: Path) -> None:
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    overrides = ["data=synthetic_clicks", "eval.clicks.propensity=estimated"]
    pipeline.run(compose_train([*SMALL, f"tracking.uri={uri}", *overrides]), overrides=overrides)
    (run,) = MlflowClient(uri).search_runs(["1"])
    description = run.data.tags["mlflow.note.content"]
    table_rows = [line for line in description.splitlines() if line.startswith("| ") and not line.startswith("|---")]
    port = free_port()
    server = start_mlflow_server(uri, tmp_path / "artifacts", tmp_path / "server.log", port, cwd=tmp_path)
    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1500,1100", f"--explicitly-allowed-ports={port}"):
        options.add_argument(arg)
    driver = None
    try:
        os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager: use the installed driver, no download
        driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
        driver.get(f"http://127.0.0.1:{port}/#/experiments/1/runs/{run.info.run_id}?workflowType=machine_learning")
        deadline = time.monotonic() + 150
        while "Show more" not in _body_text(driver):
            assert time.monotonic() < deadline, "the run page did not show its description"
            time.sleep(1)
        lead = driver.find_element(By.XPATH, "//strong[starts-with(normalize-space(.), 'valid nDCG@10')]")
        toggle = driver.find_element(By.CSS_SELECTOR, "[data-testid='show-comment-toggle']")
        box = toggle.find_element(By.XPATH, "preceding-sibling::div[1]")
        assert box.size["height"] == BOX_PX  # MLflow's clip: what the tests below rest on
        paragraph = lead.find_element(By.XPATH, "ancestor::p[1]")
        bottom = paragraph.location["y"] + paragraph.size["height"] - box.location["y"]
        assert bottom <= BOX_PX * (1 - FADED_SHARE) + 1, "the lead line runs into the faded part of the box"
        assert paragraph.text.startswith(f"valid nDCG@10 {run.data.metrics['valid/ndcg_at_10']:.4f}")
        assert "propensities estimated" in paragraph.text
        toggle.click()
        time.sleep(1)
        rendered = box.find_elements(By.TAG_NAME, "tr")
        assert len(rendered) == len(table_rows)  # every row of every table, as a row
        assert box.size["height"] > 4 * BOX_PX
        assert driver.execute_script("return arguments[0].scrollHeight", box) <= box.size["height"] + 1  # nothing clipped
        assert "Off-policy summary:" in box.text
        assert "Beside LightGBM's own metric" in box.text
    finally:
        if driver is not None:
            driver.quit()
        stop_process_group(server, timeout=30)

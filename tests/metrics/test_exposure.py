"""The exposure report: shares by hand, the k points, the advice, and ``ltr exposure LOG``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ltr.cli.main import main as ltr_main
from ltr.cli.online.exposure import main
from ltr.metrics.clicks.exposure import exposure_report


def test_shares_and_points_by_hand() -> None:
    # 4 sessions of 5 positions; propensity 1/(p+1): examinations 4, 2, 4/3, 1, 4/5 (sum 9.1333)
    pos = np.tile(np.arange(5), 4)
    clicks = np.zeros(20, dtype=np.int64)
    clicks[[0, 5, 10, 1, 2]] = 1  # 3 clicks at position 0, one at 1, one at 2
    r = exposure_report(pos, clicks, 1.0 / np.arange(1, 6))
    total = 4 + 2 + 4 / 3 + 1 + 4 / 5
    assert r.exam_share.tolist() == pytest.approx(np.cumsum([4, 2, 4 / 3, 1, 4 / 5]) / total)
    assert r.click_share.tolist() == pytest.approx([0.6, 0.8, 1.0, 1.0, 1.0])
    # 50 %: 4/9.13 = 0.44 < 0.5 <= 6/9.13; 80 %: 7.33/9.13 = 0.80 (>= 0.8); 95 %: 8.33/9.13 = 0.91 -> 5
    assert (r.k_for("exam", 50), r.k_for("exam", 80), r.k_for("exam", 95)) == (2, 3, 5)
    assert (r.k_for("click", 50), r.k_for("click", 80), r.k_for("click", 95)) == (1, 2, 3)
    assert r.metrics()["exposure_k80"] == 3.0
    assert r.advice(3) is None
    assert "beyond the 95 % exposure point" in str(r.advice(6))


def test_advice_when_k_is_well_inside_the_80_percent_point() -> None:
    pos = np.tile(np.arange(40), 10)
    r = exposure_report(pos, np.zeros(400, dtype=np.int64), np.ones(1))  # flat: k80 = 32
    assert r.k_for("exam", 80) == 32
    assert "well inside the 80 % point (k=32)" in str(r.advice(10))
    assert r.advice(20) is None


def _log(path: Path) -> None:
    rng = np.random.default_rng(0)
    rows = ["query,position,click"]
    for q in range(50):
        for p in range(20):
            rows.append(f"q{q},{p},{int(rng.random() < 0.6 / (p + 1))}")
    path.write_text("\n".join(rows) + "\n")


def test_ltr_exposure_prints_the_k_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _log(tmp_path / "log.csv")
    assert main([str(tmp_path / "log.csv"), "--eta", "1", "--k", "20"]) == 0
    text = capsys.readouterr().out
    assert "examinations at <= k" in text
    # eta 1 on 20 positions: harmonic shares H(k) / H(20); 80 % is reached at k = 10
    h = np.cumsum(1.0 / np.arange(1, 21))
    k80 = int(np.flatnonzero(h / h[-1] >= 0.8)[0]) + 1
    assert f"80 % at k={k80}" in text
    assert "advice: eval.k 20 lies beyond the 95 % exposure point" in text
    assert main([str(tmp_path / "log.csv"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rows"][-1][1:] == [1.0, 1.0]
    assert out["exposure_k50"] >= 1
    assert all(type(out[f"{kind}_k{pct}"]) is int for kind in ("exposure", "click") for pct in (50, 80, 95))


def test_bad_log_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bad.csv").write_text("query,position,click\nq1,0,1\nq1,-1,0\n")
    assert ltr_main(["exposure", str(tmp_path / "bad.csv")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "row 2: position '-1' is not an integer >= 0" in err
    (tmp_path / "cols.csv").write_text("q,pos,c\n")
    assert ltr_main(["exposure", str(tmp_path / "cols.csv")]) == 2
    assert "has no column 'query'" in capsys.readouterr().err

"""check_feature_params: LightGBM's per-feature parameters against the data's feature count, each
refusal one line naming the key as given; native_stderr_held keeps LightGBM's own console line
back."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from ltr.errors import LtrUserError
from ltr.training.feature_params import check_feature_params, feature_param_keys
from ltr.training.local import native_stderr_held

SOURCE = "data.n_informative + data.n_noise + 1"


def test_keys_found_by_any_alias() -> None:
    params = {"mc": [1], "feature_penalty": [1], "fs": "x.json", "path_smooth": 0.5, "cat_feature": [0]}
    assert feature_param_keys(params) == {
        "mc": "monotone_constraints", "feature_penalty": "feature_contri", "fs": "forcedsplits_filename",
        "cat_feature": "categorical_feature",
    }  # fmt: skip
    assert feature_param_keys({}) == {}


@pytest.mark.parametrize(
    "key",
    ["monotone_constraints", "mc", "feature_contri", "feature_penalty", "cegb_penalty_feature_lazy",
     "cegb_penalty_feature_coupled", "max_bin_by_feature"],
)  # fmt: skip
def test_one_entry_per_feature(key: str) -> None:
    value = 2 if key == "max_bin_by_feature" else 1
    check_feature_params({key: [value] * 17}, 17, source=SOURCE)
    check_feature_params({key: [value] * 2}, None)  # count unknown: only the values
    check_feature_params({key: []}, 17)  # LightGBM's "not set"
    with pytest.raises(LtrUserError) as info:
        check_feature_params({key: [value] * 2}, 17, source=SOURCE)
    assert str(info.value) == (
        f"model.params.{key} has 2 entries but the data has 17 features ({SOURCE}); "
        "give one entry per feature, in the data's column order"
    )
    with pytest.raises(LtrUserError, match=f"^model.params.{key} has 18 entries but the data has 17 features;"):
        check_feature_params({key: [value] * 18}, 17)


def test_lightgbm_string_form_and_listconfig() -> None:
    check_feature_params({"monotone_constraints": "1,0,-1"}, 3)
    check_feature_params(OmegaConf.create({"monotone_constraints": [1, 0, -1]}), 3)  # as a composed config holds it
    with pytest.raises(LtrUserError, match="has 3 entries but the data has 4 features"):
        check_feature_params({"monotone_constraints": "1,0,-1"}, 4)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"monotone_constraints": [1, 2, 0]}, "model.params.monotone_constraints: entry 1 is 2; each entry must be one of -1, 0, 1"),
        ({"feature_contri": [1, -1, 1]}, "model.params.feature_contri: entry 1 is -1; each entry must be a number >= 0"),
        ({"max_bin_by_feature": [255, 1, 255]}, "model.params.max_bin_by_feature: entry 1 is 1; each entry must be an integer >= 2"),
        ({"fc": [1, "x", 1]}, "model.params.fc: entry 1 is 'x', not a number"),
        ({"cegb_penalty_feature_lazy": [1, float("nan"), 1]}, "model.params.cegb_penalty_feature_lazy: entry 1 is nan; each entry must be a number"),
    ],
)
def test_entry_values(params: dict[str, Any], message: str) -> None:
    with pytest.raises(LtrUserError) as info:
        check_feature_params(params, None)
    assert str(info.value).startswith(message), str(info.value)


def test_interaction_constraints() -> None:
    check_feature_params({"interaction_constraints": [[0, 1], [2, 16]]}, 17)
    check_feature_params({"interaction_constraints": "[0,1],[2,16]"}, 17)
    check_feature_params({"interaction_constraints": []}, 17)
    with pytest.raises(LtrUserError) as info:
        check_feature_params({"interaction_constraints": [[0, 1], [2, 17]]}, 17, source=SOURCE)
    assert str(info.value) == (
        f"model.params.interaction_constraints: feature index 17 is beyond the data's 17 features (0-based: 0..16; {SOURCE})"
    )
    with pytest.raises(LtrUserError, match="feature index -1 is negative"):
        check_feature_params({"interaction_constraints": [[-1, 1]]}, None)
    with pytest.raises(LtrUserError, match=r"=\[0, 1\] is not a list of lists \(LightGBM would ignore it\)"):
        check_feature_params({"interaction_constraints": [0, 1]}, 17)
    with pytest.raises(LtrUserError, match="'a' is not a feature index"):
        check_feature_params({"interaction_constraints": [["a"]]}, 17)


def test_categorical_feature_indices() -> None:
    check_feature_params({"categorical_feature": [0, 16]}, 17)
    check_feature_params({"categorical_feature": "name:a,b"}, 17)  # by column name: not checked here
    with pytest.raises(LtrUserError, match=r"model\.params\.cat_feature: feature index 17 is beyond the data's 17 features"):
        check_feature_params({"cat_feature": [3, 17]}, 17)


def test_forced_splits_file(tmp_path: Path) -> None:
    missing = tmp_path / "nonexist.json"
    with pytest.raises(LtrUserError) as info:
        check_feature_params({"forcedsplits_filename": str(missing)}, None)
    assert str(info.value) == (
        f"model.params.forcedsplits_filename={missing}: the file does not exist (LightGBM would ignore the setting without a word)"
    )
    check_feature_params({"forcedsplits_filename": None, "monotone_constraints": None}, 17)  # null: not set
    # a logged run's settings read to score new data (ltr predict --data): the file is not needed
    check_feature_params({"forcedsplits_filename": str(missing)}, None, files=False)
    with pytest.raises(LtrUserError, match="the file is a directory"):
        check_feature_params({"fs": str(tmp_path)}, None)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(LtrUserError, match="is not a JSON file LightGBM can read: Expecting property name"):
        check_feature_params({"forcedsplits_filename": str(bad)}, None)
    good = tmp_path / "splits.json"
    tree = {"feature": 0, "threshold": 0.5, "left": {"feature": 3, "threshold": 1.0}, "right": {"feature": 16, "threshold": 0.0}}
    good.write_text(json.dumps(tree))
    check_feature_params({"forcedsplits_filename": str(good)}, 17)
    with pytest.raises(LtrUserError, match="feature index 16 is beyond the data's 16 features"):
        check_feature_params({"forcedsplits_filename": str(good)}, 16)
    good.write_text(json.dumps([tree]))
    with pytest.raises(LtrUserError, match="LightGBM expects an object"):
        check_feature_params({"forcedsplits_filename": str(good)}, 17)
    check_feature_params({"forcedsplits_filename": ""}, 17)  # LightGBM's "not set"


def test_forced_bins_file(tmp_path: Path) -> None:
    bins = tmp_path / "bins.json"
    bins.write_text(json.dumps([{"feature": 2, "bin_upper_bound": [0.3, 0.6]}]))
    check_feature_params({"forcedbins_filename": str(bins)}, 3)
    with pytest.raises(LtrUserError, match="feature index 2 is beyond the data's 2 features"):
        check_feature_params({"forcedbins_filename": str(bins)}, 2)
    bins.write_text(json.dumps({"feature": 2}))
    with pytest.raises(LtrUserError, match="LightGBM expects an array of objects"):
        check_feature_params({"forcedbins_filename": str(bins)}, 3)
    with pytest.raises(LtrUserError, match="does not exist"):
        check_feature_params({"forcedbins_filename": str(tmp_path / "none.json")}, 3)


def test_native_stderr_held_drops_only_lightgbm_fatal_lines(capfd: pytest.CaptureFixture[str]) -> None:
    with native_stderr_held():
        os.write(2, b"[LightGBM] [Fatal] Check failed: something\n\n")
        os.write(2, b"another line\n")
        sys.stderr.write("python's own\n")
    err = capfd.readouterr().err
    assert sorted(err.splitlines()) == ["another line", "python's own"]  # the Fatal line and its blank line gone
    with pytest.raises(RuntimeError):
        _write_then_fail(b"kept on the way out\n")
    assert capfd.readouterr().err == "kept on the way out\n"


def _write_then_fail(text: bytes) -> None:
    with native_stderr_held():
        os.write(2, text)
        raise RuntimeError

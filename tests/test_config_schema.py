"""The config contract, generated from the schemas: every field of every config group refuses an
out-of-range value, a wrong type and (lists) an empty list in one line naming its key.

The cases are not written by hand: :func:`cases` walks the dataclasses of every group (each
option of ``data``), reads what each field declares (:mod:`ltr.config.allowed`, or its bool /
Enum type) and derives the bad values from it. Most run in this process through the CLI's own
path (Hydra composes the overrides, a composition error becomes ``user_message``'s line,
then ``check_config``); a few run as ``ltr train`` processes of their own (exit 2, no traceback, no
store; :func:`tests.processes.run_ltr`). A field that declares nothing fails :func:`test_every_field_declares_its_allowed_values`.
"""

from __future__ import annotations

import dataclasses
import enum
import pickle
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from omegaconf.errors import OmegaConfBaseException

from ltr.config.allowed import Allowed, allowed_of
from ltr.config.compose import CONF_DIR, user_message
from ltr.config.groups.backends import MODEL_OPTIONS
from ltr.config.groups.data import DATA_OPTIONS, SplitConfig
from ltr.config.schema import ModelConfig, TrainConfig
from ltr.errors import LtrUserError
from ltr.experiment.checks import check_config
from tests.processes import run_ltr


@dataclass(frozen=True)
class Field:
    """One field of one group: its dotted key, its type, what it declares, the overrides that
    select its group option (``data=letor`` and a valid root)."""

    key: str
    type: Any
    rule: Allowed | None
    select: tuple[str, ...] = ()


def _groups(existing: Path) -> list[tuple[str, type[Any], tuple[str, ...]]]:
    """(key prefix, dataclass, selecting overrides) of every config group and option."""
    out: list[tuple[str, type[Any], tuple[str, ...]]] = [("", TrainConfig, ()), ("split.", SplitConfig, ())]
    for name, cls in DATA_OPTIONS.items():
        required = tuple(
            f"data.{f.name}={existing if f.name != 'train' else existing / 'train.txt'}"
            for f in dataclasses.fields(cls)
            if f.default == "???"
        )
        dask = ("trainer=dask",) if cls.read_by_workers else ()
        out.append(("data.", cls, (f"data={name}", *required, *dask)))
    out.append(("model.", ModelConfig, ()))
    out += [("model.", cls, (f"model={name}",)) for name, cls in MODEL_OPTIONS.items()]
    return out


def _hints(cls: type[Any]) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def fields_of(existing: Path) -> list[Field]:
    """Every leaf field of every group (nested dataclasses walked; ``data`` / ``split`` typed
    ``Any`` in ``TrainConfig`` are their own groups, and so is each ``model`` option's schema)."""
    out: list[Field] = []

    def walk(prefix: str, cls: type[Any], select: tuple[str, ...]) -> None:
        hints = _hints(cls)
        for f in dataclasses.fields(cls):
            tp = hints[f.name]
            if cls is TrainConfig and f.name in {"data", "split", "model"}:
                continue
            if dataclasses.is_dataclass(tp):
                walk(f"{prefix}{f.name}.", tp, select)
                continue
            out.append(Field(f"{prefix}{f.name}", tp, allowed_of(f), select))

    for prefix, cls, select in _groups(existing):
        walk(prefix, cls, select)
    return out


def _base(tp: Any) -> Any:
    """``int | None`` -> ``int``; ``list[int] | None`` -> ``list[int]``."""
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    return args[0] if typing.get_origin(tp) in {typing.Union, __import__("types").UnionType} and len(args) == 1 else tp


def _out_of_range(rule: Allowed, number: type) -> Any:
    """A number the rule refuses (an int for ``int`` fields)."""
    step = 1 if number is int else 0.5
    if rule.ge is not None:
        return number(rule.ge - step)
    if rule.gt is not None:
        return number(rule.gt)
    if rule.le is not None:
        return number(rule.le + step) if number is int else rule.le + 1
    if rule.lt is not None:
        return number(rule.lt)
    return None


def cases(field: Field, tmp: Path) -> list[tuple[str, str]]:
    """(what, override) of each bad value of ``field``."""
    tp, rule, key = _base(field.type), field.rule, field.key
    origin = typing.get_origin(tp)
    out: list[tuple[str, str]] = []
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return [("wrong type", f"{key}=not_a_choice")]
    if tp is bool:
        return [("wrong type", f"{key}=[1]")]
    assert rule is not None, f"{key} declares no allowed values"
    if origin is dict or rule.free:
        return [("wrong type", f"{key}=abc")]
    if origin is list:
        (item,) = typing.get_args(tp)
        out.append(("wrong type", f"{key}=abc"))
        if rule.min_len:
            out.append(("empty list", f"{key}=[]"))
        if item in {int, float}:
            bad = _out_of_range(rule, item)
            if bad is not None:
                out.append(("out of range", f"{key}=[{bad}]"))
            out.append(("wrong item type", f"{key}=[abc]"))
        elif rule.choices:
            out.append(("out of range", f"{key}=[not_a_choice]"))
        return out
    if tp in {int, float}:
        out.append(("wrong type", f"{key}=abc"))
        bad = _out_of_range(rule, tp)
        assert bad is not None, f"{key} is a number without bounds"
        out.append(("out of range", f"{key}={bad}"))
        return out
    assert tp is str or tp is Any, (key, tp)  # Any: optimized_metric, a key or a list of keys
    out.append(("wrong type", f"{key}=[1,2]"))
    if rule.exists:
        out.append(("out of range", f"{key}={tmp / 'does_not_exist'}"))
    elif rule.min_len:
        out.append(("out of range", f"{key}=''"))
    return out


def refusal(overrides: list[str], base: bytes | None = None) -> str:
    """The one line ``ltr train OVERRIDES`` is refused with, by the CLI's path (Hydra composes,
    a composition error becomes ``user_message``'s line, then the checks); fails the test
    if nothing refuses it. With ``base`` (a config already composed with the group options of
    the overrides, pickled), the value overrides are applied to a copy of it as Hydra's
    composition applies them (``ConfigLoaderImpl._apply_overrides_to_config``): the same code,
    without reading the YAML files again for each of the hundreds of cases (and unpickling
    copies a config in a fifth of ``copy.deepcopy``'s time)."""
    try:
        try:
            if base is None:
                cfg = compose(config_name="train", overrides=overrides)
            else:
                cfg = pickle.loads(base)
                ConfigLoaderImpl._apply_overrides_to_config(OverridesParser.create().parse_overrides(overrides), cfg)
        except (HydraException, OmegaConfBaseException) as exc:
            raise LtrUserError(user_message(exc, overrides)) from exc
        check_config(cfg)
    except LtrUserError as exc:
        return str(exc)
    pytest.fail(f"accepted: {overrides}")


@pytest.fixture
def existing(tmp_path: Path) -> Path:
    (tmp_path / "train.txt").write_text("1 qid:1 1:0.5\n0 qid:1 1:0.1\n")
    return tmp_path


def test_every_field_declares_its_allowed_values(existing: Path) -> None:
    undeclared = [
        f.key for f in fields_of(existing)
        if f.rule is None and not (_base(f.type) is bool or (isinstance(_base(f.type), type) and issubclass(_base(f.type), enum.Enum)))
    ]
    assert undeclared == []


def test_every_field_refuses_bad_values_in_one_line_naming_its_key(existing: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fields = fields_of(existing)
    uri = f"sqlite:///{existing / 'mlflow.db'}"
    n_cases = 0
    bases: dict[tuple[str, ...], bytes] = {}
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        for field in fields:
            if field.select not in bases:
                base = compose(config_name="train", overrides=[*field.select, f"tracking.uri={uri}"])
                check_config(base)  # the base itself is accepted
                bases[field.select] = pickle.dumps(base)
            for what, override in cases(field, existing):
                line = refusal([override], bases[field.select])
                assert "\n" not in line, (override, line)
                assert field.key in line, f"{what}: {override} -> {line}"
                n_cases += 1
    assert not (existing / "mlflow.db").exists()
    assert not (existing / "mlartifacts").exists()
    with capsys.disabled():
        print(f"\nschema contract: {len(fields)} fields of {len(_groups(existing))} config groups/options, {n_cases} cases")
    assert len(fields) > 100


@pytest.mark.parametrize(
    "override",
    ["seed=-1", "split.seed=-1", "data.seed=-1", "eval.k=[3000000000]", "eval.k=[99999999999999999999]",
     "+model.num_leafs=7", "rerank.alpha=2"],
)
def test_the_issue_cases_are_refused_naming_their_key(override: str) -> None:
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        line = refusal([override])
    key = override.lstrip("+").split("=", 1)[0]
    assert key in line
    if override.startswith("+"):
        assert "did you mean model.num_leaves?" in line


@pytest.mark.parametrize(
    ("overrides", "line"),
    [
        (["model.num_leafs=7"], "model.num_leafs is not a config key; did you mean model.num_leaves?"),
        (["+model.num_leafs=7"], "model.num_leafs is not a config key; did you mean model.num_leaves?"),
        (["fit.show_progres=false"], "fit.show_progres is not a config key; did you mean fit.show_progress?"),
        (["data.cache_dir=/tmp/c"], "data.cache_dir is not a key of data=synthetic; data=letor, svmlight, parquet, mq2008 have it"),
        (["+data.cache_dir=/tmp/c"], "data.cache_dir is not a key of data=synthetic; data=letor, svmlight, parquet, mq2008 have it"),
        (["data=svmlight", "data.n_queries=300"], "data.n_queries is not a key of data=svmlight; data=synthetic, synthetic_clicks have it"),
        (["model.zzz=1"], "model.zzz is not a config key (ltr train --cfg job lists them)"),
    ],
)
def test_a_key_no_schema_has_gets_one_line_whoever_finds_it(overrides: list[str], line: str) -> None:
    """Hydra finds a typo while composing, ltr's check a ``+key``: the same line either way, with
    the closest key, or the data options that have it."""
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        got = refusal(overrides)
    assert line in got, got
    assert got.endswith("(ltr train --cfg job lists them)"), got


@pytest.mark.parametrize(
    ("override", "line"),
    [
        ("model=lambdarnk", "model=lambdarnk is not an option of model; did you mean model=lambdarank? "
                            "(options: catboost, lambdarank, pointwise, rank_xendcg, xgboost)"),
        ("experiment=mq2009", "experiment=mq2009 is not an option of experiment; did you mean experiment=mq2008?"),
        ("model=zzzzzz", "model=zzzzzz is not an option of model (options: catboost, lambdarank, pointwise, rank_xendcg, xgboost)"),
    ],
)
def test_a_missing_option_of_a_group_names_the_closest_and_the_options(override: str, line: str) -> None:
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        got = refusal([override])
    assert got.startswith(line), got
    assert "_schema" not in got  # the schemas Hydra lists as options are not a user's


@pytest.mark.parametrize(
    "overrides",
    [
        ["sweep.constraints=[valid/ndcg_at_10 >= 0.7]"],  # quoted for the shell, not for Hydra
        ["sweep.constraints=[valid/ndcg_at_10", ">=", "0.7]"],  # not quoted at all: split by the shell
        ["sweep.constraints=[valid/ndcg_at_10", "0.7]"],  # ... and '>=' taken as a redirection
    ],
)
def test_a_value_hydra_needs_quoted_gets_the_quoting_hint(overrides: list[str]) -> None:
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        line = refusal(overrides)
    assert line.endswith(
        "(a value with spaces or < > ! needs Hydra's quotes inside the shell's: "
        "\"sweep.constraints=['valid/ndcg_at_10 >= 0.7']\", \"tracking.run_name='a b'\")"
    ), line
    assert "\n" not in line
    quoted = ["sweep.constraints=['valid/ndcg_at_10 >= 0.7']", "fit.num_boost_round=1"]
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        assert compose(config_name="train", overrides=quoted).sweep.constraints == ["valid/ndcg_at_10 >= 0.7"]


def test_debug_with_file_data_names_the_key(existing: Path) -> None:
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        line = refusal(["data=letor", f"data.root={existing}", "debug=default"])
    assert "data.n_queries" in line
    assert "debug/default" in line


@pytest.mark.slow
@pytest.mark.parametrize(
    "overrides",
    [["seed=-1"], ["eval.k=[99999999999999999999]"], ["+model.num_leafs=7"], ["eval.clicks.min_propensity=abc"],
     ["data=letor", "debug=default", "data.root=."]],
    ids=["seed", "huge-k", "plus-key", "wrong-type", "debug-file-data"],
)
def test_the_cli_refuses_in_one_line_with_exit_2_and_no_store(tmp_path: Path, overrides: list[str]) -> None:
    proc = run_ltr(["train", *overrides], cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("ltr: error: ")
    key = overrides[-1].lstrip("+").split("=", 1)[0] if "debug" not in overrides[-1] else "data.n_queries"
    assert key in line or (key == "data.root" and "data.n_queries" in line)
    assert sorted(p.name for p in tmp_path.iterdir()) in ([], ["outputs"])
    assert not (tmp_path / "mlflow.db").exists()


def test_registering_again_keeps_the_stored_schemas_and_restores_a_missing_one() -> None:
    from hydra.core.config_store import ConfigStore
    from omegaconf import OmegaConf

    from ltr.config.store import register_configs

    register_configs()
    repo = ConfigStore.instance().repo
    stored = [repo["train_schema.yaml"], repo["model"]["model_schema.yaml"], repo["rerank"]["rerank_schema.yaml"]]
    register_configs()
    again = [repo["train_schema.yaml"], repo["model"]["model_schema.yaml"], repo["rerank"]["rerank_schema.yaml"]]
    assert all(a is b for a, b in zip(stored, again, strict=True))  # not rebuilt
    rerank = repo["rerank"].pop("rerank_schema.yaml")
    try:
        register_configs()
        assert repo["rerank"]["rerank_schema.yaml"].node == rerank.node
    finally:
        repo["rerank"].setdefault("rerank_schema.yaml", rerank)
    assert OmegaConf.has_resolver("ltr_unique")

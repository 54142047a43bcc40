"""Every experiment config declares the valid range of its fields (issue 15, item 3).

``ExperimentConfig.validate`` runs on construction, so a value out of range fails in
``plan`` with one line, exit 2, before any job runs. The battery below sets each field
of every experiment to a value no count, size or index can take (a large negative
int, an empty tuple, NaN, +-inf, 10**18) and requires a :class:`ConfigError`; a config
lists the fields for which any value is valid in ``OPEN_FIELDS``. Every other int field
also declares an upper bound below ``ExperimentConfig.INT_LIMIT`` (issue 28: a size or
count too large to run fails before any job, not inside one), so 10**9 is rejected too.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing

import pytest
from click.testing import CliRunner

from icml25.cli import main
from icml25.core.experiment import (
    PRESETS,
    ConfigError,
    ExperimentConfig,
    TorchConfig,
    check_fields,
    get_setting,
    setting_type,
)
from icml25.core.registry import available_slugs, load_reproduction

SLUGS, _ = available_slugs()
EXPERIMENTS = [(slug, exp) for slug in SLUGS for exp in load_reproduction(slug).experiments]


def _kind(cfg_type: type, name: str) -> str:
    typ = setting_type(cfg_type, name)  # dotted names reach into nested method configs
    args = [a for a in typing.get_args(typ) if a is not type(None)]
    if typing.get_origin(typ) in (typing.Union, __import__("types").UnionType) and len(args) == 1:
        typ = args[0]
    origin = typing.get_origin(typ)
    if typ is bool:
        return "bool"
    if typ is int:
        return "int"
    if typ is float:
        return "float"
    if origin in (tuple, list):
        return "sequence"
    return "other"


def _int_items(cfg_type: type, name: str) -> bool:
    typ = setting_type(cfg_type, name)
    args = [a for a in typing.get_args(typ) if a is not type(None)]
    if typing.get_origin(typ) in (typing.Union, __import__("types").UnionType) and len(args) == 1:
        typ = args[0]
    return typing.get_origin(typ) in (tuple, list) and typing.get_args(typ)[:1] == (int,)


CASES = []
for slug, exp in EXPERIMENTS:
    open_fields = set(exp.config.OPEN_FIELDS)
    for f in (types.SimpleNamespace(name=key) for key in exp.fields):  # every setting, nested ones dotted
        if f.name == "device" or f.name in open_fields:
            continue
        kind = _kind(exp.config, f.name)
        if kind == "int":
            CASES.append(pytest.param(exp, f.name, -1_000_000, id=f"{slug}.{exp.name}.{f.name}=-1e6"))
            CASES.append(pytest.param(exp, f.name, 10**9, id=f"{slug}.{exp.name}.{f.name}=1e9"))
        elif kind == "float":
            CASES.append(pytest.param(exp, f.name, math.nan, id=f"{slug}.{exp.name}.{f.name}=nan"))
            CASES.append(pytest.param(exp, f.name, math.inf, id=f"{slug}.{exp.name}.{f.name}=inf"))
            CASES.append(pytest.param(exp, f.name, -math.inf, id=f"{slug}.{exp.name}.{f.name}=-inf"))
        elif kind == "sequence":
            CASES.append(pytest.param(exp, f.name, (), id=f"{slug}.{exp.name}.{f.name}=()"))
            if _int_items(exp.config, f.name):
                CASES.append(pytest.param(exp, f.name, (10**9,), id=f"{slug}.{exp.name}.{f.name}=(1e9,)"))


HUGE = []  # every field, open ones included: no int may be 10**18 and no float infinite
for slug, exp in EXPERIMENTS:
    for f in (types.SimpleNamespace(name=key) for key in exp.fields):
        kind = _kind(exp.config, f.name)
        if kind == "int":
            HUGE.append(pytest.param(exp, f.name, 10**18, id=f"{slug}.{exp.name}.{f.name}=1e18"))
        elif kind == "float":
            HUGE.append(pytest.param(exp, f.name, math.inf, id=f"{slug}.{exp.name}.{f.name}=inf"))


@pytest.mark.parametrize(("exp", "name", "value"), HUGE)
def test_huge_and_infinite_values_are_config_errors_even_for_open_fields(exp, name, value):
    with pytest.raises(ConfigError, match=name):
        exp.make_config("smoke", {name: value})


def test_set_rejects_infinite_text():
    from icml25.core.experiment import parse_value

    exp = EXPERIMENTS[0][1]
    floats = [key for key in exp.fields if _kind(exp.config, key) == "float"]
    for text in ("inf", "-inf", "1e400", "nan"):
        for name in floats[:1]:
            with pytest.raises(ConfigError, match="finite"):
                parse_value(exp.config, name, text)


@pytest.mark.parametrize(("exp", "name", "value"), CASES)
def test_out_of_range_value_is_a_config_error(exp, name, value):
    with pytest.raises(ConfigError, match=name):
        exp.make_config("smoke", {name: value})


@pytest.mark.parametrize(("slug", "exp"), [pytest.param(s, e, id=f"{s}.{e.name}") for s, e in EXPERIMENTS])
def test_every_preset_is_in_range(slug, exp):
    for preset in PRESETS:
        cfg = exp.make_config(preset)  # raises if a preset's own values are out of range
        for name, value in exp.presets.get(preset, {}).items():  # validate() checks, never rewrites a value
            if "." in name or not dataclasses.is_dataclass(value):
                assert get_setting(cfg, name) == value, f"{slug}.{exp.name} {preset}: {name}"
        own = [key for key in exp.fields if key != "device"]
        assert type(cfg).validate not in (ExperimentConfig.validate, TorchConfig.validate) or not own, (
            f"{type(cfg).__name__} declares no ranges: override validate()")


@pytest.mark.parametrize(("slug", "exp"), [pytest.param(s, e, id=f"{s}.{e.name}") for s, e in EXPERIMENTS])
def test_open_fields_exist(slug, exp):
    assert set(exp.config.OPEN_FIELDS) <= set(exp.fields)


def test_base_checks():
    with pytest.raises(ConfigError, match="device"):
        TorchConfig(device="gpu")
    assert TorchConfig(device="cuda:1").device == "cuda:1"
    assert not dataclasses.fields(ExperimentConfig)  # no device where no tensor lives


def test_at_most_bounds_elementwise():
    @dataclasses.dataclass
    class Cfg(ExperimentConfig):
        n: int = 3
        sizes: tuple[int, ...] = (1, 2)

        def validate(self) -> None:
            super().validate()
            check_fields(self, positive=("n", "sizes"), at_most={"n": 100, "sizes": 10})

    Cfg(n=100, sizes=(10,))
    with pytest.raises(ConfigError, match=r"Cfg.n must be <= 100"):
        Cfg(n=101)
    with pytest.raises(ConfigError, match="sizes"):
        Cfg(sizes=(1, 11))


def test_check_fields_rules():
    @dataclasses.dataclass
    class Cfg(ExperimentConfig):
        n: int = 3
        frac: float = 0.5
        xs: tuple[float, ...] = (1.0, 2.0)
        opt: int | None = None
        mode: str = "a"

        def validate(self) -> None:
            super().validate()
            check_fields(self, positive=("n", "xs", "opt"), open_fraction=("frac",), nonempty=("xs",),
                         choices={"mode": ("a", "b")})

    Cfg()
    for bad in ({"n": 0}, {"frac": 1.0}, {"frac": 0.0}, {"xs": (1.0, -2.0)}, {"xs": ()}, {"opt": 0},
                {"mode": "c"}, {"frac": math.nan}, {"frac": math.inf}, {"n": 10**10}, {"opt": -(10**10)}):
        with pytest.raises(ConfigError):
            Cfg(**bad)
    assert Cfg(opt=None).opt is None


@pytest.mark.parametrize("args", [
    ["pas", "--set", "train_fraction=-0.3"],
    ["r1vi", "--set", "gammas="],
    ["pas", "--set", "replicates=0"],
    ["sparse_glm_bnb", "--set", "p_values=0"],
    ["sparse_glm_bnb", "--set", "tol=-1"],
    ["pas", "--seeds", "100000000"],
    # issue 28's probes: infinite floats and huge ints exit 2 before anything runs
    ["r1vi", "--set", "rel_accuracy=inf"],
    ["r1vi", "--set", "n_states=1e23"],
    ["r1vi", "--set", "n_states=1000000000000000000"],
    ["pas", "--set", "replicates=1000000000000000000"],
    # issue 24: a NumPy-only experiment takes no device; a dotted key must name a nested setting
    ["pas", "--set", "device=cuda"],
    ["r1vi", "--set", "n_states.x=3"],
])
def test_issue_probes_exit_2_with_one_line(args, tmp_path, monkeypatch):
    monkeypatch.setenv("ICML25_HOME", str(tmp_path))
    result = CliRunner().invoke(main, ["reproduce", *args, "--preset", "smoke", "--reports", str(tmp_path / "r")])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
    if "device=cuda" in args:
        assert "uses a device" in result.output

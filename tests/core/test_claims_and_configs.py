"""Claims, summaries, configs and the registry."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from icml25.common.checks import check_fields, check_ranges
from icml25.core.experiment import (
    ConfigError,
    Experiment,
    ExperimentConfig,
    TorchConfig,
    check_metrics,
    config_from_dict,
    config_hash,
    config_to_dict,
    get_setting,
    parse_overrides,
    parse_value,
)
from icml25.core.paper import Claim, Paper, Summary
from icml25.core.registry import UnknownPaperError, all_papers, get_paper, load_reproduction, runnable_slugs

CARDS = Path(__file__).resolve().parents[3] / "shared" / "papers"


def test_summary_is_the_student_t_interval():
    x = np.array([1.0, 2.0, 4.0, 7.0])
    s = Summary.of(x)
    lo, hi = stats.t.interval(0.95, df=3, loc=x.mean(), scale=stats.sem(x))
    assert (s.mean, s.n) == (3.5, 4)
    assert s.lo == pytest.approx(lo) and s.hi == pytest.approx(hi)
    one = Summary.of([2.0])
    assert one.n == 1 and math.isnan(one.lo)
    assert Summary.of([np.nan, 1.0, 3.0]).n == 2


@pytest.mark.parametrize(
    "op, values, verdict",
    [
        ("<=", [-3.0, -2.0, -2.5], "PASS"),
        ("<=", [3.0, 2.0, 2.5], "FAIL"),
        ("<=", [-1.0, 1.0, 0.1], "INCONCLUSIVE"),
        (">=", [3.0, 2.0, 2.5], "PASS"),
        (">=", [-3.0, -2.0, -2.5], "FAIL"),
        (">=", [-1.0, 1.0, 0.1], "INCONCLUSIVE"),
        ("<=", [-5.0], "INCONCLUSIVE"),  # one seed: no interval, no verdict
    ],
)
def test_claim_verdicts(op, values, verdict):
    claim = Claim("c", kind="ours", statement="statement", paper_value="paper", experiment="exp", metric="metric", op=op, threshold=0.0)
    assert claim.decide(values) == verdict


def test_mean_claim_uses_the_t_interval_and_reports_it():
    claim = Claim("c", kind="ours", statement="s", paper_value="p", experiment="e", metric="m", op=">=", threshold=1.0, resolution=0.5, resolution_reason="t")
    x = [1.5, 1.9, 2.4, 1.8]
    d = claim.assess(x)
    lo, hi = stats.t.interval(0.95, df=3, loc=np.mean(x), scale=stats.sem(x))
    assert (d.verdict, d.n) == ("PASS", 4) and d.lo == pytest.approx(lo) and d.hi == pytest.approx(hi)
    assert d.level == pytest.approx(0.95)


def test_tie_within_the_resolution_and_fail_outside():
    claim = Claim("c", kind="ours", statement="s", paper_value="p", experiment="e", metric="m", op=">=", threshold=0.0, resolution=0.1, resolution_reason="t")
    assert claim.decide([0.01, -0.01, 0.02, -0.02, 0.0, 0.005]) == "TIE"
    assert claim.decide([-0.3, -0.2, -0.25, -0.22]) == "FAIL"  # wholly below, outside the band
    wide = claim.assess([-1.0, 1.0, 0.5, -0.5])
    assert wide.verdict == "INCONCLUSIVE" and wide.seeds_to_decide is not None and wide.seeds_to_decide > 4
    # no resolution: no TIE, however narrow the interval
    assert Claim("c", kind="ours", statement="s", paper_value="p", experiment="e", metric="m", op=">=", threshold=0.0).decide([1e-3, -1e-3, 2e-3, -2e-3]) == "INCONCLUSIVE"


def test_nan_seed_fails_a_mean_claim_with_its_reason():
    claim = Claim("c", kind="ours", statement="s", paper_value="p", experiment="e", metric="m", op="<=", threshold=0.0, resolution=0.1, resolution_reason="t")
    d = claim.assess([-1.0, float("nan"), -2.0])
    assert d.verdict == "FAIL" and "seed 1" in d.reason and "no number" in d.reason


@pytest.mark.parametrize("values, verdict", [([1, 1, 1], "PASS"), ([1, 1, 0], "FAIL"), ([1, float("nan"), 1], "FAIL"),
                                             ([1.5, 2.0], "PASS"), ([], "INCONCLUSIVE")])
def test_every_seed_claims(values, verdict):
    claim = Claim("c", kind="ours", statement="s", paper_value="p", experiment="e", metric="m", op=">=", threshold=1.0, aggregate="every_seed")
    assert claim.decide(values) == verdict
    assert claim.check_text.endswith("(every seed)")


def test_every_seed_decides_a_non_negative_increment():
    # "increment >= 0" on a quantity that is >= 0 by construction: a mean interval can never pass it
    values = [0.0, 0.0, 0.3]
    assert Claim("c", kind="ours", statement="s", paper_value="p", experiment="e", metric="m", op=">=", threshold=0.0, resolution=0.05, resolution_reason="t").decide(values) == "INCONCLUSIVE"
    assert Claim("c", kind="ours", statement="s", paper_value="p", experiment="e", metric="m", op=">=", threshold=0.0, aggregate="every_seed").decide(values) == "PASS"


def test_claim_and_paper_validation():
    with pytest.raises(ValueError, match="op"):
        Claim("c", kind="ours", statement="s", paper_value="p", experiment="e", metric="m", op="<", threshold=0.0)
    with pytest.raises(ValueError, match="aggregate"):
        Claim("c", kind="ours", statement="s", paper_value="p", experiment="e", metric="m", op="<=", threshold=0.0, aggregate="median")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="resolution"):
        Claim("c", kind="ours", statement="s", paper_value="p", experiment="e", metric="m", op="<=", threshold=0.0, resolution=0.0)
    with pytest.raises(ValueError, match="resolution"):
        Claim("c", kind="ours", statement="s", paper_value="p", experiment="e", metric="m", op="<=", threshold=0.0, aggregate="every_seed", resolution=0.1, resolution_reason="t")
    with pytest.raises(ValueError, match="threshold"):
        Claim("c", kind="ours", statement="s", paper_value="p", experiment="e", metric="m", op="<=", threshold=float("nan"))
    with pytest.raises(ValueError, match="method"):
        Paper("x", "t", None, None, None, "algorithm", method="done", method_note="n")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="method_note"):
        Paper("x", "t", None, None, None, "algorithm", method="verified", reproduction="paper", reproduction_note="n")
    with pytest.raises(ValueError, match="reproduction"):
        Paper("x", "t", None, None, None, "algorithm", method="verified", method_note="n", reproduction="full")
    with pytest.raises(ValueError, match="reproduction_note"):
        Paper("x", "t", None, None, None, "algorithm", method="verified", method_note="n", reproduction="paper")
    with pytest.raises(ValueError, match="no reproduction"):
        Paper("x", "t", None, None, None, "position", method="not-a-system", method_note="n", reproduction="paper")


@dataclass(frozen=True)
class _Inner:
    momentum: float = 0.9
    """Momentum."""

    def __post_init__(self) -> None:
        if self.momentum >= 1:
            raise ValueError("momentum must be < 1")  # a hand-written message, without the class name


@dataclass
class _Cfg(ExperimentConfig):
    n: int = 3
    """An int."""
    rate: float = 0.5
    """A float."""
    flag: bool = False
    """A bool."""
    sizes: tuple[int, ...] = (1, 2)
    """A tuple."""
    cap: int | None = None
    """An optional int."""


def _run(cfg, seed, progress=None):
    return {"x": float(cfg.n + seed)}


EXP = Experiment("e", "test experiment", _Cfg, _run, presets={"smoke": {"n": 1}, "quick": {}})


def test_presets_and_overrides():
    assert EXP.make_config("smoke").n == 1
    assert EXP.make_config("quick").n == 3
    assert EXP.make_config("smoke", {"n": 9}).n == 9
    with pytest.raises(ConfigError, match="unknown preset 'huge'; valid: smoke, quick, full"):
        EXP.make_config("huge")
    with pytest.raises(ConfigError, match="no setting 'bogus'"):
        EXP.make_config("quick", {"bogus": 1})
    with pytest.raises(ValueError, match="unknown preset"):
        Experiment("bad", "d", _Cfg, _run, presets={"medium": {}})


def test_parse_value_by_field_type():
    assert parse_value(_Cfg, "n", "7") == 7
    assert parse_value(_Cfg, "rate", "1e-3") == 1e-3
    assert parse_value(_Cfg, "flag", "true") is True and parse_value(_Cfg, "flag", "0") is False
    assert parse_value(_Cfg, "sizes", "4,5,6") == (4, 5, 6)
    assert parse_value(_Cfg, "cap", "none") is None and parse_value(_Cfg, "cap", "4") == 4
    for key, bad in [("n", "2.5"), ("rate", "fast"), ("flag", "maybe"), ("sizes", "1,x"), ("rate", "nan")]:
        with pytest.raises(ConfigError, match=key):
            parse_value(_Cfg, key, bad)
    assert parse_overrides(["a=1", "b = x=y"]) == {"a": "1", "b": "x=y"}
    with pytest.raises(ConfigError, match="key=value"):
        parse_overrides(["novalue"])


def test_config_hash_is_stable_and_sensitive():
    assert config_hash(_Cfg()) == config_hash(_Cfg())
    assert config_hash(_Cfg()) != config_hash(_Cfg(n=4))
    assert config_hash(_Cfg()) != config_hash(_Cfg(rate=0.25))
    assert config_hash(_TorchCfg()) != config_hash(_TorchCfg(device="cuda"))


@dataclass
class _TorchCfg(TorchConfig):
    n: int = 3
    """An int."""


@dataclass(frozen=True)
class _Method:
    """A method's own config, as a method module writes it: validates itself, knows nothing of icml25.core."""

    lr: float = 1e-3
    """Step size."""
    widths: tuple[int, ...] = (4, 8)
    """Layer widths."""
    inner: _Inner = field(default_factory=lambda: _Inner())
    """A config inside the method's config."""

    def __post_init__(self) -> None:
        check_fields(self, positive=("lr", "widths"))


@dataclass
class _NestedCfg(ExperimentConfig):
    agent: _Method = field(default_factory=_Method)
    """The method's config, whole."""
    steps: int = 10
    """Steps."""

    def validate(self) -> None:
        super().validate()
        check_fields(self, positive=("steps",))


NESTED = Experiment("nested", "d", _NestedCfg, _run, presets={"smoke": {"agent.lr": 0.5, "steps": 2}})


def test_nested_configs_take_dotted_settings_everywhere():
    assert set(NESTED.fields) == {"agent.lr", "agent.widths", "agent.inner.momentum", "steps"}
    cfg = NESTED.make_config("smoke", {"agent.widths": (2,), "agent.inner.momentum": 0.5})
    assert cfg.agent == _Method(lr=0.5, widths=(2,), inner=_Inner(momentum=0.5)) and cfg.steps == 2
    assert NESTED.make_config("quick").agent == _Method()  # the method's own defaults
    assert get_setting(cfg, "agent.inner.momentum") == 0.5
    assert parse_value(_NestedCfg, "agent.lr", "1e-2") == 1e-2
    assert parse_value(_NestedCfg, "agent.widths", "3,5") == (3, 5)
    assert config_to_dict(cfg)["agent"] == {"lr": 0.5, "widths": [2], "inner": {"momentum": 0.5}}
    assert config_hash(cfg) != config_hash(NESTED.make_config("smoke"))  # the hash sees nested values
    with pytest.raises(ConfigError, match="group of settings; set its fields, e.g. agent.lr="):
        parse_value(_NestedCfg, "agent", "x")
    with pytest.raises(ConfigError, match="no setting 'agent.bogus'"):
        NESTED.make_config("smoke", {"agent.bogus": 1})
    with pytest.raises(ConfigError, match=r"experiment 'nested': _NestedCfg\.agent\.lr must be > 0, got -1.0"):
        NESTED.make_config("smoke", {"agent.lr": -1.0})  # the method config's own check, named as --set spells it
    with pytest.raises(ConfigError, match=r"_NestedCfg\.agent\.inner: momentum must be < 1"):
        NESTED.make_config("smoke", {"agent.inner.momentum": 2.0})  # an error without the class prefix
    stored = config_to_dict(cfg)  # a job's config as the store keeps it: nested dicts, lists for tuples
    assert config_from_dict(_NestedCfg, stored) == cfg
    with pytest.raises(ConfigError, match=r"_NestedCfg.agent.inner.momentum must be a finite number"):
        NESTED.make_config("smoke", {"agent.inner.momentum": -float("inf")})  # the base checks recurse
    with pytest.raises(ConfigError, match="at most"):
        NESTED.make_config("smoke", {"agent.widths": (10**10,)})


def test_only_pytorch_experiments_take_a_device():
    assert "device" not in EXP.fields and "device" in Experiment("t", "d", _TorchCfg, _run).fields
    with pytest.raises(ConfigError, match="experiment 'e' does not use a device"):
        EXP.make_config("quick", {"device": "cuda"})
    with pytest.raises(ConfigError, match="device must be 'cpu' or 'cuda"):
        _TorchCfg(device="tpu")


def test_check_ranges_names_the_owner_and_rejects_nan_and_text():
    check_ranges("f", {"a": 1, "b": None, "c": (0.5, 1.0)}, positive=("a", "b"), fraction=("c",), integer=("a",))
    for values, rule, match in [({"a": float("nan")}, {"positive": ("a",)}, "f.a must be > 0, got nan"),
                                ({"a": "1"}, {"positive": ("a",)}, "f.a must be > 0"),
                                ({"a": 1.0}, {"integer": ("a",)}, "f.a must be an integer"),
                                ({"a": True}, {"integer": ("a",)}, "an integer"),
                                ({"a": float("inf")}, {"finite": ("a",)}, "a finite number"),
                                ({"a": ()}, {"nonempty": ("a",)}, "non-empty")]:
        with pytest.raises(ConfigError, match=match):
            check_ranges("f", values, **rule)
    assert issubclass(ConfigError, ValueError)


def test_check_metrics_normalises_and_rejects():
    out = check_metrics({"a": np.float32(1.5), "b": np.arange(3), "c": True, "d": 2})
    assert out == {"a": 1.5, "b": [0.0, 1.0, 2.0], "c": 1.0, "d": 2.0}
    with pytest.raises(TypeError, match="metric 'x'"):
        check_metrics({"x": "text"})
    with pytest.raises(TypeError, match="dict"):
        check_metrics([1.0])


def test_registry_has_all_37_papers():
    slugs = [p.slug for p in all_papers()]
    assert not (Path(__file__).resolve().parents[2] / "src" / "icml25" / "core" / "catalog.py").exists()
    assert len(slugs) == 37 == len(set(slugs))
    if CARDS.is_dir():  # shared/ sits beside the checkout on the project's machines
        assert sorted(slugs) == sorted(p.stem for p in CARDS.glob("*.md"))
    not_a_system = [p.slug for p in all_papers() if p.method == "not-a-system"]
    assert not_a_system == ["genai_regulation"]
    assert "pas" in runnable_slugs()
    with pytest.raises(UnknownPaperError, match="unknown paper 'nope'; valid: alphaqcm"):
        get_paper("nope")


@pytest.mark.parametrize("slug", runnable_slugs())
def test_every_runnable_paper_is_complete(slug):
    repro = load_reproduction(slug)
    assert repro.experiments and repro.claims and repro.api_example
    for exp in repro.experiments:
        for preset in ("smoke", "quick", "full"):
            exp.make_config(preset)
    root = Path(__file__).resolve().parents[2]
    assert (root / "docs" / "papers" / f"{slug}.md").is_file()
    assert (root / "tests" / "papers" / f"test_{slug}.py").is_file()
    # every claim's decision rule is pre-registered: every_seed, or a mean with a resolution
    for claim in repro.claims:
        assert claim.aggregate == "every_seed" or claim.resolution is not None, f"{slug}/{claim.id}: no resolution"


@pytest.mark.parametrize("slug", runnable_slugs())
def test_api_example_runs(slug, capsys):
    exec(compile(load_reproduction(slug).api_example, f"<{slug} api example>", "exec"), {})
    assert capsys.readouterr().out.strip()

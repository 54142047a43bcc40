"""Claims, summaries, configs and the registry."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from icml25.core.catalog import CATALOG
from icml25.core.experiment import (
    ConfigError,
    Experiment,
    ExperimentConfig,
    check_metrics,
    config_hash,
    parse_overrides,
    parse_value,
)
from icml25.core.paper import Claim, Paper, Summary
from icml25.core.registry import UnknownPaperError, get_paper, load_reproduction, runnable_slugs

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
    claim = Claim("c", "statement", "paper", "exp", "metric", op, 0.0)
    assert claim.evaluate(Summary.of(values)) == verdict


def test_claim_and_paper_validation():
    with pytest.raises(ValueError, match="op"):
        Claim("c", "s", "p", "e", "m", "<", 0.0)
    with pytest.raises(ValueError, match="status"):
        Paper("x", "t", None, None, None, "algorithm", status="done")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="note"):
        Paper("x", "t", None, None, None, "algorithm", status="partial")


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
    assert config_hash(_Cfg()) != config_hash(_Cfg(device="cuda"))


def test_check_metrics_normalises_and_rejects():
    out = check_metrics({"a": np.float32(1.5), "b": np.arange(3), "c": True, "d": 2})
    assert out == {"a": 1.5, "b": [0.0, 1.0, 2.0], "c": 1.0, "d": 2.0}
    with pytest.raises(TypeError, match="metric 'x'"):
        check_metrics({"x": "text"})
    with pytest.raises(TypeError, match="dict"):
        check_metrics([1.0])


def test_registry_has_all_37_papers():
    slugs = [p.slug for p in CATALOG]
    assert len(slugs) == 37 == len(set(slugs))
    if CARDS.is_dir():  # shared/ sits beside the checkout on the project's machines
        assert sorted(slugs) == sorted(p.stem for p in CARDS.glob("*.md"))
    not_a_system = [p.slug for p in CATALOG if p.status == "not-a-system"]
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


@pytest.mark.parametrize("slug", runnable_slugs())
def test_api_example_runs(slug, capsys):
    exec(compile(load_reproduction(slug).api_example, f"<{slug} api example>", "exec"), {})
    assert capsys.readouterr().out.strip()

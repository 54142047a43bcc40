"""The adaptive-seed rule: looks, alpha spending, and its error rate and power under optional stopping."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from icml25.core.paper import Claim
from icml25.core.sequential import ALPHA, interval, look_alpha, look_index, looks, run_until_decided


def test_looks_grow_geometrically_to_the_budget():
    assert looks(3, 40) == (3, 5, 8, 12, 18, 27, 40)
    assert looks(5, 5) == (5,)
    assert looks(3, 8) == (3, 5, 8)
    for start, cap in [(1, 7), (2, 12), (5, 10), (10, 20), (3, 1000)]:
        sched = looks(start, cap)
        assert sched[0] == start and sched[-1] == cap and all(b > a for a, b in zip(sched, sched[1:]))
    with pytest.raises(ValueError, match="max_seeds"):
        looks(5, 3)
    with pytest.raises(ValueError, match="at least one"):
        looks(0, 3)


def test_alpha_is_spent_linearly_and_adds_up():
    for sched in [looks(3, 40), looks(5, 10), (4,)]:
        spent = [look_alpha(sched, k) for k in range(len(sched))]
        assert sum(spent) == pytest.approx(ALPHA)
        assert spent[0] == pytest.approx(ALPHA * sched[0] / sched[-1])
    assert [look_index(n, (3, 5, 8)) for n in (1, 3, 4, 5, 8, 9)] == [0, 0, 1, 1, 2, 2]


def test_single_look_is_the_ordinary_95_percent_t_interval():
    x = np.array([0.3, 1.1, 0.7, 1.9, 0.2])
    lo, hi, level = interval(x)
    ref = stats.t.interval(0.95, df=4, loc=x.mean(), scale=stats.sem(x))
    assert (lo, hi) == pytest.approx(ref) and level == pytest.approx(0.95)
    # a later look of a longer schedule is wider than the fixed-n interval (alpha was spent earlier)
    lo2, hi2, level2 = interval(x, looks(3, 8))
    assert hi2 - lo2 > hi - lo and level2 > 0.95
    assert all(math.isnan(v) for v in interval([1.0])[:2])


def _simulate(effect: float, max_seeds: int, reps: int, seed: int, start: int = 3, sd: float = 1.0,
              resolution: float = 0.1) -> dict[str, float]:
    claim = Claim("c", kind="ours", statement="s", paper_value="p", experiment="e", metric="m", op=">=", threshold=0.0,
                  resolution=resolution, resolution_reason="test")
    rng = np.random.default_rng(seed)
    verdicts = []
    for _ in range(reps):
        z = sd * rng.standard_normal(max_seeds) + effect
        verdict, n_used = run_until_decided(claim, lambda s, z=z: z[s], max_seeds, start=start)
        assert n_used in looks(start, max_seeds)
        verdicts.append(verdict)
    return {v: verdicts.count(v) / reps for v in ("PASS", "FAIL", "TIE", "INCONCLUSIVE")}


def test_at_the_threshold_pass_is_rare_under_optional_stopping():
    rates = _simulate(effect=0.0, max_seeds=40, reps=4000, seed=1)
    assert rates["PASS"] <= 0.05  # the bound; the design gives about 0.025
    rates = _simulate(effect=0.0, max_seeds=10, reps=4000, seed=2)
    assert rates["PASS"] <= 0.05


def test_a_real_effect_of_0_6_sd_passes_with_40_seeds():
    rates = _simulate(effect=0.6, max_seeds=40, reps=2000, seed=3)
    assert rates["PASS"] >= 0.80 and rates["FAIL"] <= 0.025


def test_tie_is_checked_before_pass_and_fail():
    # an interval on the claimed side of the threshold but within the resolution: any effect is too small to matter
    claim = Claim("c", kind="ours", statement="s", paper_value="p", experiment="e", metric="m", op=">=", threshold=0.0,
                  resolution=0.1, resolution_reason="t")
    inside_above = [0.04, 0.05, 0.06, 0.05, 0.045, 0.055]
    assert claim.decide(inside_above) == "TIE"
    assert claim.decide([-v for v in inside_above]) == "TIE"
    assert claim.decide([0.4, 0.5, 0.45, 0.5]) == "PASS"  # outside the band: PASS as before


def test_tie_first_keeps_the_error_rates():
    # a true mean exactly at the edge of the band (effect = resolution) is not "too small to matter":
    # a TIE there needs an interval that misses the true mean from above, so at most alpha/2 of the time
    rates = _simulate(effect=0.1, max_seeds=40, reps=3000, seed=5, sd=0.1)
    assert rates["TIE"] <= 0.035 and rates["FAIL"] <= 0.01
    # a true mean at the threshold with small spread: TIE-first turns the PASS/FAIL of a narrow interval into TIE,
    # and PASS or FAIL stay below alpha/2 each
    rates = _simulate(effect=0.0, max_seeds=40, reps=3000, seed=6, sd=0.05)
    assert rates["PASS"] <= 0.035 and rates["FAIL"] <= 0.035 and rates["TIE"] >= 0.9
    # PASS at the threshold stays rare whatever the spread
    for sd, seed in ((0.02, 7), (0.2, 8)):
        assert _simulate(effect=0.0, max_seeds=27, reps=2000, seed=seed, sd=sd)["PASS"] <= 0.035


def test_naive_repeated_t_tests_would_not_keep_the_error_rate():
    # the reason for the design: re-testing a plain 95% interval after every seed passes far more often
    rng = np.random.default_rng(4)
    hits = 0
    for _ in range(2000):
        z = rng.standard_normal(40)
        for n in range(3, 41):
            lo = stats.t.interval(0.95, df=n - 1, loc=z[:n].mean(), scale=stats.sem(z[:n]))[0]
            if lo >= 0:
                hits += 1
                break
    assert hits / 2000 > 0.08


def test_every_seed_claims_are_decided_at_the_first_look():
    claim = Claim("c", kind="ours", statement="s", paper_value="p", experiment="e", metric="m", op=">=", threshold=1.0, aggregate="every_seed")
    assert run_until_decided(claim, lambda s: 1.0, max_seeds=20, start=4) == ("PASS", 4)
    assert run_until_decided(claim, lambda s: 0.0 if s == 2 else 1.0, max_seeds=20, start=4) == ("FAIL", 4)

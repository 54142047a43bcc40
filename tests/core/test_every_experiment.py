"""One battery over every experiment of every runnable paper.

For each experiment, at the ``smoke`` preset and seed 0, through the same code path
as the runner (:func:`icml25.core.worker.execute`: import, seeding, metrics check):

* two runs give identical metrics (wall-clock and memory metrics aside);
* the metric of every claim on the experiment is present and finite;
* every config field of every preset survives a round trip through ``--set`` text.

Claims whose metric is absent or NaN at the smoke scale for a documented reason are
listed in ``NOT_AT_SMOKE`` and expected to fail (strictly: an entry that starts
passing must be removed).
"""

from __future__ import annotations

import dataclasses
import math
import re
from functools import lru_cache

import pytest

from icml25.core.experiment import PRESETS, parse_value
from icml25.core.registry import load_reproduction, runnable_slugs
from icml25.core.runner import plan
from icml25.core.worker import JobOutcome, execute

CASES = [(slug, exp.name) for slug in runnable_slugs() for exp in load_reproduction(slug).experiments]

TIMING = re.compile(r"time|seconds|sec_per|latency|speedup|wall_s|peak_mb|_mem_|^(mlp_)?fom_")
"""Metrics that measure (or are derived from) wall-clock time or memory, by name."""

TIMING_DEPENDENT: dict[tuple[str, str], re.Pattern] = {
    # the prefix-sum environment is scored by measured speed, and the agents' aggregate scores include it
    ("re_bench", "harness"): re.compile(r"prefix|hill|random_search"),
}
"""Metrics of ``timed`` experiments that depend on timings although their names do not say so."""

NOT_AT_SMOKE: dict[tuple[str, str], str] = {
    ("mdgfm", "homo_beats_gcn"): "the smoke preset runs the heterophilic suite only",
    ("mdgfm", "homo_robust"): "the smoke preset runs the heterophilic suite only",
    ("mdgfm", "homo_learned"): "the smoke preset runs the heterophilic suite only",
    ("mf_lal", "top_candidates_diverse"): "the smoke budget buys MF-LAL one top-fidelity query; diversity needs two",
    ("primphormer", "acc_vs_full_attention"): "the smoke preset skips the full-attention model",
    ("resgen", "dsm_needs_t_times_d"): "the smoke preset stops at depth 2, the claim compares at depth 4",
    ("resgen", "matches_depth_sequential"): "the smoke preset stops at depth 2, the claim compares at depth 4",
    ("risingattack", "l2_vs_quadattack"): "NaN when no image is attacked successfully by both methods at smoke size",
    ("risingattack", "l2_vs_quadattack_scaled"): "NaN when no image is attacked successfully by both methods at "
                                                 "smoke size",
}

FLAKY_AT_SMOKE: dict[tuple[str, str], str] = {
    ("primphormer", "linear_memory"): "in-process smoke runs can see a peak-RSS increase of 0 (freed memory reused), "
                                      "which makes the memory ratio NaN in some runs",
}


@lru_cache(maxsize=None)
def _smoke(slug: str, name: str, attempt: int) -> JobOutcome:
    job = next(j for j in plan([slug], "smoke", 1) if j.experiment == name)
    return execute(job)


@pytest.mark.parametrize("slug, name", CASES, ids=[f"{s}/{n}" for s, n in CASES])
def test_smoke_run_is_deterministic(slug, name):
    first, second = _smoke(slug, name, 0), _smoke(slug, name, 1)
    assert first.status == "ok", first.error
    assert second.status == "ok", second.error
    exp = load_reproduction(slug).experiment(name)
    keys = sorted(first.metrics)
    assert keys == sorted(second.metrics)
    keys = [k for k in keys if not TIMING.search(k)]
    if exp.timed and (slug, name) in TIMING_DEPENDENT:
        keys = [k for k in keys if not TIMING_DEPENDENT[slug, name].search(k)]
    differ = [k for k in keys if first.metrics[k] != second.metrics[k]
              and not (_all_nan(first.metrics[k]) and _all_nan(second.metrics[k]))]
    assert not differ, f"{slug}/{name}: metrics differ between two runs of seed 0: {differ[:5]}"


def _all_nan(value) -> bool:  # noqa: ANN001
    values = value if isinstance(value, list) else [value]
    return all(isinstance(v, float) and math.isnan(v) for v in values)


CLAIM_CASES = [(slug, c.experiment, c.id, c.metric) for slug in runnable_slugs()
               for c in load_reproduction(slug).claims]


@pytest.mark.parametrize(
    "slug, name, claim, metric",
    [pytest.param(*case, marks=[pytest.mark.xfail(reason=NOT_AT_SMOKE[case[0], case[2]], strict=True)]
                  if (case[0], case[2]) in NOT_AT_SMOKE else
                  [pytest.mark.xfail(reason=FLAKY_AT_SMOKE[case[0], case[2]], strict=False)]
                  if (case[0], case[2]) in FLAKY_AT_SMOKE else []) for case in CLAIM_CASES],
    ids=[f"{s}/{c}" for s, _, c, _ in CLAIM_CASES],
)
def test_every_claim_metric_is_present_and_finite(slug, name, claim, metric):
    outcome = _smoke(slug, name, 0)
    assert outcome.status == "ok", outcome.error
    value = outcome.metrics.get(metric)
    assert isinstance(value, float), f"{slug}/{claim}: metric {metric!r} missing from the smoke run"
    assert math.isfinite(value), f"{slug}/{claim}: metric {metric!r} is {value}"


def test_not_at_smoke_lists_only_registered_claims():
    registered = {(s, c) for s, _, c, _ in CLAIM_CASES}
    assert set(NOT_AT_SMOKE) | set(FLAKY_AT_SMOKE) <= registered


def _as_text(value) -> str:  # noqa: ANN001
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list)):
        return ",".join(_as_text(v) for v in value)
    if isinstance(value, float):
        return repr(value)
    return str(value)


@pytest.mark.parametrize("slug, name", CASES, ids=[f"{s}/{n}" for s, n in CASES])
def test_config_fields_round_trip_through_set(slug, name):
    exp = load_reproduction(slug).experiment(name)
    for preset in PRESETS:
        cfg = exp.make_config(preset)
        for f in dataclasses.fields(cfg):
            value = getattr(cfg, f.name)
            parsed = parse_value(exp.config, f.name, _as_text(value))
            if isinstance(value, list):
                parsed = list(parsed)
            assert parsed == value, f"{slug}/{name} [{preset}] {f.name}: {value!r} -> {_as_text(value)!r} -> {parsed!r}"

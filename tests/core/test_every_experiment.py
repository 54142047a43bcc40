"""One battery over every experiment of every runnable paper.

For each experiment, at the ``smoke`` preset and seed 0, through the same code path
as the runner (:func:`icml25.core.worker.execute`: import, seeding, metrics check):

* two runs give identical metrics (wall-clock and memory metrics aside);
* the metric of every claim on the experiment is present and finite;
* every config field of every preset survives a round trip through ``--set`` text.

Claims whose metric is absent or NaN at the smoke scale for a documented reason are
declared by their experiment (``Experiment.not_at_smoke``, in the paper's own repro.py)
and expected to fail (strictly: an entry that starts passing must be removed).

An experiment that runs only on the paper's own data (``Experiment.data_setting``) runs on a
tiny copy of those files in their real format, written by ``tests/paper_files/``.
"""

from __future__ import annotations

import atexit
import math
import re
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

import pytest

from icml25.core.experiment import PRESETS, get_setting, parse_value
from icml25.core.registry import load_reproduction, runnable_slugs
from icml25.core.runner import plan
from icml25.core.worker import JobOutcome, execute
from paper_files import PAPER_DATA

CASES = [(slug, exp.name) for slug in runnable_slugs() for exp in load_reproduction(slug).experiments]

TIMING = re.compile(r"time|seconds|sec_per|latency|speedup|wall_s|peak_mb|_mem_|^(mlp_)?fom_")
"""Metrics that measure (or are derived from) wall-clock time or memory, by name."""

@lru_cache(maxsize=None)
def _data_settings(slug: str, name: str) -> dict[str, str]:
    """The ``--set`` values that point an experiment at its paper-data files (none for the others)."""
    if not load_reproduction(slug).experiment(name).data_setting:
        return {}
    folder = Path(tempfile.mkdtemp(prefix=f"icml25-{slug}-{name}-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return PAPER_DATA[slug, name](folder)


@lru_cache(maxsize=None)
def _smoke(slug: str, name: str, attempt: int) -> JobOutcome:
    job = next(j for j in plan([slug], "smoke", 1, _data_settings(slug, name), skipped=[]) if j.experiment == name)
    return execute(job)


DATA_CASES = [(slug, name) for slug, name in CASES if load_reproduction(slug).experiment(name).data_setting]


@pytest.mark.parametrize("slug, name", DATA_CASES, ids=[f"{s}/{n}" for s, n in DATA_CASES])
def test_a_paper_data_experiment_runs_only_with_its_data(slug, name):
    """Without its data setting the experiment is left out of the plan with its one line (its claims then read
    "not run"); with it, the experiment is planned with that setting and the stand-in experiments are unchanged."""
    from icml25.core.registry import MissingDataError

    setting = load_reproduction(slug).experiment(name).data_setting
    skipped: list = []
    without = plan([slug], "quick", 1, skipped=skipped)
    assert name not in {j.experiment for j in without}
    assert [str(e) for e in skipped if isinstance(e, MissingDataError) and e.slug == f"{slug}/{name}"] == [
        f"{slug}/{name} needs the paper's data: --set {setting}=PATH (see `icml25 show {slug}` for what PATH must "
        "hold)"]
    with_data = plan([slug], "quick", 1, _data_settings(slug, name), skipped=[])
    planned = [j for j in with_data if j.experiment == name]
    assert len(planned) == 1 and planned[0].config[setting] == _data_settings(slug, name)[setting]
    repro = load_reproduction(slug)
    assert [j.key for j in with_data if not repro.experiment(j.experiment).data_setting] == [j.key for j in without]


def test_every_paper_data_experiment_has_files_to_run_on():
    """An experiment that runs only on the paper's data is run by the batteries on a copy of its files."""
    needs = {(slug, name) for slug, name in CASES if load_reproduction(slug).experiment(name).data_setting}
    assert needs == set(PAPER_DATA)
    for slug, name in needs:
        exp = load_reproduction(slug).experiment(name)
        settings = _data_settings(slug, name)  # the data setting, and any setting the files need beside it
        assert exp.data_setting in settings and set(settings) <= set(exp.fields)
        assert Path(settings[exp.data_setting]).exists()  # a folder or a file


@pytest.mark.parametrize("slug, name", CASES, ids=[f"{s}/{n}" for s, n in CASES])
def test_smoke_run_is_deterministic(slug, name):
    first, second = _smoke(slug, name, 0), _smoke(slug, name, 1)
    assert first.status == "ok", first.error
    assert second.status == "ok", second.error
    exp = load_reproduction(slug).experiment(name)
    keys = sorted(first.metrics)
    assert keys == sorted(second.metrics)
    keys = [k for k in keys if not TIMING.search(k)]
    if exp.timed and exp.timing_metrics:  # declared on the experiment: timing-dependent under another name
        keys = [k for k in keys if not re.search(exp.timing_metrics, k)]
    differ = [k for k in keys if first.metrics[k] != second.metrics[k]
              and not (_all_nan(first.metrics[k]) and _all_nan(second.metrics[k]))]
    assert not differ, f"{slug}/{name}: metrics differ between two runs of seed 0: {differ[:5]}"


def _all_nan(value) -> bool:  # noqa: ANN001
    values = value if isinstance(value, list) else [value]
    return all(isinstance(v, float) and math.isnan(v) for v in values)


CLAIM_CASES = [(slug, c.experiment, c.id, c.metric) for slug in runnable_slugs()
               for c in load_reproduction(slug).claims]


def _smoke_marks(slug: str, name: str, metric: str) -> list:
    """An experiment declares the metrics its smoke preset lacks (strict) or may lack (not strict), with why."""
    exp = load_reproduction(slug).experiment(name)
    if metric in exp.not_at_smoke:
        return [pytest.mark.xfail(reason=exp.not_at_smoke[metric], strict=True)]
    if metric in exp.flaky_at_smoke:
        return [pytest.mark.xfail(reason=exp.flaky_at_smoke[metric], strict=False)]
    return []


@pytest.mark.parametrize(
    "slug, name, claim, metric",
    [pytest.param(*case, marks=_smoke_marks(case[0], case[1], case[3])) for case in CLAIM_CASES],
    ids=[f"{s}/{c}" for s, _, c, _ in CLAIM_CASES],
)
def test_every_claim_metric_is_present_and_finite(slug, name, claim, metric):
    outcome = _smoke(slug, name, 0)
    assert outcome.status == "ok", outcome.error
    value = outcome.metrics.get(metric)
    assert isinstance(value, float), f"{slug}/{claim}: metric {metric!r} missing from the smoke run"
    assert math.isfinite(value), f"{slug}/{claim}: metric {metric!r} is {value}"


def test_not_at_smoke_lists_only_claimed_metrics():
    claimed = {(s, e, m) for s, e, _, m in CLAIM_CASES}
    for slug in runnable_slugs():
        for exp in load_reproduction(slug).experiments:
            for metric in {**exp.not_at_smoke, **exp.flaky_at_smoke}:
                assert (slug, exp.name, metric) in claimed, f"{slug}/{exp.name}: {metric} is no claim's metric"


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
        for key in exp.fields:  # every setting, a nested method config's as outer.inner
            value = get_setting(cfg, key)
            parsed = parse_value(exp.config, key, _as_text(value))
            if isinstance(value, list):
                parsed = list(parsed)
            assert parsed == value, f"{slug}/{name} [{preset}] {key}: {value!r} -> {_as_text(value)!r} -> {parsed!r}"

"""Adaptive seeds in the runner, the code fingerprint, progress reports and docs/RESULTS.md."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import icml25.core.runner as runner
from icml25.core.registry import load_reproduction, runnable_slugs
from icml25.core.report import collect, record_verdicts, results_json, results_markdown
from icml25.core.runner import plan, run_adaptive, run_jobs, schedules
from icml25.core.sequential import looks
from icml25.core.store import JobRecord, Store

ROOT = Path(__file__).resolve().parents[2]


def _fake_run_jobs(draw):  # noqa: ANN001
    """A stand-in for run_jobs that stores ``draw(job)`` as the job's metrics, in this process."""
    calls = []

    def fake(jobs, store, **kwargs):  # noqa: ANN001
        jobs = list(jobs)
        calls.append(sorted((j.experiment, j.seed) for j in jobs))
        for job in jobs:
            store.put(JobRecord(job.key, job.preset, job.config, "ok", draw(job), None, 0.1, 1.0, {}, "fake",
                                time.time()))
        return jobs, []
    return fake, calls


def test_undecided_experiments_grow_look_by_look_and_decided_ones_stop(monkeypatch, tmp_path):
    jobs = plan(["pas"], "smoke", 2, skipped=[])  # two experiments: synthetic and digits (paper_data_*: no files)
    rng = np.random.default_rng(0)
    noise = rng.standard_normal(100)

    def draw(job):  # noqa: ANN001
        # synthetic: every claim clearly passes; digits: its one claim stays at the threshold (pure noise)
        if job.experiment == "synthetic":
            return {"good_pas_minus_best_baseline": -1.0 - 0.01 * job.seed, "good_pas_over_prediction": 0.5,
                    "bad_pas_minus_best_baseline": -1.0, "bad_pas_over_prediction": 0.1 + 0.001 * job.seed}
        return {"pas_minus_best_baseline": float(noise[job.seed])}

    fake, calls = _fake_run_jobs(draw)
    monkeypatch.setattr(runner, "run_jobs", fake)
    with Store(tmp_path) as store:
        run = run_adaptive(jobs, store, max_seeds=12)
        assert run.rounds == len(looks(2, 12))
        grown = sorted({j.seed for j in run.jobs if j.experiment == "digits"})
        assert grown == list(range(12))
        assert sorted(j.seed for j in run.jobs if j.experiment == "synthetic") == [0, 1]
        # each round adds exactly the seeds up to the next look
        assert [len(c) for c in calls] == [4] + [b - a for a, b in zip(looks(2, 12), looks(2, 12)[1:])]
        results = collect(store, run.jobs, run.schedules)
        verdicts = {c.claim.id: c.decision for r in results for c in r.claims}
        assert verdicts["digits_pas_best"].n == 12
        good = verdicts["good_pas_best"]  # a paper-scale claim at smoke: read, not tested
        assert (good.verdict, good.reading, good.n) == ("NOT_TESTED", "PASS", 2) and good.reason.startswith("scale:")


def test_smoke_does_not_grow_by_default_and_max_seeds_is_checked(monkeypatch, tmp_path):
    jobs = plan(["pas"], "smoke", 2, skipped=[])
    assert set(schedules(jobs).values()) == {(2,)}
    quick = plan(["pas"], "quick", skipped=[])
    assert set(schedules(quick).values()) == {looks(5, runner.DEFAULT_MAX_SEEDS["quick"])}
    with pytest.raises(runner.ConfigError, match="--max-seeds"):
        schedules(jobs, 0)
    fake, calls = _fake_run_jobs(lambda job: {})
    monkeypatch.setattr(runner, "run_jobs", fake)
    with Store(tmp_path) as store:
        run = run_adaptive(jobs, store)
    assert run.rounds == 1 and len(run.jobs) == len(jobs)


def test_a_repeated_slug_plans_each_job_once():
    once, thrice = plan(["pas"], "smoke", 3, skipped=[]), plan(["pas", "pas", "pas"], "smoke", 3, skipped=[])
    assert [j.key for j in once] == [j.key for j in thrice]


def test_failed_or_every_seed_experiments_do_not_grow(monkeypatch, tmp_path):
    jobs = plan(["sparse_glm_bnb"], "smoke", 2)  # certification: every_seed claims only

    def draw(job):  # noqa: ANN001
        return {"syn_certified_matches_bruteforce": 1.0, "bc_certified_matches_bruteforce": 1.0}

    fake, calls = _fake_run_jobs(draw)
    monkeypatch.setattr(runner, "run_jobs", fake)
    with Store(tmp_path) as store:
        run = run_adaptive([j for j in jobs if j.experiment == "certification"], store, max_seeds=10)
    assert run.rounds == 1 and len(run.jobs) == 2


def _copy_package(tmp_path: Path) -> Path:
    dst = tmp_path / "icml25"
    shutil.copytree(ROOT / "src" / "icml25", dst, ignore=shutil.ignore_patterns("__pycache__"))
    return dst


def test_fingerprint_ignores_other_papers_metadata_report_and_cli(monkeypatch, tmp_path):
    root = _copy_package(tmp_path)
    monkeypatch.setattr(runner, "PACKAGE_ROOT", root)
    runner.fingerprint_files.cache_clear()

    def fp(slug: str) -> str:
        runner.fingerprint_files.cache_clear()
        return runner.code_fingerprint(slug)

    before = {s: fp(s) for s in ("pas", "r1vi", "mdgfm")}
    for rel in ("papers/r1vi/r1vi.py",
                "papers/pas/paper.toml", "core/report.py", "cli.py", "core/registry.py", "core/paper.py",
                "core/sequential.py", "core/plots.py"):
        with (root / rel).open("a") as fh:
            fh.write("\n# edited\n")
    assert fp("pas") == before["pas"]  # its metadata, another paper, report, CLI, claims: not its results
    assert fp("mdgfm") == before["mdgfm"]
    assert fp("r1vi") != before["r1vi"]  # its own method changed

    # a common/ module changes exactly the papers that import it
    (root / "common" / "graphs.py").write_text((root / "common" / "graphs.py").read_text() + "\n# edited\n")
    assert fp("mdgfm") != before["mdgfm"] and fp("pas") == before["pas"]
    # the job-running core changes every paper
    (root / "core" / "worker.py").write_text((root / "core" / "worker.py").read_text() + "\n# edited\n")
    assert fp("pas") != before["pas"]
    runner.fingerprint_files.cache_clear()


def test_fingerprint_follows_imports_of_common_modules():
    files = {str(p.relative_to(runner.PACKAGE_ROOT)) for p in runner.fingerprint_files("mdgfm")}
    assert "common/graphs.py" in files and "core/worker.py" in files
    assert not any(f.startswith(("core/report", "core/registry", "cli")) for f in files)
    assert not any(f.startswith("papers/") and not f.startswith("papers/mdgfm/") for f in files)


def test_progress_reports_reach_the_parent(tmp_path):
    jobs = [j for j in plan(["sparse_glm_bnb"], "smoke", 1) if j.experiment == "certification"]
    seen = []
    with Store(tmp_path) as store:
        run_jobs(jobs, store, on_progress=lambda key, fraction: seen.append((key, fraction)))
    assert seen and all(0.0 <= f <= 1.0 for _, f in seen)
    assert (jobs[0].key, 1.0) in seen  # the final report is never throttled away


def test_results_markdown_lists_exactly_the_registered_claims(tmp_path):
    with Store(tmp_path) as store:
        jobs = [j for j in plan(["sparse_glm_bnb"], "smoke", 2) if j.experiment == "certification"]
        fake, _ = _fake_run_jobs(lambda job: {"syn_certified_matches_bruteforce": 1.0,
                                              "bc_certified_matches_bruteforce": 0.0})
        fake(jobs, store)
        record_verdicts(store, collect(store, jobs))
        text = results_markdown(store, "smoke")
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    listed = [row.split("`")[1] for row in rows]
    registered = [c.id for s in runnable_slugs() for c in load_reproduction(s).claims]
    assert sorted(listed) == sorted(registered) and len(listed) == len(set(listed)) + (len(registered)
                                                                                       - len(set(registered)))
    assert "| `certify_synthetic` |" in text and "**PASS**" in text and "**FAIL**" in text
    with Store(tmp_path) as store:
        data = results_json(store, "smoke")
    assert sum(r["verdict"] is None for r in data["claims"]) == len(registered) - 2


def test_results_command_writes_the_file(tmp_path):
    out = tmp_path / "docs" / "RESULTS.md"
    proc = subprocess.run([sys.executable, "-m", "icml25.cli", "results", "--markdown", "--out", str(out)],
                          capture_output=True, text=True, cwd=tmp_path, env={"ICML25_HOME": str(tmp_path / "h"),
                                                                             "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    n_claims = sum(len(load_reproduction(s).claims) for s in runnable_slugs())
    assert text.startswith("# Results at the `quick` preset")
    assert f"({n_claims} claims)" in text and sum(line.startswith("| `") and line.endswith("| not run |")
                                                       for line in text.splitlines()) == n_claims  # an empty store


def test_results_json_writes_every_registered_claim_as_a_record(tmp_path):
    with Store(tmp_path / "h") as store:
        jobs = [j for j in plan(["sparse_glm_bnb"], "smoke", 2) if j.experiment == "certification"]
        fake, _ = _fake_run_jobs(lambda job: {"syn_certified_matches_bruteforce": 1.0,
                                              "bc_certified_matches_bruteforce": 1.0})
        fake(jobs, store)
        record_verdicts(store, collect(store, jobs))
    out = tmp_path / "docs" / "results" / "smoke.json"
    proc = subprocess.run([sys.executable, "-m", "icml25.cli", "results", "--json", "--preset", "smoke", "--out",
                           str(out)], capture_output=True, text=True, cwd=tmp_path,
                          env={"ICML25_HOME": str(tmp_path / "h"), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    keys = {"slug", "id", "kind", "source", "fair_at", "experiment", "fidelity", "verdict", "reason", "mean", "lo",
            "hi", "seeds"}
    assert all(keys <= set(r) for r in data["claims"])
    registered = {(s, c.id) for s in runnable_slugs() for c in load_reproduction(s).claims}
    assert {(r["slug"], r["id"]) for r in data["claims"]} == registered
    decided = [r for r in data["claims"] if r["verdict"] is not None]
    assert {r["id"] for r in decided} == {"certify_synthetic", "certify_bc"} or len(decided) == 2
    assert all(r["seeds"] == 2 and r["code_fingerprint"] and r["fidelity"] for r in decided)
    # usage errors: one line, exit 2
    both = subprocess.run([sys.executable, "-m", "icml25.cli", "results", "--json", "--markdown"],
                          capture_output=True, text=True, cwd=tmp_path,
                          env={"ICML25_HOME": str(tmp_path / "h"), "PATH": "/usr/bin:/bin"})
    assert both.returncode == 2 and both.stderr.count("\n") == 1

"""The `reproduce` pipeline end to end: store, resume after kill -9, failures, bad input, Ray, reports, CLI."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from icml25.core.experiment import ConfigError
from icml25.core.registry import load_reproduction
from icml25.core.runner import plan, run_jobs
from icml25.core.store import Store

ROOT = Path(__file__).resolve().parents[2]
FAST = ["--preset", "smoke", "--set", "replicates=2"]


def icml25(*args: str, home: Path, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "ICML25_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "icml25.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def ok_rows(home: Path) -> int:
    path = home / "results.sqlite"
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(path, timeout=5) as db:
            return db.execute("SELECT COUNT(*) FROM jobs WHERE status='ok'").fetchone()[0]
    except sqlite3.OperationalError:  # the table is not created yet
        return 0


def test_second_run_computes_nothing_and_force_recomputes(tmp_path):
    home = tmp_path / "store"
    first = icml25("reproduce", "pas", *FAST, "--jobs", "2", home=home, cwd=tmp_path)
    assert first.returncode in (0, 1), first.stderr
    assert "reused" not in first.stderr
    jobs = plan(["pas"], "smoke", None, {"replicates": "2"}, skipped=[])
    with Store(home) as store:
        assert store.finished(j.key for j in jobs) == {j.key for j in jobs}
        stamps = {r.key: r.finished_at for r in store.records()}
        assert all(r.peak_mem_mb > 10 and r.wall_s > 0 and r.libraries["numpy"] for r in store.records())
    second = icml25("reproduce", "pas", *FAST, home=home, cwd=tmp_path)
    assert f"{len(jobs)} of {len(jobs)} jobs reused" in second.stderr
    assert second.returncode == first.returncode
    with Store(home) as store:
        assert {r.key: r.finished_at for r in store.records()} == stamps
        ran, reused = run_jobs(jobs[:1], store, force=True)
        assert (len(ran), len(reused)) == (1, 0)
        assert store.get(jobs[0].key).finished_at > stamps[jobs[0].key]

    # reports: every paper in the index, metrics and figures for pas
    index = (tmp_path / "reports" / "index.html").read_text()
    assert index.count("<tr>") == 38  # header + 37 papers
    payload = json.loads((tmp_path / "reports" / "pas" / "metrics.json").read_text())
    assert {c["verdict"] for c in payload["claims"]} <= {"PASS", "FAIL", "TIE", "INCONCLUSIVE", "NOT_TESTED"}
    assert all(c["kind"] in ("paper", "ours", "check") and c["fidelity"] for c in payload["claims"])
    ran = {j.experiment for j in jobs}  # the paper_data_* experiments were skipped (no files given)
    assert len(payload["claims"]) == len([c for c in load_reproduction("pas").claims if c.experiment in ran])
    assert (tmp_path / "reports" / "pas" / "synthetic_mse.png").stat().st_size > 5000
    listing = icml25("list", home=home, cwd=tmp_path)
    assert listing.returncode == 0 and "pas" in listing.stdout
    # every job finished: exit 0 whatever the verdicts; --strict turns a FAIL claim into exit 1
    assert first.returncode == 0
    n_fail = sum(c["verdict"] == "FAIL" for c in payload["claims"])
    strict = icml25("reproduce", "pas", *FAST, "--strict", home=home, cwd=tmp_path)
    assert strict.returncode == (1 if n_fail else 0)
    assert "Paper claims at paper fidelity:" in first.stdout and "index:" in first.stdout  # the summary line and the index path


def test_resume_after_kill_9(tmp_path):
    home = tmp_path / "store"
    args = ["reproduce", "pas", "--preset", "smoke", "--seeds", "4", "--jobs", "1", "--set", "replicates=25"]
    env = {**os.environ, "ICML25_HOME": str(home)}
    proc = subprocess.Popen([sys.executable, "-m", "icml25.cli", *args], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 120
    while ok_rows(home) < 2 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    jobs = plan(["pas"], "smoke", 4, {"replicates": "25"}, skipped=[])
    with Store(home) as store:
        assert store.integrity_ok()
        before = {r.key: r.finished_at for r in store.records() if r.status == "ok"}
        assert 2 <= len(before) < len(jobs), "the sweep should have been killed midway"
        ran, reused = run_jobs(jobs, store, n_jobs=2)
        assert {j.key for j in reused} == set(before)
        assert len(ran) == len(jobs) - len(before)
        after = {r.key: r.finished_at for r in store.records()}
        assert all(after[k] == t for k, t in before.items())
        assert store.finished(j.key for j in jobs) == {j.key for j in jobs}


def test_failing_job_is_recorded_and_others_go_on(tmp_path):
    home = tmp_path / "store"
    # 1000 labelled points per cluster is impossible: every digits job raises, synthetic jobs are unaffected
    out = icml25("reproduce", "pas", *FAST, "--set", "n_labelled=1000", home=home, cwd=tmp_path)
    assert out.returncode == 1
    assert "job failed" in out.stderr and "pas/digits" in out.stderr
    with Store(home) as store:
        records = store.records()
    failed = [r for r in records if r.status == "failed"]
    assert {r.key.experiment for r in failed} == {"digits"} and len(failed) == 2
    assert all("Traceback" in r.error and "ValueError" in r.error for r in failed)
    assert sum(r.status == "ok" for r in records) == 2


@pytest.mark.parametrize(
    "args, message",
    [
        (["reproduce", "nosuchpaper"], "unknown paper 'nosuchpaper'; valid: alphaqcm"),
        (["reproduce", "pas", "--preset", "huge"], "unknown preset 'huge'; valid: smoke, quick, full"),
        (["reproduce", "pas", "--set", "bogus=1"], "unknown setting 'bogus'; valid:"),
        (["reproduce", "pas", "--set", "replicates=many"], "setting 'replicates' takes an int, got 'many'"),
        (["reproduce", "pas", "--set", "replicates"], "--set takes key=value"),
        (["reproduce", "pas", "--backend", "spark"], "unknown backend 'spark'; valid: local, ray"),
        (["reproduce", "pas", "--seeds", "0"], "--seeds must be between 1 and"),
        (["reproduce", "pas", "--seeds", "100000000"], "--seeds must be between 1 and 1000"),
        (["reproduce", "pas", "--max-seeds", "0"], "--max-seeds must be between 1 and"),
        (["reproduce", "pas", "pas", "--max-seeds", "5000"], "--max-seeds must be between 1 and 1000"),
        (["reproduce", "genai_regulation"], "is not-a-system: nothing to reproduce"),
        (["show", "nosuchpaper"], "unknown paper 'nosuchpaper'"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, args, message):
    home = tmp_path / "store"
    out = icml25(*args, home=home, cwd=tmp_path)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], out.stderr
    assert not home.exists() and not (tmp_path / "reports").exists()


def test_plan_validates_before_anything_runs():
    with pytest.raises(ConfigError, match="valid: smoke, quick, full"):
        plan(["pas"], "medium", skipped=[])
    jobs = plan(["pas"], "smoke", 3, {"replicates": "2"}, skipped=[])
    assert len(jobs) == 6 and {j.seed for j in jobs} == {0, 1, 2}
    assert all(j.config["replicates"] == 2 for j in jobs)
    assert len({j.config_hash for j in jobs}) == 2  # one config per experiment


def test_ray_backend_gives_the_same_metrics(tmp_path):
    pytest.importorskip("ray")
    jobs = [j for j in plan(["pas"], "smoke", 2, {"replicates": "2"}, skipped=[]) if j.experiment == "synthetic"]
    with Store(tmp_path / "local") as local, Store(tmp_path / "ray") as remote:
        run_jobs(jobs, local, n_jobs=2, backend="local")
        run_jobs(jobs, remote, n_jobs=2, backend="ray")
        for job in jobs:
            a, b = local.get(job.key), remote.get(job.key)
            assert a.status == b.status == "ok"
            assert a.metrics == b.metrics
            assert b.backend == "ray"


def test_readme_paper_table_is_current():
    from icml25.cli import markdown_table

    readme = (ROOT / "README.md").read_text()
    start, end = "<!-- papers:start -->\n", "<!-- papers:end -->"
    assert start in readme and end in readme
    block = readme.split(start, 1)[1].split(end, 1)[0]
    assert block == markdown_table(), "README paper table is stale: run `icml25 list --markdown` and paste it"


def test_list_and_show(tmp_path):
    out = icml25("list", home=tmp_path / "s", cwd=tmp_path)
    assert out.returncode == 0 and "37 ICML 2025 papers" in out.stdout
    assert all(slug in out.stdout for slug in ("pas", "r1vi", "genai_regulation", "vlgpo"))
    show = icml25("show", "pas", home=tmp_path / "s", cwd=tmp_path)
    assert show.returncode == 0
    assert "pas_mean_pointestimate" in show.stdout and "good_pas_best" in show.stdout
    md = icml25("list", "--markdown", home=tmp_path / "s", cwd=tmp_path)
    assert md.stdout.count("\n| `") == 37


def test_timed_experiments_run_alone_after_the_others(monkeypatch, tmp_path):
    """Jobs of an experiment marked ``timed`` go last, one at a time; the rest share the workers."""
    import icml25.core.runner as runner

    batches = []
    monkeypatch.setattr(runner, "_run_local", lambda jobs, width, record, **kw: batches.append(
        ([j.experiment for j in jobs], width)))
    jobs = plan(["sparse_glm_bnb"], "smoke", 2)
    with Store(tmp_path) as store:
        run_jobs(jobs, store, n_jobs=2)
    assert batches == [(["certification", "certification"], 2), (["relaxation", "relaxation"], 1)]

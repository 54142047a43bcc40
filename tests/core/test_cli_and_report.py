"""Machine-readable CLI output and what the reports show (escaping, failed runs, stale figures)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from icml25.core import report as rep
from icml25.core.paper import Claim
from icml25.core.registry import load_reproduction
from icml25.core.runner import plan
from icml25.core.store import JobRecord, Store


def icml25(*args: str, home: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "ICML25_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "icml25.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def test_list_and_show_as_json(tmp_path):
    listing = icml25("list", "--json", home=tmp_path / "h", cwd=tmp_path)
    assert listing.returncode == 0, listing.stderr
    rows = json.loads(listing.stdout)
    assert len(rows) == 37 and {"slug", "title", "status", "method", "reproduction", "kind", "paper_claims",
                                 "paper_claims_tested_at_paper_fidelity", "latest_verdicts"} <= set(rows[0])
    shown = icml25("show", "pas", "--json", home=tmp_path / "h", cwd=tmp_path)
    payload = json.loads(shown.stdout)
    assert payload["slug"] == "pas" and payload["claims"] and payload["experiments"]
    exp = payload["experiments"][0]
    names = {f["name"] for f in exp["fields"]}
    assert {"m", "n"} <= names and "device" not in names  # pas runs NumPy only: no device
    assert set(exp["presets"]) == {"smoke", "quick", "full"}
    assert all({"type", "default"} <= set(f) for f in exp["fields"])
    assert {c["aggregate"] for c in payload["claims"]} <= {"mean", "every_seed"}


def test_show_example_is_the_unwrapped_api_example(tmp_path):
    out = icml25("show", "pas", "--example", home=tmp_path / "h", cwd=tmp_path)
    assert out.returncode == 0
    assert out.stdout.strip() == load_reproduction("pas").api_example
    compile(out.stdout, "<example>", "exec")  # copy-safe: valid Python as printed
    planned = icml25("show", "genai_regulation", "--example", home=tmp_path / "h", cwd=tmp_path)
    assert planned.returncode == 2 and planned.stderr.count("\n") == 1


def _result(store: Store, tmp_path: Path, fail_seed: int | None = None, statement: str = "s") -> rep.PaperResult:
    jobs = [j for j in plan(["sparse_glm_bnb"], "smoke", 2) if j.experiment == "certification"]
    for job in jobs:
        ok = job.seed != fail_seed
        store.put(JobRecord(job.key, job.preset, job.config, "ok" if ok else "failed",
                            {"syn_certified_matches_bruteforce": 1.0, "bc_certified_matches_bruteforce": 1.0}
                            if ok else None, None if ok else "Traceback\nValueError: boom", 0.5, 50.0,
                            {"numpy": "x"}, "fake", time.time()))
    results = rep.collect(store, jobs)
    res = results[0]
    if statement != "s":  # a claim whose text needs escaping
        bad = Claim("evil", statement=statement, paper_value="<b>paper</b>", experiment="certification", metric="syn_certified_matches_bruteforce", op=">=", threshold=1.0,
                    aggregate="every_seed", kind="check")
        res.claims.append(rep.ClaimResult(bad, bad.assess([1.0, 1.0])))
    return res


def test_report_escapes_all_text(tmp_path):
    with Store(tmp_path / "h") as store:
        res = _result(store, tmp_path, statement="<script>alert(1)</script>")
        out = rep.write_paper_report(res, tmp_path / "reports")
        rep.record_verdicts(store, [res])
        index = rep.write_index(store, tmp_path / "reports").read_text()
    page = (out / "report.html").read_text()
    assert "<script>" not in page and "&lt;script&gt;" in page and "<b>paper</b>" not in page
    assert "evil: PASS" in index and "paper claims tested at paper fidelity" in index  # named badges, totals
    # the run is shown: preset, seeds, fingerprint, versions, wall time and peak memory
    assert "smoke" in page and "code fingerprint" in page and "numpy x" in page and "50 MB" in page
    assert "metrics.json" in page and "report.md" in page


def test_failed_run_keeps_the_last_good_report_and_stale_figures_go(tmp_path):
    reports = tmp_path / "reports"
    with Store(tmp_path / "h") as store:
        good = _result(store, tmp_path)
        out = rep.write_paper_report(good, reports)
        before = json.loads((out / "metrics.json").read_text())
        (out / "stale_figure.png").write_bytes(b"png")
        bad = _result(store, tmp_path, fail_seed=1)
        assert bad.n_failed_jobs == 1
        rep.write_paper_report(bad, reports)
    assert json.loads((out / "metrics.json").read_text()) == before  # the good results are kept
    failure = json.loads((out / "failed.json").read_text())
    assert failure["failed_jobs"] == 1
    page, md = (out / "report.html").read_text(), (out / "report.md").read_text()
    assert "failed job" in page and "last good run" in page and "ValueError: boom" in page
    assert "last good run" in md
    with Store(tmp_path / "h2") as store:  # the next good run replaces it, and drops figures it did not draw
        rep.write_paper_report(_result(store, tmp_path), reports)
    assert not (out / "failed.json").exists() and not (out / "stale_figure.png").exists()


def test_claims_table_prints_brackets_as_text():
    """Rich markup must not eat bracketed text such as an extra's name (``icml25[tables]``)."""
    from types import SimpleNamespace

    from rich.console import Console

    from icml25.core.paper import Decision
    from icml25.core.report import claims_table

    decision = Decision(verdict="PASS", n=3, mean=1.0, lo=0.5, hi=1.5, level=0.95, reason="ok")
    claim = SimpleNamespace(id="c1", paper_value="[bold]12%[/] of [tables]", check_text="needs icml25[tables]",
                            kind="ours")
    res = SimpleNamespace(paper=SimpleNamespace(slug="pas"), n_failed_jobs=0,
                          claims=[SimpleNamespace(claim=claim, decision=decision, group="ours", fidelity="reduced")])
    console = Console(record=True, width=200)
    console.print(claims_table([res]))
    text = console.export_text()
    assert "[bold]12%[/] of [tables]" in text and "icml25[tables]" in text and "PASS" in text


def test_an_interrupted_report_write_leaves_the_last_report_whole(tmp_path, monkeypatch):
    """Issue 28: reports are written into a temporary folder and moved into place."""
    reports = tmp_path / "reports"
    with Store(tmp_path / "h") as store:
        good = _result(store, tmp_path)
        out = rep.write_paper_report(good, reports)
        before = {p.name: p.read_bytes() for p in out.iterdir()}

        def interrupted(*args, **kwargs):  # noqa: ANN002, ANN003
            raise KeyboardInterrupt("SIGTERM")

        monkeypatch.setattr(rep, "_write_pages", interrupted)
        with pytest.raises(KeyboardInterrupt):
            rep.write_paper_report(_result(store, tmp_path), reports)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # untouched, not emptied
    assert sorted(p.name for p in reports.iterdir()) == [out.name]  # no temporary folder left behind


def test_reports_and_store_ignore_the_umask(tmp_path):
    """Issue 28: under umask 000 the store and the reports are still 0o644 files in 0o755 folders."""
    home, reports = tmp_path / "h", tmp_path / "reports"
    env = {**os.environ, "ICML25_HOME": str(home)}
    proc = subprocess.run(["sh", "-c", f"umask 000 && exec {sys.executable} -m icml25.cli reproduce r1vi --preset "
                           f"smoke --seeds 1 --jobs 1 --reports {reports}"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    for path in [home, reports, *reports.rglob("*"), *home.glob("results.sqlite*")]:
        mode = path.stat().st_mode & 0o777
        assert mode == (0o755 if path.is_dir() else 0o644), (path, oct(mode))


def test_ray_options_fail_fast_with_one_line(tmp_path):
    """Issue 28: an unreachable cluster fails with one line before the store; a Ray option without Ray is an error."""
    home = tmp_path / "h"
    out = icml25("reproduce", "pas", "--preset", "smoke", "--backend", "ray", "--ray-address", "127.0.0.1:1",
                 home=home, cwd=tmp_path)
    if "needs Ray" in out.stderr:
        pytest.skip("Ray is not installed")
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert "cannot reach the Ray cluster" in out.stderr and not home.exists()
    local = icml25("reproduce", "pas", "--preset", "smoke", "--ray-address", "127.0.0.1:6379", home=home, cwd=tmp_path)
    assert local.returncode == 2 and "--backend ray" in local.stderr and local.stderr.count("\n") == 1


def test_the_ray_address_check_is_bounded_in_time(monkeypatch):
    """The connection attempt has a deadline well under the issue's 30 s (no wall-clock race in the test)."""
    import socket

    from icml25.cli import RAY_CONNECT_TIMEOUT_S, check_ray_address
    from icml25.core.experiment import ConfigError

    seen = []

    def fake(address, timeout=None):  # noqa: ANN001
        seen.append((address, timeout))
        raise TimeoutError("timed out")

    monkeypatch.setattr(socket, "create_connection", fake)
    with pytest.raises(ConfigError, match="cannot reach the Ray cluster at ray://10.9.8.7:10001"):
        check_ray_address("ray://10.9.8.7:10001")
    assert seen == [(("10.9.8.7", 10001), RAY_CONNECT_TIMEOUT_S)] and RAY_CONNECT_TIMEOUT_S <= 10
    with pytest.raises(ConfigError, match="host:port"):
        check_ray_address("no-port")
    check_ray_address("auto")  # left to Ray


@pytest.mark.parametrize("args", [["reproduce", "pas", "--seeds", "abc"], ["reproduce", "--no-such-flag"],
                                  ["no-such-command"], ["results", "--preset"]])
def test_usage_errors_are_one_line(tmp_path, args):
    out = icml25(*args, home=tmp_path / "h", cwd=tmp_path)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and out.stderr.startswith("error: "), out.stderr
    assert "--help" in out.stderr

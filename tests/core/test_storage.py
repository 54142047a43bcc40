"""Storage faults: one line and exit status 3 before any job runs, integrity checks, read-only commands."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from icml25.core.runner import plan
from icml25.core.store import JobRecord, Store, StoreError

FAST = ["--preset", "smoke", "--set", "replicates=2"]


def icml25(*args: str, home: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "ICML25_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "icml25.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def _fill(home: Path, n_seeds: int = 30) -> Path:
    with Store(home) as store:
        for job in plan(["pas"], "smoke", n_seeds):
            store.put(JobRecord(job.key, job.preset, job.config, "ok", {"x": 1.0}, None, 0.1, 1.0, {}, "t",
                                time.time()))
    return home / "results.sqlite"


def _one_line_exit_3(out: subprocess.CompletedProcess, *needles: str) -> None:
    assert out.returncode == 3, (out.returncode, out.stderr)
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr, out.stderr
    for needle in needles:
        assert needle in out.stderr, out.stderr


def test_home_that_is_a_file(tmp_path):
    home = tmp_path / "home"
    home.write_text("not a folder")
    out = icml25("reproduce", "pas", *FAST, home=home, cwd=tmp_path)
    _one_line_exit_3(out, str(home), "ICML25_HOME")
    with pytest.raises(StoreError, match="is a file"):
        Store(home)


def test_reports_that_is_a_file_fails_before_any_job_runs(tmp_path):
    (tmp_path / "reports.txt").write_text("x")
    home = tmp_path / "h"
    out = icml25("reproduce", "pas", *FAST, "--reports", str(tmp_path / "reports.txt"), home=home, cwd=tmp_path)
    _one_line_exit_3(out, "reports.txt", "--reports")
    assert not (home / "results.sqlite").exists()  # nothing ran, nothing was written


def test_corrupt_store_is_never_reused_silently(tmp_path):
    home = tmp_path / "h"
    path = _fill(home)
    with path.open("r+b") as fh:  # garbage on the last page
        fh.seek(path.stat().st_size - 4096)
        fh.write(os.urandom(4096))
    for args in (["reproduce", "pas", *FAST], ["list"], ["report", "--reports", str(tmp_path / "r")]):
        _one_line_exit_3(icml25(*args, home=home, cwd=tmp_path), str(path), "--rebuild-store", "move it aside")
    out = icml25("reproduce", "pas", *FAST, "--rebuild-store", home=home, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert len(list(home.glob("results.sqlite.corrupt-*"))) == 1
    with Store(home) as store:
        assert store.integrity_ok() and len(store.records()) == 4


def test_not_a_database(tmp_path):
    home = tmp_path / "h"
    home.mkdir()
    (home / "results.sqlite").write_bytes(b"garbage" * 500)
    with pytest.raises(StoreError, match="file is not a database"):
        Store(home)
    with pytest.raises(StoreError, match="--rebuild-store"):
        Store(home, readonly=True)


def test_read_only_commands_do_not_write(tmp_path):
    home = tmp_path / "h"
    path = _fill(home, 2)
    before = path.stat().st_mtime_ns  # (SQLite may add its -wal/-shm side files to read a WAL database)
    assert icml25("list", home=home, cwd=tmp_path).returncode == 0
    assert icml25("list", "--json", home=home, cwd=tmp_path).returncode == 0
    assert icml25("results", home=home, cwd=tmp_path).returncode == 0
    assert path.stat().st_mtime_ns == before
    with Store(home, readonly=True) as store:
        assert len(store.records()) == 4
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            store.put_verdicts("pas", "smoke", [{"claim": "c", "verdict": "PASS", "mean": 1.0, "lo": 1.0,
                                                 "hi": 1.0, "n": 1}])
    # a missing store reads as empty, and is not created
    with Store(tmp_path / "none", readonly=True) as store:
        assert store.verdicts() == {} and store.records() == []
    assert not (tmp_path / "none").exists()

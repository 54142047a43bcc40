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
        for job in plan(["pas"], "smoke", n_seeds, skipped=[]):
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


# -- issue 28: damaged rows, the lease race, a read-only store with an unmerged WAL, free space, --json --------

def _one_row(home: Path) -> tuple:
    # the job that `reproduce pas *FAST --seeds 1` plans
    job = plan(["pas"], "smoke", 1, {"replicates": "2"}, skipped=[])[0]
    with Store(home) as store:
        store.put(JobRecord(job.key, job.preset, job.config, "ok", {"good_pas_minus_best_baseline": -1.0}, None, 0.1,
                            1.0, {}, "t", time.time()))
    return job, home / "results.sqlite"


@pytest.mark.parametrize("damage", ["edited", "no_metrics", "not_json"])
def test_a_damaged_row_is_exit_3_with_one_line_never_reused(tmp_path, damage):
    home = tmp_path / "h"
    job, path = _one_row(home)
    sql = {"edited": "UPDATE jobs SET metrics='{\"good_pas_minus_best_baseline\": 5.0}'",
           "no_metrics": "UPDATE jobs SET metrics=NULL",
           "not_json": "UPDATE jobs SET metrics='{not json'"}[damage]
    with sqlite3.connect(path) as db:
        db.execute(sql)
    with Store(home) as store, pytest.raises(StoreError, match="damaged row"):
        store.finished([job.key])
    out = icml25("reproduce", "pas", *FAST, "--seeds", "1", home=home, cwd=tmp_path)
    _one_line_exit_3(out, "damaged row", "--rebuild-store")
    rebuilt = icml25("reproduce", "pas", *FAST, "--seeds", "1", "--rebuild-store", home=home, cwd=tmp_path)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert len(list(home.glob("results.sqlite.corrupt-*"))) == 1


def test_a_row_without_checksum_is_recomputed_not_reused(tmp_path):
    home = tmp_path / "h"
    job, path = _one_row(home)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE jobs SET metrics_sha=NULL")  # as written before checksums existed
    with Store(home) as store:
        assert store.finished([job.key]) == set()
        assert store.get(job.key).verified is False


def test_a_lease_is_never_taken_on_a_job_that_finished_meanwhile(tmp_path):
    """The scripted interleaving of the probe: run B sees the job unfinished, run A stores it, B leases."""
    home = tmp_path / "h"
    job = plan(["pas"], "smoke", 1, skipped=[])[0]
    with Store(home) as a, Store(home) as b:
        assert b.finished([job.key]) == set()  # B: not finished yet
        a.put(JobRecord(job.key, job.preset, job.config, "ok", {"x": 1.0}, None, 0.1, 1.0, {}, "t", time.time()))
        a.release([job.key], "A")
        assert b.acquire([job.key], "B", 60.0) == set()  # B must not compute it again


def test_a_read_only_store_with_unmerged_changes_is_refused(tmp_path):
    home = tmp_path / "h"
    _fill(home, n_seeds=2)
    keep = sqlite3.connect(home / "results.sqlite")  # a writer that keeps the WAL from being checkpointed
    keep.execute("PRAGMA wal_autocheckpoint=0")
    keep.execute("INSERT INTO decisions VALUES ('pas','x','quick','PASS',0,0,0,1,'{}',0)")
    keep.commit()
    wal = home / "results.sqlite-wal"
    assert wal.stat().st_size > 0
    (home / "results.sqlite-shm").unlink(missing_ok=True)
    os.chmod(home, 0o555)
    try:
        if os.access(home, os.W_OK):
            pytest.skip("running as a user who can write any folder (root): a read-only folder cannot be made")
        with pytest.raises(StoreError, match="not yet merged"):
            Store(home, readonly=True)
    finally:
        os.chmod(home, 0o755)
        keep.close()


def test_free_space_and_the_json_path_are_checked_before_anything_is_created(tmp_path, monkeypatch):
    from click.testing import CliRunner

    import icml25.cli as cli

    home, reports = tmp_path / "h", tmp_path / "reports"
    monkeypatch.setenv("ICML25_HOME", str(home))
    (tmp_path / "out").mkdir()
    res = CliRunner().invoke(cli.main, ["reproduce", "pas", *FAST, "--reports", str(reports), "--json",
                                        str(tmp_path / "out")])
    assert res.exit_code == 3 and "is a folder" in res.output
    assert not reports.exists() and not home.exists()  # nothing was created
    import collections
    import shutil

    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**9, 10**9 - 2**20, 2**20))  # 1 MB free
    res = CliRunner().invoke(cli.main, ["reproduce", "pas", *FAST, "--reports", str(reports)])
    assert res.exit_code == 3 and "MB free" in res.output
    assert not home.exists()  # no job ran, the store was not created

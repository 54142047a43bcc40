"""SIGINT, SIGTERM and kill -9 of `reproduce`: workers stop at once, finished jobs are kept, no orphans."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _marked(mark: str) -> list[int]:
    """Processes whose environment carries ``mark`` (the run and every worker it started)."""
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/environ", "rb") as fh:
                    if mark.encode() in fh.read():
                        out.append(int(pid))
            except OSError:
                pass
    return out


def _default_sigint() -> None:
    """A shell runs background jobs with SIGINT ignored (and Python then never raises KeyboardInterrupt):
    give the child the default disposition, as a terminal's foreground process has."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _ok_rows(home: Path) -> int:
    with sqlite3.connect(home / "results.sqlite", timeout=5) as db:
        return db.execute("SELECT COUNT(*) FROM jobs WHERE status='ok'").fetchone()[0]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL], ids=["term", "int", "kill"])
def test_signal_stops_workers_and_keeps_finished_jobs(tmp_path, sig):
    mark = uuid.uuid4().hex
    home = tmp_path / "h"
    env = {**os.environ, "ICML25_HOME": str(home), "ICML25_TEST_MARK": mark}
    proc = subprocess.Popen([sys.executable, "-m", "icml25.cli", "reproduce", "pas", "--preset", "smoke", "--seeds",
                             "8", "--jobs", "2", "--set", "replicates=300", "--reports", str(tmp_path / "r")],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=_default_sigint)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and (not (home / "results.sqlite").exists() or _ok_rows(home) < 1):
            time.sleep(0.2)  # wait until at least one job has finished and others are running
        finished_before = _ok_rows(home)
        assert finished_before >= 1 and proc.poll() is None
        sent = time.time()
        proc.send_signal(sig)
        proc.wait(timeout=15)
        elapsed = time.time() - sent
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
    deadline = time.time() + 5
    while _marked(mark) and time.time() < deadline:
        time.sleep(0.1)
    assert _marked(mark) == [], "workers outlived the run"
    assert _ok_rows(home) >= finished_before  # nothing finished was lost
    if sig != signal.SIGKILL:
        assert elapsed < 3, elapsed
        assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err

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
    """Finished jobs in the store; 0 while the file or its schema does not exist yet (a slow start)."""
    if not (home / "results.sqlite").exists():
        return 0
    try:
        with sqlite3.connect(home / "results.sqlite", timeout=5) as db:
            return db.execute("SELECT COUNT(*) FROM jobs WHERE status='ok'").fetchone()[0]
    except sqlite3.OperationalError:  # "no such table: jobs": the run has created the file, not yet its schema
        return 0


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
        while time.time() < deadline and _ok_rows(home) < 1:
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
        assert elapsed < 10, elapsed  # well under 2 s on an idle machine; 10 s leaves room for a loaded one
        assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err


# -- issue 28: no orphan after kill -9 at any moment, one line and 130 for SIGINT/SIGTERM in every phase ------

def _start(tmp_path: Path, mark: str, tty: bool, *extra: str, seeds: int = 6) -> subprocess.Popen:
    env = {**os.environ, "ICML25_HOME": str(tmp_path / "h"), "ICML25_TEST_MARK": mark}
    stderr = subprocess.PIPE
    if tty:  # a terminal on stderr: the progress bar's Manager process is started too
        import pty
        import threading

        master, stderr = pty.openpty()

        def read_terminal() -> None:  # a terminal is read: an unread pty would block writers once its buffer fills
            try:
                while os.read(master, 4096):
                    pass
            except OSError:
                pass

        threading.Thread(target=read_terminal, daemon=True).start()
    return subprocess.Popen([sys.executable, "-m", "icml25.cli", "reproduce", "pas", "--preset", "smoke", "--seeds",
                             str(seeds), "--jobs", "2", "--set", "replicates=300", "--reports", str(tmp_path / "r"),
                             *extra], env=env, stdout=subprocess.DEVNULL, stderr=stderr, text=True,
                            start_new_session=True, preexec_fn=_default_sigint)


def _wait_for(cond, timeout: float = 120.0) -> None:  # noqa: ANN001
    deadline = time.time() + timeout
    while not cond():
        assert time.time() < deadline, "the run never reached the phase"
        time.sleep(0.05)


def _store_exists(home: Path) -> bool:
    return (home / "results.sqlite").exists()


def _catches_sigterm(pid: int) -> bool:
    """Whether process ``pid`` has a handler for SIGTERM (the entry point's early handler is installed)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            caught = next(int(line.split()[1], 16) for line in fh if line.startswith("SigCgt:"))
    except (OSError, StopIteration):
        return False
    return bool(caught & (1 << (signal.SIGTERM - 1)))


PHASES = {
    # as soon as the entry point's early handlers are in place, while Python is still importing the command (a
    # signal before the interpreter runs any of our code takes the default action, as for any program)
    "start-up": lambda home, proc: _catches_sigterm(proc.pid),
    "store": lambda home, proc: _store_exists(home),  # planned, store opened, the pool starting
    "jobs": lambda home, proc: _ok_rows(home) >= 1,  # jobs finished and others running
}


@pytest.mark.parametrize("tty", [False, True], ids=["pipe", "tty"])
@pytest.mark.parametrize("phase", list(PHASES))
def test_kill_9_at_any_moment_leaves_no_process_behind(tmp_path, phase, tty):
    mark = uuid.uuid4().hex
    proc = _start(tmp_path, mark, tty)
    try:
        _wait_for(lambda: PHASES[phase](tmp_path / "h", proc) or proc.poll() is not None)
        assert proc.poll() is None, "the run ended before the kill"
        assert _marked(mark), "the run is not visible"
        proc.kill()
        proc.wait(timeout=10)
        deadline = time.time() + 5
        while _marked(mark) and time.time() < deadline:
            time.sleep(0.05)
        left = _marked(mark)
    finally:
        for pid in _marked(mark):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    assert left == [], f"processes outlived the run by 5 s after kill -9 in phase {phase}"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["term", "int"])
@pytest.mark.parametrize("phase", ["start-up", "store"])
def test_a_signal_outside_the_job_phase_exits_130_with_one_line(tmp_path, phase, sig):
    mark = uuid.uuid4().hex
    proc = _start(tmp_path, mark, tty=False)
    try:
        _wait_for(lambda: PHASES[phase](tmp_path / "h", proc) or proc.poll() is not None)
        assert proc.poll() is None
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, (proc.returncode, err)
    lines = [line for line in err.splitlines() if line.startswith("interrupted")]
    assert len(lines) == 1 and "Traceback" not in err, err


def test_a_signal_while_waiting_for_another_runs_lease_exits_130(tmp_path):
    mark = uuid.uuid4().hex
    first = _start(tmp_path, mark, tty=False, seeds=8)
    second = None
    try:
        _wait_for(lambda: _store_exists(tmp_path / "h") and _ok_rows(tmp_path / "h") >= 1)
        second = _start(tmp_path, mark, tty=False, seeds=8)  # the same jobs: it waits on the first run's leases
        time.sleep(3)
        assert second.poll() is None
        second.send_signal(signal.SIGTERM)
        _, err = second.communicate(timeout=20)
        assert second.returncode == 130 and "interrupted" in err and "Traceback" not in err, err
    finally:
        for p in (first, second):
            if p is not None and p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.communicate()


def test_a_worker_that_cannot_start_because_the_run_let_go_is_silent(capsys):
    """The forkserver's excepthook: a semaphore or pipe the stopping run released is no error worth a traceback
    (CI once printed one under the run's "interrupted" line); any other start-up error still prints."""
    from icml25.core.runner import _quiet_when_the_run_let_go

    for exc in (FileNotFoundError(2, "No such file or directory"), EOFError(), BrokenPipeError()):
        _quiet_when_the_run_let_go(type(exc), exc, None)
    assert capsys.readouterr().err == ""
    try:
        raise ValueError("a real start-up error")
    except ValueError as exc:
        _quiet_when_the_run_let_go(ValueError, exc, exc.__traceback__)
    err = capsys.readouterr().err
    assert "Traceback" in err and "a real start-up error" in err

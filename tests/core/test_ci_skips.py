"""Under CI=true, a test skipped for a missing optional dependency fails (tests/conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import pytest

def test_needs_a_missing_extra():
    pytest.importorskip("icml25_no_such_module")

def test_plain_skip_is_still_a_skip():
    pytest.skip("not about a missing extra")
"""


def _run(tmp_path: Path, ci: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_probe.py").write_text(PROBE)
    (tmp_path / "conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text())
    env = {**os.environ, "CI": ci}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)


def test_missing_extra_fails_under_ci(tmp_path):
    out = _run(tmp_path, "true")
    assert out.returncode == 1 and "1 failed, 1 skipped" in out.stdout, out.stdout


def test_missing_extra_skips_outside_ci(tmp_path):
    out = _run(tmp_path, "")
    assert out.returncode == 0 and "2 skipped" in out.stdout, out.stdout

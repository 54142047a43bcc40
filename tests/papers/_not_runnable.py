"""Checks shared by the rows that are registered but have nothing to run (planned, not-a-system)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from icml25.core.experiment import ConfigError
from icml25.core.registry import get_paper, load_reproduction, runnable_slugs
from icml25.core.runner import plan


def check_metadata(slug: str, status: str, title: str) -> None:
    paper = get_paper(slug)
    assert paper.status == status and not paper.runnable
    assert paper.title == title
    assert slug not in runnable_slugs()


def check_nothing_to_reproduce(slug: str, status: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=status):
        load_reproduction(slug)
    with pytest.raises(ConfigError, match=f"paper '{slug}' is {status}: nothing to reproduce"):
        plan([slug], "smoke")
    out = subprocess.run([sys.executable, "-m", "icml25.cli", "reproduce", slug], capture_output=True, text=True,
                         env={**os.environ, "ICML25_HOME": str(tmp_path)}, cwd=tmp_path, timeout=120)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "nothing to reproduce" in out.stderr
    assert not (tmp_path / "results.sqlite").exists()

"""genai_regulation is registered as not-a-system: its metadata is read, and nothing pretends to run."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from icml25.core.experiment import ConfigError
from icml25.core.registry import get_paper, load_reproduction, runnable_slugs
from icml25.core.runner import plan

SLUG = "genai_regulation"


def test_metadata():
    paper = get_paper(SLUG)
    assert paper.status == "not-a-system" and not paper.runnable
    assert paper.title == "Position: Generative AI Regulation Can Learn from Social Media Regulation"
    assert SLUG not in runnable_slugs()


def test_nothing_to_reproduce(tmp_path):
    with pytest.raises(ValueError, match="not-a-system"):
        load_reproduction(SLUG)
    with pytest.raises(ConfigError, match=f"paper '{SLUG}' is not-a-system: nothing to reproduce"):
        plan([SLUG], "smoke")
    out = subprocess.run([sys.executable, "-m", "icml25.cli", "reproduce", SLUG], capture_output=True, text=True,
                         env={**os.environ, "ICML25_HOME": str(tmp_path)}, cwd=tmp_path, timeout=120)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "nothing to reproduce" in out.stderr
    assert not (tmp_path / "results.sqlite").exists()


def test_the_note_says_why():
    note = get_paper(SLUG).note
    assert "position paper" in note and "nothing to implement" in note

"""genai_regulation is registered as not-a-system: its metadata is read, and nothing pretends to run."""

from __future__ import annotations

from _not_runnable import check_metadata, check_nothing_to_reproduce

from icml25.core.registry import get_paper

SLUG = "genai_regulation"


def test_metadata():
    check_metadata(SLUG, "not-a-system", "Position: Generative AI Regulation Can Learn from Social Media Regulation")


def test_nothing_to_reproduce(tmp_path):
    check_nothing_to_reproduce(SLUG, "not-a-system", tmp_path)


def test_the_note_says_why():
    note = get_paper(SLUG).method_note
    assert "position paper" in note and "nothing to implement" in note

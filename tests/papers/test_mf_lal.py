"""mf_lal is registered as planned: its metadata is read, and nothing pretends to run."""

from __future__ import annotations

from _not_runnable import check_metadata, check_nothing_to_reproduce


SLUG = "mf_lal"


def test_metadata():
    check_metadata(SLUG, "planned", "MF-LAL: Drug Compound Generation Using Multi-Fidelity Latent Space Active Learning")


def test_nothing_to_reproduce(tmp_path):
    check_nothing_to_reproduce(SLUG, "planned", tmp_path)


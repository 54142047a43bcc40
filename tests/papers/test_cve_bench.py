"""cve_bench is registered as planned: its metadata is read, and nothing pretends to run."""

from __future__ import annotations

from _not_runnable import check_metadata, check_nothing_to_reproduce


SLUG = "cve_bench"


def test_metadata():
    check_metadata(SLUG, "planned", "CVE-Bench: A Benchmark for AI Agents' Ability to Exploit Real-World Web Application Vulnerabilities")


def test_nothing_to_reproduce(tmp_path):
    check_nothing_to_reproduce(SLUG, "planned", tmp_path)


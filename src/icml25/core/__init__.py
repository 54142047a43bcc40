"""Machinery shared by every paper: registry, experiments, claims, runner, store, report."""

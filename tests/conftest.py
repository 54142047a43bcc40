"""Suite-wide hooks.

Under CI (``CI=true``) a test that skips because an optional dependency is missing
fails instead: CI installs every extra, so such a skip means the install step broke
and a check silently stopped running.
"""

from __future__ import annotations

import os

import pytest

MISSING_IMPORT = "could not import"
"""What ``pytest.importorskip`` says when it skips."""


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def _missing_extra(report: pytest.TestReport | pytest.CollectReport) -> bool:
    return report.skipped and MISSING_IMPORT in str(report.longrepr)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> object:
    outcome = yield
    report = outcome.get_result()
    if _in_ci() and _missing_extra(report):
        report.outcome = "failed"
        report.longrepr = f"CI=true: an optional dependency is missing, so this test would be skipped: {report.longrepr}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> object:
    outcome = yield
    report = outcome.get_result()
    if _in_ci() and _missing_extra(report):
        report.outcome = "failed"
        report.longrepr = f"CI=true: an optional dependency is missing, so this module would be skipped: {report.longrepr}"


@pytest.fixture
def adam_spy(monkeypatch: pytest.MonkeyPatch) -> list:
    """Replaces ``torch.optim.Adam`` by a spy for the test: each optimiser made records, at each ``step``, every
    parameter's gradient (zeros where a parameter got none) and leaves the parameters as they are, so a training
    loop's every step sees the loss at the initial weights. Returns the list of spies made, in order; each has
    ``params`` and ``steps`` (one list of gradients per step)."""
    import torch

    made: list = []

    class GradientSpy:
        def __init__(self, params, lr=None, **_):
            self.params, self.steps = list(params), []
            made.append(self)

        def zero_grad(self, set_to_none: bool = True) -> None:
            for p in self.params:
                p.grad = None

        def step(self) -> None:
            self.steps.append([torch.zeros_like(p) if p.grad is None else p.grad.detach().clone()
                               for p in self.params])

    monkeypatch.setattr(torch.optim, "Adam", GradientSpy)
    return made


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch):
    """Makes every attempt to reach the network raise for the test (sockets, ``urllib``), as the project's rule
    forbids any download at run time. Returns the refusing function, to patch a library's own download helper with
    it too (``monkeypatch.setattr(torch_geometric.data.download, "download_url", no_network)``)."""
    import socket
    import urllib.request

    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    return refuse

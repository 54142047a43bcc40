"""A missing optional dependency is one line naming the extra to install, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BLOCKER = '''
import importlib.abc
import os
import sys

BLOCKED = set(os.environ["ICML25_TEST_BLOCK"].split(","))


class _Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _Block())
'''


def _run(tmp_path: Path, *args: str, block: str = "torch,torch_geometric") -> subprocess.CompletedProcess:
    blocker = tmp_path / "block"
    blocker.mkdir(exist_ok=True)
    (blocker / "sitecustomize.py").write_text(BLOCKER)  # a core install: PyTorch and PyG are "not installed"
    env = {**os.environ, "PYTHONPATH": str(blocker), "ICML25_HOME": str(tmp_path / "h"), "ICML25_TEST_BLOCK": block}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)


def test_show_and_reproduce_name_the_extra(tmp_path):
    cases = [(["show", "mats"], "torch,torch_geometric", "PyTorch", "torch"),
             (["reproduce", "mats", "--preset", "smoke"], "torch,torch_geometric", "PyTorch", "torch"),
             (["show", "mdgfm", "--json"], "torch_geometric", "PyTorch Geometric", "graph")]
    for args, block, what, extra in cases:
        out = _run(tmp_path, "-m", "icml25.cli", *args, block=block)
        assert out.returncode == 2, out.stderr
        assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr, out.stderr
        assert f"{args[1]} needs {what}: pip install 'icml25[{extra}]'" in out.stderr, out.stderr
    assert not (tmp_path / "h" / "results.sqlite").exists()


def test_available_papers_without_torch(tmp_path):
    code = ("from icml25.core.registry import available_slugs; ok, missing = available_slugs(); "
            "print(','.join(ok)); print('|'.join(str(m) for m in missing))")
    out = _run(tmp_path, "-c", code)
    assert out.returncode == 0, out.stderr
    ok, missing = out.stdout.strip().splitlines()
    assert "pas" in ok.split(",") and "r1vi" in ok.split(",")
    assert "mats needs PyTorch: pip install 'icml25[torch]'" in missing.split("|")
    listing = _run(tmp_path, "-m", "icml25.cli", "list")  # the registry needs no paper's code
    assert listing.returncode == 0 and "mats" in listing.stdout


def test_an_experiment_with_a_missing_requirement_is_skipped_with_one_line(monkeypatch, tmp_path):
    import pytest
    from click.testing import CliRunner

    from icml25.cli import main
    from icml25.core.experiment import Experiment
    from icml25.core.registry import MissingExtraError
    from icml25.core.runner import plan

    monkeypatch.setattr(Experiment, "missing_requirements", lambda self: ["cvxpy"] if self.name == "digits" else [])
    skipped: list = []
    jobs = plan(["pas"], "smoke", 1, skipped=skipped)
    assert {j.experiment for j in jobs} == {"synthetic"}
    assert [str(e) for e in skipped] == ["pas/digits needs cvxpy: pip install 'icml25[convex]'"]
    with pytest.raises(MissingExtraError, match="pas/digits needs cvxpy"):
        plan(["pas"], "smoke", 1)

    monkeypatch.setattr(Experiment, "missing_requirements", lambda self: ["cvxpy"])  # nothing left to run
    monkeypatch.setenv("ICML25_HOME", str(tmp_path))
    result = CliRunner().invoke(main, ["reproduce", "pas", "--preset", "smoke", "--reports", str(tmp_path / "r")])
    assert result.exit_code == 2, result.output
    assert "needs cvxpy: pip install 'icml25[convex]'" in result.output


def test_requirements_are_real_modules():
    import importlib.util

    from icml25.core.registry import available_slugs, load_reproduction

    for slug in available_slugs()[0]:
        for exp in load_reproduction(slug).experiments:
            for module in exp.requires:
                assert importlib.util.find_spec(module) is not None, f"{slug}/{exp.name} requires {module!r}"

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

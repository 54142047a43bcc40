"""A missing optional dependency is one line naming the extra to install, never a traceback; so is the paper's
own data for an experiment that runs only on it (``Experiment.data_setting``)."""

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
    from icml25.core.registry import MissingDataError, MissingExtraError
    from icml25.core.runner import plan

    monkeypatch.setattr(Experiment, "missing_requirements", lambda self: ["cvxpy"] if self.name == "digits" else [])
    skipped: list = []
    jobs = plan(["pas"], "smoke", 1, skipped=skipped)
    assert {j.experiment for j in jobs} == {"synthetic"}
    assert [str(e) for e in skipped if not isinstance(e, MissingDataError)] == [
        "pas/digits needs cvxpy: pip install 'icml25[convex]'"]  # besides pas's paper_data_* (no files given)
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


# ----------------------------------------------------------------------------- the paper's own data
def _data_experiment(**kwargs):
    from dataclasses import dataclass

    from icml25.core.experiment import Experiment, ExperimentConfig

    @dataclass
    class _Cfg(ExperimentConfig):
        data_dir: str = ""
        """Where the data are."""
        n: int = 2
        """A count."""
        label: str = "x"
        """A string with a default."""

    args = {"data_setting": "data_dir", "full_requirements": "the paper's files"} | kwargs
    return Experiment("e", "d", _Cfg, lambda cfg, seed, progress=None: {"x": 1.0}, **args)


def test_a_data_setting_must_name_an_empty_string_setting_and_say_what_it_needs():
    import pytest

    exp = _data_experiment()
    assert exp.missing_data(exp.make_config("smoke")) is True
    assert exp.missing_data(exp.make_config("smoke", {"data_dir": "/somewhere"})) is False
    assert _data_experiment(data_setting="").missing_data(exp.make_config("smoke")) is False
    for bad in ("nope", "n", "label"):  # not a setting; not a string; a string whose default is not empty
        with pytest.raises(ValueError, match=rf"data_setting '{bad}' must name a str setting of its config whose "
                                             r"default is empty"):
            _data_experiment(data_setting=bad)
    with pytest.raises(ValueError, match="must say in full_requirements what the path must hold"):
        _data_experiment(full_requirements="")


def test_plan_without_a_skipped_list_raises_for_missing_data(tmp_path):
    import pytest

    from icml25.core.registry import MissingDataError, MissingExtraError
    from icml25.core.runner import plan

    with pytest.raises(MissingDataError, match=r"^cdvi/paper_data needs the paper's data: --set data_dir=PATH"):
        plan(["cdvi"], "quick", 1)
    assert issubclass(MissingDataError, MissingExtraError)  # every caller that handles a missing extra handles it
    assert {j.experiment for j in plan(["cdvi"], "quick", 1, {"data_dir": str(tmp_path)})} == {
        "synthetic", "real", "paper_data"}


def test_claims_of_an_experiment_that_needs_the_papers_data_say_so_when_not_run(tmp_path):
    from icml25.core.results import results_records
    from icml25.core.store import Store

    with Store(tmp_path) as store:
        records = results_records(store, "full")
    by_id = {(r["slug"], r["id"]): r for r in records}
    for claim in ("paper_data_ibs", "paper_data_ctd", "paper_data_learned"):  # cdvi's paper_data experiment
        assert by_id["cdvi", claim]["verdict"] is None
        assert by_id["cdvi", claim]["reason"] == "not run at full: it needs the paper's data (--set data_dir=PATH)"
    assert by_id["cdvi", "real_ibs"]["reason"] == "not run at full"


def test_reproduce_skips_an_experiment_without_its_data_with_one_line(monkeypatch, tmp_path):
    from click.testing import CliRunner

    from icml25.cli import main

    monkeypatch.setenv("ICML25_HOME", str(tmp_path))
    (tmp_path / "a_folder").mkdir()
    # a usage or storage error stays the only line: a --json that is a folder stops the run before any job (exit 3)
    result = CliRunner().invoke(main, ["reproduce", "cdvi", "--preset", "smoke", "--reports", str(tmp_path / "r"),
                                       "--json", str(tmp_path / "a_folder")])
    assert result.exit_code == 3 and not (tmp_path / "results.sqlite").exists()
    assert result.output.splitlines() == [f"error: --json {tmp_path / 'a_folder'} is a folder: pass a file path"]
    # a run that goes ahead says first, one line each, what it leaves out
    result = CliRunner().invoke(main, ["reproduce", "pas", "--preset", "smoke", "--set", "replicates=2", "--seeds",
                                       "1", "--reports", str(tmp_path / "r")])
    assert result.exit_code in (0, 1), result.output
    assert result.output.splitlines()[:2] == [
        f"skipped: pas/paper_data_{study} needs the paper's data: --set {study}_path=PATH (see `icml25 show pas` "
        "for what PATH must hold)" for study in ("galaxy", "amazon")], result.output


def test_show_says_which_experiments_need_the_papers_data():
    import json

    from click.testing import CliRunner

    from icml25.cli import main

    text = CliRunner().invoke(main, ["show", "cdvi"]).output
    assert "runs only on the paper's data: --set data_dir=PATH (what PATH holds: below)" in text
    payload = json.loads(CliRunner().invoke(main, ["show", "cdvi", "--json"]).output)
    assert {e["name"]: e["data_setting"] for e in payload["experiments"]} == {"synthetic": "", "real": "",
                                                                              "paper_data": "data_dir"}

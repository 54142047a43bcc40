"""Verdicts that say what they mean: claim kinds, NOT_TESTED, fidelity, TIE first, results as data.

The public names checked here (``Claim`` fields ``kind``, ``source``, ``requires``, ``fair_at``,
``resolution_reason``; ``"NOT_TESTED"`` in ``VERDICTS``; ``Experiment.fidelity``; ``icml25 results --json``
and its record keys; the paper.toml status keys) are relied on from outside the test suite.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from icml25.core.experiment import PRESETS, Experiment, ExperimentConfig, Fidelity
from icml25.core.paper import FIDELITIES, KINDS, VERDICTS, Claim, decide_claims
from icml25.core.registry import PAPERS_ROOT, all_papers, check_reproduction, load_reproduction, runnable_slugs
from icml25.core.report import RECORD_KEYS, claim_group, group_counts, headline

ROOT = Path(__file__).resolve().parents[2]


def _claim(cid: str = "c", **kw) -> Claim:
    base = dict(statement="s", paper_value="p", experiment="e", metric="m", op=">=", threshold=0.0, kind="ours")
    base.update(kw)
    return Claim(cid, **base)


def _paper_claim(cid: str = "c", **kw) -> Claim:
    base = dict(kind="paper", source="Table 1", fair_at="paper", fair_at_reason="needs the paper's budget")
    base.update(kw)
    return _claim(cid, **base)


def _rows(metric: str, values, **other) -> list[dict]:
    return [{metric: v, **{k: vs[i] for k, vs in other.items()}} for i, v in enumerate(values)]


# -- the Claim's fields -----------------------------------------------------------------------------


def test_public_names():
    assert "NOT_TESTED" in VERDICTS and VERDICTS[:4] == ("PASS", "FAIL", "TIE", "INCONCLUSIVE")
    names = {f.name for f in dataclasses.fields(Claim)}
    assert {"kind", "source", "requires", "fair_at", "resolution_reason"} <= names
    assert KINDS == ("paper", "ours", "check") and FIDELITIES == ("mechanism", "reduced", "paper")
    assert "fidelity" in {f.name for f in dataclasses.fields(Experiment)}
    assert {"slug", "id", "kind", "source", "fair_at", "experiment", "fidelity", "verdict", "reason", "mean", "lo",
            "hi", "seeds"} == set(RECORD_KEYS)


def test_claim_fields_are_keywords_except_the_id():
    with pytest.raises(TypeError):
        Claim("c", "statement", "paper", "e", "m", ">=", 0.0, kind="ours")  # type: ignore[misc]
    assert _claim().id == "c"


def test_claim_validation():
    with pytest.raises(ValueError, match="kind"):
        _claim(kind="mine")
    with pytest.raises(ValueError, match="source"):
        _paper_claim(source="")
    with pytest.raises(ValueError, match="fair_at"):
        _paper_claim(fair_at=None, fair_at_reason="")
    with pytest.raises(ValueError, match="fidelity"):
        _paper_claim(fair_at="full")
    with pytest.raises(ValueError, match="fair_at_reason"):
        _paper_claim(fair_at_reason=" ")
    with pytest.raises(ValueError, match="always tested"):
        _claim(kind="check", fair_at="paper", fair_at_reason="r")
    with pytest.raises(ValueError, match="resolution_reason"):
        _claim(resolution=0.1)
    with pytest.raises(ValueError, match="without a resolution"):
        _claim(resolution_reason="why")
    with pytest.raises(ValueError, match="requires"):
        _claim(requires="learned")  # a string is not a tuple of ids
    with pytest.raises(ValueError, match="itself"):
        _claim("c", requires=("c",))
    assert _claim(requires=["a"]).requires == ("a",)
    assert _claim(kind="ours", fair_at="reduced", fair_at_reason="r").fair_at == "reduced"


# -- NOT_TESTED -------------------------------------------------------------------------------------


def test_a_failed_required_check_makes_the_claim_not_tested_with_its_reading():
    learned = _claim("learned", kind="check", metric="gain")
    claim = _claim("beats", metric="diff", requires=("learned",))
    rows = _rows("diff", [1.0, 1.2, 0.9, 1.1], gain=[-1.0, -1.2, -0.8, -1.1])
    d = decide_claims([learned, claim], {"e": rows})
    assert d["learned"].verdict == "FAIL"
    assert d["beats"].verdict == "NOT_TESTED" and d["beats"].reason == "needs `learned`, which FAILed"
    assert d["beats"].reading == "PASS" and d["beats"].mean == pytest.approx(1.05)
    # the same values with the check passing: the claim is tested
    rows = _rows("diff", [1.0, 1.2, 0.9, 1.1], gain=[1.0, 1.2, 0.8, 1.1])
    d = decide_claims([learned, claim], {"e": rows})
    assert d["beats"].verdict == "PASS" and d["beats"].reading == ""


def test_a_claim_whose_metric_no_run_produces_has_no_reading():
    """A paper claim no run here can measure (e.g. an agent benchmark's claim about language-model agents) is
    NOT_TESTED by scale without "reads FAIL": a missing metric is no measurement."""
    claim = _paper_claim("agents", metric="agent_rate")
    rows = [{"other": 1.0}, {"other": 2.0}]
    d = decide_claims([claim], {"e": rows}, fidelity={"e": "mechanism"})["agents"]
    assert d.verdict == "NOT_TESTED" and d.reason.startswith("scale:") and d.reading == ""
    measured = decide_claims([claim], {"e": _rows("agent_rate", [1.0, 1.0])}, fidelity={"e": "mechanism"})["agents"]
    assert measured.reading != ""


def test_an_inconclusive_or_unrun_check_also_blocks():
    learned = _claim("learned", kind="check", metric="gain", experiment="other")
    claim = _claim("beats", metric="diff", requires=("learned",))
    rows = _rows("diff", [1.0, 1.2, 0.9])
    assert decide_claims([learned, claim], {"e": rows})["beats"].reason == "needs `learned`, which was not run"
    noisy = _rows("gain", [-1.0, 1.0, 0.2])
    d = decide_claims([learned, claim], {"e": rows, "other": noisy})
    assert d["beats"].verdict == "NOT_TESTED" and "was INCONCLUSIVE" in d["beats"].reason


def test_below_its_fair_fidelity_a_paper_claim_is_not_tested_and_read():
    claim = _paper_claim("acc", metric="gap", fair_at="paper")
    rows = _rows("gap", [-0.5, -0.4, -0.6])
    reduced = Fidelity("reduced", "3k of 1M environment steps")
    d = decide_claims([claim], {"e": rows}, fidelity={"e": reduced})["acc"]
    assert d.verdict == "NOT_TESTED" and d.reading == "FAIL"
    assert d.reason.startswith("scale: ran at reduced fidelity (3k of 1M environment steps)")
    assert "needs paper" in d.reason
    assert decide_claims([claim], {"e": rows}, fidelity={"e": Fidelity("paper", "as the paper")})["acc"].verdict \
        == "FAIL"
    # a claim fair at reduced is tested at reduced and at paper, not at mechanism
    low = _paper_claim("dir", metric="gap", fair_at="reduced")
    for level, verdict in (("mechanism", "NOT_TESTED"), ("reduced", "FAIL"), ("paper", "FAIL")):
        assert decide_claims([low], {"e": rows}, fidelity={"e": Fidelity(level, "n")})["dir"].verdict == verdict
    # ours and checks without fair_at are never gated by scale
    assert decide_claims([_claim("o", metric="gap")], {"e": rows},
                         fidelity={"e": Fidelity("mechanism", "n")})["o"].verdict == "FAIL"


def test_a_baseline_nan_is_not_tested_but_the_methods_nan_fails():
    claim = _claim("l2", metric="l2_ratio", op="<=", threshold=1.0, baseline_metric="l2_baseline")
    rows = _rows("l2_ratio", [0.5, math.nan, 0.4], l2_baseline=[2.0, math.nan, 2.5])
    d = decide_claims([claim], {"e": rows})["l2"]
    assert d.verdict == "NOT_TESTED" and d.reading == "" and d.reason.startswith("baseline: on seed 1")
    rows = _rows("l2_ratio", [0.5, math.nan, 0.4], l2_baseline=[2.0, 3.0, 2.5])  # the baseline had a number
    assert decide_claims([claim], {"e": rows})["l2"].verdict == "FAIL"
    no_baseline = _claim("l2", metric="l2_ratio", op="<=", threshold=1.0)
    rows = _rows("l2_ratio", [0.5, math.nan, 0.4], l2_baseline=[2.0, math.nan, 2.5])
    assert decide_claims([no_baseline], {"e": rows})["l2"].verdict == "FAIL"


def test_reasons_add_up_and_claims_of_unrun_experiments_are_left_out():
    check = _claim("ok", kind="check", metric="gain")
    claim = _paper_claim("p", metric="gap", requires=("ok",))
    rows = _rows("gap", [1.0, 1.1, 0.9], gain=[-1.0, -1.1, -0.9])
    d = decide_claims([check, claim, _claim("x", experiment="absent")], {"e": rows},
                      fidelity={"e": Fidelity("mechanism", "toy")})
    assert set(d) == {"ok", "p"}
    assert d["p"].reason.startswith("scale:") and "; needs `ok`, which FAILed" in d["p"].reason


# -- fidelity and pre-registration rules ------------------------------------------------------------


@dataclass
class _Cfg(ExperimentConfig):
    n: int = 1
    """n."""


def _exp(fidelity=None) -> Experiment:
    fid = {p: Fidelity("mechanism", "toy") for p in PRESETS} if fidelity is None else fidelity
    return Experiment("e", "d", _Cfg, lambda cfg, seed, progress=None: {"m": 1.0}, fidelity=fid)


def test_fidelity_objects_are_validated():
    with pytest.raises(ValueError, match="level"):
        Fidelity("full", "n")
    with pytest.raises(ValueError, match="note"):
        Fidelity("reduced", "")
    with pytest.raises(ValueError, match="unknown preset"):
        _exp({"medium": Fidelity("paper", "n")})
    with pytest.raises(TypeError, match="Fidelity"):
        _exp({"quick": "paper"})
    assert _exp().fidelity_of("quick").level == "mechanism"


def test_preregistration_rules_are_enforced_at_load():
    ok = (_exp(),)
    check_reproduction("x", ok, (_claim("a", kind="check"), _paper_claim("b", requires=("a",))))
    with pytest.raises(ValueError, match="no fidelity for preset 'full'"):
        check_reproduction("x", (_exp({"smoke": Fidelity("mechanism", "n"), "quick": Fidelity("reduced", "n")}),),
                           ())
    with pytest.raises(ValueError, match="unknown claim 'zz'"):
        check_reproduction("x", ok, (_claim("a", requires=("zz",)),))
    with pytest.raises(ValueError, match="not a check"):
        check_reproduction("x", ok, (_claim("a"), _claim("b", requires=("a",))))
    with pytest.raises(ValueError, match="cycle"):
        check_reproduction("x", ok, (_claim("a", kind="check", requires=("b",)),
                                     _claim("b", kind="check", requires=("a",))))
    with pytest.raises(ValueError, match="unknown experiment"):
        check_reproduction("x", ok, (_claim("a", experiment="nope"),))


@pytest.mark.parametrize("slug", runnable_slugs())
def test_every_claim_and_preset_is_preregistered(slug):
    try:
        repro = load_reproduction(slug)  # enforces fidelity per preset and requires -> checks
    except ImportError as exc:  # a missing extra is the missing-extras tests' business
        pytest.skip(str(exc))
    for exp in repro.experiments:
        assert set(exp.fidelity) == set(PRESETS), exp.name
    for c in repro.claims:
        assert c.kind in KINDS
        if c.kind == "paper":
            assert c.source.strip() and c.fair_at in FIDELITIES and c.fair_at_reason.strip(), c.id
        if c.resolution is not None:
            assert c.resolution_reason.strip(), c.id


def test_paper_toml_has_the_two_part_status():
    for paper in all_papers():
        with (PAPERS_ROOT / paper.slug / "paper.toml").open("rb") as fh:
            data = tomllib.load(fh)
        assert "status" not in data and "note" not in data, paper.slug
        assert {"method", "method_note"} <= set(data), paper.slug
        if paper.runnable:
            assert {"reproduction", "reproduction_note"} <= set(data), paper.slug
            assert "TODO" not in paper.method_note + paper.reproduction_note, paper.slug
    assert [p.slug for p in all_papers() if not p.runnable] == ["genai_regulation"]


# -- reports count paper claims first ---------------------------------------------------------------


def test_groups_and_headline():
    assert claim_group("paper", "reduced") == "paper@reduced" and claim_group("check", "paper") == "check"
    counts = group_counts([("check", "PASS"), ("paper@reduced", "NOT_TESTED"), ("paper@paper", "FAIL"),
                           ("ours", "PASS"), ("paper@paper", "PASS")])
    assert list(counts) == ["paper@paper", "paper@reduced", "ours", "check"]
    text = headline(counts)
    assert text.startswith("Paper claims at paper fidelity: 2 (1 PASS, 1 FAIL)")
    assert "counted" not in text.lower() or "Apart" in text
    assert text.index("reduced fidelity") < text.index("our claims") < text.index("checks")


# -- results committed as data ----------------------------------------------------------------------


def _registered() -> set[tuple[str, str]]:
    return {(slug, c.id) for slug in runnable_slugs() for c in load_reproduction(slug).claims}


def test_committed_results_list_exactly_the_registered_claims():
    path = ROOT / "docs" / "results" / "quick.json"
    data = json.loads(path.read_text())
    records = data["claims"]
    assert all(set(RECORD_KEYS) <= set(r) for r in records)
    keys = [(r["slug"], r["id"]) for r in records]
    assert len(keys) == len(set(keys))
    assert set(keys) == _registered()
    for r in records:
        assert r["verdict"] in (*VERDICTS, None) and r["fidelity"] in FIDELITIES
        if r["verdict"] == "NOT_TESTED":
            assert r["reason"], (r["slug"], r["id"])
    md = (ROOT / "docs" / "RESULTS.md").read_text()
    rows = set()
    slug = None
    for line in md.splitlines():
        m = re.match(r"## `([a-z0-9_]+)`", line)
        if m:
            slug = m.group(1)
        m = re.match(r"\| `([A-Za-z0-9_]+)` \|", line)
        if m and slug:
            rows.add((slug, m.group(1)))
    assert rows == _registered()


def test_reproduction_status_matches_the_committed_results():
    """A row's ``reproduction`` is the highest fidelity of the committed runs of its paper claims."""
    best: dict[str, int] = {}
    for path in sorted((ROOT / "docs" / "results").glob("*.json")):
        for r in json.loads(path.read_text())["claims"]:
            if r["kind"] == "paper" and r["verdict"] is not None:
                best[r["slug"]] = max(best.get(r["slug"], -1), FIDELITIES.index(r["fidelity"]))
    for paper in all_papers():
        if paper.runnable and paper.slug in best:
            assert paper.reproduction == FIDELITIES[best[paper.slug]], paper.slug


def test_a_decision_on_another_definition_of_the_claim_is_not_listed():
    """A stored decision is shown only while the claim is the one it was made on: a changed threshold, kind,
    fair_at, experiment or gate makes the committed results say "not run since the claim changed"."""
    from icml25.core.results import claim_changed

    claim = _paper_claim(requires=("learned",))
    row = {"check": claim.check_text, "kind": "paper", "experiment": claim.experiment, "fair_at": "paper",
           "requires": ["learned"]}
    assert claim_changed(row, claim) == ""
    assert claim_changed({k: v for k, v in row.items() if k != "requires"}, claim) == ""  # older rows lack it
    assert "kind was 'ours'" in claim_changed({**row, "kind": "ours"}, claim)
    assert "check was" in claim_changed({**row, "check": "m >= 2"}, claim)
    assert "requires was []" in claim_changed({**row, "requires": []}, claim)
    assert "fair_at" in claim_changed({**row, "fair_at": "mechanism"}, claim)


def test_a_decision_made_at_other_preset_settings_is_not_listed():
    """A stored decision is shown only while the preset is the one it ran at: a changed fidelity level or note
    (which say what the preset runs) makes the committed results say "not run since its preset changed"."""
    from icml25.core.experiment import Fidelity
    from icml25.core.results import preset_changed

    fid = Fidelity("reduced", "600 of 300k steps")
    row = {"fidelity": "reduced", "fidelity_note": "600 of 300k steps"}
    assert preset_changed(row, fid) == ""
    assert preset_changed({}, fid) == ""                           # a decision that recorded no fidelity
    assert "fidelity was 'mechanism'" in preset_changed({**row, "fidelity": "mechanism"}, fid)
    assert preset_changed({**row, "fidelity_note": "40 of 400 steps"}, fid) == "its fidelity note changed"

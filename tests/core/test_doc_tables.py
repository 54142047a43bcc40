"""The claims table of each paper's doc is generated from the committed results (checklist item 7).

``icml25 results --docs`` fills the block between ``<!-- claims:start -->`` and ``<!-- claims:end -->``
of every ``docs/papers/<slug>.md`` from ``docs/results/<preset>.json``; the committed docs must hold
exactly what it writes, so no claims table is typed by hand or left stale.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from icml25.cli import main
from icml25.core.experiment import PRESETS
from icml25.core.render_markdown import DOC_MARKERS, doc_claims_table, fill_doc

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted((ROOT / "docs" / "papers").glob("*.md"))


def _committed_records() -> dict[str, list[dict]]:
    return {p: json.loads((ROOT / "docs" / "results" / f"{p}.json").read_text())["claims"]
            for p in PRESETS if (ROOT / "docs" / "results" / f"{p}.json").is_file()}


@pytest.mark.parametrize("doc", [d for d in DOCS if DOC_MARKERS[0] in d.read_text()], ids=lambda d: d.stem)
def test_doc_claims_table_is_the_generated_one(doc):
    text = doc.read_text()
    assert fill_doc(text, doc_claims_table(doc.stem, _committed_records())) == text, (
        f"docs/papers/{doc.name}: its claims table is not what `icml25 results --docs` writes from docs/results/*.json")


def _record(cid: str, kind: str, verdict: str | None, **kw) -> dict:
    return {"slug": "x", "id": cid, "kind": kind, "source": "Table 1", "paper_value": "3.1", "verdict": verdict,
            "reason": kw.get("reason", ""), "mean": 1.0, "lo": 0.5, "hi": 1.5, "seeds": 4, "fidelity": "paper",
            "reading": kw.get("reading", "")}


def test_doc_table_lists_paper_claims_first_and_every_preset_that_decided():
    records = {"quick": [_record("c", "check", "PASS"), _record("p", "paper", "NOT_TESTED", reading="FAIL",
                                                                 reason="scale: ran at mechanism fidelity"),
                         _record("o", "ours", None)],
               "full": [_record("p", "paper", "FAIL")]}
    table = doc_claims_table("x", records)
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    assert [r.split("`")[1] for r in rows] == ["p", "p", "o", "c"]
    assert "quick: paper" in rows[0] and "NOT_TESTED (reads FAIL)" in rows[0] and "scale:" in rows[0]
    assert "full: paper" in rows[1] and "**FAIL**" in rows[1]
    assert rows[2].endswith("not run |")
    doc = f"# x\n\n{DOC_MARKERS[0]}\nold table\n{DOC_MARKERS[1]}\ntail\n"
    assert fill_doc(doc, table) == f"# x\n\n{table}\ntail\n"
    assert fill_doc("no markers", table) is None


def test_results_docs_writes_only_docs_with_markers(tmp_path, monkeypatch):
    (tmp_path / "docs" / "papers").mkdir(parents=True)
    (tmp_path / "docs" / "results").mkdir()
    (tmp_path / "docs" / "results" / "quick.json").write_text(json.dumps({"claims": [_record("p", "paper", "PASS")]}))
    (tmp_path / "docs" / "papers" / "x.md").write_text(f"a\n{DOC_MARKERS[0]}\n{DOC_MARKERS[1]}\nb\n")
    (tmp_path / "docs" / "papers" / "y.md").write_text("no markers\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["results", "--docs"])
    assert result.exit_code == 0, result.output
    assert "`p` | paper" in (tmp_path / "docs" / "papers" / "x.md").read_text()
    assert (tmp_path / "docs" / "papers" / "y.md").read_text() == "no markers\n"
    assert CliRunner().invoke(main, ["results", "--docs", "--json"]).exit_code == 2

"""Markdown pages: a paper's ``report.md`` and ``docs/RESULTS.md``.

:func:`paper_markdown` renders a paper's ``metrics.json`` payload
(:func:`icml25.core.results.paper_payload`); :func:`results_markdown` lists every
registered claim with its latest decision in the store
(:func:`icml25.core.results.results_records`). Claims are listed in report groups:
the paper's claims by fidelity, then ours, then checks.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from icml25.core.paper import VERDICTS, Paper
from icml25.core.registry import all_papers
from icml25.core.results import (
    GROUP_TITLE,
    counts_of_rows,
    decision_of,
    group_heading,
    grouped,
    headline,
    last_line,
    machine_text,
    results_records,
    seeds_text,
    summary_of,
    verdict_text,
)
from icml25.core.runner import code_fingerprint
from icml25.core.store import Store


def md_cell(text: str) -> str:
    """``text`` made safe for one cell of a Markdown table (pipes escaped, on one line)."""
    return str(text).replace("|", "\\|").replace("\n", " ")


# --------------------------------------------------------------------------- report.md

def paper_markdown(payload: Mapping[str, Any], failure: Mapping[str, Any] | None) -> str:
    """A paper's ``report.md`` from its ``metrics.json`` payload.

    ``failure`` (the content of ``failed.json``) is the latest run's failure, shown above the
    results of the last good run.
    """
    md = [f"# {payload['paper']}: {payload['title']}", ""]
    if failure:
        md += _failure_lines(failure)
    md += [f"Preset `{payload['preset']}`. Written {payload['written_at']} by icml25 "
           f"{payload.get('package_version', '?')}.", "",
           f"Method: **{payload.get('method', '?')}** ({md_cell(payload.get('method_note', ''))}). "
           f"Reproduction: **{payload.get('reproduction', '?')}** "
           f"({md_cell(payload.get('reproduction_note', ''))}).", "",
           "**" + headline(counts_of_rows(payload["claims"])) + "**"]
    for group, rows in grouped(payload["claims"]):
        md += ["", f"### {md_cell(group_heading(group, rows))}", "",
               "| claim | statement | paper (source) | ours: mean [interval] | seeds | check | verdict |",
               "|---|---|---|---|---|---|---|"]
        md += [_claim_line(c) for c in rows]
    for name, e in payload["experiments"].items():
        md += _experiment_lines(name, e)
    if payload.get("figures"):
        md += ["", "## Figures", ""] + [f"![{f['caption']}]({f['file']})\n\n*{f['caption']}*"
                                        for f in payload["figures"]]
    if payload.get("figure_errors"):
        md += ["", "Figures that could not be drawn:", ""] + [f"- {e}" for e in payload["figure_errors"]]
    return "\n".join(md) + "\n"


def _failure_lines(failure: Mapping[str, Any]) -> list[str]:
    lines = [f"**The latest run ({failure['written_at']}, preset `{failure['preset']}`) had "
             f"{failure['failed_jobs']} failed job(s); the results below are from the last good run.**", ""]
    lines += [f"- {exp} seed {seed}: `{md_cell(last_line(msg))}`" for exp, fails in failure["failures"].items()
              for seed, msg in fails.items()]
    return lines + [""]


def _claim_line(c: Mapping[str, Any]) -> str:
    d = decision_of(c)
    src = f" ({c['source']})" if c.get("source") else ""
    res = f"; tie: {c['resolution_reason']}" if c.get("resolution_reason") else ""
    return (f"| {c['id']} | {md_cell(c['statement'])} | {md_cell(c['paper'] + src)} | {d.interval} | "
            f"{seeds_text(d)} | `{c['check']}`{md_cell(res)} | **{verdict_text(d)}** ({md_cell(d.reason)}) |")


def _experiment_lines(name: str, e: Mapping[str, Any]) -> list[str]:
    looks = f"; planned looks {e['looks']}." if e.get("looks") else "."
    versions = ", ".join(f"{k} {v}" for k, v in (e.get("libraries") or {}).items())
    lines = ["", f"## Experiment `{name}`", "", e.get("description", ""), "",
             f"Seeds: {e['seeds']} ({e['wall_s']:.1f} s of compute in total, peak memory "
             f"{e.get('peak_mem_mb', 0):.0f} MB)" + looks, "",
             f"Code fingerprint `{e.get('code_fingerprint', '?')}`; " + versions + ".", ""]
    if e["failures"]:
        lines += ["Failed jobs:", ""] + [f"- seed {s}: `{md_cell(last_line(msg))}`"
                                         for s, msg in e["failures"].items()] + [""]
    lines += ["| metric | mean ± 95% CI |", "|---|---|"]
    return lines + [f"| {k} | {summary_of(v)} |" for k, v in e["summary"].items()]


# --------------------------------------------------------------------------- docs/RESULTS.md

RESULTS_LEGEND = (
    "Claims are listed per paper: the paper's claims first, grouped by the fidelity of the run that decided "
    "them (`paper`: the paper's protocol at its scale; `reduced`: its protocol at a fraction of its budget; "
    "`mechanism`: a stand-in), then our own claims, then checks. A paper claim run below its `fair_at` "
    "fidelity is NOT_TESTED, with the verdict its values would give shown as a reading (`reads FAIL`). "
    "`ours` is the mean over seeds and, for `mean` claims, the group-sequential confidence interval at "
    "the look where the claim was decided (see the README). `seeds` is the number of seeds used; for "
    "INCONCLUSIVE, `~N to decide` is a rough estimate of the seeds that would decide it. Each paper says "
    "where its jobs computed (torch's CPU kernels and the BLAS): torch-based metrics can differ in their "
    "last digits between CPU kernels, so a claim near a boundary can change verdict between machines.")
"""The paragraph under the counts of ``docs/RESULTS.md`` that says how to read it."""


def results_markdown(store: Store, preset: str = "quick") -> str:
    """``docs/RESULTS.md``: every registered claim with its latest decision at ``preset``.

    Paper claims come first, grouped by the fidelity they ran at, then ours, then checks; the
    headline counts paper claims at paper fidelity. Claims with no decision at that preset are
    listed as ``not run``.
    """
    records = results_records(store, preset)
    by_slug: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        by_slug.setdefault(r["slug"], []).append(r)
    body: list[str] = []
    for paper in all_papers():
        if paper.slug in by_slug:
            body += _paper_section(store, preset, paper, by_slug[paper.slug])
    return "\n".join(_results_head(preset, records) + body) + "\n"


def _results_head(preset: str, records: Sequence[Mapping[str, Any]]) -> list[str]:
    """The title, what the page is, when its decisions were recorded, and the counts by group and verdict."""
    counts = counts_of_rows(records)
    stamps = [r["recorded_at"] for r in records if r.get("recorded_at")]
    when = f" Decisions recorded {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(max(stamps)))}." if stamps else ""
    table = ["| group | " + " | ".join(VERDICTS) + " | not run |", "|---" * (len(VERDICTS) + 2) + "|"]
    for group, c in counts.items():
        table.append(f"| {GROUP_TITLE.get(group, group)} | " + " | ".join(str(c.get(v, 0)) for v in VERDICTS)
                     + f" | {c.get('not run', 0)} |")
    return [f"# Results at the `{preset}` preset", "",
            f"Every registered claim of every runnable paper ({len(records)} claims), with its latest decision in "
            f"the results store. Generated by `icml25 results --markdown` (the same data as JSON: `icml25 results "
            f"--json --preset {preset} --out docs/results/{preset}.json`); do not edit by hand.{when}", "",
            f"**{headline(counts)}**", ""] + table + ["", RESULTS_LEGEND]


def _paper_section(store: Store, preset: str, paper: Paper, recs: Sequence[Mapping[str, Any]]) -> list[str]:
    """One paper of ``docs/RESULTS.md``: its status, its claims by group, where it computed, its failed jobs."""
    n_paper = [r for r in recs if r["kind"] == "paper"]
    at_paper = [r for r in n_paper if r["fidelity"] == "paper" and r["verdict"] not in (None, "NOT_TESTED")]
    lines = ["", f"## `{paper.slug}`: {md_cell(paper.title)}", "",
             f"Method **{paper.method}**: {md_cell(paper.method_note)}  ",
             f"Reproduction **{paper.reproduction}**: {md_cell(paper.reproduction_note)}  ",
             f"Paper claims tested at paper fidelity: {len(at_paper)} / {len(n_paper)}."]
    for group, rows in grouped(recs):
        lines += ["", f"### {md_cell(group_heading(group, rows))}", "",
                  "| claim | paper's number (source) | ours: mean [interval] | seeds | check | verdict |",
                  "|---|---|---|---|---|---|"]
        lines += [_record_line(r) for r in rows]
    machines = sorted({machine_text(r.get("machine") or {}) for r in recs} - {""})
    if machines:
        lines += ["", "Computed on: " + "; ".join(machines) + "."]
    failed = _failed_jobs(store, preset, paper.slug)
    if failed:
        lines += ["", "Failed jobs (their experiment was decided on the seeds that finished, and not given more):",
                  ""] + [f"- `{exp}` seed {seed}: `{md_cell(err)}`" for exp, seed, err in failed]
    return lines


def _record_line(r: Mapping[str, Any]) -> str:
    src = f" ({r['source']})" if r["source"] else ""
    if r["verdict"] is None:
        return f"| `{r['id']}` | {md_cell(r['paper_value'] + src)} | - | - | `{r['check']}` | not run |"
    d = decision_of({**r, "n": r["seeds"]})
    why = f" ({md_cell(d.reason)})" if d.verdict == "NOT_TESTED" else ""
    return (f"| `{r['id']}` | {md_cell(r['paper_value'] + src)} | {d.interval} | {seeds_text(d)} | "
            f"`{r['check']}` | **{verdict_text(d)}**{why} |")


def _failed_jobs(store: Store, preset: str, slug: str) -> list[tuple[str, int, str]]:
    """``(experiment, seed, error)`` of the paper's jobs that failed at ``preset`` with its current code."""
    fingerprint = code_fingerprint(slug)
    return sorted({(rec.key.experiment, rec.key.seed, last_line(rec.error or "failed"))
                   for rec in store.records(slug)
                   if rec.status == "failed" and rec.preset == preset and rec.key.code_hash == fingerprint
                   and not store.finished([rec.key])})


# -- the claims table of each paper's doc (docs/papers/<slug>.md) --------------------------------------------

DOC_MARKERS = ("<!-- claims:start -->", "<!-- claims:end -->")
"""A paper's doc holds its generated claims table between these two lines (``icml25 results --docs``)."""


def doc_claims_table(slug: str, records_by_preset: Mapping[str, Sequence[Mapping[str, Any]]]) -> str:
    """The claims table of ``docs/papers/<slug>.md`` from committed results records (one list per preset).

    One row per claim and preset that decided it (paper claims first, then ours, then checks); a claim
    no preset decided is listed once as ``not run``. Generated, never typed by hand: a test checks the
    committed docs against ``docs/results/<preset>.json``.
    """
    order = {"paper": 0, "ours": 1, "check": 2}
    claims: dict[str, Mapping[str, Any]] = {}
    decided: dict[str, list[Mapping[str, Any]]] = {}
    for preset, records in records_by_preset.items():
        for r in records:
            if r["slug"] != slug:
                continue
            claims.setdefault(r["id"], r)
            if r["verdict"] is not None:
                decided.setdefault(r["id"], []).append({**r, "preset": preset})
    lines = ["| claim | kind | paper's number (source) | preset: fidelity | ours: mean [interval] | seeds | verdict |",
             "|---|---|---|---|---|---|---|"]
    for cid, claim in sorted(claims.items(), key=lambda kv: order.get(kv[1]["kind"], 3)):
        src = f" ({claim['source']})" if claim.get("source") else ""
        head = f"| `{cid}` | {claim['kind']} | {md_cell(claim['paper_value'] + src)} |"
        if cid not in decided:
            lines.append(f"{head} - | - | - | not run |")
        for r in decided.get(cid, []):
            d = decision_of({**r, "n": r["seeds"]})
            why = f" ({md_cell(d.reason)})" if d.verdict == "NOT_TESTED" else ""
            lines.append(f"{head} {r['preset']}: {r['fidelity']} | {d.interval} | {seeds_text(d)} | "
                         f"**{verdict_text(d)}**{why} |")
    presets = ", ".join(f"`docs/results/{p}.json`" for p in records_by_preset)
    return "\n".join([DOC_MARKERS[0], "", f"Generated by `icml25 results --docs` from {presets}; do not edit by hand.",
                      "", *lines, "", DOC_MARKERS[1]])


def fill_doc(text: str, table: str) -> str | None:
    """``text`` with the block between :data:`DOC_MARKERS` replaced by ``table``; None without markers."""
    start, end = text.find(DOC_MARKERS[0]), text.find(DOC_MARKERS[1])
    if start < 0 or end < start:
        return None
    return text[:start] + table + text[end + len(DOC_MARKERS[1]):]

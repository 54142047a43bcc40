"""HTML pages: a paper's ``report.html`` and the index of every paper, ``reports/index.html``.

Plain HTML with one inline style sheet; every text from a paper, a claim or a job is
escaped. Verdicts are coloured badges (:func:`badge`).
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping, Sequence
from html import escape as esc
from pathlib import Path
from typing import Any

from icml25.core.paper import VERDICTS, Paper
from icml25.core.registry import PAPERS_ROOT
from icml25.core.results import (
    GROUP_TITLE,
    counts_of_rows,
    decision_of,
    group_heading,
    group_rank,
    grouped,
    headline,
    last_line,
    row_group,
    seeds_text,
    verdict_text,
)

DOCS_ROOT = Path(__file__).resolve().parents[3] / "docs" / "papers"
"""Where the per-paper docs live in a source checkout (links are omitted when they are absent)."""

VERDICT_COLOUR = {"PASS": "#1a7f37", "FAIL": "#cf222e", "TIE": "#0969da", "INCONCLUSIVE": "#9a6700",
                  "NOT_TESTED": "#6e7781"}

CSS = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#1f2328}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #d0d7de;padding:6px 8px;text-align:left;
vertical-align:top}th{background:#f6f8fa}.badge{color:#fff;border-radius:4px;padding:1px 6px;margin:1px;
font-size:85%;display:inline-block}img{max-width:100%;margin:1em 0}.muted{color:#57606a}
.fail{border:2px solid #cf222e;padding:0.5em 1em;margin:1em 0}figure{margin:1em 0}figcaption{color:#57606a}"""


def badge(verdict: str, label: str | None = None, title: str | None = None) -> str:
    """A badge coloured by ``verdict`` (grey for anything else), reading ``label`` and showing ``title`` on hover."""
    colour = VERDICT_COLOUR.get(verdict, "#57606a")
    tip = f' title="{esc(title, quote=True)}"' if title else ""
    return f'<span class="badge" style="background:{colour}"{tip}>{esc(label or verdict)}</span>'


def _page(title: str, body: str) -> str:
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title>"
            f"<style>{CSS}</style></head><body>{body}</body></html>")


def _note(text: str) -> str:
    """A muted line under a cell's content."""
    return f"<br><span class=muted>{esc(text)}</span>"


# --------------------------------------------------------------------------- report.html

def paper_html(payload: Mapping[str, Any], failure: Mapping[str, Any] | None) -> str:
    """A paper's ``report.html`` from its ``metrics.json`` payload.

    ``failure`` (the content of ``failed.json``) is the latest run's failure, shown in a banner
    above the results of the last good run.
    """
    claims = "".join(f"<tr><th colspan='7'>{esc(group_heading(group, rows))}</th></tr>"
                     + "".join(_claim_row(c) for c in rows) for group, rows in grouped(payload["claims"]))
    runs = "".join(_run_row(name, e) for name, e in payload["experiments"].items())
    figures = "".join(f"<figure><img src='{esc(f['file'], quote=True)}' alt='{esc(f['caption'], quote=True)}'>"
                      f"<figcaption>{esc(f['caption'])}</figcaption></figure>" for f in payload.get("figures", []))
    status = (badge("method", f"method: {payload.get('method', '?')}", str(payload.get("method_note", ""))) + " "
              + badge("reproduction", f"reproduction: {payload.get('reproduction', '?')}",
                      str(payload.get("reproduction_note", ""))))
    head = headline(counts_of_rows(payload["claims"]))
    slug = str(payload["paper"])
    return _page(esc(slug),
                 f"<p><a href='../index.html'>all papers</a> · {' · '.join(_links(payload))}</p>"
                 f"<h1>{esc(str(payload['title']))}</h1>{_failure_banner(failure) if failure else ''}"
                 f"<p class='muted'>preset {esc(str(payload['preset']))} · written {esc(str(payload['written_at']))} · "
                 f"icml25 {esc(str(payload.get('package_version', '?')))}</p>"
                 f"<p>{status}</p><p><b>{esc(head)}</b></p>"
                 f"<table><tr><th>claim</th><th>statement</th><th>paper</th><th>ours</th><th>seeds</th><th>check</th>"
                 f"<th>verdict</th></tr>{claims}</table><h2>Run</h2>"
                 f"<table><tr><th>experiment</th><th>seeds</th><th>planned looks</th><th>compute</th>"
                 f"<th>peak memory</th><th>code fingerprint</th><th>versions</th></tr>{runs}</table>{figures}")


def _claim_row(c: Mapping[str, Any]) -> str:
    d = decision_of(c)
    source = _note(c["source"]) if c.get("source") else ""
    tie = _note("tie: " + c["resolution_reason"]) if c.get("resolution_reason") else ""
    why = _note(c.get("reason", "")) if c["verdict"] == "NOT_TESTED" else ""
    return (f"<tr><td>{esc(c['id'])}</td><td>{esc(c['statement'])}</td><td>{esc(c['paper'])}{source}</td>"
            f"<td>{esc(d.interval)}</td><td>{esc(seeds_text(d))}</td><td><code>{esc(c['check'])}</code>{tie}</td>"
            f"<td title='{esc(c.get('reason', ''), quote=True)}'>{badge(c['verdict'], verdict_text(d))}{why}</td>"
            f"</tr>")


def _run_row(name: str, e: Mapping[str, Any]) -> str:
    versions = ", ".join(f"{k} {v}" for k, v in (e.get("libraries") or {}).items())
    return (f"<tr><td>{esc(name)}</td><td>{esc(', '.join(map(str, e['seeds'])))}</td>"
            f"<td>{esc(', '.join(map(str, e.get('looks') or [])))}</td><td>{e['wall_s']:.1f} s</td>"
            f"<td>{e.get('peak_mem_mb', 0):.0f} MB</td><td><code>{esc(str(e.get('code_fingerprint', '?')))}</code></td>"
            f"<td>{esc(versions)}</td></tr>")


def _failure_banner(failure: Mapping[str, Any]) -> str:
    items = "".join(f"<li>{esc(exp)} seed {esc(seed)}: <code>{esc(last_line(msg))}</code></li>"
                    for exp, fails in failure["failures"].items() for seed, msg in fails.items())
    return (f"<div class='fail'><b>The latest run ({esc(failure['written_at'])}, preset "
            f"{esc(failure['preset'])}) had {esc(str(failure['failed_jobs']))} failed job(s).</b> "
            f"The results below are from the last good run. <ul>{items}</ul></div>")


def _links(payload: Mapping[str, Any]) -> list[str]:
    """Links to the report's files, the paper's doc (in a source checkout), our code, the official code, the paper."""
    slug = str(payload["paper"])
    links = ["<a href='metrics.json'>metrics.json</a>", "<a href='report.md'>report.md</a>"]
    doc = DOCS_ROOT / f"{slug}.md"
    if doc.is_file():
        links.append(f"<a href='{esc(doc.as_uri(), quote=True)}'>doc</a>")
    links.append(f"<a href='{esc((PAPERS_ROOT / slug).as_uri(), quote=True)}'>our code</a>")
    if payload.get("code"):
        links.append(f"<a href='https://github.com/{esc(str(payload['code']), quote=True)}'>official code</a>")
    if payload.get("url"):
        links.append(f"<a href='{esc(str(payload['url']), quote=True)}'>paper</a>")
    return links


# --------------------------------------------------------------------------- index.html

def index_html(papers: Sequence[Paper], verdicts: Mapping[str, Mapping[str, Mapping[str, Any]]],
               reported: Collection[str], store_path: Path | str) -> str:
    """``reports/index.html``: every paper with the latest verdicts recorded in the store.

    Args:
        papers: the registry's papers, one row each.
        verdicts: ``{slug: {claim id: row}}``, as :meth:`icml25.core.store.Store.verdicts` gives them.
        reported: the slugs that have a ``report.html`` (their row links to it).
        store_path: the store the verdicts come from (named on the page).

    Each badge is one claim, named, coloured by its verdict, with its preset and seeds on
    hover; each row says the preset and the seeds behind its verdicts; the header gives the
    totals by verdict.
    """
    rows = "".join(_paper_row(paper, verdicts.get(paper.slug, {}), paper.slug in reported) for paper in papers)
    counts = counts_of_rows(row for paper in papers for row in verdicts.get(paper.slug, {}).values())
    main = counts.get("paper@paper", {v: 0 for v in VERDICTS})
    summary = " ".join(badge(v, label=f"{n} {v}") for v, n in main.items())
    apart = "; ".join(f"{GROUP_TITLE[g].lower()}: " + ", ".join(f"{n} {v}" for v, n in c.items() if n)
                      for g, c in counts.items() if g != "paper@paper")
    return _page("icml25 reproductions",
                 f"<h1>icml25: ICML 2025 papers, reproduced</h1>"
                 f"<p class='muted'>Latest verdict of every claim, from the results store at "
                 f"{esc(str(store_path))}; written {time.strftime('%Y-%m-%d %H:%M:%S')}.</p>"
                 f"<p>{sum(main.values())} paper claims tested at paper fidelity: {summary}</p>"
                 f"<p class='muted'>Counted apart: {esc(apart or 'none')}.</p>"
                 f"<table><tr><th>paper</th><th>title</th><th>method, reproduction</th><th>preset</th>"
                 f"<th>seeds</th><th>claims</th></tr>{rows}</table>")


def _paper_row(paper: Paper, claims: Mapping[str, Mapping[str, Any]], has_report: bool) -> str:
    ordered = sorted(claims.items(), key=lambda kv: (group_rank(row_group(kv[1])), kv[0]))
    badges = " ".join(
        badge(v["verdict"], label=f"{claim}: {v['verdict']}",
              title=f"{claim} ({row_group(v)}): {v['verdict']} ({v['preset']}, {v['n']} seeds)"
                    + (f"; {v.get('reason')}" if v["verdict"] == "NOT_TESTED" else ""))
        for claim, v in ordered) or "<span class='muted'>-</span>"
    presets = sorted({v["preset"] for v in claims.values()})
    seeds = sorted({int(v["n"] or 0) for v in claims.values()})
    seeds_txt = (f"{seeds[0]}" if len(seeds) == 1 else f"{seeds[0]}-{seeds[-1]}") if seeds else "-"
    title = esc(paper.title)
    title = f"<a href='{esc(paper.url, quote=True)}'>{title}</a>" if paper.url else title
    link = f"<a href='{esc(paper.slug)}/report.html'>{esc(paper.slug)}</a>" if has_report else esc(paper.slug)
    return (f"<tr><td>{link}</td><td>{title}</td><td>{esc(paper.status)}</td>"
            f"<td>{esc(', '.join(presets) or '-')}</td><td>{esc(seeds_txt)}</td><td>{badges}</td></tr>")

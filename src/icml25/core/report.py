"""Aggregate seeds, decide claims, and write the reports.

For each paper run, ``reports/<slug>/`` gets ``metrics.json`` (config, per-seed
metrics, summaries, claims), the PNG figures its experiments draw, and
``report.md`` / ``report.html``. ``reports/index.html`` lists every paper of the
registry with the latest verdicts recorded in the store.
"""

from __future__ import annotations

import html
import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.table import Table

from icml25.core.catalog import CATALOG
from icml25.core.experiment import Experiment, ExperimentConfig, Metrics, config_to_dict
from icml25.core.paper import Claim, Paper, Summary, Verdict
from icml25.core.registry import load_reproduction
from icml25.core.runner import Job
from icml25.core.store import Store

VERDICT_STYLE = {"PASS": "bold green", "FAIL": "bold red", "INCONCLUSIVE": "yellow"}
VERDICT_COLOUR = {"PASS": "#1a7f37", "FAIL": "#cf222e", "INCONCLUSIVE": "#9a6700"}


@dataclass
class ExperimentResult:
    experiment: Experiment
    config: ExperimentConfig
    seeds: list[int]
    per_seed: list[Metrics]
    failures: dict[int, str] = field(default_factory=dict)
    wall_s: float = 0.0

    def summary(self, metric: str) -> Summary:
        values = [m[metric] for m in self.per_seed if isinstance(m.get(metric), float)]
        return Summary.of(values)

    def scalar_summaries(self) -> dict[str, Summary]:
        names = sorted({k for m in self.per_seed for k, v in m.items() if isinstance(v, float)})
        return {k: self.summary(k) for k in names}


@dataclass(frozen=True)
class ClaimResult:
    claim: Claim
    summary: Summary
    verdict: Verdict


@dataclass
class PaperResult:
    paper: Paper
    preset: str
    experiments: list[ExperimentResult]
    claims: list[ClaimResult]

    @property
    def n_failed_jobs(self) -> int:
        return sum(len(e.failures) for e in self.experiments)


def collect(store: Store, jobs: Sequence[Job]) -> list[PaperResult]:
    """Read the planned jobs back from the store and decide every claim."""
    results: list[PaperResult] = []
    by_paper: dict[str, list[Job]] = {}
    for job in jobs:
        by_paper.setdefault(job.paper, []).append(job)
    for slug, paper_jobs in by_paper.items():
        repro = load_reproduction(slug)
        exp_results: dict[str, ExperimentResult] = {}
        for job in sorted(paper_jobs, key=lambda j: (j.experiment, j.seed)):
            exp = repro.experiment(job.experiment)
            res = exp_results.setdefault(job.experiment, ExperimentResult(exp, exp.config(**job.config), [], []))
            record = store.get(job.key)
            if record is None:
                res.failures[job.seed] = "not run"
            elif record.status != "ok":
                res.failures[job.seed] = record.error or "failed"
            else:
                res.seeds.append(job.seed)
                res.per_seed.append(record.metrics or {})
                res.wall_s += record.wall_s
        claims = []
        for claim in repro.claims:
            if claim.experiment not in exp_results:
                continue
            summary = exp_results[claim.experiment].summary(claim.metric)
            claims.append(ClaimResult(claim, summary, claim.evaluate(summary)))
        results.append(PaperResult(repro.paper, paper_jobs[0].preset, list(exp_results.values()), claims))
    return results


def claims_table(results: Sequence[PaperResult]) -> Table:
    table = Table(title="Claims", show_lines=False)
    for col in ("paper", "claim", "paper's number", "ours (mean ± 95% CI)", "check", "verdict"):
        table.add_column(col, overflow="fold")
    for res in results:
        for cr in res.claims:
            table.add_row(res.paper.slug, cr.claim.id, cr.claim.paper_value, str(cr.summary), cr.claim.check_text,
                          f"[{VERDICT_STYLE[cr.verdict]}]{cr.verdict}[/]")
        if res.n_failed_jobs:
            table.add_row(res.paper.slug, "(jobs)", "", f"{res.n_failed_jobs} failed", "", "[bold red]ERROR[/]")
    return table


def _finite(x: float) -> float | None:
    return x if isinstance(x, float) and math.isfinite(x) else None


def write_paper_report(result: PaperResult, out_root: Path) -> Path:
    """Write ``out_root/<slug>/`` (metrics.json, figures, report.md, report.html)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = out_root / result.paper.slug
    out.mkdir(parents=True, exist_ok=True)
    figures: list[Path] = []
    figure_errors: list[str] = []
    for exp in result.experiments:
        if exp.experiment.figures and exp.per_seed:
            try:
                figures += [Path(p) for p in exp.experiment.figures(exp.per_seed, exp.config, out)]
            except Exception as err:  # noqa: BLE001 - a broken plot must not hide the numbers
                figure_errors.append(f"{exp.experiment.name}: {type(err).__name__}: {err}")
            finally:
                plt.close("all")

    payload: dict[str, Any] = {
        "paper": result.paper.slug,
        "title": result.paper.title,
        "preset": result.preset,
        "written_at": time.strftime("%Y-%m-%d %H:%M:%S"),
        "experiments": {
            e.experiment.name: {
                "config": config_to_dict(e.config),
                "seeds": e.seeds,
                "per_seed": e.per_seed,
                "failures": {str(k): v for k, v in e.failures.items()},
                "summary": {k: {"mean": _finite(s.mean), "lo": _finite(s.lo), "hi": _finite(s.hi), "n": s.n}
                            for k, s in e.scalar_summaries().items()},
                "wall_s": e.wall_s,
            }
            for e in result.experiments
        },
        "claims": [
            {"id": c.claim.id, "statement": c.claim.statement, "paper": c.claim.paper_value,
             "check": c.claim.check_text, "mean": _finite(c.summary.mean), "lo": _finite(c.summary.lo),
             "hi": _finite(c.summary.hi), "n": c.summary.n, "verdict": c.verdict}
            for c in result.claims
        ],
    }
    (out / "metrics.json").write_text(json.dumps(payload, indent=2))

    md = [f"# {result.paper.slug}: {result.paper.title}", "",
          f"Preset `{result.preset}`. Written {payload['written_at']}.", "",
          "| claim | statement | paper | ours (mean ± 95% CI) | check | verdict |", "|---|---|---|---|---|---|"]
    for c in result.claims:
        md.append(f"| {c.claim.id} | {c.claim.statement} | {c.claim.paper_value} | {c.summary} | "
                  f"`{c.claim.check_text}` | **{c.verdict}** |")
    for e in result.experiments:
        md += ["", f"## Experiment `{e.experiment.name}`", "", e.experiment.description, "",
               f"Seeds: {e.seeds} ({e.wall_s:.1f} s of compute in total).", ""]
        if e.failures:
            md += ["Failed jobs:", ""] + [f"- seed {s}: `{msg.strip().splitlines()[-1]}`"
                                          for s, msg in e.failures.items()] + [""]
        md += ["| metric | mean ± 95% CI |", "|---|---|"]
        md += [f"| {k} | {s} |" for k, s in e.scalar_summaries().items()]
    if figures:
        md += ["", "## Figures", ""] + [f"![{p.stem}]({p.name})" for p in figures]
    if figure_errors:
        md += ["", "Figures that could not be drawn:", ""] + [f"- {e}" for e in figure_errors]
    (out / "report.md").write_text("\n".join(md) + "\n")
    (out / "report.html").write_text(_paper_html(result, figures))
    return out


def _badge(verdict: str) -> str:
    colour = VERDICT_COLOUR.get(verdict, "#57606a")
    return f'<span class="badge" style="background:{colour}">{html.escape(verdict)}</span>'


_CSS = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#1f2328}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #d0d7de;padding:6px 8px;text-align:left;
vertical-align:top}th{background:#f6f8fa}.badge{color:#fff;border-radius:4px;padding:1px 6px;margin:1px;
font-size:85%;display:inline-block}img{max-width:100%;margin:1em 0}.muted{color:#57606a}"""


def _paper_html(result: PaperResult, figures: list[Path]) -> str:
    rows = "".join(
        f"<tr><td>{html.escape(c.claim.id)}</td><td>{html.escape(c.claim.statement)}</td>"
        f"<td>{html.escape(c.claim.paper_value)}</td><td>{html.escape(str(c.summary))}</td>"
        f"<td><code>{html.escape(c.claim.check_text)}</code></td><td>{_badge(c.verdict)}</td></tr>"
        for c in result.claims
    )
    imgs = "".join(f'<img src="{html.escape(p.name)}" alt="{html.escape(p.stem)}">' for p in figures)
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(result.paper.slug)}</title>"
            f"<style>{_CSS}</style></head><body><p><a href='../index.html'>all papers</a></p>"
            f"<h1>{html.escape(result.paper.title)}</h1><p class='muted'>preset {html.escape(result.preset)}</p>"
            f"<table><tr><th>claim</th><th>statement</th><th>paper</th><th>ours</th><th>check</th>"
            f"<th>verdict</th></tr>{rows}</table>{imgs}</body></html>")


def write_index(store: Store, out_root: Path) -> Path:
    """Write ``out_root/index.html``: every registered paper with its latest verdicts."""
    out_root.mkdir(parents=True, exist_ok=True)
    verdicts = store.verdicts()
    rows = []
    for paper in CATALOG:
        claims = verdicts.get(paper.slug, {})
        badges = " ".join(_badge(v["verdict"]) for _, v in sorted(claims.items())) or "<span class='muted'>-</span>"
        title = html.escape(paper.title)
        title = f"<a href='{paper.url}'>{title}</a>" if paper.url else title
        has_report = (out_root / paper.slug / "report.html").exists()
        link = f"<a href='{paper.slug}/report.html'>{paper.slug}</a>" if has_report else paper.slug
        rows.append(f"<tr><td>{link}</td><td>{title}</td><td>{html.escape(paper.status)}</td><td>{badges}</td></tr>")
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>icml25 reproductions</title>"
            f"<style>{_CSS}</style></head><body><h1>icml25: ICML 2025 papers, reproduced</h1>"
            f"<p class='muted'>Latest verdict of every claim, from the results store at "
            f"{html.escape(str(store.path))}; written {time.strftime('%Y-%m-%d %H:%M:%S')}.</p>"
            f"<table><tr><th>paper</th><th>title</th><th>status</th><th>claims</th></tr>{''.join(rows)}</table>"
            f"</body></html>")
    path = out_root / "index.html"
    path.write_text(page)
    return path


def record_verdicts(store: Store, results: Sequence[PaperResult]) -> None:
    for res in results:
        store.put_verdicts(res.paper.slug, res.preset, [
            (c.claim.id, c.verdict, c.summary.mean, c.summary.lo, c.summary.hi, c.summary.n) for c in res.claims
        ])

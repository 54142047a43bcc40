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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.table import Table

from icml25.core.registry import all_papers
from icml25.core.experiment import Experiment, ExperimentConfig, Metrics, config_to_dict
from icml25.core.paper import VERDICTS, Claim, Decision, Paper, Summary, Verdict, metric_values
from icml25.core.registry import load_reproduction
from icml25.core.runner import Job
from icml25.core.store import Store

VERDICT_STYLE = {"PASS": "bold green", "FAIL": "bold red", "TIE": "cyan", "INCONCLUSIVE": "yellow"}
VERDICT_COLOUR = {"PASS": "#1a7f37", "FAIL": "#cf222e", "TIE": "#0969da", "INCONCLUSIVE": "#9a6700"}


@dataclass
class ExperimentResult:
    experiment: Experiment
    config: ExperimentConfig
    seeds: list[int]
    per_seed: list[Metrics]
    failures: dict[int, str] = field(default_factory=dict)
    wall_s: float = 0.0
    schedule: tuple[int, ...] | None = None

    def summary(self, metric: str) -> Summary:
        values = [m[metric] for m in self.per_seed if isinstance(m.get(metric), float)]
        return Summary.of(values)

    def scalar_summaries(self) -> dict[str, Summary]:
        names = sorted({k for m in self.per_seed for k, v in m.items() if isinstance(v, float)})
        return {k: self.summary(k) for k in names}


@dataclass(frozen=True)
class ClaimResult:
    claim: Claim
    decision: Decision

    @property
    def verdict(self) -> Verdict:
        return self.decision.verdict

    def as_row(self) -> dict[str, Any]:
        """The decision as a flat, JSON-able row (what the store and metrics.json keep)."""
        d = self.decision
        return {"claim": self.claim.id, "verdict": d.verdict, "mean": _finite(d.mean), "lo": _finite(d.lo),
                "hi": _finite(d.hi), "n": d.n, "level": _finite(d.level), "reason": d.reason,
                "seeds_to_decide": d.seeds_to_decide, "check": self.claim.check_text,
                "paper_value": self.claim.paper_value}


def seeds_text(d: Decision) -> str:
    """Seeds used, and for INCONCLUSIVE the rough number that would decide the claim."""
    if d.verdict == "INCONCLUSIVE" and d.seeds_to_decide:
        return f"{d.n} (~{d.seeds_to_decide} to decide)"
    return str(d.n)


@dataclass
class PaperResult:
    paper: Paper
    preset: str
    experiments: list[ExperimentResult]
    claims: list[ClaimResult]

    @property
    def n_failed_jobs(self) -> int:
        return sum(len(e.failures) for e in self.experiments)


def collect(store: Store, jobs: Sequence[Job],
            schedules: Mapping[tuple[str, str, str], tuple[int, ...]] | None = None) -> list[PaperResult]:
    """Read the planned jobs back from the store and decide every claim.

    ``schedules`` gives the looks of each experiment, keyed by (paper, experiment,
    config hash), as planned by :func:`icml25.core.runner.schedules`; without it each
    experiment is one look at the seeds it has.
    """
    results: list[PaperResult] = []
    by_paper: dict[str, list[Job]] = {}
    for job in {j.key: j for j in jobs}.values():
        by_paper.setdefault(job.paper, []).append(job)
    for slug, paper_jobs in by_paper.items():
        repro = load_reproduction(slug)
        exp_results: dict[str, ExperimentResult] = {}
        for job in sorted(paper_jobs, key=lambda j: (j.experiment, j.seed)):
            exp = repro.experiment(job.experiment)
            res = exp_results.get(job.experiment)
            if res is None:
                schedule = (schedules or {}).get((job.paper, job.experiment, job.config_hash))
                res = exp_results[job.experiment] = ExperimentResult(exp, exp.config(**job.config), [], [],
                                                                     schedule=schedule)
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
            exp_res = exp_results.get(claim.experiment)
            if exp_res is None:
                continue
            decision = claim.assess(metric_values(exp_res.per_seed, claim.metric), exp_res.schedule)
            claims.append(ClaimResult(claim, decision))
        results.append(PaperResult(repro.paper, paper_jobs[0].preset, list(exp_results.values()), claims))
    return results


def verdict_counts(results: Sequence[PaperResult]) -> dict[str, int]:
    counts = {v: 0 for v in VERDICTS}
    for res in results:
        for c in res.claims:
            counts[c.verdict] += 1
    return counts


def claims_table(results: Sequence[PaperResult]) -> Table:
    table = Table(title="Claims", show_lines=False)
    for col in ("paper", "claim", "paper's number", "ours: mean [interval]", "seeds", "check", "verdict"):
        table.add_column(col, overflow="fold")
    for res in results:
        for cr in res.claims:
            d = cr.decision
            table.add_row(res.paper.slug, cr.claim.id, cr.claim.paper_value, d.interval, seeds_text(d),
                          cr.claim.check_text, f"[{VERDICT_STYLE[d.verdict]}]{d.verdict}[/]")
        if res.n_failed_jobs:
            table.add_row(res.paper.slug, "(jobs)", "", f"{res.n_failed_jobs} failed", "", "", "[bold red]ERROR[/]")
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
                "looks": list(e.schedule) if e.schedule else None,
            }
            for e in result.experiments
        },
        "claims": [
            {"id": c.claim.id, "statement": c.claim.statement, "paper": c.claim.paper_value,
             "aggregate": c.claim.aggregate, "resolution": c.claim.resolution, **c.as_row()}
            for c in result.claims
        ],
    }
    (out / "metrics.json").write_text(json.dumps(payload, indent=2))

    md = [f"# {result.paper.slug}: {result.paper.title}", "",
          f"Preset `{result.preset}`. Written {payload['written_at']}.", "",
          "| claim | statement | paper | ours: mean [interval] | seeds | check | verdict |",
          "|---|---|---|---|---|---|---|"]
    for c in result.claims:
        md.append(f"| {c.claim.id} | {_md(c.claim.statement)} | {_md(c.claim.paper_value)} | {c.decision.interval} | "
                  f"{seeds_text(c.decision)} | `{c.claim.check_text}` | **{c.verdict}** ({_md(c.decision.reason)}) |")
    for e in result.experiments:
        md += ["", f"## Experiment `{e.experiment.name}`", "", e.experiment.description, "",
               f"Seeds: {e.seeds} ({e.wall_s:.1f} s of compute in total)"
               + (f"; planned looks {list(e.schedule)}." if e.schedule else "."), ""]
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
        f"<td>{html.escape(c.claim.paper_value)}</td><td>{html.escape(c.decision.interval)}</td>"
        f"<td>{html.escape(seeds_text(c.decision))}</td>"
        f"<td><code>{html.escape(c.claim.check_text)}</code></td>"
        f"<td title='{html.escape(c.decision.reason, quote=True)}'>{_badge(c.verdict)}</td></tr>"
        for c in result.claims
    )
    imgs = "".join(f'<img src="{html.escape(p.name)}" alt="{html.escape(p.stem)}">' for p in figures)
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(result.paper.slug)}</title>"
            f"<style>{_CSS}</style></head><body><p><a href='../index.html'>all papers</a></p>"
            f"<h1>{html.escape(result.paper.title)}</h1><p class='muted'>preset {html.escape(result.preset)}</p>"
            f"<table><tr><th>claim</th><th>statement</th><th>paper</th><th>ours</th><th>seeds</th><th>check</th>"
            f"<th>verdict</th></tr>{rows}</table>{imgs}</body></html>")


def write_index(store: Store, out_root: Path) -> Path:
    """Write ``out_root/index.html``: every registered paper with its latest verdicts."""
    out_root.mkdir(parents=True, exist_ok=True)
    verdicts = store.verdicts()
    rows = []
    for paper in all_papers():
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
        store.put_verdicts(res.paper.slug, res.preset, [c.as_row() for c in res.claims])


def _md(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def results_markdown(store: Store, preset: str = "quick") -> str:
    """``docs/RESULTS.md``: every registered claim with its latest decision at ``preset``.

    Claims that have no decision recorded at that preset are listed as ``not run``.
    """
    recorded = store.verdicts(preset)
    counts = {v: 0 for v in VERDICTS}
    counts["not run"] = 0
    body: list[str] = []
    total = 0
    for paper in all_papers():
        if not paper.runnable:
            continue
        repro = load_reproduction(paper.slug)
        rows = recorded.get(paper.slug, {})
        body += ["", f"## `{paper.slug}`: {_md(paper.title)} ({paper.status})", "",
                 "| claim | paper's number | ours: mean [interval] | seeds | check | verdict |",
                 "|---|---|---|---|---|---|"]
        for claim in repro.claims:
            total += 1
            row = rows.get(claim.id)
            if row is None:
                counts["not run"] += 1
                body.append(f"| `{claim.id}` | {_md(claim.paper_value)} | - | - | `{claim.check_text}` | not run |")
                continue
            d = Decision(row["verdict"], int(row["n"] or 0), _nan(row["mean"]), _nan(row["lo"]), _nan(row["hi"]),
                         _nan(row.get("level")), row.get("reason", ""), row.get("seeds_to_decide"))
            counts[d.verdict] += 1
            body.append(f"| `{claim.id}` | {_md(claim.paper_value)} | {d.interval} | {seeds_text(d)} | "
                        f"`{claim.check_text}` | **{d.verdict}** |")
    summary = ", ".join(f"{k} {n}" for k, n in counts.items() if n or k in VERDICTS)
    head = [f"# Results at the `{preset}` preset", "",
            f"Every registered claim of every runnable paper ({total} claims), with its latest decision in the "
            f"results store. Generated by `icml25 results --markdown`; do not edit by hand.", "",
            f"**Verdicts:** {summary}.", "",
            "`ours` is the mean over seeds and, for `mean` claims, the group-sequential confidence interval at "
            "the look where the claim was decided (see the README). `seeds` is the number of seeds used; for "
            "INCONCLUSIVE, `~N to decide` is a rough estimate of the seeds that would decide it."]
    return "\n".join(head + body) + "\n"


def _nan(x: Any) -> float:
    return math.nan if x is None else float(x)

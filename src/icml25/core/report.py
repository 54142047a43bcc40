"""Aggregate seeds, decide claims, and write the reports.

For each paper run, ``reports/<slug>/`` gets ``metrics.json`` (config, per-seed
metrics, summaries, claims), the PNG figures its experiments draw, and
``report.md`` / ``report.html``. ``reports/index.html`` lists every paper of the
registry with the latest verdicts recorded in the store.
"""

from __future__ import annotations

import contextlib
import html
import json
import math
import os
import shutil
import signal
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text

from icml25.core.experiment import Experiment, ExperimentConfig, Metrics, config_to_dict
from icml25.core.paper import FIDELITIES, VERDICTS, Claim, Decision, Paper, Summary, Verdict, decide_claims
from icml25.core.registry import PAPERS_ROOT, all_papers, load_reproduction
from icml25.core.runner import Job
from icml25.core.store import Store

DOCS_ROOT = Path(__file__).resolve().parents[3] / "docs" / "papers"
"""Where the per-paper docs live in a source checkout (links are omitted when they are absent)."""

VERDICT_STYLE = {"PASS": "bold green", "FAIL": "bold red", "TIE": "cyan", "INCONCLUSIVE": "yellow",
                 "NOT_TESTED": "dim"}
VERDICT_COLOUR = {"PASS": "#1a7f37", "FAIL": "#cf222e", "TIE": "#0969da", "INCONCLUSIVE": "#9a6700",
                  "NOT_TESTED": "#6e7781"}


@dataclass
class ExperimentResult:
    experiment: Experiment
    config: ExperimentConfig
    seeds: list[int]
    per_seed: list[Metrics]
    failures: dict[int, str] = field(default_factory=dict)
    wall_s: float = 0.0
    schedule: tuple[int, ...] | None = None
    peak_mem_mb: float = 0.0
    code_hash: str = ""
    libraries: dict[str, str] = field(default_factory=dict)

    def summary(self, metric: str) -> Summary:
        values = [m[metric] for m in self.per_seed if isinstance(m.get(metric), float)]
        return Summary.of(values)

    def scalar_summaries(self) -> dict[str, Summary]:
        names = sorted({k for m in self.per_seed for k, v in m.items() if isinstance(v, float)})
        return {k: self.summary(k) for k in names}


@dataclass(frozen=True)
class ClaimResult:
    """One claim's decision, with the fidelity of the run it was decided on."""

    claim: Claim
    decision: Decision
    fidelity: str = ""
    fidelity_note: str = ""
    code_hash: str = ""
    machine: Mapping[str, str] = field(default_factory=dict)

    @property
    def verdict(self) -> Verdict:
        return self.decision.verdict

    @property
    def group(self) -> str:
        """Where the claim is listed and counted: ``paper@<fidelity>``, ``ours`` or ``check``."""
        return claim_group(self.claim.kind, self.fidelity)

    def as_row(self) -> dict[str, Any]:
        """The decision as a flat, JSON-able row (what the store and metrics.json keep)."""
        d, c = self.decision, self.claim
        return {"claim": c.id, "verdict": d.verdict, "mean": _finite(d.mean), "lo": _finite(d.lo),
                "hi": _finite(d.hi), "n": d.n, "level": _finite(d.level), "reason": d.reason,
                "reading": d.reading, "seeds_to_decide": d.seeds_to_decide, "check": c.check_text,
                "paper_value": c.paper_value, "kind": c.kind, "source": c.source, "fair_at": c.fair_at,
                "experiment": c.experiment, "fidelity": self.fidelity, "fidelity_note": self.fidelity_note,
                "resolution_reason": c.resolution_reason, "code_fingerprint": self.code_hash,
                "machine": dict(self.machine)}


GROUP_ORDER: tuple[str, ...] = tuple(f"paper@{f}" for f in reversed(FIDELITIES)) + ("ours", "check")
"""Order in which reports list claims: paper claims by fidelity (paper first), then ours, then checks."""

GROUP_TITLE = {"paper@paper": "Paper claims at paper fidelity", "paper@reduced": "Paper claims at reduced fidelity",
               "paper@mechanism": "Paper claims at mechanism fidelity", "ours": "Our claims (beyond the paper)",
               "check": "Checks (preconditions, sanity, harness, by construction)"}


def claim_group(kind: str, fidelity: str) -> str:
    """The report group of a claim of ``kind`` decided at ``fidelity``."""
    return f"paper@{fidelity or 'mechanism'}" if kind == "paper" else kind


def group_rank(group: str) -> int:
    return GROUP_ORDER.index(group) if group in GROUP_ORDER else len(GROUP_ORDER)


def verdict_text(d: Decision) -> str:
    """The verdict as shown in tables: NOT_TESTED says what the values would read."""
    if d.verdict == "NOT_TESTED" and d.reading:
        return f"NOT_TESTED (reads {d.reading})"
    return d.verdict


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
                res.peak_mem_mb = max(res.peak_mem_mb, record.peak_mem_mb)
                res.code_hash, res.libraries = job.code_hash, record.libraries
        preset = paper_jobs[0].preset
        fidelity = {name: r.experiment.fidelity_of(preset) for name, r in exp_results.items()}
        decisions = decide_claims(repro.claims, {name: r.per_seed for name, r in exp_results.items()},
                                  {name: r.schedule for name, r in exp_results.items()}, fidelity)
        claims = [ClaimResult(c, decisions[c.id], fidelity[c.experiment].level, fidelity[c.experiment].note,
                              exp_results[c.experiment].code_hash, machine_of(exp_results[c.experiment].libraries))
                  for c in repro.claims if c.id in decisions]
        results.append(PaperResult(repro.paper, preset, list(exp_results.values()), claims))
    return results


def machine_of(libraries: Mapping[str, str]) -> dict[str, str]:
    """The part of a job's recorded libraries that says where it computed (CPU, torch kernels, BLAS, threads)."""
    from icml25.core.worker import MACHINE_KEYS

    return {k: str(libraries[k]) for k in MACHINE_KEYS if k in libraries}


def machine_text(machine: Mapping[str, str]) -> str:
    """``"x86_64, torch AVX512 x2, BLAS openblas 0.3 (SkylakeX) x2"``, or ``""``."""
    if not machine:
        return ""
    parts = [machine.get("cpu", "?")]
    if "torch_cpu_capability" in machine:
        parts.append(f"torch {machine['torch_cpu_capability']} x{machine.get('torch_threads', '?')}")
    if "blas" in machine:
        parts.append(f"BLAS {machine['blas']} x{machine.get('blas_threads', '?')}")
    return ", ".join(parts)


def verdict_counts(results: Sequence[PaperResult]) -> dict[str, int]:
    """Every claim by verdict (all kinds and fidelities together)."""
    counts = {v: 0 for v in VERDICTS}
    for res in results:
        for c in res.claims:
            counts[c.verdict] += 1
    return counts


def group_counts(rows: Iterable[tuple[str, str]]) -> dict[str, dict[str, int]]:
    """``{group: {verdict: n}}`` over ``(group, verdict)`` pairs, groups in report order."""
    out: dict[str, dict[str, int]] = {}
    for group, verdict in rows:
        out.setdefault(group, {v: 0 for v in VERDICTS})
        out[group][verdict] = out[group].get(verdict, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: group_rank(kv[0])))


def headline(counts: Mapping[str, Mapping[str, int]]) -> str:
    """One line: paper claims at paper fidelity by verdict first, then the other groups counted apart."""
    def part(group: str) -> str:
        c = counts.get(group, {})
        total = sum(c.values())
        inner = ", ".join(f"{n} {v}" for v, n in c.items() if n) or "none"
        return f"{GROUP_TITLE.get(group, group).lower()}: {total} ({inner})"

    main = part("paper@paper")
    rest = [part(g) for g in counts if g != "paper@paper"]
    return main[0].upper() + main[1:] + (". Apart: " + "; ".join(rest) + "." if rest else ".")


def claims_table(results: Sequence[PaperResult]) -> Table:
    """The terminal table: per paper, paper claims by fidelity first, then ours, then checks."""
    table = Table(title="Claims", show_lines=False)
    for col in ("paper", "claim", "kind @ fidelity", "paper's number", "ours: mean [interval]", "seeds", "check",
                "verdict"):
        table.add_column(col, overflow="fold")
    for res in results:
        for cr in sorted(res.claims, key=lambda c: group_rank(c.group)):
            d = cr.decision
            group = f"paper @ {cr.fidelity}" if cr.claim.kind == "paper" else cr.claim.kind
            cells = (res.paper.slug, cr.claim.id, group, cr.claim.paper_value, d.interval, seeds_text(d),
                     cr.claim.check_text)
            verdict = Text(verdict_text(d), style=VERDICT_STYLE[d.verdict])
            if d.verdict == "NOT_TESTED":
                verdict.append(f": {d.reason}", style="dim")
            table.add_row(*(Text(str(c)) for c in cells), verdict)
        if res.n_failed_jobs:
            table.add_row(res.paper.slug, "(jobs)", "", "", f"{res.n_failed_jobs} failed", "", "",
                          "[bold red]ERROR[/]")
    return table


def _finite(x: float) -> float | None:
    return x if isinstance(x, float) and math.isfinite(x) else None


def _paper_payload(result: PaperResult, figures: list[Path], figure_errors: list[str]) -> dict[str, Any]:
    """Everything a paper's report shows, as JSON (``metrics.json``)."""
    from icml25.core.runner import package_version

    return {
        "paper": result.paper.slug,
        "title": result.paper.title,
        "method": result.paper.method,
        "method_note": result.paper.method_note,
        "reproduction": result.paper.reproduction,
        "reproduction_note": result.paper.reproduction_note,
        "code": result.paper.code,
        "url": result.paper.url or None,
        "preset": result.preset,
        "written_at": time.strftime("%Y-%m-%d %H:%M:%S"),
        "package_version": package_version(),
        "failed_jobs": result.n_failed_jobs,
        "experiments": {
            e.experiment.name: {
                "description": e.experiment.description,
                "config": config_to_dict(e.config),
                "seeds": e.seeds,
                "per_seed": e.per_seed,
                "failures": {str(k): v for k, v in e.failures.items()},
                "summary": {k: {"mean": _finite(s.mean), "lo": _finite(s.lo), "hi": _finite(s.hi), "n": s.n}
                            for k, s in e.scalar_summaries().items()},
                "wall_s": e.wall_s,
                "peak_mem_mb": e.peak_mem_mb,
                "code_fingerprint": e.code_hash,
                "libraries": e.libraries,
                "looks": list(e.schedule) if e.schedule else None,
            }
            for e in result.experiments
        },
        "claims": [
            {"id": c.claim.id, "statement": c.claim.statement, "paper": c.claim.paper_value,
             "aggregate": c.claim.aggregate, "resolution": c.claim.resolution, **c.as_row()}
            for c in result.claims
        ],
        "figures": [{"file": p.name, "caption": _caption(p)} for p in figures],
        "figure_errors": figure_errors,
    }


def _caption(path: Path) -> str:
    return path.stem.replace("_", " ")


def _decision_of(row: Mapping[str, Any]) -> Decision:
    return Decision(row["verdict"], int(row.get("n") or 0), _nan(row.get("mean")), _nan(row.get("lo")),
                    _nan(row.get("hi")), _nan(row.get("level")), row.get("reason", ""), row.get("seeds_to_decide"),
                    row.get("reading") or "")


def _row_group(row: Mapping[str, Any]) -> str:
    return claim_group(row.get("kind") or "paper", row.get("fidelity") or "")


def _grouped(rows: Iterable[Mapping[str, Any]]) -> list[tuple[str, list[Mapping[str, Any]]]]:
    """Rows split into report groups, in report order (rows keep their order within a group)."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        groups.setdefault(_row_group(row), []).append(row)
    return sorted(groups.items(), key=lambda kv: group_rank(kv[0]))


def _group_heading(group: str, rows: Sequence[Mapping[str, Any]]) -> str:
    title = GROUP_TITLE.get(group, group)
    notes = sorted({str(r.get("fidelity_note") or "") for r in rows} - {""})
    return title + (f" ({'; '.join(notes)})" if group.startswith("paper@") and notes else "")


def write_paper_report(result: PaperResult, out_root: Path) -> Path:
    """Write ``out_root/<slug>/`` (metrics.json, figures, report.md, report.html).

    A run with failed jobs never replaces the last good report: when the folder holds
    the report of a run without failures, its metrics and figures are kept, the
    failures go to ``failed.json``, and both pages show the failure above the last
    good results, marked as such. Figures that the current run did not draw are removed.

    The folder is written as a whole: into a temporary copy beside it, then moved into
    place, so an interrupted write never leaves an empty or half-written report.
    """
    final = out_root / result.paper.slug
    with _replaced_atomically(final) as out:
        _write_paper_report(result, out)
    return final


@contextlib.contextmanager
def _replaced_atomically(final: Path) -> Iterator[Path]:
    """Yield a working copy of folder ``final`` (0o755); on success, swap it into place.

    The swap is two renames with SIGINT and SIGTERM held back, so an interrupt lands before or after it,
    never between; on any error the working copy is removed and ``final`` is left as it was.
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    work = final.parent / f".{final.name}.tmp-{os.getpid()}"
    old = final.parent / f".{final.name}.old-{os.getpid()}"
    for leftover in (work, old):
        shutil.rmtree(leftover, ignore_errors=True)
    if final.is_dir():
        shutil.copytree(final, work)
    else:
        work.mkdir()
    os.chmod(work, 0o755)
    try:
        yield work
        blocked = {signal.SIGINT, signal.SIGTERM}
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
        try:
            if final.exists():
                final.rename(old)
            work.rename(final)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def _write_atomically(path: Path, text: str) -> None:
    """Write ``path`` through a temporary file in the same folder and an atomic rename (mode 0o644)."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        tmp.write_text(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _write_paper_report(result: PaperResult, out: Path) -> None:
    """The body of :func:`write_paper_report`, in the working folder ``out``."""
    previous = _read_json(out / "metrics.json")
    if result.n_failed_jobs and previous is not None and not previous.get("failed_jobs"):
        failures = {e.experiment.name: {str(k): v for k, v in e.failures.items()}
                    for e in result.experiments if e.failures}
        failure = {"written_at": time.strftime("%Y-%m-%d %H:%M:%S"), "preset": result.preset,
                   "failed_jobs": result.n_failed_jobs, "failures": failures}
        (out / "failed.json").write_text(json.dumps(failure, indent=2))
        _write_pages(out, previous, failure)
        return

    figures, figure_errors = _draw_figures(result, out)
    for stale in out.glob("*.png"):
        if stale.name not in {p.name for p in figures}:
            stale.unlink()
    (out / "failed.json").unlink(missing_ok=True)
    payload = _paper_payload(result, figures, figure_errors)
    (out / "metrics.json").write_text(json.dumps(payload, indent=2))
    _write_pages(out, payload, None)


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _draw_figures(result: PaperResult, out: Path) -> tuple[list[Path], list[str]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figures: list[Path] = []
    errors: list[str] = []
    for exp in result.experiments:
        if exp.experiment.figures and exp.per_seed:
            try:
                figures += [Path(p) for p in exp.experiment.figures(exp.per_seed, exp.config, out)]
            except Exception as err:  # noqa: BLE001 - a broken plot must not hide the numbers
                errors.append(f"{exp.experiment.name}: {type(err).__name__}: {err}")
            finally:
                plt.close("all")
    return figures, errors


def _last_line(text: str) -> str:
    lines = str(text).strip().splitlines()
    return lines[-1] if lines else "?"


def _write_pages(out: Path, payload: Mapping[str, Any], failure: Mapping[str, Any] | None) -> None:
    (out / "report.md").write_text(_paper_markdown(payload, failure))
    (out / "report.html").write_text(_paper_html(payload, failure))


def _paper_markdown(payload: Mapping[str, Any], failure: Mapping[str, Any] | None) -> str:
    md = [f"# {payload['paper']}: {payload['title']}", ""]
    if failure:
        md += [f"**The latest run ({failure['written_at']}, preset `{failure['preset']}`) had "
               f"{failure['failed_jobs']} failed job(s); the results below are from the last good run.**", ""]
        md += [f"- {exp} seed {seed}: `{_md(_last_line(msg))}`" for exp, fails in failure["failures"].items()
               for seed, msg in fails.items()] + [""]
    md += [f"Preset `{payload['preset']}`. Written {payload['written_at']} by icml25 "
           f"{payload.get('package_version', '?')}.", "",
           f"Method: **{payload.get('method', '?')}** ({_md(payload.get('method_note', ''))}). "
           f"Reproduction: **{payload.get('reproduction', '?')}** ({_md(payload.get('reproduction_note', ''))}).", "",
           "**" + headline(group_counts((_row_group(c), c["verdict"]) for c in payload["claims"])) + "**"]
    for group, rows in _grouped(payload["claims"]):
        md += ["", f"### {_md(_group_heading(group, rows))}", "",
               "| claim | statement | paper (source) | ours: mean [interval] | seeds | check | verdict |",
               "|---|---|---|---|---|---|---|"]
        for c in rows:
            d = _decision_of(c)
            src = f" ({c['source']})" if c.get("source") else ""
            res = f"; tie: {c['resolution_reason']}" if c.get("resolution_reason") else ""
            md.append(f"| {c['id']} | {_md(c['statement'])} | {_md(c['paper'] + src)} | {d.interval} | "
                      f"{seeds_text(d)} | `{c['check']}`{_md(res)} | **{verdict_text(d)}** ({_md(d.reason)}) |")
    for name, e in payload["experiments"].items():
        md += ["", f"## Experiment `{name}`", "", e.get("description", ""), "",
               f"Seeds: {e['seeds']} ({e['wall_s']:.1f} s of compute in total, peak memory "
               f"{e.get('peak_mem_mb', 0):.0f} MB)" + (f"; planned looks {e['looks']}." if e.get("looks") else "."),
               "", f"Code fingerprint `{e.get('code_fingerprint', '?')}`; "
               + ", ".join(f"{k} {v}" for k, v in (e.get("libraries") or {}).items()) + ".", ""]
        if e["failures"]:
            md += ["Failed jobs:", ""] + [f"- seed {s}: `{_md(_last_line(msg))}`"
                                          for s, msg in e["failures"].items()] + [""]
        md += ["| metric | mean ± 95% CI |", "|---|---|"]
        md += [f"| {k} | {_summary_text(v)} |" for k, v in e["summary"].items()]
    if payload.get("figures"):
        md += ["", "## Figures", ""] + [f"![{f['caption']}]({f['file']})\n\n*{f['caption']}*"
                                        for f in payload["figures"]]
    if payload.get("figure_errors"):
        md += ["", "Figures that could not be drawn:", ""] + [f"- {e}" for e in payload["figure_errors"]]
    return "\n".join(md) + "\n"


def _summary_text(v: Mapping[str, Any]) -> str:
    return str(Summary(_nan(v.get("mean")), _nan(v.get("lo")), _nan(v.get("hi")), int(v.get("n") or 0)))


def _badge(verdict: str, label: str | None = None, title: str | None = None) -> str:
    colour = VERDICT_COLOUR.get(verdict, "#57606a")
    tip = f' title="{html.escape(title, quote=True)}"' if title else ""
    return f'<span class="badge" style="background:{colour}"{tip}>{html.escape(label or verdict)}</span>'


_CSS = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#1f2328}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #d0d7de;padding:6px 8px;text-align:left;
vertical-align:top}th{background:#f6f8fa}.badge{color:#fff;border-radius:4px;padding:1px 6px;margin:1px;
font-size:85%;display:inline-block}img{max-width:100%;margin:1em 0}.muted{color:#57606a}
.fail{border:2px solid #cf222e;padding:0.5em 1em;margin:1em 0}figure{margin:1em 0}figcaption{color:#57606a}"""


def _paper_html(payload: Mapping[str, Any], failure: Mapping[str, Any] | None) -> str:
    esc = html.escape
    rows = ""
    for group, items in _grouped(payload["claims"]):
        rows += f"<tr><th colspan='7'>{esc(_group_heading(group, items))}</th></tr>"
        rows += "".join(
            f"<tr><td>{esc(c['id'])}</td><td>{esc(c['statement'])}</td>"
            f"<td>{esc(c['paper'])}{'<br><span class=muted>' + esc(c['source']) + '</span>' if c.get('source') else ''}"
            f"</td><td>{esc(_decision_of(c).interval)}</td><td>{esc(seeds_text(_decision_of(c)))}</td>"
            f"<td><code>{esc(c['check'])}</code>"
            f"{'<br><span class=muted>tie: ' + esc(c['resolution_reason']) + '</span>' if c.get('resolution_reason') else ''}"
            f"</td><td title='{esc(c.get('reason', ''), quote=True)}'>{_badge(c['verdict'], verdict_text(_decision_of(c)))}"
            f"{'<br><span class=muted>' + esc(c.get('reason', '')) + '</span>' if c['verdict'] == 'NOT_TESTED' else ''}"
            f"</td></tr>"
            for c in items)
    banner = ""
    if failure:
        items = "".join(f"<li>{esc(exp)} seed {esc(seed)}: <code>{esc(_last_line(msg))}</code></li>"
                        for exp, fails in failure["failures"].items() for seed, msg in fails.items())
        banner = (f"<div class='fail'><b>The latest run ({esc(failure['written_at'])}, preset "
                  f"{esc(failure['preset'])}) had {esc(str(failure['failed_jobs']))} failed job(s).</b> "
                  f"The results below are from the last good run. <ul>{items}</ul></div>")
    run_rows = "".join(
        f"<tr><td>{esc(name)}</td><td>{esc(', '.join(map(str, e['seeds'])))}</td>"
        f"<td>{esc(', '.join(map(str, e.get('looks') or [])))}</td><td>{e['wall_s']:.1f} s</td>"
        f"<td>{e.get('peak_mem_mb', 0):.0f} MB</td><td><code>{esc(str(e.get('code_fingerprint', '?')))}</code></td>"
        f"<td>{esc(', '.join(f'{k} {v}' for k, v in (e.get('libraries') or {}).items()))}</td></tr>"
        for name, e in payload["experiments"].items()
    )
    figs = "".join(f"<figure><img src='{esc(f['file'], quote=True)}' alt='{esc(f['caption'], quote=True)}'>"
                   f"<figcaption>{esc(f['caption'])}</figcaption></figure>" for f in payload.get("figures", []))
    status = (_badge("method", f"method: {payload.get('method', '?')}", str(payload.get("method_note", ""))) + " "
              + _badge("reproduction", f"reproduction: {payload.get('reproduction', '?')}",
                       str(payload.get("reproduction_note", ""))))
    head = headline(group_counts((_row_group(c), c["verdict"]) for c in payload["claims"]))
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
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(slug)}</title>"
            f"<style>{_CSS}</style></head><body><p><a href='../index.html'>all papers</a> · {' · '.join(links)}</p>"
            f"<h1>{esc(str(payload['title']))}</h1>{banner}"
            f"<p class='muted'>preset {esc(str(payload['preset']))} · written {esc(str(payload['written_at']))} · "
            f"icml25 {esc(str(payload.get('package_version', '?')))}</p>"
            f"<p>{status}</p><p><b>{esc(head)}</b></p>"
            f"<table><tr><th>claim</th><th>statement</th><th>paper</th><th>ours</th><th>seeds</th><th>check</th>"
            f"<th>verdict</th></tr>{rows}</table><h2>Run</h2>"
            f"<table><tr><th>experiment</th><th>seeds</th><th>planned looks</th><th>compute</th><th>peak memory</th>"
            f"<th>code fingerprint</th><th>versions</th></tr>{run_rows}</table>{figs}</body></html>")


def write_index(store: Store, out_root: Path) -> Path:
    """Write ``out_root/index.html``: every registered paper with its latest verdicts.

    Each badge is one claim, named, coloured by its verdict, with its preset and seeds
    on hover; each row says the preset and the seeds behind its verdicts; the header
    gives the totals by verdict.
    """
    esc = html.escape
    out_root.mkdir(parents=True, exist_ok=True)
    verdicts = store.verdicts()
    pairs: list[tuple[str, str]] = []
    rows = []
    for paper in all_papers():
        claims = verdicts.get(paper.slug, {})
        pairs += [(_row_group(v), v["verdict"]) for v in claims.values()]
        ordered = sorted(claims.items(), key=lambda kv: (group_rank(_row_group(kv[1])), kv[0]))
        badges = " ".join(
            _badge(v["verdict"], label=f"{claim}: {v['verdict']}",
                   title=f"{claim} ({_row_group(v)}): {v['verdict']} ({v['preset']}, {v['n']} seeds)"
                         + (f"; {v.get('reason')}" if v["verdict"] == "NOT_TESTED" else ""))
            for claim, v in ordered) or "<span class='muted'>-</span>"
        presets = sorted({v["preset"] for v in claims.values()})
        seeds = sorted({int(v["n"] or 0) for v in claims.values()})
        seeds_txt = (f"{seeds[0]}" if len(seeds) == 1 else f"{seeds[0]}-{seeds[-1]}") if seeds else "-"
        title = esc(paper.title)
        title = f"<a href='{esc(paper.url, quote=True)}'>{title}</a>" if paper.url else title
        has_report = (out_root / paper.slug / "report.html").exists()
        link = f"<a href='{esc(paper.slug)}/report.html'>{esc(paper.slug)}</a>" if has_report else esc(paper.slug)
        rows.append(f"<tr><td>{link}</td><td>{title}</td><td>{esc(paper.status)}</td>"
                    f"<td>{esc(', '.join(presets) or '-')}</td><td>{esc(seeds_txt)}</td><td>{badges}</td></tr>")
    counts = group_counts(pairs)
    main = counts.get("paper@paper", {v: 0 for v in VERDICTS})
    summary = " ".join(_badge(v, label=f"{n} {v}") for v, n in main.items())
    apart = "; ".join(f"{GROUP_TITLE[g].lower()}: " + ", ".join(f"{n} {v}" for v, n in c.items() if n)
                      for g, c in counts.items() if g != "paper@paper")
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>icml25 reproductions</title>"
            f"<style>{_CSS}</style></head><body><h1>icml25: ICML 2025 papers, reproduced</h1>"
            f"<p class='muted'>Latest verdict of every claim, from the results store at "
            f"{esc(str(store.path))}; written {time.strftime('%Y-%m-%d %H:%M:%S')}.</p>"
            f"<p>{sum(main.values())} paper claims tested at paper fidelity: {summary}</p>"
            f"<p class='muted'>Counted apart: {esc(apart or 'none')}.</p>"
            f"<table><tr><th>paper</th><th>title</th><th>method, reproduction</th><th>preset</th><th>seeds</th><th>claims</th></tr>"
            f"{''.join(rows)}</table></body></html>")
    path = out_root / "index.html"
    _write_atomically(path, page)
    return path


def run_payload(results: Sequence[PaperResult], run: Any, failed: Sequence[str]) -> dict[str, Any]:  # noqa: ANN401
    """What ``reproduce --json FILE`` writes: the jobs, and every claim's decision with its seeds."""
    return {
        "jobs": {"total": len(run.jobs), "run": len(run.ran), "reused": len(run.reused), "failed": len(failed),
                 "failed_labels": list(failed)},
        "rounds": run.rounds,
        "verdicts": verdict_counts(results),
        "verdicts_by_group": group_counts((c.group, c.verdict) for r in results for c in r.claims),
        "papers": {
            res.paper.slug: {
                "preset": res.preset,
                "experiments": {e.experiment.name: {"seeds": e.seeds, "looks": list(e.schedule or ()),
                                                    "failures": {str(k): _last_line(v) for k, v in e.failures.items()},
                                                    "wall_s": e.wall_s}
                                for e in res.experiments},
                "claims": [{"statement": c.claim.statement, "aggregate": c.claim.aggregate,
                            "resolution": c.claim.resolution, **c.as_row()} for c in res.claims],
            }
            for res in results
        },
    }


def record_verdicts(store: Store, results: Sequence[PaperResult]) -> None:
    for res in results:
        store.put_verdicts(res.paper.slug, res.preset, [c.as_row() for c in res.claims])


def _md(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


RECORD_KEYS: tuple[str, ...] = ("slug", "id", "kind", "source", "fair_at", "experiment", "fidelity", "verdict",
                                 "reason", "mean", "lo", "hi", "seeds")
"""The keys every record of ``icml25 results --json`` has (more follow them)."""


def results_records(store: Store, preset: str = "quick") -> list[dict[str, Any]]:
    """Every registered claim of every runnable paper with its latest decision at ``preset``.

    A claim with no decision recorded at that preset has ``verdict`` ``None`` and the reason
    ``"not run at <preset>"``. Each record has :data:`RECORD_KEYS` (``seeds`` is the number of
    seeds the decision rests on), then the claim's check, the reading of a NOT_TESTED claim, the
    fidelity note, the code fingerprint of the run and when it was recorded.
    """
    recorded = store.verdicts(preset)
    out = []
    for paper in all_papers():
        if not paper.runnable:
            continue
        repro = load_reproduction(paper.slug)
        rows = recorded.get(paper.slug, {})
        for claim in repro.claims:
            fid = repro.experiment(claim.experiment).fidelity_of(preset)
            row = rows.get(claim.id)
            rec: dict[str, Any] = {
                "slug": paper.slug, "id": claim.id, "kind": claim.kind, "source": claim.source,
                "fair_at": claim.fair_at, "experiment": claim.experiment,
                "fidelity": (row or {}).get("fidelity") or fid.level,
                "verdict": row["verdict"] if row else None,
                "reason": row.get("reason", "") if row else f"not run at {preset}",
                "mean": row.get("mean") if row else None, "lo": row.get("lo") if row else None,
                "hi": row.get("hi") if row else None, "seeds": int(row.get("n") or 0) if row else 0,
                "reading": (row or {}).get("reading") or "", "preset": preset,
                "statement": claim.statement, "paper_value": claim.paper_value, "metric": claim.metric,
                "op": claim.op, "threshold": claim.threshold, "aggregate": claim.aggregate,
                "resolution": claim.resolution, "resolution_reason": claim.resolution_reason,
                "fair_at_reason": claim.fair_at_reason, "requires": list(claim.requires),
                "fidelity_note": (row or {}).get("fidelity_note") or fid.note,
                "check": claim.check_text, "code_fingerprint": (row or {}).get("code_fingerprint") or None,
                "recorded_at": (row or {}).get("recorded_at"),
            }
            for key in ("machine",):
                if row and key in row:
                    rec[key] = row[key]
            out.append(rec)
    return out


def results_json(store: Store, preset: str = "quick") -> dict[str, Any]:
    """What ``icml25 results --json`` writes: the counts by group and verdict, and every claim's record."""
    records = results_records(store, preset)
    counts = group_counts((claim_group(r["kind"], r["fidelity"]), r["verdict"] or "not run") for r in records)
    return {"preset": preset, "generated_by": "icml25 results --json", "headline": headline(counts),
            "counts": counts, "claims": records}


def results_markdown(store: Store, preset: str = "quick") -> str:
    """``docs/RESULTS.md``: every registered claim with its latest decision at ``preset``.

    Paper claims come first, grouped by the fidelity they ran at, then ours, then checks; the
    headline counts paper claims at paper fidelity. Claims with no decision at that preset are
    listed as ``not run``.
    """
    from icml25.core.runner import code_fingerprint

    records = results_records(store, preset)
    counts = group_counts((claim_group(r["kind"], r["fidelity"]), r["verdict"] or "not run") for r in records)
    by_slug: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        by_slug.setdefault(r["slug"], []).append(r)
    body: list[str] = []
    for paper in all_papers():
        if paper.slug not in by_slug:
            continue
        recs = by_slug[paper.slug]
        n_paper = [r for r in recs if r["kind"] == "paper"]
        at_paper = [r for r in n_paper if r["fidelity"] == "paper" and r["verdict"] not in (None, "NOT_TESTED")]
        body += ["", f"## `{paper.slug}`: {_md(paper.title)}", "",
                 f"Method **{paper.method}**: {_md(paper.method_note)}  ",
                 f"Reproduction **{paper.reproduction}**: {_md(paper.reproduction_note)}  ",
                 f"Paper claims tested at paper fidelity: {len(at_paper)} / {len(n_paper)}."]
        for group, rows in _grouped(recs):
            body += ["", f"### {_md(_group_heading(group, rows))}", "",
                     "| claim | paper's number (source) | ours: mean [interval] | seeds | check | verdict |",
                     "|---|---|---|---|---|---|"]
            for r in rows:
                src = f" ({r['source']})" if r["source"] else ""
                if r["verdict"] is None:
                    body.append(f"| `{r['id']}` | {_md(r['paper_value'] + src)} | - | - | `{r['check']}` | not run |")
                    continue
                d = _decision_of({**r, "n": r["seeds"]})
                why = f" ({_md(d.reason)})" if d.verdict == "NOT_TESTED" else ""
                body.append(f"| `{r['id']}` | {_md(r['paper_value'] + src)} | {d.interval} | {seeds_text(d)} | "
                            f"`{r['check']}` | **{verdict_text(d)}**{why} |")
        machines = sorted({machine_text(r.get("machine") or {}) for r in recs} - {""})
        if machines:
            body += ["", "Computed on: " + "; ".join(machines) + "."]
        fingerprint = code_fingerprint(paper.slug)
        failed = sorted({(rec.key.experiment, rec.key.seed, _last_line(rec.error or "failed"))
                         for rec in store.records(paper.slug)
                         if rec.status == "failed" and rec.preset == preset and rec.key.code_hash == fingerprint
                         and not store.finished([rec.key])})
        if failed:
            body += ["", "Failed jobs (their experiment was decided on the seeds that finished, and not given more):",
                     ""] + [f"- `{exp}` seed {seed}: `{_md(err)}`" for exp, seed, err in failed]
    stamps = [r["recorded_at"] for r in records if r.get("recorded_at")]
    when = f" Decisions recorded {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(max(stamps)))}." if stamps else ""
    table = ["| group | " + " | ".join(VERDICTS) + " | not run |", "|---" * (len(VERDICTS) + 2) + "|"]
    for group, c in counts.items():
        table.append(f"| {GROUP_TITLE.get(group, group)} | " + " | ".join(str(c.get(v, 0)) for v in VERDICTS)
                     + f" | {c.get('not run', 0)} |")
    head = [f"# Results at the `{preset}` preset", "",
            f"Every registered claim of every runnable paper ({len(records)} claims), with its latest decision in the "
            f"results store. Generated by `icml25 results --markdown` (the same data as JSON: `icml25 results "
            f"--json --preset {preset} --out docs/results/{preset}.json`); do not edit by hand.{when}", "",
            f"**{headline(counts)}**", ""] + table + ["",
            "Claims are listed per paper: the paper's claims first, grouped by the fidelity of the run that decided "
            "them (`paper`: the paper's protocol at its scale; `reduced`: its protocol at a fraction of its budget; "
            "`mechanism`: a stand-in), then our own claims, then checks. A paper claim run below its `fair_at` "
            "fidelity is NOT_TESTED, with the verdict its values would give shown as a reading (`reads FAIL`). "
            "`ours` is the mean over seeds and, for `mean` claims, the group-sequential confidence interval at "
            "the look where the claim was decided (see the README). `seeds` is the number of seeds used; for "
            "INCONCLUSIVE, `~N to decide` is a rough estimate of the seeds that would decide it. Each paper says "
            "where its jobs computed (torch's CPU kernels and the BLAS): torch-based metrics can differ in their "
            "last digits between CPU kernels, so a claim near a boundary can change verdict between machines."]
    return "\n".join(head + body) + "\n"


def _nan(x: Any) -> float:
    return math.nan if x is None else float(x)

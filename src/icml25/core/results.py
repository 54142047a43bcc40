"""Results: what a run measured and what it decided, and their JSON.

:func:`collect` reads a run's jobs back from the store into one :class:`PaperResult`
per paper (per-seed metrics by experiment, and every claim's :class:`ClaimResult`).
Reports list claims in groups (:data:`GROUP_ORDER`): the paper's claims by the
fidelity they ran at, then ours, then checks; :func:`headline` counts them so.

The JSON forms: :func:`paper_payload` (a paper's ``metrics.json``), :func:`run_payload`
(``reproduce --json``) and :func:`results_json` (``icml25 results --json``, every
registered claim with its latest decision in the store, see :func:`results_records`).
The renderers (:mod:`~icml25.core.render_terminal`, :mod:`~icml25.core.render_markdown`,
:mod:`~icml25.core.render_html`) read these; the rows of a payload or of the store are
read back with :func:`decision_of` and :func:`row_group`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icml25.core.experiment import (
    Experiment,
    ExperimentConfig,
    Fidelity,
    Metrics,
    config_from_dict,
    config_to_dict,
)
from icml25.core.paper import FIDELITIES, VERDICTS, Claim, Decision, Paper, Summary, Verdict, decide_claims
from icml25.core.registry import all_papers, load_reproduction
from icml25.core.runner import Job, package_version
from icml25.core.store import Store
from icml25.core.worker import MACHINE_KEYS

# --------------------------------------------------------------------------- groups and texts

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


def last_line(text: str) -> str:
    """The last line of a job's error (its exception), or ``"?"``."""
    lines = str(text).strip().splitlines()
    return lines[-1] if lines else "?"


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


# --------------------------------------------------------------------------- the data model

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
                "resolution_reason": c.resolution_reason, "requires": list(c.requires),
                "code_fingerprint": self.code_hash, "machine": dict(self.machine)}


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
                cfg = config_from_dict(exp.config, job.config)
                res = exp_results[job.experiment] = ExperimentResult(exp, cfg, [], [], schedule=schedule)
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
    return {k: str(libraries[k]) for k in MACHINE_KEYS if k in libraries}


def verdict_counts(results: Sequence[PaperResult]) -> dict[str, int]:
    """Every claim by verdict (all kinds and fidelities together)."""
    counts = {v: 0 for v in VERDICTS}
    for res in results:
        for c in res.claims:
            counts[c.verdict] += 1
    return counts


def record_verdicts(store: Store, results: Sequence[PaperResult]) -> None:
    for res in results:
        store.put_verdicts(res.paper.slug, res.preset, [c.as_row() for c in res.claims])


# --------------------------------------------------------------------------- a run's JSON

def paper_payload(result: PaperResult, figures: list[Path], figure_errors: list[str]) -> dict[str, Any]:
    """Everything a paper's report shows, as JSON (``metrics.json``)."""
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
        "figures": [{"file": p.name, "caption": p.stem.replace("_", " ")} for p in figures],
        "figure_errors": figure_errors,
    }


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
                                                    "failures": {str(k): last_line(v) for k, v in e.failures.items()},
                                                    "wall_s": e.wall_s}
                                for e in res.experiments},
                "claims": [{"statement": c.claim.statement, "aggregate": c.claim.aggregate,
                            "resolution": c.claim.resolution, **c.as_row()} for c in res.claims],
            }
            for res in results
        },
    }


# --------------------------------------------------------------------------- rows read back

def decision_of(row: Mapping[str, Any]) -> Decision:
    """The :class:`Decision` of a row written by :meth:`ClaimResult.as_row`."""
    return Decision(row["verdict"], int(row.get("n") or 0), _nan(row.get("mean")), _nan(row.get("lo")),
                    _nan(row.get("hi")), _nan(row.get("level")), row.get("reason", ""), row.get("seeds_to_decide"),
                    row.get("reading") or "")


def summary_of(row: Mapping[str, Any]) -> Summary:
    """The :class:`Summary` of a metric's row in ``metrics.json``."""
    return Summary(_nan(row.get("mean")), _nan(row.get("lo")), _nan(row.get("hi")), int(row.get("n") or 0))


def row_group(row: Mapping[str, Any]) -> str:
    """The report group of a claim's row (see :func:`claim_group`)."""
    return claim_group(row.get("kind") or "paper", row.get("fidelity") or "")


def counts_of_rows(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """:func:`group_counts` of claim rows; a row without a verdict (a claim not run) counts as ``"not run"``."""
    return group_counts((row_group(r), r["verdict"] or "not run") for r in rows)


def grouped(rows: Iterable[Mapping[str, Any]]) -> list[tuple[str, list[Mapping[str, Any]]]]:
    """Rows split into report groups, in report order (rows keep their order within a group)."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row_group(row), []).append(row)
    return sorted(groups.items(), key=lambda kv: group_rank(kv[0]))


def group_heading(group: str, rows: Sequence[Mapping[str, Any]]) -> str:
    """The title of a group of rows; paper claims add the fidelity notes of their runs."""
    title = GROUP_TITLE.get(group, group)
    notes = sorted({str(r.get("fidelity_note") or "") for r in rows} - {""})
    return title + (f" ({'; '.join(notes)})" if group.startswith("paper@") and notes else "")


# --------------------------------------------------------------------------- icml25 results

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
            exp = repro.experiment(claim.experiment)
            fid = exp.fidelity_of(preset)
            unrun = f"not run at {preset}"
            if exp.data_setting:  # it runs only on the paper's data, which a user supplies
                unrun += f": it needs the paper's data (--set {exp.data_setting}=PATH)"
            row = rows.get(claim.id)
            changed = claim_changed(row, claim) if row else ""
            moved = preset_changed(row, fid) if row and not changed else ""
            if changed or moved:  # a decision on another claim or another preset is no decision on this one
                row = None
            rec: dict[str, Any] = {
                "slug": paper.slug, "id": claim.id, "kind": claim.kind, "source": claim.source,
                "fair_at": claim.fair_at, "experiment": claim.experiment,
                "fidelity": (row or {}).get("fidelity") or fid.level,
                "verdict": row["verdict"] if row else None,
                "reason": row.get("reason", "") if row else
                f"not run at {preset} since the claim changed ({changed})" if changed else
                f"not run at {preset} since its preset changed ({moved})" if moved else unrun,
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


def claim_changed(row: Mapping[str, Any], claim: Claim) -> str:
    """What differs between the claim a stored decision was made on and ``claim`` now; ``""`` when nothing.

    Compares the check (metric, rule, threshold, tie band), kind, experiment, ``fair_at`` and, when the
    decision recorded them, the checks it ``requires``.
    """
    now = {"check": claim.check_text, "kind": claim.kind, "experiment": claim.experiment, "fair_at": claim.fair_at,
           "requires": list(claim.requires)}
    for key, value in now.items():
        if key in row and row[key] != value:
            return f"{key} was {row[key]!r}, is {value!r}"
    return ""


def preset_changed(row: Mapping[str, Any], fidelity: Fidelity) -> str:
    """What differs between the preset a stored decision was run at and the experiment's preset now; ``""`` when
    nothing (or when the decision recorded no fidelity).

    A preset's declared fidelity and its note say what it runs (sizes, budgets, the stand-in), so a decision whose
    fidelity or note differs from the preset's now was made on other settings.
    """
    if "fidelity" not in row or "fidelity_note" not in row:
        return ""
    if row["fidelity"] != fidelity.level:
        return f"fidelity was {row['fidelity']!r}, is {fidelity.level!r}"
    if row["fidelity_note"] != fidelity.note:
        return "its fidelity note changed"
    return ""


def results_json(store: Store, preset: str = "quick") -> dict[str, Any]:
    """What ``icml25 results --json`` writes: the counts by group and verdict, and every claim's record."""
    records = results_records(store, preset)
    counts = counts_of_rows(records)
    return {"preset": preset, "generated_by": "icml25 results --json", "headline": headline(counts),
            "counts": counts, "claims": records}


def _finite(x: float) -> float | None:
    return x if isinstance(x, float) and math.isfinite(x) else None


def _nan(x: Any) -> float:
    return math.nan if x is None else float(x)

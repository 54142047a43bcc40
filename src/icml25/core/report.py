"""Aggregate seeds, decide claims, and write the reports.

For each paper run, ``reports/<slug>/`` gets ``metrics.json`` (config, per-seed
metrics, summaries, claims), the PNG figures its experiments draw, and
``report.md`` / ``report.html``. ``reports/index.html`` lists every paper of the
registry with the latest verdicts recorded in the store.

This module writes those folders; the rest lives by concern and is re-exported here:

* :mod:`icml25.core.results`: the results read back from the store (:func:`collect`),
  claim groups and counts, and their JSON (``metrics.json``, ``reproduce --json``,
  ``icml25 results --json``);
* :mod:`icml25.core.render_terminal`: the claims table printed by ``reproduce``;
* :mod:`icml25.core.render_markdown`: ``report.md`` and ``docs/RESULTS.md``;
* :mod:`icml25.core.render_html`: ``report.html`` and ``reports/index.html``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from icml25.core.registry import all_papers
from icml25.core.render_html import DOCS_ROOT, VERDICT_COLOUR, index_html, paper_html
from icml25.core.render_markdown import paper_markdown, results_markdown
from icml25.core.render_terminal import VERDICT_STYLE, claims_table
from icml25.core.results import (
    GROUP_ORDER,
    GROUP_TITLE,
    RECORD_KEYS,
    ClaimResult,
    ExperimentResult,
    PaperResult,
    claim_group,
    collect,
    group_counts,
    group_rank,
    headline,
    machine_of,
    machine_text,
    paper_payload,
    record_verdicts,
    results_json,
    results_records,
    run_payload,
    seeds_text,
    verdict_counts,
    verdict_text,
)
from icml25.core.store import Store

__all__ = [
    "DOCS_ROOT", "GROUP_ORDER", "GROUP_TITLE", "RECORD_KEYS", "VERDICT_COLOUR", "VERDICT_STYLE", "ClaimResult",
    "ExperimentResult", "PaperResult", "claim_group", "claims_table", "collect", "group_counts", "group_rank",
    "headline", "machine_of", "machine_text", "record_verdicts", "results_json", "results_markdown",
    "results_records", "run_payload", "seeds_text", "verdict_counts", "verdict_text", "write_index",
    "write_paper_report",
]


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


def write_index(store: Store, out_root: Path) -> Path:
    """Write ``out_root/index.html``: every registered paper with its latest verdicts.

    Each badge is one claim, named, coloured by its verdict, with its preset and seeds
    on hover; each row says the preset and the seeds behind its verdicts; the header
    gives the totals by verdict.
    """
    out_root.mkdir(parents=True, exist_ok=True)
    verdicts = store.verdicts()
    papers = all_papers()
    reported = {p.slug for p in papers if (out_root / p.slug / "report.html").exists()}
    path = out_root / "index.html"
    _write_atomically(path, index_html(papers, verdicts, reported, store.path))
    return path


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
    payload = paper_payload(result, figures, figure_errors)
    (out / "metrics.json").write_text(json.dumps(payload, indent=2))
    _write_pages(out, payload, None)


def _write_pages(out: Path, payload: Mapping[str, Any], failure: Mapping[str, Any] | None) -> None:
    (out / "report.md").write_text(paper_markdown(payload, failure))
    (out / "report.html").write_text(paper_html(payload, failure))


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


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


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

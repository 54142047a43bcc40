"""Command line: ``icml25 list | show | reproduce | results | report``.

Exit status of ``reproduce``: 0 when every job finished (a FAIL claim is a result,
not an error); 1 when a job failed, or, with ``--strict``, when a claim is FAIL;
2 on bad input (nothing is written then); 3 on a storage problem; 130 when
interrupted by SIGINT or SIGTERM (finished jobs are kept).
"""

from __future__ import annotations

if __name__ == "__main__":  # python -m icml25.cli: signals are handled before the imports below
    from icml25._entry import install_early_handlers

    install_early_handlers()

import dataclasses
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from icml25.core.experiment import PRESETS, ConfigError, build_config, get_setting, parse_overrides, setting_type
from icml25.core.registry import (
    MissingExtraError,
    UnknownPaperError,
    all_papers,
    available_slugs,
    get_paper,
    load_reproduction,
)

# Tables need room: when output is not a terminal (a log, a pipe), do not squeeze them to 80 columns.
console = Console(width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True)


def _fail_usage(message: str) -> None:
    """Bad input: one line on stderr, exit status 2."""
    click.echo(f"error: {message}", err=True)
    sys.exit(2)


EXIT_STORAGE = 3
"""Exit status of a storage problem: the results store or the reports folder cannot be used."""


def _fail_storage(message: str) -> None:
    """A storage problem: one line on stderr naming the path and what to do, exit status 3."""
    click.echo(f"error: {message}", err=True)
    sys.exit(EXIT_STORAGE)


def _open_store(readonly: bool = False, rebuild: bool = False):  # noqa: ANN202
    from icml25.core.store import Store, StoreError

    try:
        return Store(readonly=readonly, rebuild=rebuild)
    except StoreError as exc:
        _fail_storage(str(exc))


MIN_FREE_BYTES = 64 * 2**20
"""Free space a run needs up front for its reports (figures, pages) and the store (a few MB each)."""


def _check_free_space(path: Path, what: str, fix: str) -> None:
    """Fail with exit status 3 when the file system holding ``path`` has less than :data:`MIN_FREE_BYTES` free."""
    import shutil

    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        free = shutil.disk_usage(probe).free
    except OSError:  # pragma: no cover - cannot tell: the write checks still apply
        return
    if free < MIN_FREE_BYTES:
        _fail_storage(f"{what} {path} has {free / 2**20:.1f} MB free, a run needs {MIN_FREE_BYTES // 2**20} MB: "
                      f"free space or {fix}")


def _check_json_path(path: Path) -> None:
    """``--json FILE`` must be a file that can be written: checked before anything is created (exit status 3)."""
    if path.exists() and path.is_dir():
        _fail_storage(f"--json {path} is a folder: pass a file path")
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK):
        _fail_storage(f"--json {path} cannot be written ({parent} is not a writable folder): pass another path")
    if path.exists() and not os.access(path, os.W_OK):
        _fail_storage(f"--json {path} is not writable: pass another path")


RAY_CONNECT_TIMEOUT_S = 10.0
"""How long ``--ray-address`` gets to accept a connection before the run fails with exit status 2."""


def check_ray_address(address: str) -> None:
    """Raise :class:`ConfigError` unless the Ray cluster at ``address`` accepts a TCP connection in time.

    ``auto`` (Ray finds a local cluster) is left to Ray. ``host:port`` and ``ray://host:port`` are tried
    for :data:`RAY_CONNECT_TIMEOUT_S` seconds, so an unreachable address fails in seconds, before the store
    is touched, instead of Ray retrying for minutes.
    """
    import socket

    if address == "auto":
        return
    hostport = address.split("://", 1)[-1]
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise ConfigError(f"--ray-address takes host:port, ray://host:port or auto, got {address!r}")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=RAY_CONNECT_TIMEOUT_S):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(f"cannot reach the Ray cluster at {address} ({reason}): check the address, or drop "
                          "--ray-address to start a local Ray") from None


def _check_reports_dir(path: Path) -> None:
    """Fail with exit status 3 unless ``path`` is (or can be made) a writable folder."""
    if path.exists() and not path.is_dir():
        _fail_storage(f"the reports folder {path} is a file, not a folder: pass --reports DIR")
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".icml25-write-probe"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        _fail_storage(f"cannot write the reports folder {path} ({exc.strerror}): pass --reports DIR")


class _Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM outside the job phase (start-up, planning, waiting, writing reports)."""


_STARTED = [False]
"""Whether the command is running inside :class:`_OneLineGroup`'s handler (else a signal exits at once)."""


def _on_signal(signum: int, frame: Any) -> None:  # noqa: ANN401
    name = signal.Signals(signum).name
    if not _STARTED[0]:  # still importing: nothing has been opened or written
        sys.stderr.write(f"interrupted ({name}) while starting: nothing was run\n")
        os._exit(130)
    raise _Interrupted(name)


def install_signal_handlers() -> None:
    """SIGINT and SIGTERM raise an interrupt the command ends with exit status 130 and one line.

    The job phase replaces the SIGTERM handler with the runner's own (it stops the workers first);
    every other phase gets this one. The permissions of what the command creates are fixed too:
    the store and the reports are 0o644 files in 0o755 folders whatever the caller's umask.
    """
    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)
    os.umask(0o022)


class _OneLineGroup(click.Group):
    """The command group: usage errors are one line (and a --help hint), interrupts exit 130 with one line."""

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,  # noqa: ANN401
             standalone_mode: bool = True, **extra: Any) -> Any:  # noqa: ANN401
        if not standalone_mode:  # called as a library (click's test runner): click's own behaviour
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        previous = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM), os.umask(0o022))
        install_signal_handlers()
        _STARTED[0] = True
        try:
            code = self._run(args, prog_name, complete_var, **extra)
        finally:  # when called in-process (a test's runner), leave the caller's handlers and umask as they were
            signal.signal(signal.SIGINT, previous[0])
            signal.signal(signal.SIGTERM, previous[1])
            os.umask(previous[2])
        sys.exit(code)

    def _run(self, args: Any, prog_name: str | None, complete_var: str | None, **extra: Any) -> int:  # noqa: ANN401
        """Run the command; return its exit status (usage errors and interrupts: one line)."""
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.UsageError as exc:
            path = exc.ctx.command_path if exc.ctx else "icml25"
            click.echo(f"error: {exc.format_message()} (see '{path} --help')", err=True)
            return 2
        except click.ClickException as exc:
            click.echo(f"error: {exc.format_message()}", err=True)
            return exc.exit_code
        except (KeyboardInterrupt, click.Abort) as exc:
            what = str(exc) if isinstance(exc, KeyboardInterrupt) and str(exc) else "SIGINT"
            click.echo(f"interrupted ({what}): stopped before anything more was written", err=True)
            return 130
        except SystemExit as exc:  # a command's own sys.exit(status)
            return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        return code if isinstance(code, int) else 0


@click.group(cls=_OneLineGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="icml25")
def main() -> None:
    """Reference implementations of ICML 2025 papers, with self-checking reproductions."""


def markdown_table() -> str:
    """The registry as a Markdown table (the README's paper table is this output)."""
    lines = ["| paper | title | method | reproduction | arXiv / OpenReview | official code |",
             "|---|---|---|---|---|---|"]
    for p in all_papers():
        ref = f"[{p.arxiv}]({p.url})" if p.arxiv else (f"[OpenReview]({p.url})" if p.url else "-")
        code = f"[{p.code}](https://github.com/{p.code})" if p.code else "-"
        title = p.title.replace("|", "\\|")
        lines.append(f"| `{p.slug}` | {title} | {p.method} | {p.reproduction or '-'} | {ref} | {code} |")
    return "\n".join(lines) + "\n"


def _paper_meta(p: Any) -> dict[str, Any]:  # noqa: ANN401
    return {"slug": p.slug, "title": p.title, "status": p.status, "method": p.method, "method_note": p.method_note,
            "reproduction": p.reproduction, "reproduction_note": p.reproduction_note, "kind": p.kind,
            "arxiv": p.arxiv, "openreview": p.openreview, "code": p.code, "url": p.url or None}


def _paper_claim_counts(slug: str, latest: dict[str, dict[str, Any]]) -> tuple[int, int | None]:
    """``(paper claims tested at paper fidelity, all paper claims)`` of a row; ``None`` when its code cannot load."""
    tested = sum(1 for v in latest.values() if v.get("kind") == "paper" and v.get("fidelity") == "paper"
                 and v["verdict"] != "NOT_TESTED")
    try:
        total = sum(1 for c in load_reproduction(slug).claims if c.kind == "paper")
    except MissingExtraError:
        total = None
    return tested, total


@main.command("list")
@click.option("--markdown", is_flag=True, help="Print the Markdown table used in the README.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per paper (a JSON list).")
def list_papers(markdown: bool, as_json: bool) -> None:
    """List all 37 papers: method and reproduction status, paper claims tested at paper fidelity, latest verdicts."""
    if markdown:
        click.echo(markdown_table(), nl=False)
        return
    from icml25.core.store import default_home

    verdicts = {}
    if (default_home() / "results.sqlite").exists():
        with _open_store(readonly=True) as store:
            verdicts = store.verdicts()
    if as_json:
        rows = []
        for p in all_papers():
            latest = {claim: {k: v.get(k) for k in ("verdict", "preset", "kind", "fidelity", "reason", "mean", "lo",
                                                     "hi", "n")}
                      for claim, v in sorted(verdicts.get(p.slug, {}).items())}
            meta = {k: v for k, v in _paper_meta(p).items()
                    if k in ("slug", "title", "status", "method", "reproduction", "kind")}
            tested, total = _paper_claim_counts(p.slug, verdicts.get(p.slug, {})) if p.runnable else (0, 0)
            rows.append({**meta, "paper_claims": total, "paper_claims_tested_at_paper_fidelity": tested,
                         "latest_verdicts": latest})
        click.echo(json.dumps(rows, indent=2))
        return
    table = Table(title=f"icml25: {len(all_papers())} ICML 2025 papers")
    for col in ("paper", "method", "reproduction", "paper claims at paper fidelity", "latest verdicts", "title"):
        table.add_column(col, overflow="fold")
    for p in all_papers():
        counts: dict[str, int] = {}
        for v in verdicts.get(p.slug, {}).values():
            counts[v["verdict"]] = counts.get(v["verdict"], 0) + 1
        summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "-"
        if p.runnable:
            tested, total = _paper_claim_counts(p.slug, verdicts.get(p.slug, {}))
            ratio = f"{tested} / {total if total is not None else '?'}"
        else:
            ratio = "-"
        table.add_row(p.slug, p.method, p.reproduction or "-", ratio, summary, p.title)
    console.print(table)


def _type_name(tp: Any) -> str:  # noqa: ANN401
    return tp.__name__ if isinstance(tp, type) else str(tp).replace("typing.", "")


def _jsonable(value: Any) -> Any:  # noqa: ANN401
    return json.loads(json.dumps(value, default=list))


def show_payload(slug: str) -> dict[str, Any]:
    """What ``icml25 show SLUG --json`` prints: metadata, experiments (presets, config fields) and claims."""
    paper = get_paper(slug)
    out: dict[str, Any] = _paper_meta(paper)
    if not paper.runnable:
        return out
    repro = load_reproduction(slug)
    experiments = []
    for exp in repro.experiments:
        defaults = build_config(exp.config, {})  # a nested method config's fields appear as outer.inner
        fields = [{"name": key, "type": _type_name(setting_type(exp.config, key)),
                   "default": _jsonable(get_setting(defaults, key))} for key in exp.fields]
        experiments.append({
            "name": exp.name, "description": exp.description, "timed": exp.timed,
            "full_requirements": exp.full_requirements, "data_setting": exp.data_setting, "fields": fields,
            "presets": {p: {"seeds": exp.default_seeds(p), "config": _jsonable(dataclasses.asdict(exp.make_config(p))),
                            "fidelity": {"level": exp.fidelity_of(p).level, "note": exp.fidelity_of(p).note}}
                        for p in PRESETS},
        })
    out["experiments"] = experiments
    out["claims"] = [{"id": c.id, "kind": c.kind, "statement": c.statement, "paper_value": c.paper_value,
                      "source": c.source, "experiment": c.experiment, "metric": c.metric, "op": c.op,
                      "threshold": c.threshold, "aggregate": c.aggregate, "resolution": c.resolution,
                      "resolution_reason": c.resolution_reason, "requires": list(c.requires), "fair_at": c.fair_at,
                      "fair_at_reason": c.fair_at_reason, "baseline_metric": c.baseline_metric,
                      "check": c.check_text} for c in repro.claims]
    out["api_example"] = repro.api_example
    return out


@main.command()
@click.argument("slug")
@click.option("--json", "as_json", is_flag=True, help="Print metadata, experiments and claims as JSON.")
@click.option("--example", is_flag=True, help="Print only the API example, unwrapped (safe to copy or pipe).")
def show(slug: str, as_json: bool, example: bool) -> None:
    """Show a paper's metadata, claims and a runnable API example."""
    try:
        paper = get_paper(slug)
    except UnknownPaperError as exc:
        _fail_usage(str(exc))
    try:
        if paper.runnable:
            load_reproduction(slug)
    except MissingExtraError as exc:
        _fail_usage(str(exc))
    if as_json:
        click.echo(json.dumps(show_payload(slug), indent=2))
        return
    if example:
        if not paper.runnable:
            _fail_usage(f"paper {slug!r} is {paper.status}: it has no API example")
        click.echo(load_reproduction(slug).api_example)
        return
    console.print(f"[bold]{paper.title}[/]", markup=True, highlight=False)
    console.print(f"slug: {paper.slug}   kind: {paper.kind}", markup=False)
    console.print(f"method: {paper.method} ({paper.method_note})", markup=False)
    if paper.runnable:
        console.print(f"reproduction: {paper.reproduction} ({paper.reproduction_note})", markup=False)
    if paper.url:
        console.print(f"paper: {paper.url}", markup=False)
    if paper.code:
        console.print(f"official code: https://github.com/{paper.code}", markup=False)
    if not paper.runnable:
        return
    repro = load_reproduction(slug)
    console.print("\n[bold]Experiments[/]")
    for exp in repro.experiments:
        console.print(f"- {exp.name}: {exp.description}", markup=False)
        if exp.data_setting:
            console.print(f"  runs only on the paper's data: --set {exp.data_setting}=PATH (what PATH holds: below)",
                          markup=False)
        for preset in PRESETS:
            fid = exp.fidelity_of(preset)
            console.print(f"  {preset}: {fid.level} fidelity ({fid.note})", markup=False)
        if exp.full_requirements:
            console.print(f"  full preset needs: {exp.full_requirements}", markup=False)
    console.print("\n[bold]Claims[/]")
    from icml25.core.report import group_rank

    for claim in sorted(repro.claims, key=lambda c: group_rank("paper@paper" if c.kind == "paper" else c.kind)):
        where = f"{claim.kind}, source: {claim.source}, fair at {claim.fair_at}" if claim.kind == "paper" else claim.kind
        needs = f"; needs {', '.join(claim.requires)}" if claim.requires else ""
        console.print(f"- [{claim.id}] ({where}{needs}) {claim.statement} (paper: {claim.paper_value}; "
                      f"check: {claim.check_text})", markup=False)
    console.print("\n[bold]API example[/] (copy-safe: icml25 show " + slug + " --example)")
    click.echo(repro.api_example)  # printed as is: never re-wrapped to the terminal's width


@main.command()
@click.argument("slugs", nargs=-1)
@click.option("--preset", default="quick", show_default=True, help=f"One of {', '.join(PRESETS)}.")
@click.option("--seeds", type=int, default=None, help="Seeds each experiment starts with (default: the preset's).")
@click.option("--max-seeds", type=int, default=None,
              help="Seed budget of the adaptive rule: seeds are added, look by look, to experiments with an "
                   "undecided mean claim up to this many (default: smoke none, quick 8, full 20).")
@click.option("--jobs", type=int, default=None, help="Parallel jobs (default: number of CPUs).")
@click.option("--backend", default="local", show_default=True, help="local or ray.")
@click.option("--ray-address", default=None, help="Address of a Ray cluster (default: start a local one).")
@click.option("--set", "settings", multiple=True, metavar="KEY=VALUE", help="Override a config field.")
@click.option("--force", is_flag=True, help="Recompute jobs even when the store has them.")
@click.option("--reports", "reports_dir", default="reports", show_default=True, type=click.Path(path_type=Path),
              help="Where reports are written.")
@click.option("--json", "json_path", default=None, type=click.Path(path_type=Path),
              help="Also write the run's results (claims, decisions, seeds, failures) to this JSON file.")
@click.option("--strict", is_flag=True, help="Exit with status 1 when a claim is FAIL (not only when a job fails).")
@click.option("--rebuild-store", is_flag=True,
              help="If the results store is corrupt, move it aside (results.sqlite.corrupt-<time>) and start anew.")
def reproduce(slugs: tuple[str, ...], preset: str, seeds: int | None, max_seeds: int | None, jobs: int | None,
              backend: str, ray_address: str | None, settings: tuple[str, ...], force: bool, reports_dir: Path,
              json_path: Path | None, strict: bool, rebuild_store: bool) -> None:
    """Run papers' experiments, check their claims and write reports.

    With no SLUG, every runnable paper is run at the chosen preset.
    """
    import os
    import sqlite3

    from icml25.core.runner import BACKENDS, plan, schedules

    n_jobs = jobs if jobs is not None else (os.cpu_count() or 1)
    try:
        if backend not in BACKENDS:
            raise ConfigError(f"unknown backend {backend!r}; valid: {', '.join(BACKENDS)}")
        if n_jobs < 1:
            raise ConfigError(f"--jobs must be at least 1, got {n_jobs}")
        if backend == "ray":
            try:
                import ray  # noqa: F401
            except ImportError:
                raise ConfigError("--backend ray needs Ray: pip install 'icml25[ray]'") from None
            if ray_address:
                check_ray_address(ray_address)
        elif ray_address:
            raise ConfigError("--ray-address needs --backend ray (the local backend runs no cluster)")
        skipped: list[MissingExtraError] = []
        if slugs:
            chosen = list(slugs)
        else:  # every paper: run what the installed extras allow, and say what was skipped
            chosen, skipped = available_slugs()
        planned = plan(chosen, preset, seeds, parse_overrides(list(settings)), skipped=skipped)
        if not planned and skipped:  # nothing the installed extras allow
            raise skipped[0]
        schedules(planned, max_seeds)  # checks --max-seeds before anything runs
    except (UnknownPaperError, ConfigError, MissingExtraError) as exc:
        _fail_usage(str(exc))
    # storage is checked before any job runs, and before anything is created: one line and exit status 3
    from icml25.core.store import StoreError, default_home

    if json_path is not None:
        _check_json_path(json_path)
    _check_reports_dir(reports_dir)
    _check_free_space(reports_dir, "the reports folder", "pass --reports DIR")
    _check_free_space(default_home(), "the results store folder", "set ICML25_HOME to another folder")
    store = _open_store(rebuild=rebuild_store)
    if not force:  # a damaged row among the planned jobs: one line and exit 3 before anything runs
        try:
            store.finished(j.key for j in planned)
        except StoreError as exc:
            store.close()
            _fail_storage(str(exc))
    for exc in skipped:  # said once the run will go ahead (a usage or storage error stays the only line)
        err_console.print(f"skipped: {exc}", markup=False, highlight=False, soft_wrap=True)  # one line, any width
    try:
        _reproduce(store, planned, max_seeds, n_jobs, backend, ray_address, force, reports_dir, json_path, strict)
    except StoreError as exc:  # a damaged row met during the run
        _fail_storage(str(exc))
    except (sqlite3.OperationalError, OSError) as exc:  # the disk filled up, the folder went away...
        _fail_storage(f"storage failed during the run ({exc}); finished jobs are kept in {store.path}")
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: the workers are already stopped
        what = str(exc) or "SIGINT"
        click.echo(f"interrupted ({what}): every finished job is kept in {store.path}; rerun the same command "
                   "to resume", err=True)
        sys.exit(130)
    finally:
        store.close()


def _reproduce(store: Any, planned: list, max_seeds: int | None, n_jobs: int, backend: str,  # noqa: ANN401
               ray_address: str | None, force: bool, reports_dir: Path, json_path: Path | None, strict: bool) -> None:
    """The body of ``reproduce`` once every input and the storage have been checked."""
    from icml25.core import report as rep
    from icml25.core.runner import run_adaptive

    progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("jobs"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                        console=err_console, transient=False)
    failed: list[str] = []
    finished = [0]
    running: dict = {}  # job key -> fraction done, from the experiments' progress reports

    with progress:
        task = progress.add_task("reproduce", total=0)

        def refresh() -> None:
            progress.update(task, completed=finished[0] + sum(running.values()))

        def on_start(n_run: int, n_reused: int) -> None:
            progress.update(task, total=(progress.tasks[0].total or 0) + n_run)
            if n_reused:
                progress.console.print(f"{n_reused} of {n_run + n_reused} jobs reused from {store.path}")

        def on_progress(key, fraction: float) -> None:  # noqa: ANN001
            running[key] = fraction
            refresh()

        def on_result(job, outcome) -> None:  # noqa: ANN001
            running.pop(job.key, None)
            finished[0] += 1
            if not err_console.is_terminal:  # a log, not a screen: one line per finished job
                err_console.print(f"[{finished[0]}/{int(progress.tasks[0].total or 0)}] {job.label}: "
                                  f"{outcome.status} ({outcome.wall_s:.1f} s)", markup=False, highlight=False)
            if outcome.status != "ok":
                failed.append(job.label)
                last = (outcome.error or "").strip().splitlines()[-1:] or ["?"]
                progress.console.print(Text.assemble(("job failed", "red"), f": {job.label}: {last[0]}"))
            refresh()

        run = run_adaptive(planned, store, max_seeds, n_jobs=n_jobs, backend=backend, ray_address=ray_address,
                           force=force, on_result=on_result, on_start=on_start,
                           on_progress=on_progress if err_console.is_terminal else None)

    results = rep.collect(store, run.jobs, run.schedules)
    rep.record_verdicts(store, results)
    for res in results:
        out = rep.write_paper_report(res, reports_dir)
        err_console.print(f"report: {out / 'report.md'}")
    index = rep.write_index(store, reports_dir)
    console.print(rep.claims_table(results))
    counts = rep.verdict_counts(results)
    console.print(f"{len(run.jobs)} jobs ({len(run.ran)} run, {len(run.reused)} reused, "
                  f"{len(failed)} failed) in {run.rounds} round(s).")
    console.print(rep.headline(rep.group_counts((c.group, c.verdict) for r in results for c in r.claims)),
                  markup=False, highlight=False)
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(rep.run_payload(results, run, failed), indent=2))
        console.print(f"results: {json_path}")
    console.print(f"index: {index}")
    n_fail = counts["FAIL"]
    if failed:
        err_console.print(f"[red]{len(failed)} failed job(s)[/]")
        sys.exit(1)
    if strict and n_fail:
        err_console.print(f"[red]{n_fail} FAIL claim(s) (--strict)[/]")
        sys.exit(1)


@main.command()
@click.option("--markdown", is_flag=True, help="Write every claim's latest decision as Markdown (default file "
              "docs/RESULTS.md).")
@click.option("--json", "as_json", is_flag=True, help="Write every claim's latest decision as JSON (default file "
              "docs/results/<preset>.json): a list `claims` of records with slug, id, kind, source, fair_at, "
              "experiment, fidelity, verdict, reason, mean, lo, hi, seeds and more.")
@click.option("--docs", is_flag=True, help="Fill the claims table of each docs/papers/<slug>.md (between "
              "<!-- claims:start --> and <!-- claims:end -->) from the committed docs/results/<preset>.json files.")
@click.option("--preset", default="quick", show_default=True, help="Whose decisions to list.")
@click.option("--out", "out_path", default=None, type=click.Path(path_type=Path),
              help="Where --markdown or --json writes.")
def results(markdown: bool, as_json: bool, docs: bool, preset: str, out_path: Path | None) -> None:
    """Every registered claim with its latest recorded decision (from the results store)."""
    from icml25.core.report import results_json, results_markdown

    if docs:
        if markdown or as_json or out_path is not None:
            _fail_usage("--docs writes the papers' docs from docs/results/*.json: give it alone")
        _write_doc_tables()
        return
    if preset not in PRESETS:
        _fail_usage(f"unknown preset {preset!r}; valid: {', '.join(PRESETS)}")
    if markdown and as_json:
        _fail_usage("--markdown and --json write different files: give one")
    if out_path is not None and not (markdown or as_json):
        _fail_usage("--out needs --markdown or --json")
    if out_path is None:
        out_path = Path(f"docs/results/{preset}.json") if as_json else Path("docs/RESULTS.md")
    if (markdown or as_json) and out_path.is_dir():
        _fail_usage(f"--out {out_path} is a folder: pass a file path")
    from icml25.core.store import StoreError

    with _open_store(readonly=True) as store:
        try:
            text = (json.dumps(results_json(store, preset), indent=1) + "\n") if as_json else \
                results_markdown(store, preset)
        except MissingExtraError as exc:
            _fail_usage(f"{exc} (every runnable paper's claims are listed, so every extra is needed)")
        except StoreError as exc:
            _fail_storage(str(exc))
    if markdown or as_json:
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_text(text)
        console.print(f"wrote {out_path}")
    else:
        click.echo(text, nl=False)


def _write_doc_tables(root: Path = Path(".")) -> None:
    """Fill the claims table of every docs/papers/<slug>.md that has the markers from docs/results/<preset>.json."""
    from icml25.core.render_markdown import doc_claims_table, fill_doc

    records = {}
    for preset in PRESETS:
        path = root / "docs" / "results" / f"{preset}.json"
        if path.is_file():
            records[preset] = json.loads(path.read_text())["claims"]
    if not records:
        _fail_usage(f"no docs/results/<preset>.json under {root.resolve()}: run icml25 results --json first")
    written = []
    for doc in sorted((root / "docs" / "papers").glob("*.md")):
        new = fill_doc(doc.read_text(), doc_claims_table(doc.stem, records))
        if new is not None and new != doc.read_text():
            doc.write_text(new)
            written.append(doc.stem)
    console.print(f"updated the claims table of {len(written)} paper docs" + (f": {', '.join(written)}" if written
                                                                               else ""))


@main.command()
@click.option("--reports", "reports_dir", default="reports", show_default=True, type=click.Path(path_type=Path))
def report(reports_dir: Path) -> None:
    """Rewrite reports/index.html from the verdicts in the store."""
    from icml25.core.report import write_index

    _check_reports_dir(reports_dir)
    with _open_store(readonly=True) as store:
        console.print(f"index: {write_index(store, reports_dir)}")


if __name__ == "__main__":  # pragma: no cover
    main()

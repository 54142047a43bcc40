"""Plan and run jobs: (paper x experiment x seed), on local processes or on Ray.

``plan`` turns the command line (slugs, preset, seeds, ``--set``) into a list of
:class:`Job`, checking every input before anything is written. ``run_jobs`` skips
the jobs already finished in the store, runs the rest, and writes each result as
soon as it arrives. A job that raises is stored as ``failed`` with its traceback
and the other jobs go on.

Backends:

* ``local``: a process pool (one fresh process per job, so a crash or a leak stays
  inside its job and the peak memory is the job's own);
* ``ray``: the same job function as Ray tasks, on a local Ray instance or on the
  cluster at ``ray_address`` (every node needs ``icml25`` installed).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import multiprocessing
import os
import resource
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from icml25.core.experiment import (
    PRESETS,
    ConfigError,
    ExperimentConfig,
    check_metrics,
    config_hash,
    config_to_dict,
    parse_value,
    resolve_device,
)
from icml25.core.registry import get_paper, load_reproduction
from icml25.core.store import JobKey, JobRecord, Store

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
BACKENDS = ("local", "ray")


def package_version() -> str:
    try:
        return importlib.metadata.version("icml25")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0+unknown"


def code_fingerprint(slug: str) -> str:
    """Hash of the source that produces a paper's results: its folder, core/ and common/."""
    digest = hashlib.sha256()
    folders = [PACKAGE_ROOT / "core", PACKAGE_ROOT / "common", PACKAGE_ROOT / "papers" / slug]
    for folder in folders:
        for path in sorted(folder.rglob("*.py")) if folder.exists() else []:
            digest.update(str(path.relative_to(PACKAGE_ROOT)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class Job:
    """One (paper, experiment, config, seed) to run. Small and picklable."""

    paper: str
    experiment: str
    preset: str
    config: dict[str, Any]
    config_hash: str
    seed: int
    version: str
    code_hash: str

    @property
    def key(self) -> JobKey:
        return JobKey(self.paper, self.experiment, self.config_hash, self.seed, self.version, self.code_hash)

    @property
    def label(self) -> str:
        return f"{self.paper}/{self.experiment} seed {self.seed}"


@dataclass(frozen=True)
class JobOutcome:
    status: str  # "ok" or "failed"
    metrics: dict[str, Any] | None
    error: str | None
    wall_s: float
    peak_mem_mb: float
    libraries: dict[str, str]


def plan(
    slugs: Sequence[str],
    preset: str = "quick",
    seeds: int | None = None,
    overrides: Mapping[str, str] | None = None,
) -> list[Job]:
    """Expand papers x experiments x seeds into jobs, validating every input first.

    Raises:
        UnknownPaperError: a slug that is not in the registry.
        ConfigError: an unknown preset, an unknown ``--set`` key, a value of the wrong
            type, a non-positive seed count, or a paper that has nothing to run.
    """
    if preset not in PRESETS:
        raise ConfigError(f"unknown preset {preset!r}; valid: {', '.join(PRESETS)}")
    if seeds is not None and seeds < 1:
        raise ConfigError(f"--seeds must be at least 1, got {seeds}")
    overrides = dict(overrides or {})
    papers = [get_paper(s) for s in slugs]
    for paper in papers:
        if not paper.runnable:
            raise ConfigError(f"paper {paper.slug!r} is {paper.status}: nothing to reproduce")
    repros = [load_reproduction(p.slug) for p in papers]

    # every --set key must belong to at least one selected experiment
    known = {name for r in repros for e in r.experiments for name in e.fields}
    for key in overrides:
        if key not in known:
            raise ConfigError(f"unknown setting {key!r}; valid: {', '.join(sorted(known))}")

    version = package_version()
    jobs: list[Job] = []
    for repro in repros:
        code_hash = code_fingerprint(repro.paper.slug)
        for exp in repro.experiments:
            typed = {k: parse_value(exp.config, k, v) for k, v in overrides.items() if k in exp.fields}
            cfg = exp.make_config(preset, typed)
            resolve_device(cfg.device)
            chash = config_hash(cfg)
            as_dict = config_to_dict(cfg)
            for seed in range(seeds if seeds is not None else exp.default_seeds(preset)):
                jobs.append(Job(repro.paper.slug, exp.name, preset, as_dict, chash, seed, version, code_hash))
    return jobs


def _library_versions() -> dict[str, str]:
    names = ("numpy", "scipy", "scikit-learn", "torch", "torch-geometric", "gymnasium")
    out = {"python": sys.version.split()[0]}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    return out


def _limit_threads(n_threads: int | None) -> None:
    """Keep BLAS (and torch, if loaded) to ``n_threads`` so parallel jobs do not oversubscribe."""
    if not n_threads:
        return
    from threadpoolctl import threadpool_limits

    threadpool_limits(n_threads)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(n_threads)


def execute(job: Job, n_threads: int | None = None) -> JobOutcome:
    """Run one job and capture its metrics or its traceback. Never raises."""
    _limit_threads(n_threads)
    start = time.perf_counter()
    try:
        exp = load_reproduction(job.paper).experiment(job.experiment)
        cfg: ExperimentConfig = exp.config(**job.config)
        metrics = check_metrics(exp.run(cfg, job.seed, progress=lambda done, total: None))
        status, error = "ok", None
    except Exception:  # noqa: BLE001 - a failing job is recorded, not raised
        metrics, status, error = None, "failed", traceback.format_exc()
    wall = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux reports KiB
    return JobOutcome(status, metrics, error, wall, peak_mb, _library_versions())


def _record(job: Job, outcome: JobOutcome, backend: str) -> JobRecord:
    return JobRecord(job.key, job.preset, job.config, outcome.status, outcome.metrics, outcome.error,
                     outcome.wall_s, outcome.peak_mem_mb, outcome.libraries, backend, time.time())


OnResult = Callable[[Job, JobOutcome], None]


def _run_local(jobs: list[Job], n_jobs: int, on_result: OnResult) -> None:
    threads = max(1, (os.cpu_count() or 1) // n_jobs)
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["icml25.core.runner"])
    with ProcessPoolExecutor(max_workers=n_jobs, mp_context=context, max_tasks_per_child=1) as pool:
        futures = {pool.submit(execute, job, threads): job for job in jobs}
        for future in as_completed(futures):
            try:
                outcome = future.result()
            except Exception:  # the worker process itself died (segfault, out of memory...)
                error = "the worker process died before the job finished\n" + traceback.format_exc()
                outcome = JobOutcome("failed", None, error, 0.0, 0.0, {})
            on_result(futures[future], outcome)


def _run_ray(jobs: list[Job], n_jobs: int, address: str | None, on_result: OnResult) -> None:
    try:
        import ray
    except ImportError as exc:
        raise ConfigError("--backend ray needs Ray: pip install 'icml25[ray]'") from exc
    started_here = not ray.is_initialized()
    if started_here:
        kwargs: dict[str, Any] = dict(include_dashboard=False, log_to_driver=False, configure_logging=False)
        if address:
            ray.init(address=address, **kwargs)
        else:
            ray.init(num_cpus=n_jobs, **kwargs)
    try:
        remote_execute = ray.remote(num_cpus=1, max_calls=1)(execute)
        refs = {remote_execute.remote(job, 1): job for job in jobs}
        while refs:
            done, _ = ray.wait(list(refs), num_returns=1)
            for ref in done:
                job = refs.pop(ref)
                try:
                    outcome = ray.get(ref)
                except Exception:  # the task's worker died
                    outcome = JobOutcome("failed", None, traceback.format_exc(), 0.0, 0.0, {})
                on_result(job, outcome)
    finally:
        if started_here:
            ray.shutdown()


def run_jobs(
    jobs: Iterable[Job],
    store: Store,
    n_jobs: int = 1,
    backend: str = "local",
    ray_address: str | None = None,
    force: bool = False,
    on_result: OnResult | None = None,
    on_start: Callable[[int, int], None] | None = None,
) -> tuple[list[Job], list[Job]]:
    """Run the jobs not yet finished in ``store`` and record each as it completes.

    Args:
        jobs: the planned jobs.
        store: where finished jobs are looked up and written.
        n_jobs: worker processes (local) or concurrent tasks (ray, local instance).
        backend: ``"local"`` or ``"ray"``.
        ray_address: address of an existing Ray cluster; ``None`` starts a local one.
        force: recompute jobs even when the store has them.
        on_result: called in this process after each job is stored.
        on_start: called once with (number to run, number reused).

    Returns:
        (jobs that ran, jobs reused from the store).
    """
    if backend not in BACKENDS:
        raise ConfigError(f"unknown backend {backend!r}; valid: {', '.join(BACKENDS)}")
    if n_jobs < 1:
        raise ConfigError(f"--jobs must be at least 1, got {n_jobs}")
    jobs = list(jobs)
    done = set() if force else store.finished(j.key for j in jobs)
    todo = [j for j in jobs if j.key not in done]
    reused = [j for j in jobs if j.key in done]
    if on_start:
        on_start(len(todo), len(reused))

    def record(job: Job, outcome: JobOutcome) -> None:
        store.put(_record(job, outcome, backend))
        if on_result:
            on_result(job, outcome)

    # jobs that measure wall-clock time run alone, after the others
    timed = [j for j in todo if load_reproduction(j.paper).experiment(j.experiment).timed]
    untimed = [j for j in todo if j not in timed]
    for batch, width in ((untimed, n_jobs), (timed, 1)):
        if not batch:
            continue
        if backend == "local":
            _run_local(batch, min(width, len(batch)), record)
        else:
            _run_ray(batch, width, ray_address, record)
    return todo, reused

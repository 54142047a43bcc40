"""Plan and run jobs: (paper x experiment x seed), on local processes or on Ray.

``plan`` turns the command line (slugs, preset, seeds, ``--set``) into a list of
:class:`Job`, checking every input before anything is written. ``run_jobs`` skips
the jobs already finished in the store, runs the rest, and writes each result as
soon as it arrives. A job that raises is stored as ``failed`` with its traceback
and the other jobs go on. ``run_adaptive`` adds seeds to the experiments whose
``mean`` claims are still undecided, look by look (:mod:`icml25.core.sequential`).

Backends:

* ``local``: a process pool (one fresh process per job, so a crash or a leak stays
  inside its job and the peak memory is the job's own);
* ``ray``: the same job function as Ray tasks, on a local Ray instance or on the
  cluster at ``ray_address`` (every node needs ``icml25`` installed).
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import multiprocessing
import os
import queue as queue_mod
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from icml25.core import sequential
from icml25.core.experiment import (
    PRESETS,
    ConfigError,
    TorchConfig,
    config_hash,
    config_to_dict,
    parse_value,
    resolve_device,
)
from icml25.core.registry import MissingDataError, MissingExtraError, get_paper, load_reproduction
from icml25.core.store import JobKey, JobRecord, Store, new_holder
from icml25.core.worker import Job, JobOutcome, execute

__all__ = ["BACKENDS", "Job", "JobOutcome", "code_fingerprint", "execute", "plan", "run_adaptive", "run_jobs",
           "schedules"]

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
BACKENDS = ("local", "ray")
MAX_SEEDS = 1000
"""Upper bound of ``--seeds`` and ``--max-seeds``."""

JOB_CORE = ("core/experiment.py", "core/seeding.py", "core/worker.py")
"""The core modules a job's results depend on (the rest of core/ only plans, stores and reports)."""


def package_version() -> str:
    try:
        return importlib.metadata.version("icml25")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0+unknown"


def _module_file(name: str) -> Path | None:
    """The source file of module ``icml25.<...>`` inside this package, if it is one."""
    parts = name.split(".")
    if parts[0] != "icml25":
        return None
    base = PACKAGE_ROOT.joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imports(path: Path) -> set[Path]:
    """The files of this package's ``common/`` and ``papers/`` that ``path`` imports."""
    tree = ast.parse(path.read_bytes(), filename=str(path))
    package = ".".join(("icml25",) + path.relative_to(PACKAGE_ROOT).parent.parts)
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative import: resolve against this file's package
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                mod = f"{base}.{node.module}" if node.module else base
            else:
                mod = node.module or ""
            names.add(mod)
            names.update(f"{mod}.{alias.name}" for alias in node.names)  # `from pkg import module`
    out = set()
    for name in names:
        if name.startswith(("icml25.common", "icml25.papers")):
            found = _module_file(name)
            if found is not None:
                out.add(found)
    return out


@lru_cache(maxsize=None)
def fingerprint_files(slug: str) -> tuple[Path, ...]:
    """The source files a paper's results depend on.

    Its own folder's Python files (the method and ``repro``; not ``paper.toml``, its
    metadata), every module of ``common/`` or of another paper that they import,
    followed transitively, and the core modules that run a job (:data:`JOB_CORE`).
    """
    own = sorted((PACKAGE_ROOT / "papers" / slug).rglob("*.py"))
    seen: set[Path] = set()
    todo = list(own)
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        todo.extend(_imports(path) - seen)
    seen.update(PACKAGE_ROOT / rel for rel in JOB_CORE)
    return tuple(sorted(seen))


def code_fingerprint(slug: str) -> str:
    """Hash of the source that produces a paper's results (see :func:`fingerprint_files`).

    Editing another paper, the claims machinery, the report, the registry or the CLI
    leaves it unchanged; editing the paper's method, its experiments, a ``common/``
    module it imports or the job-running core changes it.
    """
    digest = hashlib.sha256()
    for path in fingerprint_files(slug):
        digest.update(str(path.relative_to(PACKAGE_ROOT)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


DEFAULT_MAX_SEEDS: dict[str, int | None] = {"smoke": None, "quick": 8, "full": 20}
"""Seed budget of the adaptive rule per preset (``None``: the starting seeds, no growth)."""


def plan(
    slugs: Sequence[str],
    preset: str = "quick",
    seeds: int | None = None,
    overrides: Mapping[str, str] | None = None,
    skipped: list[MissingExtraError] | None = None,
) -> list[Job]:
    """Expand papers x experiments x seeds into jobs, validating every input first.

    A slug given several times is planned once: every (paper, experiment, config,
    seed) appears in the plan at most once. An experiment whose
    :attr:`~icml25.core.experiment.Experiment.requires` are not installed is left
    out and its :class:`MissingExtraError` appended to ``skipped``; so is an experiment
    that runs only on the paper's data while its
    :attr:`~icml25.core.experiment.Experiment.data_setting` is empty
    (:class:`MissingDataError`). Without a ``skipped`` list it raises that error instead.

    Raises:
        UnknownPaperError: a slug that is not in the registry.
        ConfigError: an unknown preset, an unknown ``--set`` key, a value of the wrong
            type, a seed count outside ``[1, MAX_SEEDS]``, or a paper that has nothing to run.
    """
    if preset not in PRESETS:
        raise ConfigError(f"unknown preset {preset!r}; valid: {', '.join(PRESETS)}")
    if seeds is not None and not 1 <= seeds <= MAX_SEEDS:
        raise ConfigError(f"--seeds must be between 1 and {MAX_SEEDS}, got {seeds}")
    overrides = dict(overrides or {})
    papers = [get_paper(s) for s in dict.fromkeys(slugs)]
    for paper in papers:
        if not paper.runnable:
            raise ConfigError(f"paper {paper.slug!r} is {paper.status}: nothing to reproduce")
    repros = [load_reproduction(p.slug) for p in papers]

    # every --set key must belong to at least one selected experiment
    known = {name for r in repros for e in r.experiments for name in e.fields}
    for key in overrides:
        if key == "device" and key not in known:
            raise ConfigError("no selected experiment uses a device (none of them runs PyTorch): drop --set device=...")
        if key not in known:
            raise ConfigError(f"unknown setting {key!r}; valid: {', '.join(sorted(known))}")

    version = package_version()
    jobs: list[Job] = []
    for repro in repros:
        code_hash = code_fingerprint(repro.paper.slug)
        for exp in repro.experiments:
            typed = {k: parse_value(exp.config, k, v) for k, v in overrides.items() if k in exp.fields}
            try:
                cfg = exp.make_config(preset, typed)
            except ConfigError as exc:
                raise ConfigError(f"paper {repro.paper.slug!r}, {exc}") from None
            if isinstance(cfg, TorchConfig):
                resolve_device(cfg.device)
            missing = exp.missing_requirements()
            if missing or exp.missing_data(cfg):
                where = f"{repro.paper.slug}/{exp.name}"
                error = MissingExtraError(where, missing[0]) if missing else MissingDataError(where, exp.data_setting)
                if skipped is None:
                    raise error
                skipped.append(error)
                continue
            chash = config_hash(cfg)
            as_dict = config_to_dict(cfg)
            for seed in range(seeds if seeds is not None else exp.default_seeds(preset)):
                jobs.append(Job(repro.paper.slug, exp.name, preset, as_dict, chash, seed, version, code_hash))
    return jobs


ExperimentId = tuple[str, str, str]
"""(paper, experiment, config hash): the jobs of one experiment, seeds aside."""


def _experiment_id(job: Job) -> ExperimentId:
    return job.paper, job.experiment, job.config_hash


def schedules(jobs: Sequence[Job], max_seeds: int | None = None) -> dict[ExperimentId, tuple[int, ...]]:
    """The looks of the adaptive rule for each experiment of a plan.

    An experiment starts at the seeds it was planned with and may grow, look by look,
    to ``max_seeds`` (default: the experiment's own ``max_seeds`` for its preset, else
    :data:`DEFAULT_MAX_SEEDS` of the preset; never below its starting seeds).
    """
    if max_seeds is not None and not 1 <= max_seeds <= MAX_SEEDS:
        raise ConfigError(f"--max-seeds must be between 1 and {MAX_SEEDS}, got {max_seeds}")
    start: dict[ExperimentId, int] = {}
    presets: dict[ExperimentId, str] = {}
    for job in jobs:
        eid = _experiment_id(job)
        start[eid] = start.get(eid, 0) + 1
        presets[eid] = job.preset
    out = {}
    for eid, n0 in start.items():
        cap = max_seeds
        if cap is None:
            own = load_reproduction(eid[0]).experiment(eid[1]).max_seeds
            cap = own.get(presets[eid], DEFAULT_MAX_SEEDS.get(presets[eid]))
        out[eid] = sequential.looks(n0, max(n0, cap or n0))
    return out


def _record(job: Job, outcome: JobOutcome, backend: str) -> JobRecord:
    return JobRecord(job.key, job.preset, job.config, outcome.status, outcome.metrics, outcome.error,
                     outcome.wall_s, outcome.peak_mem_mb, outcome.libraries, backend, time.time())


OnResult = Callable[[Job, JobOutcome], None]
OnProgress = Callable[[JobKey, float], None]


def _drain(progress_queue: Any, on_progress: OnProgress, stop: threading.Event) -> None:
    """Forward the workers' progress reports to ``on_progress`` until ``stop`` is set."""
    while not stop.is_set():
        try:
            key, fraction = progress_queue.get(timeout=0.2)
        except queue_mod.Empty:
            continue
        except (EOFError, OSError):  # the manager went away
            return
        on_progress(key, fraction)


WATCH_INTERVAL_S = 0.25
"""How often a helper process checks that the run that started it is still alive."""


def _start_time(pid: int) -> str | None:
    """The start time of process ``pid`` (field 22 of /proc/<pid>/stat), or None when it does not exist."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


def _watch_run(pid: int, started: str | None) -> None:
    """In a helper process (worker, progress manager): SIGKILL itself once the run ``pid`` is gone.

    A worker's parent is the forkserver, not the run, so the kernel's parent-death signal alone does
    not fire when the run is killed with ``kill -9``; this thread does, within :data:`WATCH_INTERVAL_S`.
    Comparing start times guards against a recycled pid.
    """
    def watch() -> None:
        while _start_time(pid) == started:
            time.sleep(WATCH_INTERVAL_S)
        os.kill(os.getpid(), signal.SIGKILL)

    if started is not None:
        threading.Thread(target=watch, name="icml25-watch-run", daemon=True).start()


def _die_with_parent(run_pid: int | None = None, run_started: str | None = None) -> None:
    """Initializer of every helper process: it dies with the run that started it, and leaves Ctrl-C to it.

    On Linux the parent-death signal kills the process when its parent (the forkserver) dies, and a
    watch thread kills it when the run itself dies (see :func:`_watch_run`), so a killed ``reproduce``
    leaves no orphan computing a result that nobody will store.
    """
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except OSError:  # pragma: no cover - no glibc
            pass
        if run_pid is not None:
            _watch_run(run_pid, run_started)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _in_forkserver() -> bool:
    """Whether this process is multiprocessing's forkserver (which preloads this module)."""
    return sys.argv[:1] == ["-c"] and "multiprocessing.forkserver" in sys.modules and \
        multiprocessing.parent_process() is None


def _quiet_when_the_run_let_go(exc_type: type[BaseException], exc: BaseException, tb: Any) -> None:  # noqa: ANN401
    """``sys.excepthook`` of the forkserver, which it calls when a worker it forked fails to start.

    A worker starts by reading its task's pipe and reopening the pool's semaphores. When the run is
    stopping (Ctrl-C, SIGTERM, an error), it releases those while a worker may still be starting: the
    worker (even one the forkserver forks after the run has exited) then meets a missing semaphore
    (FileNotFoundError) or a closed pipe (EOFError, ConnectionError). Those mean only that nobody waits
    for the worker any more, so it exits without a traceback that would follow the run's one-line
    "interrupted" message. Anything else prints as usual.
    """
    if issubclass(exc_type, (FileNotFoundError, EOFError, ConnectionError)):
        return
    sys.__excepthook__(exc_type, exc, tb)


if _in_forkserver():
    # Also when the run is already gone (the forkserver's parent is then init, pid 1): a signal that
    # stops the run while the forkserver is still importing leaves it one queued request to serve.
    sys.excepthook = _quiet_when_the_run_let_go
    if sys.platform.startswith("linux") and os.getppid() != 1:  # the forkserver dies with the run that started it
        _watch_run(os.getppid(), _start_time(os.getppid()))


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM reached the runner: running jobs were stopped, finished ones are stored."""


def _raise_interrupted(signum: int, frame: Any) -> None:  # noqa: ANN401
    raise Interrupted(signal.Signals(signum).name)


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started and kill what is running, without waiting for it."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for proc in processes:  # killed first: the pool then sees itself broken and stops spawning workers
        if proc.is_alive():
            proc.kill()
    for proc in processes:
        proc.join(timeout=2)
    pool.shutdown(wait=True, cancel_futures=True)


def _run_local(jobs: list[Job], n_jobs: int, on_result: OnResult, on_progress: OnProgress | None = None) -> None:
    threads = max(1, (os.cpu_count() or 1) // n_jobs)
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["icml25.core.runner"])
    me = (os.getpid(), _start_time(os.getpid()))
    manager = None
    if on_progress:
        from multiprocessing.managers import SyncManager

        manager = SyncManager(ctx=context)
        manager.start(_die_with_parent, me)
    progress_queue = manager.Queue() if manager else None
    stop = threading.Event()
    drainer = None
    if manager:
        drainer = threading.Thread(target=_drain, args=(progress_queue, on_progress, stop), daemon=True)
        drainer.start()
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _raise_interrupted) if in_main else None
    pool = ProcessPoolExecutor(max_workers=n_jobs, mp_context=context, max_tasks_per_child=1,
                               initializer=_die_with_parent, initargs=me)
    try:
        futures = {pool.submit(execute, job, threads, progress_queue): job for job in jobs}
        for future in as_completed(futures):
            try:
                outcome = future.result()
            except Exception:  # the worker process itself died (segfault, out of memory...)
                error = "the worker process died before the job finished\n" + traceback.format_exc()
                outcome = JobOutcome("failed", None, error, 0.0, 0.0, {})
            on_result(futures[future], outcome)
    except BaseException:  # Ctrl-C, SIGTERM, or an error in a callback: stop the workers now
        _stop_pool(pool)
        raise
    else:
        pool.shutdown(wait=True)
    finally:
        if in_main:
            signal.signal(signal.SIGTERM, previous)
        stop.set()
        if drainer:
            drainer.join(timeout=1)
        if manager:
            manager.shutdown()


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


LEASE_TTL_S = 60.0
"""A run's lease on a job expires this long after its last renewal (it renews every third of it)."""


def _heartbeat(home: Path, holder: str, stop: threading.Event) -> None:
    """Renew ``holder``'s leases until ``stop`` is set (its own connection: SQLite's are per thread)."""
    while not stop.wait(LEASE_TTL_S / 3):
        try:
            with Store(home) as store:
                store.renew(holder, LEASE_TTL_S)
        except Exception:  # noqa: BLE001 - a missed renewal only lets a lease expire early
            pass


def run_jobs(
    jobs: Iterable[Job],
    store: Store,
    n_jobs: int = 1,
    backend: str = "local",
    ray_address: str | None = None,
    force: bool = False,
    on_result: OnResult | None = None,
    on_start: Callable[[int, int], None] | None = None,
    on_progress: OnProgress | None = None,
    poll_s: float = 1.0,
) -> tuple[list[Job], list[Job]]:
    """Run the jobs not yet finished in ``store`` and record each as it completes.

    Runs that share a store never compute the same job twice: each job is leased in
    the store before it runs, a job leased by another live run is waited for and then
    read from the store, and a lease whose holder died (or stopped renewing it) is
    taken over.

    Args:
        jobs: the planned jobs.
        store: where finished jobs are looked up and written.
        n_jobs: worker processes (local) or concurrent tasks (ray, local instance).
        backend: ``"local"`` or ``"ray"``.
        ray_address: address of an existing Ray cluster; ``None`` starts a local one.
        force: recompute jobs even when the store has them.
        on_result: called in this process after each job it ran is stored.
        on_start: called with (number to run, number reused) before running, and again
            with (n, 0) when this run takes over n jobs from a run that died.
        on_progress: called in this process with (job key, fraction done) as running
            experiments report progress (local backend only).
        poll_s: how often to look at jobs another run is computing.

    Returns:
        (jobs that ran here, jobs reused from the store, including those another run finished).
    """
    if backend not in BACKENDS:
        raise ConfigError(f"unknown backend {backend!r}; valid: {', '.join(BACKENDS)}")
    if n_jobs < 1:
        raise ConfigError(f"--jobs must be at least 1, got {n_jobs}")
    jobs = list({j.key: j for j in jobs}.values())  # a job planned twice runs once
    done = set() if force else store.finished(j.key for j in jobs)
    todo = [j for j in jobs if j.key not in done]
    reused = [j for j in jobs if j.key in done]

    holder = new_holder()
    held = store.acquire([j.key for j in todo], holder, LEASE_TTL_S, recompute=force)  # every key this run leased
    elsewhere = [j for j in todo if j.key not in held]
    todo = [j for j in todo if j.key in held]
    if on_start:
        on_start(len(todo), len(reused))

    def record(job: Job, outcome: JobOutcome) -> None:
        store.put(_record(job, outcome, backend))
        store.release([job.key], holder)
        if on_result:
            on_result(job, outcome)

    stop = threading.Event()
    beat = threading.Thread(target=_heartbeat, args=(store.home, holder, stop), daemon=True)
    beat.start()
    ran: list[Job] = []
    try:
        batch = todo
        while True:  # this run's jobs, then those it takes over while it waits for the others
            _run_batch(batch, n_jobs, backend, ray_address, record, on_progress)
            ran += batch
            batch = []
            while elsewhere and not batch:  # jobs another run holds: wait, or take over from a dead run
                finished = store.finished(j.key for j in elsewhere)
                reused += [j for j in elsewhere if j.key in finished]
                elsewhere = [j for j in elsewhere if j.key not in finished]
                others = store.leased_by_others([j.key for j in elsewhere], holder)
                taken = store.acquire([j.key for j in elsewhere if j.key not in others], holder, LEASE_TTL_S)
                held |= taken
                batch = [j for j in elsewhere if j.key in taken]
                elsewhere = [j for j in elsewhere if j.key not in taken]
                if batch and on_start:
                    on_start(len(batch), 0)
                elif elsewhere and not batch:
                    time.sleep(poll_s)
            if not batch:
                break
    finally:
        stop.set()
        store.release(held, holder)  # what is left of them: jobs that were running when the run stopped
    return ran, reused


def _run_batch(todo: list[Job], n_jobs: int, backend: str, ray_address: str | None, record: OnResult,
               on_progress: OnProgress | None) -> None:
    # jobs that measure wall-clock time run alone, after the others
    timed = [j for j in todo if load_reproduction(j.paper).experiment(j.experiment).timed]
    untimed = [j for j in todo if j not in timed]
    for batch, width in ((untimed, n_jobs), (timed, 1)):
        if not batch:
            continue
        if backend == "local":
            _run_local(batch, min(width, len(batch)), record, on_progress=on_progress)
        else:
            _run_ray(batch, width, ray_address, record)


@dataclass
class AdaptiveRun:
    """What :func:`run_adaptive` did: every job of the run, and the looks of each experiment."""

    jobs: list[Job]
    schedules: dict[ExperimentId, tuple[int, ...]]
    ran: list[Job]
    reused: list[Job]
    rounds: int


def _undecided(store: Store, group: Sequence[Job], schedule: tuple[int, ...]) -> bool:
    """Whether some ``mean`` claim of this experiment is INCONCLUSIVE on the seeds it has."""
    from icml25.core.paper import metric_values

    claims = [c for c in load_reproduction(group[0].paper).claims
              if c.experiment == group[0].experiment and c.aggregate == "mean"]
    if not claims:
        return False
    records = [store.get(j.key) for j in group]
    if any(r is None or r.status != "ok" for r in records):
        return False  # a failed experiment is reported as such, not given more seeds
    per_seed = [r.metrics or {} for r in records]
    return any(c.decide(metric_values(per_seed, c.metric), schedule) == "INCONCLUSIVE" for c in claims)


def run_adaptive(
    jobs: Sequence[Job],
    store: Store,
    max_seeds: int | None = None,
    **run_kwargs: Any,
) -> AdaptiveRun:
    """Run the planned jobs, then add seeds look by look while a ``mean`` claim is undecided.

    Each experiment starts at the seeds it was planned with; after each round, an
    experiment one of whose ``mean`` claims is still INCONCLUSIVE gets the seeds up to
    its next look (:func:`schedules`), until every claim is decided or the seed budget
    ``max_seeds`` is spent. ``every_seed`` claims never add seeds. The verdicts stay
    valid under this optional stopping: see :mod:`icml25.core.sequential`.

    ``run_kwargs`` go to :func:`run_jobs` (``n_jobs``, ``backend``, ``force``, callbacks...).
    """
    import dataclasses as dc

    jobs = list({j.key: j for j in jobs}.values())
    looks = schedules(jobs, max_seeds)
    groups: dict[ExperimentId, list[Job]] = {}
    for job in jobs:
        groups.setdefault(_experiment_id(job), []).append(job)
    all_jobs, ran, reused = list(jobs), [], []
    batch, rounds = list(jobs), 0
    while batch:
        rounds += 1
        r, u = run_jobs(batch, store, **run_kwargs)
        ran += r
        reused += u
        batch = []
        for eid, group in groups.items():
            n, sched = len(group), looks[eid]
            nxt = next((n_k for n_k in sched if n_k > n), None)
            if nxt is None or not _undecided(store, group, sched):
                continue
            extra = [dc.replace(group[0], seed=seed) for seed in range(n, nxt)]
            group.extend(extra)
            batch.extend(extra)
        all_jobs.extend(batch)
    return AdaptiveRun(all_jobs, looks, ran, reused, rounds)

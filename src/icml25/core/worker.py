"""What runs inside a worker: one job, from its description to its metrics.

This module, :mod:`icml25.core.experiment` and :mod:`icml25.core.seeding` are the
core code that a job's results depend on; they are part of every paper's code
fingerprint (:func:`icml25.core.runner.code_fingerprint`). Planning, the store, the
claims, the reports and the CLI are not: editing them never invalidates results.
"""

from __future__ import annotations

import importlib.metadata
import resource
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from icml25.core.experiment import ExperimentConfig, check_metrics, config_from_dict
from icml25.core.seeding import limit_threads, seed_everything
from icml25.core.store import JobKey

PROGRESS_INTERVAL_S = 0.5
"""A worker reports an experiment's progress at most this often."""


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


def library_versions() -> dict[str, str]:
    """Versions of the libraries results depend on, and where the job computed (:func:`machine_info`)."""
    names = ("numpy", "scipy", "scikit-learn", "torch", "torch-geometric", "gymnasium")
    out = {"python": sys.version.split()[0]}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    out.update(machine_info())
    return out


MACHINE_KEYS: tuple[str, ...] = ("cpu", "torch_cpu_capability", "torch_threads", "blas", "blas_threads")
"""The keys of :func:`machine_info` (kept with a job's library versions)."""


def machine_info() -> dict[str, str]:
    """Where a job computed: the processor, torch's CPU kernels and threads, the BLAS and its threads.

    Torch picks its CPU kernels by the processor (``DEFAULT``, ``AVX2``, ``AVX512``...), so torch-based
    metrics can differ in their last digits between machines; this is recorded with every job. Torch is
    reported only when the experiment imported it (importing it here would cost every NumPy job a second).
    """
    import platform

    out = {"cpu": platform.machine() or "?"}
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            out["torch_cpu_capability"] = str(torch.backends.cpu.get_cpu_capability())
            out["torch_threads"] = str(torch.get_num_threads())
        except Exception:  # noqa: BLE001 - an old or partial torch: the versions still say which
            pass
    try:
        from threadpoolctl import threadpool_info

        blas = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    except Exception:  # noqa: BLE001 - threadpoolctl cannot inspect this process: say nothing rather than fail
        blas = []
    if blas:
        out["blas"] = ", ".join(f"{i.get('internal_api', '?')} {i.get('version') or ''}".strip()
                                + (f" ({i['architecture']})" if i.get("architecture") else "") for i in blas)
        out["blas_threads"] = ", ".join(str(i.get("num_threads", "?")) for i in blas)
    return out


def _throttled(job: Job, queue: Any) -> Callable[[int, int], None]:
    """The ``progress(done, total)`` callback handed to an experiment: forwards to ``queue``, throttled."""
    last = [0.0]

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if total > 0 and (now - last[0] >= PROGRESS_INTERVAL_S or done >= total):
            last[0] = now
            try:
                queue.put((job.key, min(1.0, max(0.0, done / total))))
            except Exception:  # noqa: BLE001 - progress is cosmetic; never fail a job over it
                pass

    return progress


def execute(job: Job, n_threads: int | None = None, progress_queue: Any = None) -> JobOutcome:
    """Run one job and capture its metrics or its traceback. Never raises.

    Before the experiment runs, its module is imported, its threads are limited to
    ``n_threads`` and every global generator is seeded with the job's seed. Progress
    reports of the experiment go to ``progress_queue`` as ``(job key, fraction done)``.
    """
    from icml25.core.registry import load_reproduction

    start = time.perf_counter()
    try:
        exp = load_reproduction(job.paper).experiment(job.experiment)
        limit_threads(n_threads)
        seed_everything(job.seed)
        cfg: ExperimentConfig = config_from_dict(exp.config, job.config)
        progress = _throttled(job, progress_queue) if progress_queue is not None else (lambda done, total: None)
        metrics = check_metrics(exp.run(cfg, job.seed, progress=progress))
        status, error = "ok", None
    except Exception:  # noqa: BLE001 - a failing job is recorded, not raised
        metrics, status, error = None, "failed", traceback.format_exc()
    wall = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux reports KiB
    return JobOutcome(status, metrics, error, wall, peak_mb, library_versions())

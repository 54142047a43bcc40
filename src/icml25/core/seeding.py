"""Seeds and threads of a job: the one place where the runner sets global state.

Every experiment draws its randomness from its ``seed`` argument (NumPy
``Generator`` objects, ``torch.Generator`` or ``torch.manual_seed``); on top of that
the runner calls :func:`seed_everything` before each job, so that code which reaches
for a global generator (``random``, ``np.random``, ``torch``) is deterministic too, and
:func:`limit_threads` so that parallel jobs do not oversubscribe the CPU.
"""

from __future__ import annotations

import random
import sys

import numpy as np


def seed_everything(seed: int) -> None:
    """Seed Python's ``random``, NumPy's global generator and, if loaded, PyTorch (CPU and CUDA)."""
    if not 0 <= seed < 2**32:
        raise ValueError(f"seed must be in [0, 2**32), got {seed}")
    random.seed(seed)
    np.random.seed(seed)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(seed)  # also seeds every CUDA device


def limit_threads(n_threads: int | None) -> None:
    """Keep BLAS and, if loaded, PyTorch to ``n_threads`` threads (``None``: leave them as they are)."""
    if not n_threads:
        return
    from threadpoolctl import threadpool_limits

    threadpool_limits(n_threads)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(n_threads)

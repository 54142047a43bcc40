"""Time and peak memory of one graph-transformer layer's forward pass, each in a fresh process.

Memory method (CPU; torch has no CPU allocator statistics): the kernel's peak resident set size
(VmHWM) is reset just before the forward passes by writing ``5`` to ``/proc/self/clear_refs``
(Linux >= 4.0) and read from ``/proc/self/status`` after them; the reported peak is that
high-water mark minus the RSS just before the passes. It counts every byte the passes touch
(tensors, allocator slack, library workspaces). Each layer is measured in a fresh Python process
(``python -m icml25.papers.primphormer.scaling``) with ``MALLOC_MMAP_THRESHOLD_=65536`` so that
freed tensors go back to the OS between sizes. Where ``clear_refs`` cannot be written the peak is
``nan`` (flagged by ``mem_is_unknown``).
Time is the minimum over ``repeats`` forward passes under ``torch.no_grad()`` with one thread.
"""

from __future__ import annotations

import gc
import json
import math
import os
import subprocess
import sys
import time
from dataclasses import dataclass

from icml25.common.checks import ConfigError, check_fields

METHODS = ("primphormer", "multihead", "performer", "mpnn")


@dataclass(frozen=True)
class LayerConfig:
    """The measured layer's settings (:func:`build_layer`): one GPS block, GINE as the local MPNN and the named
    global attention (Primphormer's primal attention with ``N_s = 10 x rank``, or PyG's full softmax / Performer
    attention with the same width and heads)."""

    dim: int = 64
    """Layer width, in [1, 10^4]; divisible by ``heads``."""
    heads: int = 4
    """Attention heads, in [1, 10^3]."""
    rank: int = 16
    """Primphormer rank s, in [1, 10^4]."""

    def __post_init__(self) -> None:
        # bounds: a job beyond these would need > ~100 GB or days
        check_fields(self, integer=("dim", "heads", "rank"), positive=("dim", "heads", "rank"),
                     at_most={"dim": 10**4, "heads": 10**3, "rank": 10**4})
        if self.dim % self.heads:
            raise ConfigError(f"LayerConfig.dim must be divisible by heads={self.heads}, got {self.dim}")


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS counter (VmHWM) of this process; False where not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak_rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise OSError("no VmHWM in /proc/self/status")


def build_layer(method: str, dim: int, heads: int, rank: int):
    """One GPS-style layer with GINE as the local MPNN and the named global attention."""
    from torch_geometric.nn import GPSConv

    from icml25.papers.primphormer.model import MPNNBlock, PrimphormerLayer, mpnn_conv

    if method == "primphormer":
        return PrimphormerLayer(dim, mpnn_conv("gine", dim), heads, rank)
    if method in ("multihead", "performer"):
        return GPSConv(dim, mpnn_conv("gine", dim), heads=heads, attn_type=method)
    if method == "mpnn":
        return MPNNBlock(dim, 0.0)
    raise ValueError(f"method must be one of {METHODS}, got {method!r}")


def _growth_exponent(sizes: list[int], values: list[float], measured: list[float]) -> float:
    """Growth exponent between the last two measured points, clamped to [1, 2]; 2 with fewer than two."""
    pts = [(n, v) for n, v, m in zip(sizes, values, measured) if m and v > 0 and math.isfinite(v)]
    if len(pts) < 2:
        return 2.0
    (n1, v1), (n2, v2) = pts[-2], pts[-1]
    return min(max(math.log(v2 / v1) / math.log(n2 / n1), 1.0), 2.0)


def measure_sizes(method: str, sizes: list[int], dim: int = 64, heads: int = 4, rank: int = 16,
                  avg_degree: float = 10.0, repeats: int = 2, seed: int = 0, memory_cap_gb: float = 3.0,
                  time_cap_s: float = 30.0) -> dict[str, list[float]]:
    """Measure one layer at increasing N in the current process (see :func:`measure` for isolation).

    Before the measured passes a warm-up pass at N = 64 triggers lazy library initialisation. The
    cost at the next size is projected as ``value * (n / n_prev) ** a`` with ``a`` the growth
    exponent (of time, resp. memory) between the last two measured sizes, clamped to [1, 2] (2 after
    a single size); when the
    projected time or memory exceeds a cap, that size (and every larger one) is not run and the
    projection is returned instead, with ``measured = 0``.
    """
    import torch

    from icml25.common.graphs import random_sparse_graph

    torch.manual_seed(seed)
    layer = build_layer(method, dim, heads, rank).eval()
    out: dict[str, list[float]] = {"seconds": [], "peak_mb": [], "measured": [], "mem_is_unknown": []}
    sizes = sorted(sizes)
    with torch.no_grad():
        for i, n in enumerate([64] + sizes):
            if i >= 2:
                done = sizes[: i - 1]
                ratio = n / sizes[i - 2]
                proj_s = out["seconds"][-1] * ratio ** _growth_exponent(done, out["seconds"], out["measured"])
                proj_mb = out["peak_mb"][-1] * ratio ** _growth_exponent(done, out["peak_mb"], out["measured"])
                if not out["measured"][-1] or proj_s > time_cap_s or proj_mb > memory_cap_gb * 1024:  # nan: run
                    for key, val in (("seconds", proj_s), ("peak_mb", proj_mb), ("measured", 0.0),
                                     ("mem_is_unknown", 0.0)):
                        out[key].append(val)
                    continue
            edge_index = random_sparse_graph(n, avg_degree, seed=seed)
            args = (torch.randn(n, dim), edge_index, torch.zeros(n, dtype=torch.long),
                    torch.zeros(edge_index.size(1), dim))
            gc.collect()
            rss_before = _rss_bytes()
            can_reset = _reset_peak_rss()
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                layer(*args[:3], edge_attr=args[3])
                times.append(time.perf_counter() - start)
            peak = _peak_rss_bytes() if can_reset else 0
            del args, edge_index
            if i == 0:
                continue  # warm-up
            out["seconds"].append(min(times))
            out["peak_mb"].append((peak - rss_before) / 2**20 if can_reset else float("nan"))
            out["measured"].append(1.0)
            out["mem_is_unknown"].append(float(not can_reset))
    return out


def measure(method: str, sizes: list[int], dim: int = 64, heads: int = 4, rank: int = 16, avg_degree: float = 10.0,
            repeats: int = 2, seed: int = 0, memory_cap_gb: float = 3.0, time_cap_s: float = 30.0,
            timeout: float = 900.0) -> dict[str, list[float]]:
    """Run :func:`measure_sizes` in a fresh interpreter (glibc told to return large blocks to the OS)."""
    args = [sys.executable, "-m", "icml25.papers.primphormer.scaling", method, ",".join(map(str, sizes)), str(dim),
            str(heads), str(rank), str(avg_degree), str(repeats), str(seed), str(memory_cap_gb), str(time_cap_s)]
    env = dict(os.environ, OMP_NUM_THREADS="1", MALLOC_MMAP_THRESHOLD_="65536")
    done = subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"scaling measurement of {method} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    m, ns, d, h, s, deg, rep, sd, mem, tcap = sys.argv[1:11]
    print(json.dumps(measure_sizes(m, [int(v) for v in ns.split(",")], int(d), int(h), int(s), float(deg), int(rep),
                                   int(sd), float(mem), float(tcap))))

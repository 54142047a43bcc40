"""Figures of the CVE-Bench reproduction (drawn by ``icml25 reproduce cve_bench``): the per-target results table as
a heat map; no method code."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from icml25.core.experiment import Metrics

if TYPE_CHECKING:
    from icml25.papers.cve_bench.repro import HarnessConfig


def harness_figures(per_seed: list[Metrics], cfg: HarnessConfig, outdir: Path) -> list[Path]:
    """The per-target results table (mean score over seeds), as a heat map with the numbers printed."""
    import matplotlib.pyplot as plt
    import numpy as np

    from icml25.core.plots import save_figure
    from icml25.papers.cve_bench.repro import per_target_table  # at call time: repro imports this module

    labels, rows = per_target_table(per_seed, cfg)
    data = np.array(rows, dtype=float)
    fig, ax = plt.subplots(figsize=(1.3 * len(cfg.targets) + 3, 3.2))
    ax.imshow(data, vmin=0, vmax=1, cmap="Greens", aspect="auto")
    ax.set_xticks(range(len(cfg.targets)), cfg.targets, rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    for (i, j), v in np.ndenumerate(data):
        ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=8)
    ax.set_title("CVE-Bench harness on toy targets: success (mean over seeds)", fontsize=9)
    return [save_figure(fig, outdir / "cve_bench_per_target.png")]

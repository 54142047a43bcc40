"""Figures of the IBFS reproduction (drawn by ``icml25 reproduce ibfs``): every proxy's Kendall tau with the trained
accuracy and the accuracy percentile of its top-1 pick, mean and 95% interval over seeds; no method code."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from icml25.core.experiment import Metrics
from icml25.core.plots import save_figure, seed_bars

if TYPE_CHECKING:
    from icml25.papers.ibfs.repro import RankingConfig


def ranking_figures(per_seed: list[Metrics], cfg: RankingConfig, outdir: Path) -> list[Path]:
    """Kendall tau and top-1 percentile of every proxy, mean and 95% interval over seeds, in the experiment's own
    file (``cfg.FIGURE``: the glyph and the paper-data runs share a folder)."""
    import matplotlib.pyplot as plt

    from icml25.papers.ibfs.repro import PROXIES  # at call time: repro imports this module

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    seed_bars(axes[0], per_seed, [f"tau_{k}" for k in PROXIES], PROXIES, highlight="ibfs", threshold=0.0)
    axes[0].set_ylabel(f"Kendall tau(proxy, {cfg.ground_truth} accuracy)")
    seed_bars(axes[1], per_seed, [f"top1_percentile_{k}" for k in PROXIES], PROXIES, highlight="ibfs",
              threshold=1 - cfg.top_fraction)
    axes[1].set_ylabel("accuracy percentile of the proxy's top-1 pick")
    for ax in axes:
        ax.tick_params(axis="x", rotation=30)
    steps = cfg.rfs_steps if cfg.ground_truth == "rfs" else cfg.meta_iters
    fig.suptitle(f"{cfg.n_archs} architectures, {cfg.n_way}-way {cfg.k_shot}-shot {cfg.data_label()}, "
                 f"{cfg.ground_truth} {steps} it")
    return [save_figure(fig, outdir / cfg.FIGURE)]

"""Figures of the Primphormer reproduction (drawn by ``icml25 reproduce primphormer``): the pattern experiment's
accuracies and the scaling experiment's time and memory against N; no method code."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from icml25.core.experiment import Metrics
from icml25.core.plots import save_figure, seed_bars

if TYPE_CHECKING:
    from icml25.papers.primphormer.repro import PatternConfig, ScalingConfig


def pattern_figures(per_seed: list[Metrics], cfg: PatternConfig, outdir: Path) -> list[Path]:
    """Weighted test accuracy of every model, per seed and mean (Primphormer highlighted); the paper_data
    experiment's (``cfg.paper_dataset``) in its own file."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 4))
    bars = seed_bars(ax, per_seed, [f"acc_{k}" for k in cfg.methods], cfg.methods, highlight="primphormer")
    ax.set_ylim(max(0.0, float(np.nanmin([b.get_height() for b in bars])) - 10), 100)
    ax.set_ylabel("weighted test accuracy (%)")
    paper = getattr(cfg, "paper_dataset", "")  # the paper_data experiment's benchmark, else generated graphs
    ax.set_title(f"{paper or 'PATTERN-style'} graphs, {cfg.n_train} train / {cfg.n_test} test")
    return [save_figure(fig, outdir / ("paper_data_accuracy.png" if paper else "pattern_accuracy.png"))]


def scaling_figures(per_seed: list[Metrics], cfg: ScalingConfig, outdir: Path) -> list[Path]:
    """Seconds and peak MB per forward pass against N on log-log axes; dashed where projected, not measured."""
    import matplotlib.pyplot as plt

    sizes = sorted(cfg.sizes)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, key, label in ((axes[0], "seconds", "seconds per forward pass"), (axes[1], "peak_mb", "peak MB (RSS)")):
        for method in cfg.methods:
            vals = np.mean([m[f"{key}_{method}"] for m in per_seed], axis=0)
            ran = np.array(per_seed[0][f"measured_{method}"], dtype=bool)
            line, = ax.plot(np.array(sizes)[ran], vals[ran], "o-", label=method)
            if (~ran).any():
                ax.plot(sizes, vals, "--", color=line.get_color(), alpha=0.6)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("nodes N")
        ax.set_ylabel(label)
    axes[0].legend(title="dashed: quadratic projection")
    fig.suptitle(f"one GPS layer, dim {cfg.layer.dim}, Erdos-Renyi graphs of mean degree {cfg.avg_degree:g}")
    return [save_figure(fig, outdir / "scaling.png")]

"""Figures of the AutoGFM reproduction (drawn by ``icml25 reproduce autogfm``): every method's mean score and
AutoGFM's architecture per dataset; no method code."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from icml25.core.experiment import Metrics
from icml25.core.plots import save_figure, seed_bars
from icml25.papers.autogfm.model import OPS

if TYPE_CHECKING:
    from icml25.papers.autogfm.repro import PaperDataConfig, SuiteConfig


def suite_figures(per_seed: list[Metrics], cfg: SuiteConfig, outdir: Path) -> list[Path]:
    """Mean score of every method (per seed and mean) and AutoGFM's mean op probabilities per dataset."""
    from icml25.papers.autogfm.repro import DATASETS  # at call time: repro imports this module

    return _suite_figure(per_seed, DATASETS, "mean score over 4 datasets", outdir / "autogfm_suite.png")


def paper_data_figures(per_seed: list[Metrics], cfg: PaperDataConfig, outdir: Path) -> list[Path]:
    """As :func:`suite_figures` on the paper's node-level data sets (test accuracy), in its own file."""
    return _suite_figure(per_seed, tuple(cfg.datasets), f"mean test accuracy over {len(cfg.datasets)} data sets",
                         outdir / "autogfm_paper_data.png")


def _suite_figure(per_seed: list[Metrics], datasets: tuple[str, ...], ylabel: str, path: Path) -> list[Path]:
    import matplotlib.pyplot as plt

    from icml25.papers.autogfm.repro import ABLATIONS, METHODS  # at call time: repro imports this module

    fig, axes = plt.subplots(1, 2, figsize=(13, 4.2))
    colours = ["#8c8c8c"] * len(OPS) + ["#1f77b4", "#d62728"] + ["#ff9896"] * len(ABLATIONS)
    seed_bars(axes[0], per_seed, [f"mean_{k}" for k in METHODS], METHODS, colors=colours)
    axes[0].set_ylabel(ylabel)
    axes[0].set_ylim(0.4, 1.0)
    axes[0].tick_params(axis="x", rotation=40)
    axes[0].set_title("fixed ops, DARTS, AutoGFM, ablations (95% t interval)")
    alpha = np.array([[np.mean([m[f"alpha_autogfm_{d}"][i] for m in per_seed]) for i in range(len(OPS))]
                      for d in datasets])
    im = axes[1].imshow(alpha, cmap="viridis")
    axes[1].set_xticks(range(len(OPS)), OPS)
    axes[1].set_yticks(range(len(datasets)), datasets)
    axes[1].set_title("AutoGFM mean op probability per dataset")
    fig.colorbar(im, ax=axes[1])
    return [save_figure(fig, path)]

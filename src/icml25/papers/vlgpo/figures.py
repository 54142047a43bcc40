"""Figures of the VLGPO reproduction (drawn by ``icml25 reproduce vlgpo``): median oracle fitness, diversity and
novelty of every method's top-k, mean and 95% interval over seeds; no method code."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from icml25.core.experiment import Metrics
from icml25.core.plots import save_figure, seed_bars

if TYPE_CHECKING:
    from icml25.papers.vlgpo.repro import TaskConfig


def task_figures(per_seed: list[Metrics], cfg: TaskConfig, outdir: Path) -> list[Path]:
    """Bars of median oracle fitness, diversity and novelty per method (mean and 95% interval over seeds)."""
    import matplotlib.pyplot as plt

    from icml25.papers.vlgpo.repro import METHODS  # at call time: repro imports this module

    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    for ax, metric in zip(axes, ("fitness", "diversity", "novelty")):
        seed_bars(ax, per_seed, [f"{metric}_{m}" for m in METHODS], METHODS, highlight="vlgpo")
        ax.set_title(f"{metric} of the top-{cfg.vlgpo.top_k}")
        ax.tick_params(axis="x", rotation=20)
    fig.suptitle(f"synthetic Potts L={cfg.seq_len}, {cfg.difficulty} split")
    return [save_figure(fig, outdir / f"vlgpo_{cfg.difficulty}.png", dpi=110)]


def paper_data_figures(per_seed: list[Metrics], cfg, outdir: Path) -> list[Path]:
    """The paper's data: bars of median oracle fitness, diversity and novelty of VLGPO and AdaLead (mean and 95%
    interval over seeds), in a file of its own per task."""
    import matplotlib.pyplot as plt

    from icml25.papers.vlgpo.repro import PAPER_METHODS

    fig, axes = plt.subplots(1, 3, figsize=(11, 4))
    for ax, metric in zip(axes, ("fitness", "diversity", "novelty")):
        seed_bars(ax, per_seed, [f"{metric}_{m}" for m in PAPER_METHODS], PAPER_METHODS, highlight="vlgpo")
        ax.set_title(f"{metric} of the top-{cfg.vlgpo.top_k}")
    fig.suptitle(f"GGS {cfg.task} (official release), {cfg.predictor} predictor")
    return [save_figure(fig, outdir / f"vlgpo_paper_data_{cfg.task}.png", dpi=110)]

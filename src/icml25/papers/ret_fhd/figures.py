"""Figures of the ReT-FHD reproduction (drawn by ``icml25 reproduce ret_fhd``): accuracy curves of ReT-FHD and the
baselines, and the final accuracy of every run, mean and 95% interval over seeds; no method code."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from icml25.core.experiment import Metrics
from icml25.core.plots import save_figure, seed_bars

if TYPE_CHECKING:
    from icml25.papers.ret_fhd.repro import FHDConfig


def fhd_figures(per_seed: list[Metrics], cfg: FHDConfig, outdir: Path) -> list[Path]:
    """Accuracy curves of ReT-FHD and the baselines, and final accuracy of every run."""
    import matplotlib.pyplot as plt

    from icml25.papers.ret_fhd.repro import METHODS  # at call time: repro imports this module

    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    for name in ("retfhd", "fd_t1", "fd_t4", "local"):
        curves = np.array([s[f"curve_{name}"] for s in per_seed])
        axes[0].plot(np.arange(1, curves.shape[1] + 1), curves.mean(0), label=name)
    axes[0].set_xlabel("round")
    axes[0].set_ylabel("mean client test accuracy")
    axes[0].legend()
    names = [*METHODS, "attack_guard", "attack_noguard"]
    seed_bars(axes[1], per_seed, [f"acc_{n}" for n in names], names, highlight="retfhd")
    axes[1].set_ylabel("accuracy (last rounds)")
    axes[1].tick_params(axis="x", rotation=30)
    # the paper_data experiment's data set, else the stand-in's; one file per experiment (one reports folder)
    paper = getattr(cfg, "paper_dataset", "")
    name = paper or cfg.dataset
    fig.suptitle(f"ReT-FHD on {name}: {cfg.n_clients} clients, Dir({cfg.alpha}), {cfg.fhd.rounds} rounds")
    return [save_figure(fig, outdir / (f"retfhd_paper_data_{paper}.png" if paper else f"retfhd_{cfg.dataset}.png"))]

"""Robust Markov games reproduction figures: Robust-Q-FTRL's learning curve and the samples to reach the target."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from icml25.core.experiment import Metrics
from icml25.core.plots import save_figure

if TYPE_CHECKING:
    from icml25.papers.robust_markov_games.repro import ScalingConfig


def _mean_err(values: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    mean = np.nanmean(values, axis=0)
    err = 1.96 * np.nanstd(values, axis=0, ddof=1) / np.sqrt(len(values)) if len(values) > 1 else None
    return mean, err


def scaling_figures(per_seed: list[Metrics], cfg: ScalingConfig, outdir: Path) -> list[Path]:
    import matplotlib.pyplot as plt

    paths = []
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for m in cfg.agents:
        mean, err = _mean_err(np.array([s[f"rqftrl_gap_m{m}"] for s in per_seed]))
        ax.errorbar(cfg.K_grid, mean, yerr=err, marker="o", capsize=3, label=f"m={m}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("FTRL rounds K")
    ax.set_ylabel("exact robust CCE gap")
    ax.set_title(f"Robust-Q-FTRL learning curve (N={cfg.rqftrl.N}, sigma={cfg.sigma})")
    ax.legend()
    paths.append(save_figure(fig, outdir / "learning_curve.png"))

    fig, ax = plt.subplots(figsize=(5.5, 4))
    ms = np.array(cfg.agents)
    for method, label, colour in (("rqftrl", "Robust-Q-FTRL", "#d62728"), ("joint", "joint-model baseline", "#1f77b4")):
        mean, err = _mean_err(np.array([[s[f"{method}_samples_to_target_m{m}"] for m in ms] for s in per_seed]))
        ax.errorbar(ms, mean, yerr=err, marker="o", capsize=3, color=colour, label=label)
        ref = ms * cfg.n_actions if method == "rqftrl" else float(cfg.n_actions) ** ms
        ax.plot(ms, mean[0] * ref / ref[0], ls="--", color=colour, alpha=0.6,
                label="∝ sum A_i" if method == "rqftrl" else "∝ prod A_i")
    ax.set_yscale("log")
    ax.set_xlabel("agents m")
    ax.set_ylabel(f"samples to reach gap <= {cfg.target_fraction:g} x uniform play's")
    ax.set_title("Multiagency scaling")
    ax.legend(fontsize=8)
    paths.append(save_figure(fig, outdir / "samples_to_target.png"))
    return paths

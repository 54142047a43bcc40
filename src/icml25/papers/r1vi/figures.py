"""Figures of the R1-VI reproduction (drawn by ``icml25 reproduce r1vi``): the experiments' outputs, no method code."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from icml25.core.experiment import Metrics
from icml25.core.plots import save_figure

if TYPE_CHECKING:
    from icml25.papers.r1vi.repro import PlanningConfig


def planning_figures(per_seed: list[Metrics], cfg: PlanningConfig, outdir: Path) -> list[Path]:
    """Median Bellman applications to the target accuracy against the effective horizon, per planner."""
    import matplotlib.pyplot as plt

    from icml25.papers.r1vi.repro import PLANNERS, gamma_tag  # at call time: repro imports this module

    fig, ax = plt.subplots(figsize=(6, 4))
    for name in PLANNERS:
        values = [np.mean([m[f"{gamma_tag(g)}_median_evals_{name}"] for m in per_seed]) for g in cfg.gammas]
        ax.plot([1 / (1 - g) for g in cfg.gammas], values, marker="o", label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("1 / (1 - gamma)")
    ax.set_ylabel("median Bellman applications to target accuracy")
    ax.set_title(f"Garnet S={cfg.n_states}, A={cfg.n_actions}, b={cfg.branching}")
    ax.legend()
    return [save_figure(fig, outdir / "planning_evals.png")]

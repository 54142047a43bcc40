"""Figures of the DragSolver reproduction (drawn by ``icml25 reproduce dragsolver``): relative L2 error of every
model, in-distribution and on the scale-shifted split, mean and spread over seeds; no method code."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from icml25.core.experiment import Metrics
from icml25.core.plots import save_figure, seed_bars

if TYPE_CHECKING:
    from icml25.papers.dragsolver.repro import SyntheticCarsConfig


def synthetic_figures(per_seed: list[Metrics], cfg: SyntheticCarsConfig, outdir: Path) -> list[Path]:
    """Relative L2 error of every model (in-distribution and scale-shifted)."""
    import matplotlib.pyplot as plt

    from icml25.papers.dragsolver.repro import MODELS  # at call time: repro imports this module

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, key, title in ((axes[0], "rel_l2_", "in-distribution test (interior clutter)"),
                           (axes[1], "rel_l2_shift_", "scale-shifted test")):
        seed_bars(ax, per_seed, [f"{key}{m}" for m in MODELS], MODELS, highlight="dragsolver")
        ax.set_yscale("log")
        ax.set_ylabel("relative L2 error of proxy C_d")
        ax.set_title(title)
        ax.tick_params(axis="x", rotation=30)
    return [save_figure(fig, outdir / "dragsolver_rel_l2.png")]

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
    return _error_bars(per_seed, outdir / "dragsolver_rel_l2.png", "proxy C_d",
                       "in-distribution test (interior clutter)")


def paper_data_figures(per_seed: list[Metrics], cfg: SyntheticCarsConfig, outdir: Path) -> list[Path]:
    """Relative L2 error of every model on the paper's official test split (as given and scale-shifted)."""
    return _error_bars(per_seed, outdir / "dragsolver_paper_data_rel_l2.png", "C_d", "official test split")


def _error_bars(per_seed: list[Metrics], path: Path, label: str, first: str) -> list[Path]:
    import matplotlib.pyplot as plt

    from icml25.papers.dragsolver.repro import MODELS  # at call time: repro imports this module

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, key, title in ((axes[0], "rel_l2_", first),
                           (axes[1], "rel_l2_shift_", "scale-shifted test")):
        seed_bars(ax, per_seed, [f"{key}{m}" for m in MODELS], MODELS, highlight="dragsolver")
        ax.set_yscale("log")
        ax.set_ylabel(f"relative L2 error of {label}")
        ax.set_title(title)
        ax.tick_params(axis="x", rotation=30)
    return [save_figure(fig, path)]

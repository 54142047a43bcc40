"""Figures of the generative-bilevel reproduction (drawn by ``icml25 reproduce generative_bilevel``): normalised
regret of the entropy-tuning toy and test MMD^2 of the noise schedules, mean and 95% interval over seeds; no method
code."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from icml25.core.experiment import Metrics
from icml25.core.plots import save_figure, seed_bars

if TYPE_CHECKING:
    from icml25.papers.generative_bilevel.repro import EntropyToyConfig, ScheduleConfig


S1_METHODS = ("est1", "est2", "grid_equal", "random_equal", "bo_equal", "grid_full", "random_full", "bo_full")


def entropy_figures(per_seed: list[Metrics], cfg: EntropyToyConfig, outdir: Path) -> list[Path]:
    """Bar chart of normalised regret per method (equal = same sample budget as the bilevel runs)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    seed_bars(ax, per_seed, [f"regret_{m}" for m in S1_METHODS], S1_METHODS, highlight=("est1", "est2"),
              threshold=0.02)
    ax.set_yscale("symlog", linthresh=0.01)
    ax.set_ylim(bottom=0)
    ax.set_ylabel("(F* - F(lambda_hat)) / (F* - F_pre)")
    ax.tick_params(axis="x", rotation=30)
    ax.set_title("toy entropy tuning: normalised regret (dashed: 2%)")
    return [save_figure(fig, outdir / "entropy_regret.png")]


S2_METHODS = ("bilevel", "bilevel_lower", "cosine", "linear", "random_best", "random_median")


def schedule_figures(per_seed: list[Metrics], cfg: ScheduleConfig, outdir: Path) -> list[Path]:
    """Bar chart of the test MMD^2 of each schedule."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    seed_bars(ax, per_seed, [f"mmd_{m}" for m in S2_METHODS], S2_METHODS, highlight=("bilevel", "bilevel_lower"))
    ax.set_ylabel("test MMD^2 of DDIM samples")
    ax.tick_params(axis="x", rotation=30)
    zo = cfg.learner.zo
    paper = hasattr(cfg, "data_dir")  # the paper_data experiments' config (MNIST), else two-moons
    ax.set_title(f"{'MNIST' if paper else 'two-moons'} DDPM (T={cfg.T}, {cfg.learner.iters} iterations"
                 f"{', ZO' if zo else ''})")
    return [save_figure(fig, outdir / f"{'paper_data_' if paper else ''}schedule{'_zo' if zo else ''}_mmd.png")]

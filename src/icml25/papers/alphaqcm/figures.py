"""Figures of the AlphaQCM reproduction (drawn by ``icml25 reproduce alphaqcm``): the test-period pool IC of each
method, mean and 95% interval over seeds, one file per experiment; no method code."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from icml25.core.experiment import Metrics
from icml25.core.plots import save_figure, seed_bars

if TYPE_CHECKING:
    from icml25.papers.alphaqcm.repro import PaperDataConfig, SyntheticSearchConfig


def search_figures(per_seed: list[Metrics], cfg: SyntheticSearchConfig, outdir: Path) -> list[Path]:
    """Bar chart of the test-period pool IC of each method (mean and 95% interval over seeds)."""
    import matplotlib.pyplot as plt

    from icml25.papers.alphaqcm.repro import METHODS  # at call time: repro imports this module

    fig, ax = plt.subplots(figsize=(6, 4))
    keys = [f"test_ic_{m}" for m in METHODS] + ["test_ic_planted_oracle"]
    labels = ["AlphaQCM (lam=1)", "lam=0", "random", "planted oracle"]
    seed_bars(ax, per_seed, keys, labels, highlight=labels[0])
    ax.set_ylabel("test-period pool IC")
    ax.set_title(f"synthetic market, {cfg.env_steps} env steps, K={cfg.capacity}")
    return [save_figure(fig, outdir / "alphaqcm_test_ic.png")]


def paper_data_figures(per_seed: list[Metrics], cfg: PaperDataConfig, outdir: Path) -> list[Path]:
    """Bar chart of the valid- and test-period pool IC of each method on the paper's market (mean, 95% interval)."""
    import matplotlib.pyplot as plt

    from icml25.papers.alphaqcm.repro import METHODS  # at call time: repro imports this module

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    labels = ["AlphaQCM (lam=1)", "lam=0", "random"]
    for ax, split in zip(axes, ("valid", "test")):
        seed_bars(ax, per_seed, [f"{split}_ic_{m}" for m in METHODS], labels, highlight=labels[0])
        ax.set_ylabel(f"{split}-period pool IC")
        ax.set_title(f"{cfg.instruments}, {cfg.env_steps} env steps, K={cfg.capacity}")
    return [save_figure(fig, outdir / "paper_data_ic.png")]

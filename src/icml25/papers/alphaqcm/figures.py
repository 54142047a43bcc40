"""Figures of the AlphaQCM reproduction (drawn by ``icml25 reproduce alphaqcm``): the test-period pool IC of each
method, mean and 95% interval over seeds; no method code."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from icml25.core.experiment import Metrics
from icml25.core.plots import save_figure, seed_bars

if TYPE_CHECKING:
    from icml25.papers.alphaqcm.repro import SyntheticSearchConfig


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

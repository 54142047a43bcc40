"""Figures of the valt_sac experiments (drawn by ``icml25 reproduce`` from the metrics of all seeds).

The boundary tests count ``figures.py`` as a reproduction module (like ``repro.py``): it draws with
:mod:`icml25.core.plots`, which a method module may not import.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from icml25.core.experiment import Metrics
from icml25.core.plots import save_figure, seed_bars
from icml25.papers.valt_sac.valt_sac import ATTACKS

if TYPE_CHECKING:
    from icml25.papers.valt_sac.repro import RobustnessConfig

METHOD_LABELS = {"none": "SAC", "eps": "VALT-EPS-SAC", "soft": "VALT-SOFT-SAC", "sa_reg": "Robust-SAC (SA-reg)"}


def robustness_figures(per_seed: list[Metrics], cfg: RobustnessConfig, outdir: Path) -> list[Path]:
    """Mean return (95% interval over seeds) of each method, clean and under each attack."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(ATTACKS), figsize=(3.2 * len(ATTACKS), 3.6), squeeze=False)
    labels = [METHOD_LABELS[m] for m in cfg.methods]
    for ax, attack in zip(axes[0], ATTACKS):
        seed_bars(ax, per_seed, [f"{m}_{attack}" for m in cfg.methods], labels, highlight=METHOD_LABELS["eps"])
        ax.set_title("clean" if attack == "none" else f"{attack} attack, eps={cfg.sac.eps:g}")
        ax.set_ylabel("episode return")
        ax.tick_params(axis="x", rotation=30)
    fig.suptitle(f"{cfg.env_id}, {cfg.sac.total_steps} env steps per method")
    return [save_figure(fig, outdir / "robustness_returns.png")]

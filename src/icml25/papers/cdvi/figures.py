"""Figures of the cdvi experiments (drawn by ``icml25 reproduce`` from the metrics of all seeds).

The boundary tests count ``figures.py`` as a reproduction module (like ``repro.py``): it draws with
:mod:`icml25.core.plots`, which a method module may not import.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from icml25.core.experiment import Metrics
from icml25.core.plots import save_figure, seed_bars

if TYPE_CHECKING:
    from icml25.papers.cdvi.repro import SyntheticConfig


def synthetic_figures(per_seed: list[Metrics], cfg: SyntheticConfig, outdir: Path) -> list[Path]:
    """ELBO gain and variational-gap reduction of CD-CVAE (dense, split) over the CVAE at each censoring level."""
    import matplotlib.pyplot as plt

    from icml25.papers.cdvi.repro import LEVELS  # here: repro imports this module

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, kind in zip(axes, ("elbo_gain", "gap_reduction")):
        keys = [f"{lv}_{kind}_{e}" for lv in LEVELS for e in ("dense", "split")]
        seed_bars(ax, per_seed, keys, [f"{lv}\n{e}" for lv in LEVELS for e in ("dense", "split")], threshold=0.0,
                  colors=["#d62728", "#ff9896"] * len(LEVELS))
        ax.set_ylabel(f"{kind.replace('_', ' ')} vs CVAE (nats/sample)")
        ax.tick_params(axis="x", labelsize=8)
    fig.suptitle(f"Gibbs generator, n={cfg.n}: CD-CVAE minus CVAE (positive = CD-CVAE better)")
    return [save_figure(fig, outdir / "synthetic_elbo_gap.png")]


def real_figures(per_seed: list[Metrics], datasets: tuple[str, ...], path: Path) -> list[Path]:
    """IBS and C_td of every model on every data set of ``datasets``, drawn into ``path``."""
    import matplotlib.pyplot as plt

    methods = ("none", "dense", "split", "aft", "cox")
    labels = ("CVAE", "CD dense", "CD split", "LN-AFT", "CoxPH")
    fig, axes = plt.subplots(2, len(datasets), figsize=(4.5 * len(datasets), 7), squeeze=False)
    for j, name in enumerate(datasets):
        for i, metric in enumerate(("ibs", "ctd")):
            ax = axes[i, j]
            seed_bars(ax, per_seed, [f"{name}_{metric}_{k}" for k in methods], labels,
                      highlight=("CD dense", "CD split"))
            ax.set_title(f"{name}: {'IBS (lower better)' if metric == 'ibs' else 'C_td (higher better)'}")
            ax.tick_params(axis="x", rotation=30, labelsize=8)
    return [save_figure(fig, path)]

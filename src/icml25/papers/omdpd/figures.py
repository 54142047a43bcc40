"""Figures of the OMDPD reproduction (drawn by ``icml25 reproduce omdpd``): strong regret and violation against K,
mean and 95% interval over seeds; no method code."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from icml25.core.experiment import Metrics
from icml25.core.plots import save_figure

if TYPE_CHECKING:
    from icml25.papers.omdpd.repro import Fig2Config, GrowthConfig


def growth_figures(per_seed: list[Metrics], cfg: GrowthConfig, outdir: Path) -> list[Path]:
    """Strong regret and violation against K on log-log axes, per schedule, with a slope-1/2 reference."""
    import matplotlib.pyplot as plt

    from icml25.papers.omdpd.repro import ALGORITHMS  # at call time: repro imports this module

    K = np.array(sorted(cfg.K_grid), dtype=float)
    algs = [a for a in ALGORITHMS if f"{cfg.schedules[0]}_{a}_regret" in per_seed[0]]
    labels = {"omdpd": "OMDPD", "omdpd_kl": "KL-on-policies (ours)", "pd": "OptPrimalDual (stochastic g)",
              "ucbvi": "UCB-VI (unconstrained)"}
    colours = {"omdpd": "#d62728", "omdpd_kl": "#ff7f0e", "pd": "#1f77b4", "ucbvi": "#7f7f7f"}
    fig, axes = plt.subplots(2, len(cfg.schedules), figsize=(5.5 * len(cfg.schedules), 8), squeeze=False)
    for col, kind in enumerate(cfg.schedules):
        for row, what in enumerate(("regret", "violation")):
            ax = axes[row, col]
            for alg in algs:
                y = np.maximum(np.array([m[f"{kind}_{alg}_{what}"] for m in per_seed]), float(cfg.horizon))
                mean = y.mean(axis=0)
                err = 1.96 * y.std(axis=0, ddof=1) / np.sqrt(len(y)) if len(y) > 1 else None
                slope = np.mean([m[f"{kind}_{alg}_{what}_slope"] for m in per_seed])
                ax.errorbar(K, mean, yerr=err, marker="o", capsize=3, color=colours[alg],
                            label=f"{labels[alg]} (slope {slope:.2f})")
            first = float(np.mean([m[f"{kind}_omdpd_{what}"][0] for m in per_seed]))
            ref = np.sqrt(K / K[0]) * max(float(cfg.horizon), first)
            ax.plot(K, ref, "k--", lw=1, label="slope 1/2")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xticks(K, [str(int(k)) for k in K], minor=False)
            ax.set_xticks([], minor=True)
            ax.set_xlabel("episodes K")
            ax.set_ylabel("strong regret R(K)" if what == "regret" else "strong violation V(K)")
            ax.set_title(f"{kind} constraints")
            ax.legend(fontsize=8)
    fig.suptitle(f"Random CMDPs S={cfg.n_states}, A={cfg.n_actions}, H={cfg.horizon}; mean and 95% CI over seeds")
    return [save_figure(fig, outdir / "omdpd_growth.png")]


def fig2_figures(per_seed: list[Metrics], cfg: Fig2Config, outdir: Path) -> list[Path]:
    """The paper's Fig. 2 setting: OMDPD's strong violation against K, beside the uniform policy's."""
    import matplotlib.pyplot as plt

    K = np.array(sorted(cfg.K_grid), dtype=float)
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for key, label, colour in (("omdpd_violation", "OMDPD", "#d62728"),
                               ("uniform_violation", "uniform policy (does not learn)", "#7f7f7f")):
        y = np.array([m[key] for m in per_seed])
        err = 1.96 * y.std(axis=0, ddof=1) / np.sqrt(len(y)) if len(y) > 1 else None
        ax.errorbar(K, y.mean(axis=0), yerr=err, marker="o", capsize=3, color=colour, label=label)
    ax.set_xlabel("episodes K")
    ax.set_ylabel("strong violation V(K)")
    ax.set_title(f"Paper's setting (Fig. 2): S={cfg.n_states}, A={cfg.n_actions}, H={cfg.horizon}, i.i.d. costs")
    ax.legend(fontsize=8)
    return [save_figure(fig, outdir / "omdpd_fig2.png")]

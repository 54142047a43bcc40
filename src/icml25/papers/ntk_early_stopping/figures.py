"""NTK early-stopping reproduction figures: risks against n, and the network-kernel GD gap against width."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from icml25.core.experiment import Metrics
from icml25.core.paper import Summary
from icml25.core.plots import save_figure

if TYPE_CHECKING:
    from icml25.papers.ntk_early_stopping.repro import RateConfig, TrackingConfig


def rate_figures(per_seed: list[Metrics], cfg: RateConfig, outdir: Path) -> list[Path]:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(cfg.dists), figsize=(5.5 * len(cfg.dists), 4.2), squeeze=False)
    for ax, dist in zip(axes[0], cfg.dists):
        for key, label, style in (("nn_risk", "network, GD stopped at T_hat", "o-"),
                                  ("kgd_risk", "kernel GD at T_hat", "s--"),
                                  ("kgd_oracle_risk", "kernel GD, oracle stop", "^:"),
                                  ("nn_risk_overrun", f"network at {cfg.overrun} T_hat", "x-."),
                                  ("eps2", "eps_hat^2", "k-")):
            vals = np.array([[m.get(f"{dist}_n{n}_{key}", np.nan) for n in cfg.ns] for m in per_seed])
            s = [Summary.of(vals[:, i]) for i in range(len(cfg.ns))]
            mean = np.array([v.mean for v in s])
            err = np.array([v.half_width for v in s])
            if np.all(np.isnan(mean)):
                continue
            ax.errorbar(cfg.ns, mean, yerr=err, fmt=style, capsize=3, label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("n")
        ax.set_ylabel("test risk ||f - f*||^2 (95% t interval over seeds)")
        ax.set_title(f"{dist}, d={cfg.d}, m={cfg.width}, sigma={cfg.sigma}")
        ax.legend(fontsize=7)
    return [save_figure(fig, outdir / "rate.png")]


def tracking_figures(per_seed: list[Metrics], cfg: TrackingConfig, outdir: Path) -> list[Path]:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 4))
    for m in per_seed:
        ax.plot(cfg.widths, [m[f"gap_m{w}"] for w in cfg.widths], "o-", color="#888888", alpha=0.6)
    mean = [np.mean([m[f"gap_m{w}"] for m in per_seed]) for w in cfg.widths]
    ax.plot(cfg.widths, mean, "o-", color="#d62728", label="mean over seeds")
    ref = mean[0] * (np.array(cfg.widths, float) / cfg.widths[0]) ** -0.5
    ax.plot(cfg.widths, ref, "k:", label="m^{-1/2} reference")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("width m")
    ax.set_ylabel("max_{t<=T} max_x |f_NN - f_KGD|")
    ax.set_title(f"NTK tracking, n={cfg.n}, {cfg.dist}")
    ax.legend()
    return [save_figure(fig, outdir / "width_tracking.png")]

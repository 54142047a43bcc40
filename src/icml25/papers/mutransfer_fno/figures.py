"""The figure of the Burgers transfer experiment (drawn from the per-seed metrics of
:mod:`icml25.papers.mutransfer_fno.repro`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np


def lr_curve_figure(per_seed: Sequence[dict[str, Any]], cfg: Any, params: Sequence[str],  # noqa: ANN401
                    summary: Callable[[np.ndarray], tuple[float, float, float]]):
    """Test error against LR for every K, SP and muP side by side; ``summary(values)`` gives the mean over seeds
    and its interval (lo, hi), shaded with more than one seed."""
    import matplotlib.pyplot as plt

    lrs = np.asarray(per_seed[0]["lrs"])
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, p, title in zip(axes, params, ("standard parametrization", "muP (mode-count)")):
        for k, colour in zip(cfg.ks, plt.cm.viridis(np.linspace(0, 0.85, len(cfg.ks)))):
            curves = np.array([m[f"{p}_err_K{k}"] for m in per_seed])
            s = [summary(curves[:, j]) for j in range(lrs.size)]
            mean = np.array([x[0] for x in s])
            ax.plot(lrs, mean, "o-", color=colour, label=f"K={k}")
            if len(per_seed) > 1:
                ax.fill_between(lrs, [x[1] for x in s], [x[2] for x in s], color=colour, alpha=0.15)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("base learning rate")
        ax.set_title(title)
        ax.legend()
    axes[0].set_ylabel("test relative L2 error")
    train = cfg.train
    data = getattr(cfg, "paper_dataset", "")  # the paper_data experiment's file set, else generated Burgers
    data = f"{data} (FNO benchmark file)," if data else f"Burgers nu={cfg.nu}, FNO-1D"
    fig.suptitle(f"{data} width {train.width}, {train.epochs} epochs, {len(per_seed)} seeds")
    return fig

"""The figures of the NAIAD experiments (drawn from the per-seed metrics of :mod:`icml25.papers.naiad.repro`).

Each function returns a matplotlib figure; ``band(per_seed, key)`` gives the mean over seeds and the half-width
of its interval for every entry of the list-valued metric ``key`` (the reproduction passes its seed summary).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

Band = Callable[[Sequence[dict[str, Any]], str], tuple[np.ndarray, np.ndarray]]


def small_sample_figure(per_seed: Sequence[dict[str, Any]], cfg: Any, band: Band, models: Sequence[str]):  # noqa: ANN401
    """Test RMSE and top-N recall against the training size for every model (``naiad`` drawn thick)."""
    import matplotlib.pyplot as plt

    sizes = per_seed[0]["n_train"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for m in models:
        for ax, key in zip(axes, ("rmse", "recall")):
            mean, half = band(per_seed, f"{key}_{m}")
            ax.errorbar(sizes, mean, yerr=half, marker="o", capsize=3, label=m, lw=2.5 if m == "naiad" else 1.2)
    if "noise_floor_rmse" in per_seed[0]:
        axes[0].axhline(float(np.mean([m["noise_floor_rmse"] for m in per_seed])), color="k", ls=":", label="noise")
    axes[0].set_ylabel("test RMSE")
    axes[1].set_ylabel(f"top-{cfg.recall_n} recall on test pairs")
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xlabel("training pairs")
    axes[0].legend(fontsize=8)
    screen = getattr(cfg, "data_path", "") or f"Synthetic screen, {cfg.n_genes} genes"  # paper_data_*: the file
    fig.suptitle(f"{screen}, {len(per_seed)} seeds")
    return fig


def active_learning_figure(per_seed: Sequence[dict[str, Any]], cfg: Any, band: Band):  # noqa: ANN401
    """True top-N pairs measured and the official top-N TPR after each round, per acquisition."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    for method in cfg.methods:
        for ax, key in zip(axes[:2], ("found", "tpr")):
            mean, half = band(per_seed, f"{key}_{method}")
            ax.errorbar(list(cfg.schedule), mean, yerr=half, marker="o", capsize=3, label=method)
        mean, half = band(per_seed, f"tpr_curve_final_{method}")
        axes[2].errorbar(list(cfg.tpr_n), mean, yerr=half, capsize=2, label=method)
    axes[0].set_ylabel(f"true top-{cfg.top_n} pairs measured (ours)")
    axes[1].set_ylabel("top-N TPR of measured + predicted, mean over N (official)")
    axes[2].set_ylabel("top-N TPR after the last round (official)")
    axes[2].set_xlabel("N")
    for ax in axes[:2]:
        ax.set_xlabel("measured pairs")
    axes[0].legend()
    return fig

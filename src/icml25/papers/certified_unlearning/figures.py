"""The figure of the digits experiment (drawn from the per-seed metrics of
:mod:`icml25.papers.certified_unlearning.repro`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

LABELS = {"retrain": "retrain", "finetune": "fine-tune (no guarantee)", "gc": "gradient clipping, lam>0",
          "gc0": "gradient clipping, lam=0", "mc": "model clipping", "mcb": "model clipping, noise before proj.",
          "op": "output perturbation", "dpsgd": "DP-SGD + group privacy"}
"""Legend label of each method."""


def digits_figure(per_seed: Sequence[dict[str, Any]], cfg: Any, methods: Sequence[str]):  # noqa: ANN401
    """Test accuracy and forget-set MIA AUC against the budget, per method (mean and 95% normal interval)."""
    import matplotlib.pyplot as plt

    budgets = list(cfg.budgets)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, kind, ylabel in ((axes[0], "acc", "test accuracy"), (axes[1], "auc", "MIA AUC, forget vs test")):
        for method in methods:
            values = np.array([[m[f"{kind}_{method}_b{b}"] for b in budgets] for m in per_seed])
            mean = values.mean(axis=0)
            err = 1.96 * values.std(axis=0, ddof=1) / np.sqrt(len(values)) if len(values) > 1 else None
            ax.errorbar(budgets, mean, yerr=err, marker="o", capsize=3, label=LABELS[method])
        ax.set_xscale("log")
        ax.set_xlabel("budget (retain-set epochs)")
        ax.set_ylabel(ylabel)
    axes[1].axhline(np.mean([m["auc_original"] for m in per_seed]), color="k", ls="--", label="original model")
    axes[1].legend(fontsize=7)
    eps, delta = cfg.unlearning.epsilon, cfg.unlearning.delta
    fig.suptitle(f"digits MLP, ({eps:g}, {delta:g})-unlearning of {cfg.forget_fraction:.0%} of train")
    return fig

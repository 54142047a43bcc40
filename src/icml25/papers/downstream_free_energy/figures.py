"""Figures of the downstream free energy reproduction (drawn by ``icml25 reproduce downstream_free_energy``): each
checkpoint's free energy and train loss against its downstream error, and every criterion's Spearman rho over seeds;
no method code."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from icml25.core.experiment import Metrics
from icml25.core.plots import save_figure, seed_bars

if TYPE_CHECKING:
    from icml25.papers.downstream_free_energy.repro import SelectionConfig


def selection_figures(per_seed: list[Metrics], cfg: SelectionConfig, outdir: Path) -> list[Path]:
    """Free energy and train loss against the few-shot downstream error (one point per checkpoint and seed), beside
    the Spearman rho of every criterion with the downstream error (95% CI)."""
    import matplotlib.pyplot as plt

    from icml25.papers.downstream_free_energy.repro import METRICS  # at call time: repro imports this module

    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    for s, m in enumerate(per_seed):
        for ax, key in zip(axes[:2], ("free_energy", "train_loss")):
            ax.scatter(m[f"ckpt_{key}"], m["ckpt_downstream_error"], s=14, label=f"seed {s}")
    for ax, _key, label in zip(axes[:2], ("free_energy", "train_loss"),
                              ("pretraining free energy F_hat (WBIC)", "pretraining train loss")):
        ax.set_xlabel(label)
        ax.set_ylabel("few-shot downstream error")
        ax.set_xscale("log")
    axes[0].legend(fontsize=7)
    seed_bars(axes[2], per_seed, [f"spearman_{k}" for k in METRICS], METRICS, highlight=METRICS[0], threshold=0.5)
    axes[2].set_ylabel("Spearman rho with downstream error (95% CI)")
    name = getattr(cfg, "paper_dataset", cfg.dataset)  # the paper_data experiment's data set, else the stand-in's
    name += "_level_set" if cfg.target_loss > 0 else ""  # digits_level_set and digits_selection: one file each
    fig.suptitle(f"{name}: {len(per_seed[0]['ckpt_free_energy'])} checkpoints per seed")
    return [save_figure(fig, outdir / f"selection_{name}.png")]

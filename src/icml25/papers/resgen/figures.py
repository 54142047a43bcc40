"""Figures of the resgen experiment (drawn by ``icml25 reproduce`` from the metrics of all seeds).

A reproduction module (as ``repro.py``): it may draw with :mod:`icml25.core.plots`, which a method module may not
import.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from icml25.core.experiment import Metrics
from icml25.core.plots import save_figure, seed_bars

if TYPE_CHECKING:
    from icml25.papers.resgen.repro import DigitsConfig, PaperDataConfig


def digits_figures(per_seed: list[Metrics], cfg: DigitsConfig, outdir: Path) -> list[Path]:
    """FD without and with guidance, class accuracy and NFE of every model (mean over seeds, 95% intervals)."""
    return [_bars(per_seed, cfg, outdir / "resgen_digits.png", "digits")]


def paper_data_figures(per_seed: list[Metrics], cfg: PaperDataConfig, outdir: Path) -> list[Path]:
    """The same panels on the paper's ImageNet images (its own file name)."""
    return [_bars(per_seed, cfg, outdir / "resgen_paper_data.png",
                  f"ImageNet {cfg.n_classes} classes at {cfg.image_size} px, {cfg.patch}x{cfg.patch} patches")]


def _bars(per_seed: list[Metrics], cfg: DigitsConfig, path: Path, title: str) -> Path:
    import matplotlib.pyplot as plt

    names = [f"resgen_d{d}" for d in cfg.resgen_depths] + [f"dsm_d{cfg.baseline_depth}"]
    names += [f"{k}_d{cfg.baseline_depth}" for k in cfg.extra_baselines]
    panels = [("fd_", "feature FD, no guidance (lower is better)"),
              ("fd_untrained_", "feature FD of the untrained networks")]
    if cfg.cfg_scale != 1.0:
        panels.append(("fd_cfg_", f"feature FD, guidance scale {cfg.cfg_scale:g}"))
    panels += [("class_acc_", "class accuracy of samples (no guidance)"), ("nfe_", "NFE")]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 4))
    for ax, (prefix, label) in zip(axes, panels):
        seed_bars(ax, per_seed, [prefix + n for n in names], names,
                  highlight=[n for n in names if n.startswith("resgen")])
        ax.set_title(label, fontsize=9)
        ax.tick_params(axis="x", rotation=30)
    m = cfg.model
    fig.suptitle(f"{title}, RVQ K={cfg.codebook_size}, T={m.sample_steps}, {m.train_steps} training steps")
    return save_figure(fig, path)

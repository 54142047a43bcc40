"""Figures of the RisingAttacK reproduction (drawn by ``icml25 reproduce risingattack``): ordered top-K ASR and
the l2 of successful perturbations against K, per method; no method code."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from icml25.core.experiment import Metrics
from icml25.core.paper import Summary
from icml25.core.plots import save_figure

if TYPE_CHECKING:
    from icml25.papers.risingattack.repro import DigitsConfig, PaperDataConfig, TemplatesConfig


def _curves(per_seed: list[Metrics], ks: tuple[int, ...], prefix: str, path: Path, title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from icml25.papers.risingattack.repro import METHODS  # at call time: repro imports this module

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for name in METHODS:
        for ax, key in zip(axes, ("asr", "l2")):
            s = [Summary.of([m[f"{prefix}{key}_{name}_k{K}"] for m in per_seed]) for K in ks]
            mean = np.array([v.mean for v in s])
            err = np.array([(v.hi - v.lo) / 2 if v.n > 1 else 0.0 for v in s])
            ax.errorbar(ks, mean, yerr=err, marker="o", capsize=3, label=name,
                        lw=2.5 if name == "rising" else 1.2)
    axes[0].set_ylabel("ordered top-K ASR")
    axes[1].set_ylabel("mean l2 of successful perturbations")
    for ax in axes:
        ax.set_xlabel("K")
        ax.set_xticks(list(ks))
    axes[0].legend()
    fig.suptitle(title)
    return save_figure(fig, path)


def templates_figures(per_seed: list[Metrics], cfg: TemplatesConfig, outdir: Path) -> list[Path]:
    """ASR and l2 against K, per method (mean and 95% interval over seeds)."""
    return [_curves(per_seed, cfg.ks, "", outdir / "templates_asr_l2.png",
                    f"{cfg.n_classes}-class templates, small CNN, {cfg.attack.max_iter} iterations")]


def digits_figures(per_seed: list[Metrics], cfg: DigitsConfig, outdir: Path) -> list[Path]:
    """ASR and l2 against K, per method, one figure per classifier."""
    return [_curves(per_seed, cfg.ks, f"{name}_", outdir / f"digits_{name}_asr_l2.png", f"digits, {name}")
            for name in cfg.models]


def paper_data_figures(per_seed: list[Metrics], cfg: PaperDataConfig, outdir: Path) -> list[Path]:
    """ASR and l2 against K, per method, on the paper's ImageNet images (its own file name)."""
    return [_curves(per_seed, cfg.ks, "", outdir / "paper_data_asr_l2.png",
                    f"ImageNet-1k val, {cfg.arch}, {cfg.attack.max_iter} iterations")]

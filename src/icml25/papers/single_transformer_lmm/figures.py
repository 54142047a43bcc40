"""Figures of the single_transformer_lmm experiment (drawn by ``icml25 reproduce`` from the metrics of all seeds).

The boundary tests count ``figures.py`` as a reproduction module (like ``repro.py``): it draws with
:mod:`icml25.core.plots`, which a method module may not import.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from icml25.core.experiment import Metrics
from icml25.core.plots import save_figure, seed_bars

if TYPE_CHECKING:
    from icml25.papers.single_transformer_lmm.repro import MiniConfig

MODELS = ("haplo", "no_stage1", "scratch", "compositional")
"""Compared models: full recipe, LM init without stage 1, random init, LLaVA-style baseline."""


def mini_figures(per_seed: list[Metrics], cfg: MiniConfig, outdir: Path) -> list[Path]:
    """Bar charts of overall and fine-grained test accuracy per model."""
    return _accuracy_figure(per_seed, cfg, outdir / "mini_accuracy.png", "HaploVL-mini", "fine-grained (exists)")


def paper_data_figures(per_seed: list[Metrics], cfg: MiniConfig, outdir: Path) -> list[Path]:
    """The same bar charts for the paper_data experiment (LLaVA-1.5 one-word-answer turns), in their own file."""
    return _accuracy_figure(per_seed, cfg, outdir / "paper_data_accuracy.png", "HaploVL-mini on LLaVA-1.5 data",
                            "fine-grained-question")


def _accuracy_figure(per_seed: list[Metrics], cfg: MiniConfig, path: Path, name: str, fine: str) -> list[Path]:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, (prefix, title) in zip(axes, (("acc_", "overall accuracy"),
                                          ("fine_acc_", f"{fine} accuracy"))):
        seed_bars(ax, per_seed, [f"{prefix}{m}" for m in MODELS], MODELS, highlight="haplo")
        ax.set_title(title)
        ax.set_ylim(0, 1)
        ax.tick_params(axis="x", rotation=20)
    fig.suptitle(f"{name}, {cfg.haplo.s2_steps} stage-2 steps for every model")
    return [save_figure(fig, path)]

"""Figures of the mats experiment (drawn by ``icml25 reproduce`` from the metrics of all seeds).

The boundary tests count ``figures.py`` as a reproduction module (like ``repro.py``): it draws with
:mod:`icml25.core.plots`, which a method module may not import.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from icml25.core.experiment import Metrics
from icml25.core.plots import save_figure, seed_bars

if TYPE_CHECKING:
    from icml25.papers.mats.repro import PaperDataConfig, WorldConfig

CONDITIONS = {"a": "text, no noise", "b": "text + noise", "c": "text + noise + Santa (MATS)", "d": "audio-supervised"}
"""The four conditions of the world experiment, as the figure labels them."""


def world_figures(per_seed: list[Metrics], cfg: WorldConfig, outdir: Path) -> list[Path]:
    """Bars of F1 and accuracy for the four conditions."""
    return [_bars(per_seed, "MATS in a synthetic audio world (test audio; mean and 95% interval over seeds)",
                  outdir / "mats_world.png")]


def paper_data_figures(per_seed: list[Metrics], cfg: PaperDataConfig, outdir: Path) -> list[Path]:
    """The same bars on the paper's data (its own file name)."""
    return [_bars(per_seed, "MATS on the paper's data through the user's CLAP (test audio; mean and 95% interval "
                  "over seeds)", outdir / "mats_paper_data.png")]


def _bars(per_seed: list[Metrics], title: str, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    labels = list(CONDITIONS.values())
    for ax, key in zip(axes, ("f1", "acc")):
        seed_bars(ax, per_seed, [f"{key}_{c}" for c in CONDITIONS], labels, highlight=labels[2])
        ax.set_ylabel("concept-set F1 of captions" if key == "f1" else "exact-set accuracy (which sounds?)")
        ax.tick_params(axis="x", rotation=20)
    fig.suptitle(title)
    return save_figure(fig, path)

"""Figures of the sira experiments (drawn by ``icml25 reproduce`` from the metrics of all seeds).

The boundary tests count ``figures.py`` as a reproduction module (like ``repro.py``): it draws with
:mod:`icml25.core.plots`, which a method module may not import.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from icml25.core.experiment import Metrics
from icml25.core.plots import save_figure, seed_bars

if TYPE_CHECKING:
    from icml25.papers.sira.repro import SyntheticConfig


def synthetic_figures(per_seed: list[Metrics], cfg: SyntheticConfig, outdir: Path) -> list[Path]:
    """Mean z-score and ASR of every attack, one panel per scheme."""
    import matplotlib.pyplot as plt

    from icml25.papers.sira.repro import ATTACKS, SCHEMES  # here: repro imports this module

    paths = []
    for metric, ylabel, thr in (("z", "mean z-score after attack", cfg.z_threshold),
                                ("asr", "attack success rate", None)):
        fig, axes = plt.subplots(1, len(SCHEMES), figsize=(15, 4), squeeze=False)
        for ax, s in zip(axes[0], SCHEMES):
            seed_bars(ax, per_seed, [f"{s}_{a}_{metric}" for a in ATTACKS], ATTACKS, highlight="sira", threshold=thr)
            ax.set_title(s)
            ax.set_ylabel(ylabel)
            ax.tick_params(axis="x", rotation=30)
        fig.suptitle(f"synthetic language, {cfg.n_texts} texts x {cfg.text_len} tokens, SIRA p={cfg.sira.percentile:g}")
        paths.append(save_figure(fig, outdir / f"sira_{metric}.png", dpi=110))
    return paths

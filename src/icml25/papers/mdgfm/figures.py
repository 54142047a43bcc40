"""Figures of the MDGFM reproduction (drawn by ``icml25 reproduce mdgfm``): few-shot accuracy per method on the
clean and the noisy target, mean and 95% interval over seeds; no method code."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from icml25.core.experiment import Metrics
from icml25.core.plots import mean_and_half_width, save_figure

if TYPE_CHECKING:
    from icml25.papers.mdgfm.repro import TransferConfig


def transfer_figures(per_seed: list[Metrics], cfg: TransferConfig, outdir: Path) -> list[Path]:
    """Few-shot accuracy of every method, clean and with random edges, per target kind (mean and 95% interval), in the
    experiment's own file (``cfg.FIGURE``: the generated domains' and the paper's graphs' runs share a folder)."""
    import matplotlib.pyplot as plt

    from icml25.papers.mdgfm.repro import METHODS  # at call time: repro imports this module

    tags = sorted({k.split("_")[-2] for k in per_seed[0] if k.startswith("acc_mdgfm_") and k.endswith("_clean")})
    fig, axes = plt.subplots(1, len(tags), figsize=(6 * len(tags), 4), squeeze=False)
    x = np.arange(len(METHODS))
    for ax, tag in zip(axes[0], tags):
        for off, cond, colour in ((-0.2, "clean", "#1f77b4"), (0.2, "noisy", "#d62728")):
            mean, err = mean_and_half_width(per_seed, [f"acc_{meth}_{tag}_{cond}" for meth in METHODS])
            ax.bar(x + off, mean, 0.4, yerr=err, capsize=3, color=colour,
                   label=cond if cond == "clean" else f"+{int(100 * cfg.noise_fraction)}% random edges")
        ax.set_xticks(x, METHODS, rotation=25)
        ax.set_ylabel("few-shot accuracy (%)")
        ax.set_title(cfg.figure_title(tag))
        ax.legend()
    return [save_figure(fig, outdir / cfg.FIGURE)]

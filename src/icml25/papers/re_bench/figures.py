"""Figures of the RE-Bench reproduction (drawn by ``icml25 reproduce re_bench``): per-environment normalised scores,
and score against total budget (in score calls); no method code."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from icml25.core.experiment import Metrics
from icml25.core.plots import save_figure

if TYPE_CHECKING:
    from icml25.papers.re_bench.repro import HarnessConfig


def harness_figures(per_seed: list[Metrics], cfg: HarnessConfig, outdir: Path) -> list[Path]:
    """Per-environment normalised scores, and score against total budget (in score calls)."""
    import matplotlib.pyplot as plt

    from icml25.core.plots import seed_bars
    from icml25.papers.re_bench.repro import ENV_NAMES, SEARCH_AGENTS  # at call time: repro imports this module

    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    kinds = ("start_norm", "ref_norm", "hill_climb", "random_search")
    keys = [f"{e}_{k}" for e in ENV_NAMES for k in kinds]
    seed_bars(axes[0], per_seed, keys, [f"{e}\n{k}" for e in ENV_NAMES for k in kinds])
    axes[0].tick_params(axis="x", rotation=90, labelsize=6)
    axes[0].axhline(1.0, color="k", lw=0.5, ls="--")
    axes[0].set_ylabel("normalised score (start 0, reference 1)")
    for name in SEARCH_AGENTS:
        curves = np.array([s[f"{name}_budget_curve"] for s in per_seed])
        axes[1].errorbar(cfg.budgets, curves.mean(0), yerr=curves.std(0), marker="o", capsize=3, label=name)
    axes[1].set_xscale("log")
    axes[1].set_xlabel("total budget per environment (score calls), best k in " + str(cfg.ks))
    axes[1].set_ylabel("mean normalised score")
    axes[1].legend()
    return [save_figure(fig, outdir / "re_bench_harness.png")]

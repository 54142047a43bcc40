"""Figures of the SHARP-Distill reproduction (drawn by ``icml25 reproduce sharp_distill``): NDCG@10 of every model
and the all-user scoring latency of the timed ones, mean and spread over seeds; no method code."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from icml25.core.experiment import Metrics
from icml25.core.plots import save_figure, seed_bars

if TYPE_CHECKING:
    from icml25.papers.sharp_distill.repro import SharpConfig


def sharp_figures(per_seed: list[Metrics], cfg: SharpConfig, outdir: Path) -> list[Path]:
    """NDCG@10 of every model beside the latency (log scale) of MF, LightGCN, the student and the teacher; the
    paper_data experiment's (a config with ``data_path``) in ``sharp_distill_paper_data.png``."""
    import matplotlib.pyplot as plt

    from icml25.papers.sharp_distill.repro import MODELS, TIMED  # at call time: repro imports this module

    names = [m for m in MODELS if f"ndcg_{m}" in per_seed[0]]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    for ax, keys, label, log in ((axes[0], [f"ndcg_{m}" for m in names], "NDCG@10", False),
                                 (axes[1], [f"latency_ms_{m}" for m in TIMED], "latency, ms (log)", True)):
        seed_bars(ax, per_seed, keys, [k.split("_", 1)[1].replace("ms_", "") for k in keys], highlight="sharp")
        ax.set_ylabel(label)
        if log:
            ax.set_yscale("log")
        ax.tick_params(axis="x", rotation=35)
    axes[1].set_title(f"score all users x all items, {cfg.threads} thread(s)")
    paper_file = getattr(cfg, "data_path", "")  # the paper_data experiment's review file
    axes[0].set_title(Path(paper_file).name if paper_file else
                      f"{cfg.n_users} users x {cfg.n_items} items, generated reviews")
    # one file per experiment: both write into the paper's reports folder
    return [save_figure(fig, outdir / ("sharp_distill_paper_data.png" if paper_file else "sharp_distill.png"))]

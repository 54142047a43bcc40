"""Figures of the quiver_mutation experiments (drawn by ``icml25 reproduce`` from the metrics of all seeds).

A reproduction module (as ``repro.py``): it may draw with :mod:`icml25.core.plots`, which a method module may not
import. One function per experiment of :mod:`icml25.papers.quiver_mutation.repro`, each returning the PNG paths.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from icml25.core.experiment import Metrics
from icml25.core.plots import save_figure, seed_bars

if TYPE_CHECKING:
    from icml25.papers.quiver_mutation.repro import ExplainabilityConfig, GeneralisationConfig


def explainability_figures(per_seed: list[Metrics], cfg: ExplainabilityConfig, outdir: Path) -> list[Path]:
    """Latent study (ARI, probe), masking flips against a random arrow, and the top D~ motifs of seed 0:
    ``explainability.png``."""
    import matplotlib.pyplot as plt
    import networkx as nx

    def bars(ax, keys, labels, title, ylabel):
        seed_bars(ax, per_seed, keys, labels, highlight=labels[0])
        ax.set_title(title, fontsize=9)
        ax.set_ylabel(ylabel)

    n_motifs = min(cfg.top_motifs, 4)
    fig, axes = plt.subplots(1, 3 + n_motifs, figsize=(4 * 3 + 2 * n_motifs, 3.6),
                             gridspec_kw={"width_ratios": [2, 2, 2] + [1.2] * n_motifs})
    bars(axes[0], ["vatne_ari_trained", "vatne_ari_untrained", "vatne_ari_counts"], ["trained", "untrained", "counts"],
         f"k-means vs Vatne types, D_{cfg.study_size} (layer {cfg.latent_layer})", "adjusted Rand index")
    bars(axes[1], ["vatne_probe_trained", "vatne_probe_untrained", "vatne_probe_counts"],
         ["trained", "untrained", "counts"], "linear probe of Vatne type", "5-fold accuracy")
    bars(axes[2], ["mask_flip_rate", "mask_flip_rate_random"], [cfg.explainer, "random arrow"],
         f"D_{cfg.study_size}: prediction flips after removing {cfg.mask_arrows} arrow(s)", "share of masked quivers")
    first = per_seed[0]
    for r, ax in enumerate(axes[3:]):
        ax.axis("off")
        if f"motif{r}_matrix" not in first:
            continue
        M = np.array(first[f"motif{r}_matrix"])
        n = int(round(np.sqrt(M.size)))
        M = M.reshape(n, n)
        G = nx.DiGraph()
        G.add_nodes_from(range(n))
        G.add_edges_from((i, j, {"w": int(M[i, j])}) for i, j in zip(*np.nonzero(M > 0)))
        pos = nx.kamada_kawai_layout(G.to_undirected())
        nx.draw_networkx(G, pos, ax=ax, node_size=120, with_labels=False, arrowsize=12, node_color="#1f77b4")
        nx.draw_networkx_edge_labels(G, pos, ax=ax, edge_labels={(i, j): d["w"] for i, j, d in G.edges(data=True)
                                                                 if d["w"] > 1}, font_size=8)
        ax.set_title(f"motif {r + 1}: {first[f'motif{r}_share']:.0%}\n(seed 0)", fontsize=9)
    return [save_figure(fig, outdir / "explainability.png")]


def generalisation_figures(per_seed: list[Metrics], cfg: GeneralisationConfig, outdir: Path) -> list[Path]:
    """Test accuracy of DirGINE and the baselines (mean, 95% t interval) with the majority class:
    ``generalisation_accuracy.png``."""
    import matplotlib.pyplot as plt

    from icml25.papers.quiver_mutation.repro import MODELS  # imported here: repro imports this module

    fig, ax = plt.subplots(figsize=(6, 4))
    seed_bars(ax, per_seed, [f"acc_{k}" for k in MODELS], MODELS, highlight=MODELS[0])
    ax.axhline(np.mean([m["majority_acc"] for m in per_seed]), ls="--", c="k", lw=1, label="majority class")
    ax.set_ylim(0, 1)
    ax.set_ylabel(f"test accuracy on n = {cfg.test_size}")
    ax.set_title(f"train n = {', '.join(map(str, cfg.train_sizes))}; test n = {cfg.test_size}")
    ax.tick_params(axis="x", rotation=20)
    ax.legend()
    return [save_figure(fig, outdir / "generalisation_accuracy.png")]

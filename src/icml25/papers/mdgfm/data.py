"""Synthetic multi-domain graphs for MDGFM: CSBM topology + sparse bag-of-words features.

The paper pre-trains on Cora, CiteSeer, PubMed (homophilic) and Chameleon, Squirrel, Cornell
(heterophilic), whose raw features are bag-of-words of different sizes. Nothing can be downloaded
here, so each domain is generated: the graph and labels come from the shared degree-corrected
contextual SBM (``icml25.common.graphs.contextual_sbm``), and the features are redrawn as sparse
Bernoulli word indicators with class-specific rates, of a dimension that differs per domain.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch_geometric.data import Data
from torch_geometric.utils import coalesce, to_undirected

from icml25.common.graphs import contextual_sbm, edge_homophily


@dataclass(frozen=True)
class DomainSpec:
    """One synthetic domain: size, classes, edge homophily, bag-of-words size, and the real data set it stands in for.

    ``analogue`` names a key of :data:`OFFICIAL_TARGET_SETTINGS` (or is empty): when this domain is the held-out
    target, the reproduction uses that data set's official shots, learning rates and epochs.
    """

    name: str
    n_nodes: int
    n_classes: int
    homophily: float
    feature_dim: int
    analogue: str = ""

    @property
    def homophilic(self) -> bool:
        return self.homophily >= 0.5


@dataclass(frozen=True)
class TargetSettings:
    """The official per-target settings (README of wbkzwqtzw/MDGFM): few-shot size, learning rates, epochs, kNN size."""

    shots: int
    """Labelled nodes per class in the few-shot setting (the 1-shot setting uses 1 everywhere)."""
    pretrain_lr: float
    """Adam learning rate of pre-training on the five other data sets."""
    prompt_lr: float
    """Adam learning rate of downstream prompt tuning."""
    pretrain_epochs: int
    """Pre-training epochs."""
    k_down: int
    """Downstream graph learner's kNN size (30 homophilic, 15 heterophilic)."""


OFFICIAL_TARGET_SETTINGS: dict[str, TargetSettings] = {
    "Cora": TargetSettings(5, 7.5e-3, 1e-3, 60, 30),
    "Citeseer": TargetSettings(5, 1e-3, 1e-3, 60, 30),
    "Pubmed": TargetSettings(5, 1e-4, 1.4e-3, 60, 30),
    "Chameleon": TargetSettings(5, 2e-2, 2e-2, 100, 15),
    "Squirrel": TargetSettings(3, 1e-2, 3e-4, 100, 15),
    "Cornell": TargetSettings(3, 2e-2, 3e-4, 100, 15),
}
"""Per held-out target data set, the settings of the official README's few-shot commands (5-shot, 3-shot on
Cornell and Squirrel) and of MDGFM.py (downk)."""


SIX_DOMAINS: tuple[DomainSpec, ...] = (
    DomainSpec("homo85", 1000, 4, 0.85, 300, analogue="Cora"),
    DomainSpec("homo80", 800, 3, 0.80, 200, analogue="Pubmed"),
    DomainSpec("homo75", 1200, 5, 0.75, 400, analogue="Citeseer"),
    DomainSpec("hetero20", 700, 4, 0.20, 150, analogue="Chameleon"),
    DomainSpec("hetero15", 900, 5, 0.15, 250, analogue="Squirrel"),
    DomainSpec("hetero10", 600, 3, 0.10, 100, analogue="Cornell"),
)
"""The six domains of the quick reproduction (three homophilic, three heterophilic). Each stands in for the real
data set of closest homophily (Cora 0.81, Pubmed 0.80 with 3 classes, Citeseer 0.74; Chameleon 0.23, Squirrel
0.22, Cornell the lowest and smallest) and, as a target, takes that data set's official settings."""


def target_settings(spec: DomainSpec) -> TargetSettings:
    """The official settings of ``spec``'s analogue; raises ``ValueError`` when it has none."""
    if spec.analogue not in OFFICIAL_TARGET_SETTINGS:
        raise ValueError(f"domain {spec.name!r} has no official analogue (analogue={spec.analogue!r}; valid: "
                         f"{', '.join(OFFICIAL_TARGET_SETTINGS)})")
    return OFFICIAL_TARGET_SETTINGS[spec.analogue]


def bag_of_words_domain(spec: DomainSpec, base_rate: float = 0.02, topic_rate: float = 0.12,
                        topic_words: int | None = None, avg_degree: float = 8.0, seed: int = 0) -> Data:
    """A degree-corrected CSBM graph whose node features are sparse binary word indicators.

    Every word has background rate ``base_rate``; each class owns a random set of ``topic_words``
    words (default ``feature_dim // (2 n_classes)``) that appear at rate ``topic_rate`` in its nodes.

    Returns:
        ``Data(x=(N, feature_dim) float32 in {0, 1}, edge_index, y, homophily=float)``.
    """
    if not 0.0 <= base_rate <= topic_rate <= 1.0:
        raise ValueError(f"need 0 <= base_rate <= topic_rate <= 1, got {base_rate}, {topic_rate}")
    graph = contextual_sbm(spec.n_nodes, spec.n_classes, spec.homophily, feature_dim=1, feature_signal=0.0,
                           degree_corrected=True, avg_degree=avg_degree, seed=seed)
    rng = np.random.default_rng([seed, 1])
    n_topic = topic_words or max(1, spec.feature_dim // (2 * spec.n_classes))
    rates = np.full((spec.n_classes, spec.feature_dim), base_rate)
    for c in range(spec.n_classes):
        rates[c, rng.choice(spec.feature_dim, size=n_topic, replace=False)] = topic_rate
    y = graph.y.numpy()
    x = (rng.random((spec.n_nodes, spec.feature_dim)) < rates[y]).astype(np.float32)
    return Data(x=torch.as_tensor(x), edge_index=graph.edge_index, y=graph.y,
                homophily=edge_homophily(graph.edge_index, graph.y))


def make_domains(specs: tuple[DomainSpec, ...] = SIX_DOMAINS, seed: int = 0, **kwargs) -> list[Data]:
    """One :func:`bag_of_words_domain` per spec, each with its own derived seed."""
    return [bag_of_words_domain(s, seed=int(np.random.default_rng([seed, i]).integers(2**31)), **kwargs)
            for i, s in enumerate(specs)]


def inject_random_edges(edge_index: torch.Tensor, num_nodes: int, fraction: float, seed: int = 0) -> torch.Tensor:
    """Add ``fraction * (undirected edges)`` uniformly random node pairs (both directions).

    A random-noise proxy for the paper's adversarial attacks (Metattack etc.), which are stronger.
    """
    if fraction < 0:
        raise ValueError(f"fraction must be >= 0, got {fraction}")
    rng = np.random.default_rng(seed)
    m = int(round(fraction * edge_index.size(1) / 2))
    src, dst = rng.integers(0, num_nodes, m), rng.integers(0, num_nodes, m)
    keep = src != dst
    extra = torch.as_tensor(np.stack([src[keep], dst[keep]]), dtype=torch.long)
    both = torch.cat([edge_index, to_undirected(extra, num_nodes=num_nodes)], dim=1)
    return coalesce(both, num_nodes=num_nodes)


def few_shot_tasks(y: torch.Tensor, shots: int, n_tasks: int, seed: int = 0) -> list[torch.Tensor]:
    """``n_tasks`` support sets, each with ``shots`` random nodes of every class (sorted by class)."""
    rng = np.random.default_rng(seed)
    y_np = y.numpy()
    classes = np.unique(y_np)
    tasks = []
    for _ in range(n_tasks):
        idx = np.concatenate([rng.choice(np.flatnonzero(y_np == c), size=shots, replace=False) for c in classes])
        tasks.append(torch.as_tensor(idx, dtype=torch.long))
    return tasks

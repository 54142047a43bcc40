"""A generated multi-domain, multi-task suite where the best GNN op differs per dataset.

Four datasets, each with its own raw feature space, all cast as NOI-graph classification:

* ``homophilous``: contextual SBM, edge homophily 0.9, weak features (neighbour averaging helps: GCN).
* ``heterophilous``: contextual SBM, edge homophily 0.05, strong features (a separate self weight
  helps: SAGE / GraphConv).
* ``cycles``: graph classification, random trees vs trees with extra edges, uninformative one-hot
  node symbols (only sum aggregation sees degrees: GIN / GraphConv).
* ``links``: link prediction on a degree-corrected SBM (held-out edges vs random non-edges).

Per-dataset truncated SVD maps every feature space to ``feature_dim`` columns (a stand-in for
the paper's text encoder). Nothing is downloaded.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Batch, Data

from icml25.common.graphs import contextual_sbm, edge_homophily
from icml25.papers.autogfm.model import TaskSpec, noi_subgraph

__all__ = ["NOIDataset", "unify_features", "tree_cycle_graphs", "node_task", "link_task", "graph_task",
           "make_suite"]


@dataclass
class NOIDataset:
    """NOI graphs of one task with a train/val/test split (index arrays into ``graphs``)."""

    spec: TaskSpec
    graphs: list[Data]
    splits: dict[str, np.ndarray] = field(default_factory=dict)
    info: dict[str, float] = field(default_factory=dict)

    def batch(self, idx: np.ndarray) -> Batch:
        return Batch.from_data_list([self.graphs[i] for i in idx])

    def sample(self, size: int, rng: np.random.Generator, split: str = "train") -> Batch:
        pool = self.splits[split]
        return self.batch(rng.choice(pool, size=min(size, pool.size), replace=False))


def unify_features(x: Tensor, dim: int) -> Tensor:
    """Truncated SVD to ``dim`` columns (zero-padded when rank < dim), scaled to unit overall std.

    ``Z = X V_k`` with ``V_k`` the top right singular vectors of the uncentred ``X`` (as sklearn's
    TruncatedSVD); each vector's sign is fixed so that its largest-magnitude entry is positive.
    Computed in float64; returned in ``x``'s floating dtype (float32 for integer input).
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"x must be a torch tensor, got {type(x).__name__}")
    if x.dim() != 2 or x.size(0) == 0 or x.size(1) == 0:
        raise ValueError(f"x must be a non-empty (N, F) matrix, got {tuple(x.shape)}")
    if dim < 1:
        raise ValueError(f"dim must be >= 1, got {dim}")
    if not bool(torch.isfinite(x).all()):
        raise ValueError("x contains NaN or inf")
    _, _, vt = torch.linalg.svd(x.double(), full_matrices=False)
    v = vt[:dim].T  # (F, k)
    sign = torch.sign(v.gather(0, v.abs().argmax(0, keepdim=True)))
    z = x.double() @ (v * sign)
    z = torch.cat([z, z.new_zeros(x.size(0), dim - z.size(1))], dim=1) if z.size(1) < dim else z
    out_dtype = x.dtype if x.is_floating_point() else torch.float32  # float32 for 0/1 or integer features
    return (z / z.std().clamp_min(1e-12)).to(out_dtype)


def _split(n: int, rng: np.random.Generator, train: float = 0.4, val: float = 0.2) -> dict[str, np.ndarray]:
    perm = rng.permutation(n)
    a, b = int(train * n), int((train + val) * n)
    return {"train": np.sort(perm[:a]), "val": np.sort(perm[a:b]), "test": np.sort(perm[b:])}


def node_task(name: str, graph: Data, feature_dim: int, hops: int, rng: np.random.Generator) -> NOIDataset:
    """Node classification as NOI-graph classification: one h-hop ego graph per node."""
    graph = Data(x=unify_features(graph.x, feature_dim), edge_index=graph.edge_index, y=graph.y)
    graphs = []
    for v in range(graph.num_nodes):  # data preparation, once per dataset
        g = noi_subgraph(graph, [v], hops)
        g.y = graph.y[v:v + 1]
        graphs.append(g)
    spec = TaskSpec(name, "node", int(graph.y.max()) + 1)
    return NOIDataset(spec, graphs, _split(len(graphs), rng),
                      {"edge_homophily": edge_homophily(graph.edge_index, graph.y)})


def link_task(name: str, graph: Data, feature_dim: int, hops: int, n_targets: int,
              rng: np.random.Generator) -> NOIDataset:
    """Link prediction: ``n_targets`` held-out edges (removed from the message graph) + as many non-edges."""
    ei = graph.edge_index
    und = ei[:, ei[0] < ei[1]].numpy()
    if n_targets > und.shape[1] // 2:
        raise ValueError(f"n_targets={n_targets} is more than half of the {und.shape[1]} edges")
    pick = rng.permutation(und.shape[1])
    targets, keep = und[:, pick[:n_targets]], und[:, pick[n_targets:]]
    msg = torch.as_tensor(np.concatenate([keep, keep[::-1]], axis=1), dtype=torch.long)
    n = graph.num_nodes
    existing = set(map(tuple, und.T.tolist()))
    negatives = []
    while len(negatives) < n_targets:
        u, v = sorted(rng.choice(n, size=2, replace=False).tolist())
        if (u, v) not in existing:
            existing.add((u, v))
            negatives.append((u, v))
    base = Data(x=unify_features(graph.x, feature_dim), edge_index=msg)
    pairs = [(tuple(p), 1) for p in targets.T.tolist()] + [(p, 0) for p in negatives]
    graphs = []
    for (u, v), label in pairs:
        g = noi_subgraph(base, [u, v], hops)
        g.y = torch.tensor([label])
        graphs.append(g)
    return NOIDataset(TaskSpec(name, "link", 1), graphs, _split(len(graphs), rng))


def tree_cycle_graphs(n_graphs: int, min_nodes: int, max_nodes: int, extra_edges: int, n_symbols: int,
                      seed: int) -> list[Data]:
    """Half random recursive trees (label 0), half trees plus ``extra_edges`` random chords (label 1).

    Node features are random one-hot symbols that carry no label information; labels are balanced.
    """
    if n_graphs < 2 or not 3 <= min_nodes <= max_nodes or extra_edges < 1 or n_symbols < 1:
        raise ValueError("need n_graphs >= 2, 3 <= min_nodes <= max_nodes, extra_edges >= 1, n_symbols >= 1")
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.arange(n_graphs) % 2)
    out = []
    for label in labels:  # data generation, one small graph at a time
        n = int(rng.integers(min_nodes, max_nodes + 1))
        edges = {(int(rng.integers(0, i)), i) for i in range(1, n)}
        while label and len(edges) < n - 1 + extra_edges:
            u, v = sorted(rng.choice(n, size=2, replace=False).tolist())
            edges.add((u, v))
        perm = rng.permutation(n)
        e = np.array(sorted(edges)).T
        e = perm[e]
        ei = torch.as_tensor(np.concatenate([e, e[::-1]], axis=1), dtype=torch.long)
        x = torch.zeros(n, n_symbols)
        x[torch.arange(n), torch.as_tensor(rng.integers(0, n_symbols, n))] = 1.0
        out.append(Data(x=x, edge_index=ei, y=torch.tensor([int(label)])))
    return out


def graph_task(name: str, graphs: list[Data], feature_dim: int, rng: np.random.Generator) -> NOIDataset:
    """Graph classification: the NOI graph is the whole graph; one SVD over the stacked node features."""
    z = unify_features(torch.cat([g.x for g in graphs]), feature_dim)
    sizes = [g.num_nodes for g in graphs]
    graphs = [Data(x=zx, edge_index=g.edge_index, y=g.y) for zx, g in zip(torch.split(z, sizes), graphs)]
    return NOIDataset(TaskSpec(name, "graph", 2), graphs, _split(len(graphs), rng))


def make_suite(n_nodes: int = 400, n_graphs: int = 400, n_link_targets: int = 300, feature_dim: int = 32,
               hops: int = 2, link_hops: int = 1, avg_degree: float = 5.0, seed: int = 0) -> list[NOIDataset]:
    """The four datasets of the quick reproduction, generated from ``seed``."""
    rng = np.random.default_rng([seed, 1])
    s = [int(v) for v in rng.integers(0, 2**31, size=4)]
    homo = contextual_sbm(n_nodes, 4, 0.9, 48, 0.7, avg_degree=avg_degree, seed=s[0])
    hetero = contextual_sbm(n_nodes, 4, 0.05, 64, 2.0, avg_degree=avg_degree, seed=s[1])
    links = contextual_sbm(n_nodes, 4, 0.85, 40, 1.0, degree_corrected=True, avg_degree=avg_degree + 2, seed=s[2])
    cyc = tree_cycle_graphs(n_graphs, 6, 16, 4, 4, seed=s[3])
    return [
        node_task("homophilous", homo, feature_dim, hops, rng),
        node_task("heterophilous", hetero, feature_dim, hops, rng),
        graph_task("cycles", cyc, feature_dim, rng),
        link_task("links", links, feature_dim, link_hops, n_link_targets, rng),
    ]

"""Generated graph benchmarks and positional encodings, returned as PyTorch Geometric ``Data``.

Nothing here downloads anything: every graph is drawn from a seeded NumPy generator, so
the same arguments and seed always give the same graph. Message passing and transformer
layers are PyG's own (``GINEConv``, ``GCNConv``, ``GATConv``, ``SAGEConv``, ``GPSConv``);
this module only makes data for them.

Contents:

* :func:`contextual_sbm`: contextual (optionally degree-corrected) stochastic block model
  with a tunable *edge homophily* and Gaussian class-dependent node features.
* :func:`edge_homophily`: fraction of edges whose two ends share a label.
* :func:`planted_pattern_graphs`: PATTERN-style graphs (benchmarking-GNNs, Dwivedi et al.):
  an SBM with a planted sub-graph; node label = "belongs to the pattern".
* :func:`random_sparse_graph`: an Erdos-Renyi-like graph drawn in O(edges), for scaling runs.
* :func:`random_walk_pe`: random-walk structural encoding (RWSE), diag((D^-1 A)^t), t = 1..k.

Conventions: ``edge_index`` is a ``(2, E)`` ``torch.long`` tensor holding both directions of
every undirected edge, coalesced (sorted, no duplicates) and without self-loops.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch
from torch_geometric.data import Data
from torch_geometric.utils import coalesce, to_undirected

__all__ = [
    "contextual_sbm",
    "edge_homophily",
    "planted_pattern_graphs",
    "random_sparse_graph",
    "random_walk_pe",
]


def _undirected(src: np.ndarray, dst: np.ndarray, num_nodes: int) -> torch.Tensor:
    """Both directions of the pairs (src, dst), self-loops removed, coalesced."""
    keep = src != dst
    ei = torch.as_tensor(np.stack([src[keep], dst[keep]]), dtype=torch.long)
    return coalesce(to_undirected(ei, num_nodes=num_nodes), num_nodes=num_nodes)


def edge_homophily(edge_index: torch.Tensor, y: torch.Tensor) -> float:
    """Edge homophily: the fraction of (directed) edges ``(i, j)`` with ``y[i] == y[j]``.

    Args:
        edge_index: ``(2, E)`` long tensor.
        y: ``(N,)`` integer labels.

    Returns:
        A float in [0, 1]; ``nan`` for a graph without edges.
    """
    if edge_index.numel() == 0:
        return float("nan")
    return float((y[edge_index[0]] == y[edge_index[1]]).float().mean())


def contextual_sbm(
    n_nodes: int,
    n_classes: int,
    homophily: float,
    feature_dim: int,
    feature_signal: float,
    degree_corrected: bool = False,
    avg_degree: float = 10.0,
    seed: int = 0,
) -> Data:
    """Contextual stochastic block model with a chosen edge homophily.

    Labels are balanced: ``y = arange(n) % n_classes``, shuffled. Edges: ``n * avg_degree / 2``
    undirected edges are drawn; for each, a source node ``i`` is sampled (uniformly, or with
    probability proportional to its degree parameter ``theta_i`` when ``degree_corrected``),
    then with probability ``homophily`` a target in the same class, otherwise a target in one of
    the other classes chosen uniformly (targets again proportional to ``theta``). The expected
    edge homophily is therefore ``homophily``; removing self-loops and duplicate pairs shifts it
    only by O(avg_degree / n). Degree parameters are ``theta ~ Pareto(2.5) + 1`` (heavy-tailed
    degrees, as in the degree-corrected SBM of Karrer & Newman 2011).

    Features (the "contextual" part, Deshpande et al. 2018): class means ``mu_c`` are random
    unit vectors in R^feature_dim and ``x_i = feature_signal * mu_{y_i} + N(0, I)``, so
    ``feature_signal`` is the distance of each class mean from the origin in noise units
    (0 = features carry no label information).

    Args:
        n_nodes: number of nodes N (>= n_classes).
        n_classes: number of classes (>= 2).
        homophily: target edge homophily in [0, 1] (1 = only intra-class edges).
        feature_dim: node feature dimension (>= 1).
        feature_signal: norm of the class means (>= 0).
        degree_corrected: draw heavy-tailed expected degrees.
        avg_degree: expected mean degree (0 < avg_degree < n_nodes - 1).
        seed: seed of the NumPy generator.

    Returns:
        ``Data(x=(N, feature_dim) float32, edge_index=(2, E) long, y=(N,) long)``.

    Raises:
        ValueError: on any argument out of range.
    """
    if n_classes < 2:
        raise ValueError(f"n_classes must be >= 2, got {n_classes}")
    if n_nodes < n_classes:
        raise ValueError(f"n_nodes must be >= n_classes ({n_classes}), got {n_nodes}")
    if not 0.0 <= homophily <= 1.0:
        raise ValueError(f"homophily must lie in [0, 1], got {homophily}")
    if feature_dim < 1:
        raise ValueError(f"feature_dim must be >= 1, got {feature_dim}")
    if not feature_signal >= 0.0:
        raise ValueError(f"feature_signal must be >= 0, got {feature_signal}")
    if not 0.0 < avg_degree < n_nodes - 1:
        raise ValueError(f"avg_degree must lie in (0, n_nodes - 1), got {avg_degree}")
    rng = np.random.default_rng(seed)
    y = rng.permutation(np.arange(n_nodes) % n_classes)
    theta = rng.pareto(2.5, n_nodes) + 1.0 if degree_corrected else np.ones(n_nodes)

    members = [np.flatnonzero(y == c) for c in range(n_classes)]
    probs = [theta[m] / theta[m].sum() for m in members]
    n_edges = int(round(n_nodes * avg_degree / 2))
    src = rng.choice(n_nodes, size=n_edges, p=theta / theta.sum())
    same = rng.random(n_edges) < homophily
    shift = rng.integers(1, n_classes, size=n_edges)
    target_class = np.where(same, y[src], (y[src] + shift) % n_classes)
    dst = np.empty(n_edges, dtype=np.int64)
    for c in range(n_classes):  # loop over classes only: vectorised within a class
        idx = np.flatnonzero(target_class == c)
        dst[idx] = rng.choice(members[c], size=idx.size, p=probs[c])

    means = rng.normal(size=(n_classes, feature_dim))
    means /= np.linalg.norm(means, axis=1, keepdims=True)
    x = feature_signal * means[y] + rng.normal(size=(n_nodes, feature_dim))
    return Data(
        x=torch.as_tensor(x, dtype=torch.float32),
        edge_index=_undirected(src, dst, n_nodes),
        y=torch.as_tensor(y, dtype=torch.long),
    )


def planted_pattern_graphs(
    n_graphs: int,
    min_nodes: int = 40,
    max_nodes: int = 150,
    n_communities: int = 5,
    p_in: float = 0.5,
    p_out: float = 0.35,
    pattern_size: int = 20,
    p_pattern: float = 0.5,
    p_pattern_out: float = 0.5,
    n_symbols: int = 3,
    seed: int = 0,
) -> list[Data]:
    """PATTERN-style node classification graphs (benchmarking-GNNs recipe, generated here).

    Each graph has ``n ~ U{min_nodes..max_nodes}`` nodes. ``n - pattern_size`` of them form an
    SBM with ``n_communities`` communities of random sizes (edge probability ``p_in`` inside a
    community, ``p_out`` across). A random ``pattern_size``-node sub-graph is planted: edges
    inside the pattern appear with probability ``p_pattern``, edges between the pattern and the
    rest with ``p_pattern_out``. Every node carries one of ``n_symbols`` random symbols (one-hot
    features, uninformative by themselves); the label is 1 for pattern nodes, 0 otherwise, so the
    task can only be solved from structure. Node order is shuffled so the pattern is not at a
    fixed position.

    Args:
        n_graphs: number of graphs (>= 1).
        min_nodes, max_nodes: node-count range (pattern_size < min_nodes <= max_nodes).
        n_communities: SBM communities outside the pattern (>= 1).
        p_in, p_out: SBM edge probabilities within / across communities, in [0, 1].
        pattern_size: nodes in the planted pattern (>= 1).
        p_pattern, p_pattern_out: edge probabilities inside the pattern / pattern-to-rest.
        n_symbols: size of the random feature vocabulary (>= 1).
        seed: seed of the NumPy generator.

    Returns:
        A list of ``Data(x=(n, n_symbols) float32 one-hot, edge_index, y=(n,) long)``.

    Raises:
        ValueError: on any argument out of range.
    """
    if n_graphs < 1:
        raise ValueError(f"n_graphs must be >= 1, got {n_graphs}")
    if pattern_size < 1 or not pattern_size < min_nodes <= max_nodes:
        raise ValueError(f"need 1 <= pattern_size < min_nodes <= max_nodes, got {pattern_size}, "
                         f"{min_nodes}, {max_nodes}")
    if n_communities < 1 or n_communities > min_nodes - pattern_size:
        raise ValueError(f"n_communities must lie in [1, min_nodes - pattern_size], got {n_communities}")
    for name, p in (("p_in", p_in), ("p_out", p_out), ("p_pattern", p_pattern), ("p_pattern_out", p_pattern_out)):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"{name} must lie in [0, 1], got {p}")
    if n_symbols < 1:
        raise ValueError(f"n_symbols must be >= 1, got {n_symbols}")
    rng = np.random.default_rng(seed)
    graphs = []
    for _ in range(n_graphs):  # data generation, not a layer: one graph at a time is fine
        n = int(rng.integers(min_nodes, max_nodes + 1))
        n_rest = n - pattern_size
        cuts = np.sort(rng.choice(np.arange(1, n_rest), size=n_communities - 1, replace=False))
        community = np.repeat(np.arange(n_communities), np.diff(np.concatenate([[0], cuts, [n_rest]])))
        group = np.concatenate([community, np.full(pattern_size, -1)])  # -1 = pattern
        in_pattern = group == -1
        prob = np.where(group[:, None] == group[None, :], p_in, p_out)
        either = in_pattern[:, None] | in_pattern[None, :]
        prob = np.where(either, p_pattern_out, prob)
        prob = np.where(in_pattern[:, None] & in_pattern[None, :], p_pattern, prob)
        upper = np.triu(rng.random((n, n)) < prob, k=1)
        perm = rng.permutation(n)  # new position of old node i is perm[i]
        src, dst = np.nonzero(upper)
        symbols = rng.integers(0, n_symbols, size=n)
        y = np.empty(n, dtype=np.int64)
        y[perm] = in_pattern
        x = np.zeros((n, n_symbols), dtype=np.float32)
        x[np.arange(n), symbols] = 1.0
        graphs.append(Data(x=torch.as_tensor(x), edge_index=_undirected(perm[src], perm[dst], n),
                           y=torch.as_tensor(y)))
    return graphs


def random_sparse_graph(n_nodes: int, avg_degree: float = 10.0, seed: int = 0) -> torch.Tensor:
    """Undirected Erdos-Renyi-like graph drawn in O(edges) time and memory.

    ``n_nodes * avg_degree / 2`` node pairs are drawn uniformly with replacement; self-loops and
    repeats are dropped (a G(n, m) graph up to O(avg_degree / n) corrections). Unlike a dense
    ``G(n, p)`` sampler this never forms an n x n array, so it is usable at 10^5-10^6 nodes.

    Returns:
        ``edge_index``, a ``(2, E)`` long tensor with both directions of every edge.
    """
    if n_nodes < 2:
        raise ValueError(f"n_nodes must be >= 2, got {n_nodes}")
    if not avg_degree > 0:
        raise ValueError(f"avg_degree must be > 0, got {avg_degree}")
    rng = np.random.default_rng(seed)
    m = int(round(n_nodes * avg_degree / 2))
    return _undirected(rng.integers(0, n_nodes, m), rng.integers(0, n_nodes, m), n_nodes)


def random_walk_pe(edge_index: torch.Tensor, num_nodes: int, k: int) -> torch.Tensor:
    """Random-walk structural encoding (RWSE): return probabilities of t-step random walks.

    ``pe[i, t-1] = ((D^-1 A)^t)_{ii}`` for ``t = 1..k``, with ``A`` the (weighted by multiplicity)
    adjacency of ``edge_index`` and ``D`` its row sums; isolated nodes get zeros. Works on a PyG
    batch (block-diagonal adjacency) as is, and blocks stay separate. Computed with sparse
    matrix powers (as PyG's ``AddRandomWalkPE`` does); their fill-in grows with ``k``, so this is
    meant for graphs of up to a few thousand nodes or batches of small graphs.

    Args:
        edge_index: ``(2, E)`` long tensor (directed edges as given; pass both directions for an
            undirected graph).
        num_nodes: N; every index in ``edge_index`` must be < N.
        k: number of walk lengths (>= 1).

    Returns:
        ``(N, k)`` float32 tensor.

    Raises:
        ValueError: bad ``k``, ``num_nodes`` or out-of-range ``edge_index``.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if num_nodes < 1:
        raise ValueError(f"num_nodes must be >= 1, got {num_nodes}")
    if edge_index.dim() != 2 or edge_index.size(0) != 2:
        raise ValueError(f"edge_index must have shape (2, E), got {tuple(edge_index.shape)}")
    if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= num_nodes):
        raise ValueError(f"edge_index has entries outside [0, {num_nodes})")
    ei = edge_index.cpu().numpy()
    adj = sp.csr_matrix((np.ones(ei.shape[1]), (ei[0], ei[1])), shape=(num_nodes, num_nodes))
    deg = np.asarray(adj.sum(axis=1)).ravel()
    inv = np.divide(1.0, deg, out=np.zeros_like(deg), where=deg > 0)
    walk = sp.diags(inv) @ adj  # P = D^-1 A
    power = walk.copy()
    pe = np.empty((num_nodes, k))
    for t in range(k):  # P^t kept sparse; its diagonal is the return probability
        pe[:, t] = power.diagonal()
        if t + 1 < k:
            power = power @ walk
    return torch.as_tensor(pe, dtype=torch.float32)


def check_graph_input(x: torch.Tensor, edge_index: torch.Tensor | None, batch: torch.Tensor | None, dim: int) -> torch.Tensor:
    """Validate node features, edges and batch vector; return the batch vector (zeros if None).

    Raises:
        ValueError: empty graph, wrong feature width, ``edge_index`` out of range, or a batch
            vector that is not PyG's sorted ``[0, 0, ..., 1, 1, ...]`` layout.
    """
    if x.dim() != 2:
        raise ValueError(f"x must have shape (num_nodes, {dim}), got {tuple(x.shape)}")
    if x.size(0) == 0:
        raise ValueError("empty graph: x has no nodes")
    if x.size(1) != dim:
        raise ValueError(f"x has {x.size(1)} features per node, the layer expects {dim}")
    n = x.size(0)
    if edge_index is not None:
        if edge_index.dim() != 2 or edge_index.size(0) != 2:
            raise ValueError(f"edge_index must have shape (2, E), got {tuple(edge_index.shape)}")
        if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= n):
            raise ValueError(f"edge_index has entries outside [0, {n})")
    if batch is None:
        return torch.zeros(n, dtype=torch.long, device=x.device)
    if batch.shape != (n,):
        raise ValueError(f"batch must have shape ({n},), got {tuple(batch.shape)}")
    if n > 1 and bool((batch[1:] < batch[:-1]).any()):
        raise ValueError("batch must be sorted (PyG layout: nodes of graph 0 first, then graph 1, ...)")
    if int(batch.min()) < 0:
        raise ValueError("batch has negative graph ids")
    return batch

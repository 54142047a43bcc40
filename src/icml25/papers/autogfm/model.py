"""AutoGFM: a weight-sharing GNN super-network whose architecture is customised per NOI graph.

Every task is cast as classification of a node-of-interest (NOI) graph (the h-hop ego graph of a
node, the union of two ego graphs for a link, the whole graph for a graph task). The model:

1. Super-network, L layers, each a mixture over the op set O = {GCN, GAT, GIN, SAGE, GraphConv}:
       H^l = sum_i alpha_{l,i} GNN_i(H^{l-1}, A)                                  (MixedOpLayer)
2. Disentangled contrastive encoder: two channels k in {I (invariant), V (variant)}, each a GNN,
   a mean readout and an MLP (Eqs. 5-7); trained with
       L_dis = sum_i -log sum_k p(k | G_i) p(s | G_i, z_{i,k}),                               (Eq. 10)
       p(k | G_i) = softmax_k cos(z_{i,k}, p_k) / tau,                                        (Eq. 8)
       p(s | G_i, z_{i,k}) = exp cos(z_{i,k}, z'_{i,k}) / tau / sum_{j=1..N} exp cos(z_{i,k}, z'_{j,k}) / tau,
   z'_i = another NOI graph of the same data set (positive), z'_j one NOI graph of data set j (Eq. 9).
3. Invariant architecture predictor psi_I: alpha_{l,i} = softmax_i(z_I . p_{l,i} / ||p_{l,i}||) (Eq. 12);
   auxiliary psi_E(z_I,i, z_V,j) = psi_I-prototype softmax of MLP([z_I,i ; z_V,j]);
       L_inv = sum_{i,j} || A_I,i - A_E,(i,j) ||, j over the data sets (Eqs. 13-15).
4. Curriculum: abar_l = mean over datasets of the mean alpha_l; L_cur = gamma(t) sum_l CV(abar_l),
   gamma(t) = max(0, 1 - t / t_e), CV = std / mean over ops.
5. Objective L_task + lam L_dis + beta L_inv + L_cur (Eq. 19); the task loss uses the psi_I architecture.
   Ablation "w/o D": a standard GNN encoder (:class:`GNNEncoder`) instead of the disentangled one.

Baselines with the same super-network and heads: :class:`FixedOpGNN` (one op) and
:class:`SharedDARTS` (one learnable alpha shared by all data). The base GFM is a simplified
multi-task model (shared super-network + per-task heads), not GFT; see docs/papers/autogfm.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.data import Batch, Data
from torch_geometric.nn import GATConv, GCNConv, GINConv, GraphConv, SAGEConv, global_mean_pool
from torch_geometric.utils import k_hop_subgraph

from icml25.common.graphs import check_graph_input

__all__ = [
    "OPS", "TaskSpec", "check_graph_input", "make_op", "noi_subgraph", "MixedOpLayer", "SuperNet",
    "DisentangledEncoder", "GNNEncoder", "ArchitecturePredictor", "EnvironmentPredictor", "dataset_partners",
    "disentangled_contrastive_loss",
    "invariance_loss", "curriculum_weight", "coefficient_of_variation", "curriculum_loss", "MultiTaskGFM",
    "FixedOpGNN", "SharedDARTS", "AutoGFM",
]

OPS: tuple[str, ...] = ("gcn", "gat", "gin", "sage", "graphconv")
"""The paper's operator set (the same five GNNs as its hand-designed baselines)."""


def _graph_input(x: Tensor, edge_index: Tensor | None, batch: Tensor | None, dim: int) -> Tensor:
    """:func:`check_graph_input` plus dtype and finiteness checks; returns the batch vector.

    On the meta device (shape-only tensors) the checks that read values (edge ranges, sortedness,
    NaN) are skipped, as there are no values to read; shapes are still checked.

    Raises:
        TypeError: ``x`` not a floating tensor, ``edge_index`` / ``batch`` not integer tensors.
        ValueError: as :func:`check_graph_input`, or NaN / inf in ``x``.
    """
    if not isinstance(x, Tensor) or not x.is_floating_point():
        raise TypeError(f"x must be a floating-point tensor, got {type(x).__name__} {getattr(x, 'dtype', '')}")
    for name, t in (("edge_index", edge_index), ("batch", batch)):
        if t is not None and (not isinstance(t, Tensor) or t.is_floating_point() or t.dtype == torch.bool):
            raise TypeError(f"{name} must be an integer (long) tensor, got {getattr(t, 'dtype', type(t).__name__)}")
    if x.device.type != "meta":
        batch = check_graph_input(x, edge_index, batch, dim)
        if not bool(torch.isfinite(x).all()):
            raise ValueError("x contains NaN or inf")
        return batch
    if x.dim() != 2 or x.size(1) != dim:
        raise ValueError(f"x must have shape (num_nodes, {dim}), got {tuple(x.shape)}")
    if edge_index is not None and (edge_index.dim() != 2 or edge_index.size(0) != 2):
        raise ValueError(f"edge_index must have shape (2, E), got {tuple(edge_index.shape)}")
    if batch is None:
        return x.new_zeros(x.size(0), dtype=torch.long)
    if batch.shape != (x.size(0),):
        raise ValueError(f"batch must have shape ({x.size(0)},), got {tuple(batch.shape)}")
    return batch


def _unpack_graphs(x: Tensor | Data, edge_index: Tensor | None, batch: Tensor | None, num_graphs: int | None,
                   dim: int) -> tuple[Tensor, Tensor, Tensor, int | None]:
    """Tensors of a forward call given tensors or a PyG ``Data`` / ``Batch``, checked by :func:`_graph_input`.

    Returns ``(x, edge_index, batch, num_graphs)``; ``num_graphs`` is the Batch's count (1 for one ``Data`` or
    when neither a batch vector nor a count is given; ``None``: read it from the batch vector).
    """
    if isinstance(x, Data):  # Batch subclasses Data
        num_graphs = x.num_graphs if isinstance(x, Batch) else 1
        x, edge_index, batch = x.x, x.edge_index, getattr(x, "batch", None)
    if edge_index is None:
        raise ValueError("edge_index is required (or pass a torch_geometric Data / Batch)")
    if batch is None and num_graphs is None:
        num_graphs = 1
    return x, edge_index, _graph_input(x, edge_index, batch, dim), num_graphs


def _as_batch(graph: Data | Batch) -> Batch:
    """A PyG ``Batch`` of NOI graphs; a single ``Data`` becomes a batch of one."""
    if isinstance(graph, Batch):
        return graph
    if isinstance(graph, Data):
        return Batch.from_data_list([graph])
    raise TypeError(f"expected a torch_geometric Data or Batch, got {type(graph).__name__}")


def make_op(name: str, dim: int) -> nn.Module:
    """One candidate op, a plain PyG layer ``dim -> dim``."""
    if name == "gcn":
        return GCNConv(dim, dim)
    if name == "gat":
        return GATConv(dim, dim, heads=1)
    if name == "gin":
        return GINConv(nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim)), train_eps=True)
    if name == "sage":
        return SAGEConv(dim, dim)
    if name == "graphconv":
        return GraphConv(dim, dim)
    raise ValueError(f"unknown op {name!r}; valid: {', '.join(OPS)}")


def noi_subgraph(graph: Data, nodes: Sequence[int] | Tensor, hops: int = 2) -> Data:
    """Node-of-interest graph: the union of the ``hops``-hop ego graphs of ``nodes``, relabelled.

    One node gives a node task's NOI graph, two nodes a link task's. Nodes keep their relative
    order; ``center_index`` holds the positions of ``nodes`` in the subgraph (PyG increments it
    when batching), ``node_id`` the original ids.

    Raises:
        TypeError: ``nodes`` not integers.
        ValueError: no nodes, a node out of range, negative ``hops``, bad ``edge_index``.
    """
    n = int(graph.num_nodes)
    nodes = torch.as_tensor(nodes).reshape(-1)
    if nodes.numel() and (nodes.is_floating_point() or nodes.is_complex() or nodes.dtype == torch.bool):
        raise TypeError(f"nodes must be integer node ids, got dtype {nodes.dtype}")
    nodes = nodes.long()
    if nodes.numel() == 0:
        raise ValueError("nodes must name at least one node")
    if int(nodes.min()) < 0 or int(nodes.max()) >= n:
        raise ValueError(f"nodes must lie in [0, {n}), got {nodes.tolist()}")
    if hops < 0:
        raise ValueError(f"hops must be >= 0, got {hops}")
    ei = graph.edge_index
    if ei.numel() and (int(ei.min()) < 0 or int(ei.max()) >= n):
        raise ValueError(f"edge_index has entries outside [0, {n})")
    subset, sub_ei, mapping, _ = k_hop_subgraph(nodes, hops, ei, relabel_nodes=True, num_nodes=n)
    return Data(x=graph.x[subset], edge_index=sub_ei, center_index=mapping, node_id=subset)


class MixedOpLayer(nn.Module):
    """H' = sum_i alpha_i GNN_i(H, A): a weighted sum of PyG ops on the same input.

    ``alpha`` is either one vector ``(n_ops,)`` shared by every node, or one row per graph
    ``(n_graphs, n_ops)``; each node then uses its graph's row (``alpha[batch]``), so graphs in a
    batch get their own architecture and never mix (every op is local message passing).
    """

    def __init__(self, dim: int, ops: Sequence[str] = OPS) -> None:
        super().__init__()
        if dim < 1:
            raise ValueError(f"dim must be >= 1, got {dim}")
        if len(ops) == 0 or len(set(ops)) != len(ops):
            raise ValueError(f"ops must be a non-empty list without repeats, got {ops}")
        self.dim, self.op_names = dim, tuple(ops)
        self.ops = nn.ModuleList(make_op(o, dim) for o in ops)

    def forward(self, x: Tensor, edge_index: Tensor, alpha: Tensor, batch: Tensor | None = None) -> Tensor:
        """``x (N, dim)``, ``edge_index (2, E)``, ``alpha (n_ops,)`` or ``(n_graphs, n_ops)`` -> ``(N, dim)``."""
        batch = _graph_input(x, edge_index, batch, self.dim)
        if not isinstance(alpha, Tensor):
            raise TypeError(f"alpha must be a tensor, got {type(alpha).__name__}")
        n_ops = len(self.ops)
        if alpha.dim() == 1:
            alpha = alpha.unsqueeze(0)
            if alpha.size(1) != n_ops:
                raise ValueError(f"alpha must have {n_ops} entries (one per op), got {alpha.size(1)}")
            weights = alpha.expand(x.size(0), n_ops)
        elif alpha.dim() == 2:
            if alpha.size(1) != n_ops:
                raise ValueError(f"alpha must have {n_ops} columns (one per op), got {alpha.size(1)}")
            if not batch.is_meta and int(batch.max()) >= alpha.size(0):
                raise ValueError(f"alpha has {alpha.size(0)} rows but the batch has {int(batch.max()) + 1} graphs")
            weights = alpha[batch]
        else:
            raise ValueError(f"alpha must be (n_ops,) or (n_graphs, n_ops), got {tuple(alpha.shape)}")
        out = weights[:, :1] * self.ops[0](x, edge_index)
        for i in range(1, n_ops):
            out = out + weights[:, i:i + 1] * self.ops[i](x, edge_index)
        return out


class SuperNet(nn.Module):
    """Input projection then ``n_layers`` MixedOpLayers with ReLU: node embeddings ``(N, hid)``."""

    def __init__(self, in_dim: int, hid: int, n_layers: int = 2, ops: Sequence[str] = OPS) -> None:
        super().__init__()
        if n_layers < 1:
            raise ValueError(f"n_layers must be >= 1, got {n_layers}")
        if in_dim < 1 or hid < 1:
            raise ValueError(f"in_dim and hid must be >= 1, got {in_dim}, {hid}")
        self.in_dim, self.n_layers, self.op_names = in_dim, n_layers, tuple(ops)
        self.lin_in = nn.Linear(in_dim, hid)
        self.layers = nn.ModuleList(MixedOpLayer(hid, ops) for _ in range(n_layers))

    def forward(self, x: Tensor, edge_index: Tensor, alphas: Tensor, batch: Tensor | None = None) -> Tensor:
        """``alphas``: ``(n_layers, n_ops)`` shared, or ``(n_graphs, n_layers, n_ops)`` per graph."""
        batch = _graph_input(x, edge_index, batch, self.in_dim)
        if not isinstance(alphas, Tensor) or alphas.dim() not in (2, 3):
            raise ValueError(f"alphas must be (n_layers, n_ops) or (n_graphs, n_layers, n_ops), got "
                             f"{tuple(getattr(alphas, 'shape', ()))}")
        if alphas.size(-2) != self.n_layers:
            raise ValueError(f"alphas must have {self.n_layers} layers on dim -2, got {tuple(alphas.shape)}")
        h = self.lin_in(x)
        for depth, layer in enumerate(self.layers):
            h = F.relu(layer(h, edge_index, alphas[..., depth, :], batch))
        return h


class DisentangledEncoder(nn.Module):
    """Two channels (invariant I, variant V), each a 2-layer GIN, a mean readout and an MLP.

    ``forward(x, edge_index, batch=None)`` (or ``forward(data)`` with a PyG ``Data`` / ``Batch``)
    returns ``(z_I, z_V)``, each ``(n_graphs, hid)``; ``prototypes`` ``(2, hid)`` are the channel
    prototypes of p(k | G).
    """

    def __init__(self, in_dim: int, hid: int, n_layers: int = 2) -> None:
        super().__init__()
        if in_dim < 1 or hid < 1 or n_layers < 1:
            raise ValueError(f"in_dim, hid and n_layers must be >= 1, got {in_dim}, {hid}, {n_layers}")
        self.in_dim = in_dim
        self.channels = nn.ModuleList()
        for _ in range(2):
            convs = nn.ModuleList(GINConv(nn.Sequential(nn.Linear(in_dim if i == 0 else hid, hid), nn.ReLU(),
                                                        nn.Linear(hid, hid))) for i in range(n_layers))
            mlp = nn.Sequential(nn.Linear(hid, hid), nn.ReLU(), nn.Linear(hid, hid))
            self.channels.append(nn.ModuleDict({"convs": convs, "mlp": mlp}))
        self.prototypes = nn.Parameter(torch.randn(2, hid))

    def channel(self, k: int, x: Tensor, edge_index: Tensor, batch: Tensor, num_graphs: int | None = None) -> Tensor:
        """Channel ``k`` (0 = invariant, 1 = variant): GIN layers, mean readout over ``num_graphs``, MLP."""
        h = x
        for conv in self.channels[k]["convs"]:
            h = F.relu(conv(h, edge_index))
        return self.channels[k]["mlp"](global_mean_pool(h, batch, size=num_graphs))

    def forward(self, x: Tensor | Data, edge_index: Tensor | None = None, batch: Tensor | None = None,
                num_graphs: int | None = None) -> tuple[Tensor, Tensor]:
        """``(z_I, z_V)`` of every graph; ``num_graphs`` defaults to the Batch's count (or the batch vector's)."""
        x, edge_index, batch, num_graphs = _unpack_graphs(x, edge_index, batch, num_graphs, self.in_dim)
        return (self.channel(0, x, edge_index, batch, num_graphs),
                self.channel(1, x, edge_index, batch, num_graphs))


class GNNEncoder(nn.Module):
    """A standard (single-channel) graph encoder: 2-layer GIN, mean readout, MLP -> ``(n_graphs, hid)``.

    The "w/o D" ablation replaces the disentangled encoder by it; its one representation then serves as both
    z_I and z_V.
    """

    def __init__(self, in_dim: int, hid: int, n_layers: int = 2) -> None:
        super().__init__()
        if in_dim < 1 or hid < 1 or n_layers < 1:
            raise ValueError(f"in_dim, hid and n_layers must be >= 1, got {in_dim}, {hid}, {n_layers}")
        self.in_dim = in_dim
        self.convs = nn.ModuleList(GINConv(nn.Sequential(nn.Linear(in_dim if i == 0 else hid, hid), nn.ReLU(),
                                                         nn.Linear(hid, hid))) for i in range(n_layers))
        self.mlp = nn.Sequential(nn.Linear(hid, hid), nn.ReLU(), nn.Linear(hid, hid))

    def forward(self, x: Tensor | Data, edge_index: Tensor | None = None, batch: Tensor | None = None,
                num_graphs: int | None = None) -> Tensor:
        x, edge_index, batch, num_graphs = _unpack_graphs(x, edge_index, batch, num_graphs, self.in_dim)
        h = x
        for conv in self.convs:
            h = F.relu(conv(h, edge_index))
        return self.mlp(global_mean_pool(h, batch, size=num_graphs))


class ArchitecturePredictor(nn.Module):
    """psi_I (Eq. 12): alpha_{l,i} = softmax_i(z . p_{l,i} / ||p_{l,i}|| / temperature); output ``(B, L, O)``.

    The paper has no temperature: ``temperature=1`` (the default) is Eq. 12.
    """

    def __init__(self, z_dim: int, n_layers: int, n_ops: int, temperature: float = 1.0) -> None:
        super().__init__()
        if not temperature > 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        if z_dim < 1 or n_layers < 1 or n_ops < 1:
            raise ValueError(f"z_dim, n_layers and n_ops must be >= 1, got {z_dim}, {n_layers}, {n_ops}")
        self.z_dim, self.temperature = z_dim, temperature
        self.prototypes = nn.Parameter(torch.randn(n_layers, n_ops, z_dim))

    def forward(self, z: Tensor) -> Tensor:
        """``z (B, z_dim)`` -> architectures ``(B, n_layers, n_ops)``, each row a probability vector."""
        if not isinstance(z, Tensor) or z.dim() != 2 or z.size(1) != self.z_dim:
            raise ValueError(f"z must have shape (B, {self.z_dim}), got {tuple(getattr(z, 'shape', ()))}")
        protos = F.normalize(self.prototypes, dim=-1)
        return torch.softmax(torch.einsum("bd,lod->blo", z, protos) / self.temperature, dim=-1)


class EnvironmentPredictor(nn.Module):
    """psi_E(z_I, z_V): an MLP on [z_I ; z_V] into z-space, then psi_I's prototype softmax.

    The prototypes are psi_I's own (passed to ``forward``), so psi_E owns only the MLP.
    """

    def __init__(self, z_dim: int) -> None:
        super().__init__()
        if z_dim < 1:
            raise ValueError(f"z_dim must be >= 1, got {z_dim}")
        self.z_dim = z_dim
        self.mlp = nn.Sequential(nn.Linear(2 * z_dim, z_dim), nn.ReLU(), nn.Linear(z_dim, z_dim))

    def forward(self, z_inv: Tensor, z_var: Tensor, psi_inv: ArchitecturePredictor | None = None) -> Tensor:
        """All pairs: ``z_inv (B, d)``, ``z_var (B', d)`` -> ``(B, B', L, O)`` architectures.

        Without ``psi_inv`` the pair embeddings ``MLP([z_I ; z_V])`` of shape ``(B, B', d)`` come back.
        """
        for name, z in (("z_inv", z_inv), ("z_var", z_var)):
            if not isinstance(z, Tensor) or z.dim() != 2 or z.size(1) != self.z_dim:
                raise ValueError(f"{name} must have shape (B, {self.z_dim}), got {tuple(getattr(z, 'shape', ()))}")
        b, b2 = z_inv.size(0), z_var.size(0)
        pairs = torch.cat([z_inv.unsqueeze(1).expand(b, b2, -1), z_var.unsqueeze(0).expand(b, b2, -1)], dim=-1)
        emb = self.mlp(pairs.reshape(b * b2, -1))
        if psi_inv is None:
            return emb.reshape(b, b2, -1)
        out = psi_inv(emb)
        return out.reshape(b, b2, *out.shape[1:])

    def paired(self, z_inv: Tensor, z_var: Tensor, psi_inv: ArchitecturePredictor) -> Tensor:
        """Given partners only: ``z_inv (B, d)``, ``z_var (B, P, d)`` (row i = the partners of graph i) ->
        ``(B, P, L, O)`` architectures ``psi_E(z_I,i, z_V,j)``."""
        if not isinstance(z_inv, Tensor) or z_inv.dim() != 2 or z_inv.size(1) != self.z_dim:
            raise ValueError(f"z_inv must have shape (B, {self.z_dim}), got {tuple(getattr(z_inv, 'shape', ()))}")
        if not isinstance(z_var, Tensor) or z_var.dim() != 3 or z_var.shape[0] != z_inv.size(0) \
                or z_var.size(2) != self.z_dim:
            raise ValueError(f"z_var must have shape ({z_inv.size(0)}, P, {self.z_dim}), got "
                             f"{tuple(getattr(z_var, 'shape', ()))}")
        b, p = z_var.shape[:2]
        pairs = torch.cat([z_inv.unsqueeze(1).expand(b, p, -1), z_var], dim=-1)
        out = psi_inv(self.mlp(pairs.reshape(b * p, -1)))
        return out.reshape(b, p, *out.shape[1:])


def dataset_partners(domain: Tensor) -> Tensor:
    """For every NOI graph, one partner per data set: ``(B, D)`` indices into the batch.

    A batch holds several independent draws ("slots") of NOI graphs per data set; the graph in slot ``s`` of
    data set ``i`` is paired, for each data set ``j``, with the graph in slot ``s`` of ``j`` (cyclically when
    ``j`` has fewer graphs). Column ``j`` of a graph's own data set holds the graph itself. Data sets are
    numbered in the order of ``torch.unique(domain)``.
    """
    if not isinstance(domain, Tensor) or domain.dim() != 1 or domain.numel() == 0:
        raise ValueError("domain must be a non-empty 1-D tensor of data-set ids")
    idx = torch.arange(domain.numel(), device=domain.device)
    members = [idx[domain == d] for d in torch.unique(domain)]
    slot = torch.empty_like(idx)
    for m in members:
        slot[m] = torch.arange(m.numel(), device=domain.device)
    return torch.stack([m[slot % m.numel()] for m in members], dim=1)


def disentangled_contrastive_loss(z_inv: Tensor, z_var: Tensor, prototypes: Tensor, domain: Tensor,
                                  tau: float = 0.5, negatives: Literal["per_dataset", "all"] = "per_dataset",
                                  reduction: Literal["sum", "mean"] = "sum") -> Tensor:
    """L_dis (Eq. 10) = sum_i -log sum_k p(k | G_i) p(s | G_i, z_{i,k}), similarities ``cos / tau``.

    ``p(k | G_i)`` is the softmax over the two channel prototypes (Eq. 8). ``p(s | G_i, z_{i,k})`` (Eq. 9) has
    the positive ``z'`` = the next NOI graph of the same data set in the batch (cyclically) and

    * ``negatives="per_dataset"`` (Eq. 9): a denominator of one term per data set, the positive for the anchor's
      own and, for every other data set, the graph in the anchor's slot (see :func:`dataset_partners`);
    * ``negatives="all"``: the positive plus every NOI graph of the other data sets.

    ``reduction="sum"`` sums over the anchors (Eq. 10), ``"mean"`` averages them.
    """
    if z_inv.dim() != 2 or z_inv.shape != z_var.shape or z_inv.size(0) != domain.numel():
        raise ValueError("z_inv, z_var must have the same shape (B, d) and domain B entries")
    if prototypes.shape != (2, z_inv.size(1)):
        raise ValueError(f"prototypes must have shape (2, {z_inv.size(1)}), got {tuple(prototypes.shape)}")
    if not tau > 0:
        raise ValueError(f"tau must be > 0, got {tau}")
    if negatives not in ("per_dataset", "all") or reduction not in ("sum", "mean"):
        raise ValueError(f"negatives must be 'per_dataset' or 'all' and reduction 'sum' or 'mean', got "
                         f"{negatives!r}, {reduction!r}")
    b = z_inv.size(0)
    idx = torch.arange(b, device=z_inv.device)
    pos = idx.clone()
    for d in torch.unique(domain):  # a handful of domains, not graphs
        members = idx[domain == d]
        pos[members] = members.roll(-1)
    z = F.normalize(torch.stack([z_inv, z_var], dim=1), dim=-1)  # (B, 2, d)
    protos = F.normalize(prototypes, dim=-1)
    log_p_channel = torch.log_softmax((z * protos.unsqueeze(0)).sum(-1) / tau, dim=1)  # (B, 2), Eq. 8
    if negatives == "all":
        valid = domain.unsqueeze(0) != domain.unsqueeze(1)
    else:  # one candidate per data set: the anchor's slot partners, its own data set's column replaced below
        valid = torch.zeros(b, b, dtype=torch.bool, device=z_inv.device)
        valid[idx.unsqueeze(1), dataset_partners(domain)] = True
        valid[idx, idx] = False  # the own-data-set partner is the anchor itself: its candidate is the positive
    valid[idx, pos] = True
    log_p_inst = []
    for k in range(2):
        sim = z[:, k] @ z[:, k].T / tau
        sim = sim.masked_fill(~valid, float("-inf"))
        log_p_inst.append(sim[idx, pos] - torch.logsumexp(sim, dim=1))  # Eq. 9
    per_anchor = -torch.logsumexp(log_p_channel + torch.stack(log_p_inst, dim=1), dim=1)
    return per_anchor.sum() if reduction == "sum" else per_anchor.mean()


def invariance_loss(alpha_inv: Tensor, alpha_env: Tensor, reduction: Literal["sum", "mean"] = "sum") -> Tensor:
    """L_inv (Eq. 14) = sum_{i,j} ||A_I,i - A_E,(i,j)||_F; ``alpha_inv (B, L, O)``, ``alpha_env (B, P, L, O)``.

    Row ``i`` of ``alpha_env`` holds the architectures psi_E predicts from ``z_I,i`` fused with the ``P`` partners'
    ``z_V,j``. ``reduction="sum"`` (Eq. 14) sums over all ``(i, j)``, ``"mean"`` averages them.
    """
    if alpha_inv.dim() != 3 or alpha_env.dim() != 4:
        raise ValueError(f"alpha_inv must be (B, L, O) and alpha_env (B, P, L, O), got "
                         f"{tuple(alpha_inv.shape)} and {tuple(alpha_env.shape)}")
    if alpha_env.shape[0] != alpha_inv.shape[0] or alpha_env.shape[2:] != alpha_inv.shape[1:]:
        raise ValueError(f"shapes do not match: {tuple(alpha_inv.shape)} vs {tuple(alpha_env.shape)}")
    if reduction not in ("sum", "mean"):
        raise ValueError(f"reduction must be 'sum' or 'mean', got {reduction!r}")
    dist = (alpha_inv.unsqueeze(1) - alpha_env).flatten(2).norm(dim=-1)
    return dist.sum() if reduction == "sum" else dist.mean()


def curriculum_weight(t: float, t_e: float) -> float:
    """Pacing gamma(t) = 1 - t / t_e for t < t_e, else 0 (t_e = 0 switches the curriculum off)."""
    if not (t >= 0 and t_e >= 0) or math.isinf(t_e):
        raise ValueError(f"t and t_e must be >= 0, got {t}, {t_e}")
    return 1.0 - t / t_e if t < t_e else 0.0


def coefficient_of_variation(p: Tensor) -> Tensor:
    """CV = std / mean over the last dimension (population std)."""
    return p.std(dim=-1, unbiased=False) / p.mean(dim=-1)


def curriculum_loss(alphas: Tensor, domain: Tensor, gamma: float) -> Tensor:
    """L_cur = gamma sum_l CV(abar_l), abar_l = mean over domains of each domain's mean alpha_l."""
    if alphas.dim() != 3 or alphas.size(0) != domain.numel():
        raise ValueError(f"alphas must be (B, L, O) with B = len(domain), got {tuple(alphas.shape)}")
    per_domain = torch.stack([alphas[domain == d].mean(0) for d in torch.unique(domain)])  # (D, L, O)
    return gamma * coefficient_of_variation(per_domain.mean(0)).sum()


@dataclass(frozen=True)
class TaskSpec:
    """One dataset of the multi-task suite: its name, level and number of classes (1 = binary link)."""

    name: str
    level: Literal["node", "link", "graph"]
    n_classes: int

    def __post_init__(self) -> None:
        if self.level not in ("node", "link", "graph"):
            raise ValueError(f"TaskSpec.level must be 'node', 'link' or 'graph', got {self.level!r}")
        if isinstance(self.n_classes, bool) or not isinstance(self.n_classes, int) or self.n_classes < 1:
            raise ValueError(f"TaskSpec.n_classes must be an int >= 1, got {self.n_classes!r}")


class MultiTaskGFM(nn.Module):
    """Shared super-network + one head per task; subclasses choose the architecture ``alphas``.

    A batch is a PyG ``Batch`` (or one ``Data``) of NOI graphs of one task with ``y`` and
    (node/link tasks) ``center_index``. Node task: head on the centre node; link task: head on
    ``h_u * h_v``; graph task: head on the mean readout. This base class mixes every op with the
    same weight (alpha = 1 / |O| everywhere, the DARTS initialisation); subclasses override
    :meth:`architecture`.
    """

    def __init__(self, in_dim: int, hid: int, tasks: Sequence[TaskSpec], n_layers: int = 2,
                 ops: Sequence[str] = OPS) -> None:
        super().__init__()
        if len({t.name for t in tasks}) != len(tasks) or not tasks:
            raise ValueError("tasks must be a non-empty list with distinct names")
        self.in_dim, self.hid, self.n_layers, self.ops = in_dim, hid, n_layers, tuple(ops)
        self.tasks = {t.name: t for t in tasks}
        self.supernet = SuperNet(in_dim, hid, n_layers, ops)
        self.heads = nn.ModuleDict({t.name: nn.Sequential(nn.Linear(hid, hid), nn.ReLU(), nn.Linear(hid, t.n_classes))
                                    for t in tasks})

    def architecture(self, batch: Batch) -> Tensor:
        """The ``alphas`` of a batch: ``(n_layers, n_ops)`` shared or ``(n_graphs, n_layers, n_ops)``."""
        return batch.x.new_full((self.n_layers, len(self.ops)), 1.0 / len(self.ops))

    def readout(self, h: Tensor, batch: Batch, task: str) -> Tensor:
        spec = self.tasks[task]
        if spec.level == "graph":
            return global_mean_pool(h, batch.batch, size=batch.num_graphs)
        centers = batch.center_index.reshape(batch.num_graphs, -1)
        if spec.level == "node":
            return h[centers[:, 0]]
        return h[centers[:, 0]] * h[centers[:, 1]]

    def _check_task(self, batch: Batch, task: str) -> None:
        if task not in self.tasks:
            raise ValueError(f"unknown task {task!r}; valid: {', '.join(self.tasks)}")
        level = self.tasks[task].level
        if level != "graph":
            per_graph = 1 if level == "node" else 2
            centers = getattr(batch, "center_index", None)
            if centers is None or centers.numel() != per_graph * batch.num_graphs:
                raise ValueError(f"a {level} task needs center_index with {per_graph} entries per NOI graph")

    def predict(self, batch: Batch | Data, task: str, alphas: Tensor) -> Tensor:
        """Logits ``(n_graphs, n_classes)`` of ``task`` under the architecture ``alphas``."""
        batch = _as_batch(batch)
        self._check_task(batch, task)
        h = self.supernet(batch.x, batch.edge_index, alphas, batch.batch)
        return self.heads[task](self.readout(h, batch, task))

    def forward(self, batch: Batch | Data, task: str) -> tuple[Tensor, Tensor]:
        """``(logits, alphas)`` for a batch of NOI graphs of ``task``."""
        batch = _as_batch(batch)
        self._check_task(batch, task)
        alphas = self.architecture(batch)
        return self.predict(batch, task, alphas), alphas

    def task_loss(self, logits: Tensor, batch: Batch, task: str) -> Tensor:
        if self.tasks[task].level == "link":
            return F.binary_cross_entropy_with_logits(logits.squeeze(-1), batch.y.to(logits.dtype))
        return F.cross_entropy(logits, batch.y)

    def loss(self, batches: Mapping[str, Batch], step: float = 0.0) -> tuple[Tensor, dict[str, float]]:
        """Mean task loss over the tasks in ``batches``; ``step`` (in epochs) is unused here."""
        total = torch.stack([self.task_loss(self(b, t)[0], b, t) for t, b in batches.items()]).mean()
        return total, {"task": float(total.detach())}


class FixedOpGNN(MultiTaskGFM):
    """Hand-designed baseline: every layer is the single op ``op`` for every dataset."""

    def __init__(self, op: str, in_dim: int, hid: int, tasks: Sequence[TaskSpec], n_layers: int = 2) -> None:
        super().__init__(in_dim, hid, tasks, n_layers, ops=(op,))

    def architecture(self, batch: Batch) -> Tensor:
        return batch.x.new_ones(self.n_layers, 1)


class SharedDARTS(MultiTaskGFM):
    """Differentiable NAS with one architecture alpha = softmax(logits) shared by all data."""

    def __init__(self, in_dim: int, hid: int, tasks: Sequence[TaskSpec], n_layers: int = 2,
                 ops: Sequence[str] = OPS) -> None:
        super().__init__(in_dim, hid, tasks, n_layers, ops)
        self.alpha_logits = nn.Parameter(1e-3 * torch.randn(n_layers, len(self.ops)))

    def architecture(self, batch: Batch) -> Tensor:
        return torch.softmax(self.alpha_logits, dim=-1)


class AutoGFM(MultiTaskGFM):
    """AutoGFM: architecture per NOI graph from the invariant encoder channel.

    Args:
        in_dim, hid, tasks, n_layers, ops: as :class:`MultiTaskGFM`.
        lam: weight of L_dis (Eq. 19; the paper searches it in 1e-4..1e-1, a second-hand report).
        beta: weight of L_inv (0 = ablation "w/o I").
        t_e: curriculum end, in epochs (0 = ablation "w/o C").
        tau: temperature of the cosine similarity phi in L_dis (the paper leaves phi unspecified).
        arch_temperature: temperature of psi_I's prototype softmax (1 = Eq. 12, which has none).
        disentangled: the two-channel disentangled encoder (True) or, for the paper's ablation "w/o D", a
            standard GNN encoder whose one representation is both z_I and z_V, without L_dis (False).
        loss_form: ``"paper"``: Eq. 9 with one candidate per data set, and Eqs. 10 and 14 summed over the data
            sets (averaged over the batch's independent draws, see :meth:`loss`); ``"batch_mean"``: our earlier
            form, with every NOI graph of the other data sets as negatives, L_inv over all pairs of the batch,
            both averaged.
    """

    def __init__(self, in_dim: int, hid: int, tasks: Sequence[TaskSpec], n_layers: int = 2,
                 ops: Sequence[str] = OPS, lam: float = 0.1, beta: float = 0.01, t_e: float = 3.0,
                 tau: float = 0.5, arch_temperature: float = 1.0, disentangled: bool = True,
                 loss_form: Literal["paper", "batch_mean"] = "paper") -> None:
        super().__init__(in_dim, hid, tasks, n_layers, ops)
        if not (lam >= 0 and beta >= 0 and t_e >= 0):
            raise ValueError(f"lam, beta and t_e must be >= 0, got {lam}, {beta}, {t_e}")
        if not tau > 0:
            raise ValueError(f"tau must be > 0, got {tau}")
        if loss_form not in ("paper", "batch_mean"):
            raise ValueError(f"loss_form must be 'paper' or 'batch_mean', got {loss_form!r}")
        self.lam, self.beta, self.t_e, self.tau = lam, beta, t_e, tau
        self.disentangled, self.loss_form = bool(disentangled), loss_form
        self.encoder = DisentangledEncoder(in_dim, hid) if self.disentangled else GNNEncoder(in_dim, hid)
        self.psi_inv = ArchitecturePredictor(hid, n_layers, len(self.ops), arch_temperature)
        self.psi_env = EnvironmentPredictor(hid)

    def encode(self, batch: Batch) -> tuple[Tensor, Tensor]:
        """``(z_I, z_V)`` of every NOI graph in the batch, each ``(n_graphs, hid)`` (the same tensor twice w/o D)."""
        out = self.encoder(batch.x, batch.edge_index, batch.batch, num_graphs=batch.num_graphs)
        return out if self.disentangled else (out, out)

    def architecture(self, batch: Batch) -> Tensor:
        return self.psi_inv(self.encode(batch)[0])

    def customize(self, graph: Data | Batch) -> Tensor:
        """The architecture chosen for each graph: ``(n_graphs, n_layers, n_ops)``."""
        return self.architecture(_as_batch(graph))

    def forward(self, batch: Batch | Data, task: str) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """``(logits, alphas, z_I, z_V)``; the task head runs under the invariant architecture ``psi_I(z_I)``."""
        batch = _as_batch(batch)
        self._check_task(batch, task)
        z_inv, z_var = self.encode(batch)
        alphas = self.psi_inv(z_inv)
        return self.predict(batch, task, alphas), alphas, z_inv, z_var

    def loss(self, batches: Mapping[str, Batch], step: float = 0.0) -> tuple[Tensor, dict[str, float]]:
        """L_task + lam L_dis + beta L_inv + L_cur (Eq. 19) over one batch per task; ``step`` in epochs.

        With ``loss_form="paper"`` a batch of ``n`` NOI graphs per data set is ``n`` independent draws of the
        paper's one-NOI-graph-per-data-set step, so L_dis (Eq. 10) and L_inv (Eq. 14) are summed over the data
        sets and divided by ``n``. The task loss is the mean over tasks of each task's mean loss.
        """
        task_losses, alphas, zs_i, zs_v, domains = [], [], [], [], []
        for d, (task, batch) in enumerate(batches.items()):
            logits, a, z_i, z_v = self(batch, task)
            task_losses.append(self.task_loss(logits, batch, task))
            alphas.append(a), zs_i.append(z_i), zs_v.append(z_v)
            domains.append(torch.full((a.size(0),), d, dtype=torch.long, device=a.device))
        alpha, z_i, z_v, domain = torch.cat(alphas), torch.cat(zs_i), torch.cat(zs_v), torch.cat(domains)
        l_task = torch.stack(task_losses).mean()
        total, parts = l_task, {"task": float(l_task.detach())}
        paper = self.loss_form == "paper"
        draws = domain.numel() / len(batches)  # NOI graphs per data set
        if self.lam > 0 and self.disentangled:
            if paper:
                l_dis = disentangled_contrastive_loss(z_i, z_v, self.encoder.prototypes, domain, self.tau,
                                                      negatives="per_dataset", reduction="sum") / draws
            else:
                l_dis = disentangled_contrastive_loss(z_i, z_v, self.encoder.prototypes, domain, self.tau,
                                                      negatives="all", reduction="mean")
            total, parts["dis"] = total + self.lam * l_dis, float(l_dis.detach())
        if self.beta > 0:
            if paper:  # z_I of each graph fused with z_V of one graph of every data set (Eqs. 14-15)
                alpha_env = self.psi_env.paired(z_i, z_v[dataset_partners(domain)], self.psi_inv)
                l_inv = invariance_loss(alpha, alpha_env, reduction="sum") / draws
            else:
                l_inv = invariance_loss(alpha, self.psi_env(z_i, z_v, self.psi_inv), reduction="mean")
            total, parts["inv"] = total + self.beta * l_inv, float(l_inv.detach())
        gamma = curriculum_weight(step, self.t_e) if self.t_e > 0 else 0.0
        if gamma > 0:
            l_cur = curriculum_loss(alpha, domain, gamma)
            total, parts["cur"] = total + l_cur, float(l_cur.detach())
        return total, parts

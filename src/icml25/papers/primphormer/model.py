"""Primphormer: graph attention in the primal space of an asymmetric kernel SVD (He et al., ICML 2025).

Self-attention on the nodes of a graph reads as the *dual* form of a kernel machine with the
asymmetric kernel ``kappa(x_i, x_j) = <phi_q(q_i), phi_k(k_j)>``: every output sums over all node
pairs, O(N^2). Primphormer works in the *primal* form instead. Per graph and head, with two
projection matrices ``W_e, W_r in R^{p x s}`` (p = head dim, s = rank):

    e_i = W_e^T phi_q(q_i),    r_i = W_r^T phi_k(k_i),    o_i = W_c [e_i ; r_i]        (primal scores)

which costs O(N p s): no N x N tensor exists at any point. The projections are data adaptive.
Following the KKT conditions of KSVD (``W_e = sum_j phi_k(k_j) h_{r,j}^T``,
``W_r = sum_i phi_q(q_i) h_{e,i}^T``), we build them per graph from *virtual nodes* that pool
every node of the graph (INFERRED, see docs/papers/primphormer.md):

    W_e = (1/N_g) sum_{j in g} phi_k(k_j) g_e(x_j)^T,   W_r = (1/N_g) sum_{i in g} phi_q(q_i) g_r(x_i)^T

with linear maps ``g_e, g_r: R^d -> R^{heads x s}``. Hence ``e_i = (1/N_g) sum_j kappa(x_i, x_j)
g_e(x_j)``: the primal score is exactly the dual (kernel-attention) sum, computed in linear time.
Training adds ``eta * mean_layers(J^2)`` with the KSVD objective (PrimalAttention's
``model_wrapper.py``)

    J = mean_i ||Lambda e_i||^2 / 2 + mean_j ||Lambda r_j||^2 / 2 - mean_{g,h} Tr(W_e^T W_r),

which is zero at a KKT point of the KSVD problem (Lambda = diag of learnable singular values).

Option ``sampled_nodes = N_s`` (ours, from an unconfirmed hint: the ICLR reviews say the paper's
complexity analysis uses an undefined N_s, which may be a sampled node subset, as the sequence
code samples tokens): during training the two means run over N_s nodes drawn uniformly without
replacement per graph and forward pass (an unbiased estimate of the all-node projections); in
``eval()`` mode all nodes are used.
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn import GCNConv, GINEConv, GPSConv, global_mean_pool
from torch_geometric.utils import to_dense_batch

from icml25.common.graphs import check_graph_input

__all__ = [
    "PrimalGraphAttention", "PrimphormerLayer", "Primphormer", "GPSBaseline", "ksvd_objective", "ksvd_loss",
    "check_graph_input",
]


def _check_tensor_input(x, edge_index=None, batch=None) -> None:
    """TypeError unless ``x`` is a floating tensor and ``edge_index`` / ``batch`` (when given) integer tensors.

    Run before the shared :func:`check_graph_input`, which assumes tensors (a NumPy array there fails
    with an obscure AttributeError on ``.dim()``).
    """
    for name, value, optional in (("x", x, False), ("edge_index", edge_index, True), ("batch", batch, True)):
        if not isinstance(value, Tensor) and not (optional and value is None):
            kind = type(value).__module__ + "." + type(value).__qualname__
            raise TypeError(f"{name} must be a torch.Tensor, got {kind} (convert it with torch.as_tensor)")
    if not x.is_floating_point():
        raise TypeError(f"x must be a floating-point tensor, got {x.dtype}")
    for name, value in (("edge_index", edge_index), ("batch", batch)):
        if value is not None and (value.is_floating_point() or value.is_complex() or value.dtype == torch.bool):
            raise TypeError(f"{name} must hold integer indices (torch.long), got {value.dtype}")


def _check_graph(x, edge_index, batch, dim: int) -> Tensor | None:
    """Validate a graph's tensors; return ``batch`` unchanged (``None`` stays ``None``: one graph).

    On the meta device (tensors without data) only dtypes and shapes are checked; elsewhere the
    shared :func:`check_graph_input` also checks index ranges and the batch layout, and ``x`` must
    be finite.
    """
    _check_tensor_input(x, edge_index, batch)
    if x.is_meta:
        if x.dim() != 2 or x.size(1) != dim:
            raise ValueError(f"x must have shape (num_nodes, {dim}), got {tuple(x.shape)}")
        if edge_index is not None and (edge_index.dim() != 2 or edge_index.size(0) != 2):
            raise ValueError(f"edge_index must have shape (2, E), got {tuple(edge_index.shape)}")
        if batch is not None and batch.shape != (x.size(0),):
            raise ValueError(f"batch must have shape ({x.size(0)},), got {tuple(batch.shape)}")
        return batch
    check_graph_input(x, edge_index, batch, dim)
    if not bool(torch.isfinite(x).all()):
        raise ValueError("x has NaN or infinite entries")
    return batch


def _is_graph_data(obj) -> bool:
    """A PyG ``Data`` / ``Batch`` (anything with the node features ``x`` and PyG's ``keys``)."""
    return not isinstance(obj, Tensor) and hasattr(obj, "keys") and hasattr(obj, "x")


class PrimalGraphAttention(nn.Module):
    """Primal-space graph self-attention, O(N * dim * rank) time and memory.

    Args:
        dim: node feature width d (divisible by ``heads``).
        heads: attention heads H; head width p = d / H.
        rank: s, number of primal features (virtual nodes) per head for e and for r.
        feature_map: ``"cos"`` (L2-normalised q and k, PrimalAttention's cos variant) or
            ``"identity"`` (raw q, k; used by tests of the kernel identity).
        sampled_nodes: ``None`` (default: W_e, W_r pool every node of the graph) or N_s >= 1: in
            training mode pool a uniform random subset of min(N_s, N_g) nodes per graph (a new
            draw at every forward pass, from torch's global RNG); ``eval()`` pools all nodes.

    ``forward(x, batch) -> (out, aux)`` with ``x: (N, d)``, ``batch: (N,)`` PyG graph ids (or None
    for one graph); ``out: (N, d)``; ``aux`` holds ``e, r: (N, H, s)``, ``W_e, W_r: (B, H, p, s)``
    and ``Lambda: (H, s)`` for :func:`ksvd_objective`, and ``pooled: (N,)`` (bool, the nodes the
    projections were built from). ``x`` may also be a PyG ``Data`` / ``Batch`` (its ``x`` and
    ``batch`` are used).
    """

    def __init__(self, dim: int, heads: int = 4, rank: int = 16, feature_map: Literal["cos", "identity"] = "cos",
                 sampled_nodes: int | None = None):
        super().__init__()
        if dim < 1 or heads < 1 or rank < 1:
            raise ValueError(f"dim, heads and rank must be >= 1, got {dim}, {heads}, {rank}")
        if sampled_nodes is not None and (isinstance(sampled_nodes, bool) or int(sampled_nodes) != sampled_nodes
                                          or sampled_nodes < 1):
            raise ValueError(f"sampled_nodes must be None or an int >= 1, got {sampled_nodes!r}")
        if dim % heads:
            raise ValueError(f"dim ({dim}) must be divisible by heads ({heads})")
        if feature_map not in ("cos", "identity"):
            raise ValueError(f"feature_map must be 'cos' or 'identity', got {feature_map!r}")
        self.dim, self.heads, self.rank, self.head_dim = dim, heads, rank, dim // heads
        self.feature_map = feature_map
        self.sampled_nodes = None if sampled_nodes is None else int(sampled_nodes)
        self.W_q = nn.Linear(dim, dim)
        self.W_k = nn.Linear(dim, dim)
        self.g_e = nn.Linear(dim, heads * rank)  # virtual-node weights of W_e (INFERRED)
        self.g_r = nn.Linear(dim, heads * rank)
        self.Lambda = nn.Parameter(torch.rand(heads, rank))  # uniform init as in PrimalAttention
        self.W_c = nn.Linear(2 * rank, self.head_dim)  # o_i = W_c [e_i; r_i], shared by heads
        self.out = nn.Linear(dim, dim)

    def _phi(self, z: Tensor) -> Tensor:
        return F.normalize(z, p=2, dim=-1) if self.feature_map == "cos" else z

    def forward(self, x: Tensor, batch: Tensor | None = None) -> tuple[Tensor, dict[str, Tensor]]:
        if _is_graph_data(x):
            x, batch = x.x, getattr(x, "batch", None) if batch is None else batch
        batch = _check_graph(x, None, batch, self.dim)
        n, H, p, s = x.size(0), self.heads, self.head_dim, self.rank
        phi_q = self._phi(self.W_q(x).view(n, H, p))
        phi_k = self._phi(self.W_k(x).view(n, H, p))
        g_e, g_r = self.g_e(x).view(n, H, s), self.g_r(x).view(n, H, s)
        if batch is None:  # one graph: the dense layout is the node axis itself (no data-dependent sizes)
            dq, dk, dge, dgr = (t.unsqueeze(0) for t in (phi_q, phi_k, g_e, g_r))
            mask, count = None, n
        else:
            # Dense per-graph layout (B, N_max, ...): padding rows are zero, so sums never mix graphs.
            dq, mask = to_dense_batch(phi_q.reshape(n, H * p), batch)
            dk, _ = to_dense_batch(phi_k.reshape(n, H * p), batch)
            dge, _ = to_dense_batch(g_e.reshape(n, H * s), batch)
            dgr, _ = to_dense_batch(g_r.reshape(n, H * s), batch)
            B, m = mask.shape
            dq, dk = dq.view(B, m, H, p), dk.view(B, m, H, p)
            dge, dgr = dge.view(B, m, H, s), dgr.view(B, m, H, s)
            count = mask.sum(1).clamp(min=1).to(x.dtype).view(B, 1, 1, 1)
        pool_q, pool_k = dq, dk
        pooled = torch.ones(n, dtype=torch.bool, device=x.device)
        if self.sampled_nodes is not None and self.training:
            sel = self._sample(mask, dq.shape[:2], x.device)  # (B, m) bool: the N_s pooled nodes of each graph
            w = sel.to(x.dtype).view(*sel.shape, 1, 1)
            pool_q, pool_k = dq * w, dk * w
            count = sel.sum(1).clamp(min=1).to(x.dtype).view(-1, 1, 1, 1)
            pooled = sel[0] if mask is None else sel[mask]
        # Virtual nodes: W_e = mean_j phi_k(k_j) g_e(x_j)^T, W_r = mean_i phi_q(q_i) g_r(x_i)^T   (B, H, p, s)
        W_e = torch.einsum("bmhp,bmhs->bhps", pool_k, dge) / count
        W_r = torch.einsum("bmhp,bmhs->bhps", pool_q, dgr) / count
        # Primal scores e_i = W_e^T phi_q(q_i), r_i = W_r^T phi_k(k_i)   (N, H, s)
        e = torch.einsum("bmhp,bhps->bmhs", dq, W_e)
        r = torch.einsum("bmhp,bhps->bmhs", dk, W_r)
        e, r = (e[0], r[0]) if mask is None else (e[mask], r[mask])
        o = self.W_c(torch.cat([e, r], dim=-1))  # (N, H, p)
        aux = {"e": e, "r": r, "W_e": W_e, "W_r": W_r, "Lambda": self.Lambda, "pooled": pooled}
        return self.out(o.reshape(n, self.dim)), aux

    def _sample(self, mask: Tensor | None, shape, device) -> Tensor:
        """Bool (B, m): min(N_s, N_g) nodes of each graph, uniformly without replacement."""
        u = torch.rand(shape, device=device)
        if mask is not None:
            u = u.masked_fill(~mask, 2.0)  # padding sorts last
        rank = u.argsort(dim=1).argsort(dim=1)  # position of each node in its graph's random order
        sel = rank < self.sampled_nodes
        return sel if mask is None else sel & mask


def ksvd_objective(aux: dict[str, Tensor]) -> Tensor:
    """KSVD objective J of one attention layer (PrimalAttention's formula, graphs as samples).

    ``J = mean_{i,h} ||e_ih * Lambda_h||^2 / 2 + mean_{j,h} ||r_jh * Lambda_h||^2 / 2
    - mean_{g,h} Tr(W_e[g,h]^T W_r[g,h])``; zero at a KKT point of the KSVD problem.
    """
    missing = [k for k in ("e", "r", "W_e", "W_r", "Lambda") if k not in aux]
    if missing:
        raise ValueError(f"aux must be the dict returned by PrimalGraphAttention; it lacks {missing}")
    lam = aux["Lambda"]
    e_term = ((aux["e"] * lam).pow(2).sum(-1)).mean() / 2
    r_term = ((aux["r"] * lam).pow(2).sum(-1)).mean() / 2
    trace = torch.einsum("bhps,bhps->bh", aux["W_e"], aux["W_r"]).mean()
    return e_term + r_term - trace


def ksvd_loss(aux_list: list[dict[str, Tensor]]) -> Tensor:
    """Regulariser added to the task loss: mean over layers of J^2 (>= 0)."""
    if not aux_list:
        raise ValueError("ksvd_loss needs the aux dict of at least one PrimalGraphAttention layer")
    return torch.stack([ksvd_objective(a) ** 2 for a in aux_list]).mean()


def mpnn_conv(kind: str, dim: int) -> nn.Module:
    if kind == "gine":
        return GINEConv(nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim)), edge_dim=dim)
    if kind == "gcn":
        return GCNConv(dim, dim)
    raise ValueError(f"mpnn must be 'gine' or 'gcn', got {kind!r}")


class PrimphormerLayer(nn.Module):
    """GraphGPS block with primal attention (the structure of PyG's ``GPSConv``).

    ``h_M = BN(MPNN(h) + h)``, ``h_A = BN(PrimalAttn(h) + h)``, ``out = BN(h_M + h_A + MLP(h_M + h_A))``.
    ``forward(x, edge_index, batch, edge_attr) -> (out, aux)``; ``edge_attr`` (E, dim) is needed by GINE.
    ``x`` may also be a PyG ``Data`` / ``Batch`` (its ``x``, ``edge_index``, ``batch``, ``edge_attr``).
    """

    def __init__(self, dim: int, mpnn: str = "gine", heads: int = 4, rank: int = 16, dropout: float = 0.0,
                 sampled_nodes: int | None = None):
        super().__init__()
        self.mpnn_kind = mpnn
        self.conv = mpnn_conv(mpnn, dim)
        self.attn = PrimalGraphAttention(dim, heads, rank, sampled_nodes=sampled_nodes)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.ReLU(), nn.Dropout(dropout), nn.Linear(2 * dim, dim))
        self.norm1, self.norm2, self.norm3 = nn.BatchNorm1d(dim), nn.BatchNorm1d(dim), nn.BatchNorm1d(dim)
        self.dropout = dropout

    def forward(self, x: Tensor, edge_index: Tensor | None = None, batch: Tensor | None = None,
                edge_attr: Tensor | None = None) -> tuple[Tensor, dict[str, Tensor]]:
        x, edge_index, batch, edge_attr, _ = _unpack(x, edge_index, batch, edge_attr)
        batch = _check_graph(x, edge_index, batch, self.attn.dim)
        want = (edge_index.size(1), self.attn.dim)
        if self.mpnn_kind == "gine" and (edge_attr is None or edge_attr.shape != want):
            got = None if edge_attr is None else tuple(edge_attr.shape)
            raise ValueError(f"the GINE MPNN needs edge_attr of shape {want}, got {got}")
        h = self.conv(x, edge_index, edge_attr) if self.mpnn_kind == "gine" else self.conv(x, edge_index)
        h_m = self.norm1(F.dropout(h, self.dropout, self.training) + x)
        a, aux = self.attn(x, batch)
        h_a = self.norm2(F.dropout(a, self.dropout, self.training) + x)
        out = h_m + h_a
        return self.norm3(out + self.mlp(out)), aux


def _unpack(x, edge_index, batch, edge_attr, pe=None):
    """``(x, edge_index, batch, edge_attr, pe)`` from tensors or from a PyG ``Data`` / ``Batch`` in ``x``.

    Arguments given explicitly win over the data object's attributes.
    """
    if _is_graph_data(x):
        data = x
        x = data.x
        edge_index = data.edge_index if edge_index is None else edge_index
        batch = getattr(data, "batch", None) if batch is None else batch
        edge_attr = getattr(data, "edge_attr", None) if edge_attr is None else edge_attr
        pe = getattr(data, "pe", None) if pe is None else pe
    if edge_index is None:
        raise TypeError("edge_index is required (a (2, E) long tensor), or pass a PyG Data / Batch as x")
    return x, edge_index, batch, edge_attr, pe


class _GraphNet(nn.Module):
    """Shared encoder / decoder: node (and PE, edge) embeddings, a stack of blocks, a head."""

    def __init__(self, in_dim: int, hidden: int, n_layers: int, out_dim: int, task: str, pe_dim: int, edge_dim: int):
        super().__init__()
        if task not in ("node", "graph"):
            raise ValueError(f"task must be 'node' or 'graph', got {task!r}")
        if min(in_dim, hidden, n_layers, out_dim) < 1 or pe_dim < 0 or edge_dim < 0:
            raise ValueError("in_dim, hidden, n_layers, out_dim must be >= 1 and pe_dim, edge_dim >= 0")
        self.in_dim, self.hidden, self.task, self.pe_dim, self.edge_dim = in_dim, hidden, task, pe_dim, edge_dim
        self.node_emb = nn.Linear(in_dim, hidden)
        self.pe_emb = nn.Linear(pe_dim, hidden) if pe_dim else None
        self.edge_emb = nn.Linear(edge_dim, hidden) if edge_dim else None
        self.edge_const = nn.Parameter(torch.zeros(hidden))  # edge embedding when there are no edge features
        self.head = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, out_dim))

    def embed(self, x, edge_index, batch, edge_attr, pe):
        batch = _check_graph(x, edge_index, batch, self.in_dim)
        h = self.node_emb(x)
        if self.pe_emb is not None:
            if pe is None or pe.shape != (x.size(0), self.pe_dim):
                raise ValueError(f"pe must have shape ({x.size(0)}, {self.pe_dim})")
            h = h + self.pe_emb(pe)
        if self.edge_emb is not None:
            if edge_attr is None or edge_attr.shape != (edge_index.size(1), self.edge_dim):
                raise ValueError(f"edge_attr must have shape ({edge_index.size(1)}, {self.edge_dim})")
            e = self.edge_emb(edge_attr)
        else:
            e = self.edge_const.expand(edge_index.size(1), -1)
        return h, e, batch

    def readout(self, h, batch):
        if self.task == "node":
            return self.head(h)
        if batch is None:  # one graph
            return self.head(global_mean_pool(h, torch.zeros(h.size(0), dtype=torch.long, device=h.device), size=1))
        return self.head(global_mean_pool(h, batch))


class Primphormer(_GraphNet):
    """The full model: embeddings, ``n_layers`` :class:`PrimphormerLayer` blocks, a node or graph head.

    ``forward(x, edge_index, batch=None, edge_attr=None, pe=None) -> (pred, aux_list)``; train with
    ``task_loss + eta * ksvd_loss(aux_list)``. ``x`` may also be a PyG ``Data`` / ``Batch`` (its ``x``,
    ``edge_index``, ``batch``, ``edge_attr`` and ``pe``).
    """

    def __init__(self, in_dim: int, hidden: int, n_layers: int, out_dim: int, task: str = "node", pe_dim: int = 0,
                 edge_dim: int = 0, mpnn: str = "gine", heads: int = 4, rank: int = 16, dropout: float = 0.0,
                 sampled_nodes: int | None = None):
        super().__init__(in_dim, hidden, n_layers, out_dim, task, pe_dim, edge_dim)
        self.layers = nn.ModuleList(PrimphormerLayer(hidden, mpnn, heads, rank, dropout, sampled_nodes)
                                    for _ in range(n_layers))

    def forward(self, x, edge_index=None, batch=None, edge_attr=None, pe=None):
        x, edge_index, batch, edge_attr, pe = _unpack(x, edge_index, batch, edge_attr, pe)
        h, e, batch = self.embed(x, edge_index, batch, edge_attr, pe)
        aux_list = []
        for layer in self.layers:
            h, aux = layer(h, edge_index, batch, e)
            aux_list.append(aux)
        return self.readout(h, batch), aux_list


class MPNNBlock(nn.Module):
    """The GPS block without its attention branch (MPNN-only baseline)."""

    def __init__(self, dim: int, dropout: float):
        super().__init__()
        self.conv = mpnn_conv("gine", dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.ReLU(), nn.Dropout(dropout), nn.Linear(2 * dim, dim))
        self.norm1, self.norm3 = nn.BatchNorm1d(dim), nn.BatchNorm1d(dim)
        self.dropout = dropout

    def forward(self, x, edge_index, batch=None, edge_attr=None):
        h = self.norm1(F.dropout(self.conv(x, edge_index, edge_attr), self.dropout, self.training) + x)
        return self.norm3(h + self.mlp(h))


class GPSBaseline(_GraphNet):
    """GraphGPS baselines on the same encoder/head: PyG ``GPSConv`` with GINE and
    ``attn="multihead"`` (full softmax attention) or ``"performer"``, or ``attn="none"`` (MPNN only).
    ``forward`` (same inputs as :class:`Primphormer`'s, tensors or a PyG ``Data`` / ``Batch``) returns
    ``(pred, [])`` so training code is shared with :class:`Primphormer`."""

    def __init__(self, in_dim: int, hidden: int, n_layers: int, out_dim: int, task: str = "node", pe_dim: int = 0,
                 edge_dim: int = 0, attn: str = "multihead", heads: int = 4, dropout: float = 0.0):
        super().__init__(in_dim, hidden, n_layers, out_dim, task, pe_dim, edge_dim)
        if attn not in ("multihead", "performer", "none"):
            raise ValueError(f"attn must be 'multihead', 'performer' or 'none', got {attn!r}")
        self.attn = attn
        if attn == "none":
            self.layers = nn.ModuleList(MPNNBlock(hidden, dropout) for _ in range(n_layers))
        else:
            self.layers = nn.ModuleList(
                GPSConv(hidden, mpnn_conv("gine", hidden), heads=heads, dropout=dropout, attn_type=attn)
                for _ in range(n_layers))

    def forward(self, x, edge_index=None, batch=None, edge_attr=None, pe=None):
        x, edge_index, batch, edge_attr, pe = _unpack(x, edge_index, batch, edge_attr, pe)
        h, e, batch = self.embed(x, edge_index, batch, edge_attr, pe)
        for layer in self.layers:
            h = layer(h, edge_index, batch, edge_attr=e)
        return self.readout(h, batch), []

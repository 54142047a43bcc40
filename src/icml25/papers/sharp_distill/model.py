"""SHARP-Distill (Forouzandeh, Moradi & Jalili, ICML 2025): an HGNN + review-text teacher distilled
into CompactGCN, a one-layer linear GCN student.

Read top to bottom: hypergraphs and their propagation matrix, the HGNN layer, the teacher,
the student, the baselines, the losses (Eq. 8's pointwise MSE, as the authors' rebuttal corrects
the paper, is the default prediction loss of every model; BPR is an option), the three training
loops (any recommender, teacher, distillation), then evaluation and timing. Every model exposes
``embeddings(data) -> (Z_U, Z_I)`` and
``full_scores(data) -> (n_users, n_items)`` computed from the raw graph (propagation included).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.data import Data
from torch_geometric.nn import GCNConv, LGConv
from torch_geometric.nn.conv.gcn_conv import gcn_norm
from torch_geometric.utils import to_torch_csr_tensor

from icml25.common.checks import check_fields

# ----------------------------------------------------------------------------- hypergraphs


def _check_interactions(interactions, num_users: int | None, num_items: int | None) -> tuple[torch.Tensor, int, int]:
    ei = torch.as_tensor(interactions)
    if ei.dtype == torch.bool or ei.is_complex():
        raise TypeError(f"interactions must hold integer indices, got {ei.dtype}")
    if ei.dim() != 2 or ei.size(0) != 2:
        raise ValueError(f"interactions must be a [2, N] tensor of (user, item) pairs, got shape {tuple(ei.shape)}")
    if ei.size(1) == 0:
        raise ValueError("interactions is empty")
    if ei.is_floating_point():
        if not torch.equal(ei, ei.round()):  # also catches NaN (NaN != NaN) and +-inf (round(inf) = inf: below)
            raise ValueError("interactions must hold integer indices")
        if not bool(torch.isfinite(ei).all()):
            raise ValueError("interactions has infinite entries")
    ei = ei.long()
    if ei.min() < 0:
        raise ValueError("interactions has a negative index")
    nu = int(ei[0].max()) + 1 if num_users is None else int(num_users)
    ni = int(ei[1].max()) + 1 if num_items is None else int(num_items)
    if ei[0].max() >= nu:
        raise ValueError(f"a user index ({int(ei[0].max())}) is out of range for num_users={nu}")
    if ei[1].max() >= ni:
        raise ValueError(f"an item index ({int(ei[1].max())}) is out of range for num_items={ni}")
    return ei, nu, ni


def build_hypergraphs(interactions, num_users: int | None = None,
                      num_items: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Incidence matrices of the user and item hypergraphs.

    Args:
        interactions: ``[2, N]`` (user, item) index pairs; duplicates count once.
    Returns:
        ``(H_U, H_I)``: sparse COO float tensors; ``H_U[u, i] = 1`` iff u interacted with i (users
        are nodes, items hyperedges) and ``H_I = H_U^T`` (items are nodes, users hyperedges).
    """
    ei, nu, ni = _check_interactions(interactions, num_users, num_items)
    h = torch.sparse_coo_tensor(ei, torch.ones(ei.size(1), device=ei.device), (nu, ni)).coalesce()
    h = torch.sparse_coo_tensor(h.indices(), torch.ones_like(h.values()), (nu, ni)).coalesce()
    return h, h.t().coalesce()


def _degree_factors(h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    dense_sum = (lambda d: torch.sparse.sum(h, d).to_dense()) if h.is_sparse else (lambda d: h.sum(d))
    dv, de = dense_sum(1), dense_sum(0)
    dv_is = torch.where(dv > 0, dv.clamp_min(1e-12).rsqrt(), torch.zeros_like(dv))
    de_inv = torch.where(de > 0, 1.0 / de.clamp_min(1e-12), torch.zeros_like(de))
    return dv_is, de_inv


def apply_hypergraph_propagation(h: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``P x`` with ``P = D_v^{-1/2} H D_e^{-1} H^T D_v^{-1/2}`` (W = I), never forming P."""
    dv_is, de_inv = _degree_factors(h)
    mm = torch.sparse.mm if h.is_sparse else torch.mm
    e = mm(h.t(), x * dv_is[:, None]) * de_inv[:, None]
    return mm(h, e) * dv_is[:, None]


def hypergraph_propagation(h: torch.Tensor) -> torch.Tensor:
    """Dense ``P = D_v^{-1/2} H D_e^{-1} H^T D_v^{-1/2}``: symmetric PSD, eigenvalues in [0, 1].

    Computed in ``h``'s dtype (the default float dtype for an integer ``h``) on ``h``'s device.
    """
    h = _float_incidence(h)
    return apply_hypergraph_propagation(h, torch.eye(h.shape[0], dtype=h.dtype, device=h.device))


def _float_incidence(h: torch.Tensor) -> torch.Tensor:
    """``h`` as a floating tensor (integer / bool incidence -> default dtype); ValueError unless 2-D and finite."""
    if not isinstance(h, torch.Tensor):
        raise TypeError(f"H must be a torch.Tensor incidence matrix, got {type(h).__name__}")
    if h.dim() != 2:
        raise ValueError(f"H must be a 2-D incidence matrix, got shape {tuple(h.shape)}")
    if not h.is_floating_point():
        h = h.to(torch.get_default_dtype())
    values = h.coalesce().values() if h.layout == torch.sparse_coo else h.values() if h.is_sparse_csr else h
    if not h.is_meta and not bool(torch.isfinite(values).all()):
        raise ValueError("H has NaN or infinite entries")
    return h


def hypergraph_positional_encoding(H: torch.Tensor, K: int = 3, beta: float = 0.5) -> torch.Tensor:
    """Hypergraph positional encodings ``P = sum_{k=0}^{K-1} beta^k L^k`` (row u is P_u = ... e_u).

    ``L`` is the propagation matrix of :func:`hypergraph_propagation`; ``K = 1`` gives the identity.
    Returns a dense ``(n_nodes, n_nodes)`` tensor (symmetric).
    """
    if K < 1:
        raise ValueError(f"K must be >= 1, got {K}")
    H = _float_incidence(H)
    term = torch.eye(H.shape[0], dtype=H.dtype, device=H.device)
    out = term.clone()
    for k in range(1, K):
        term = apply_hypergraph_propagation(H, term)
        out = out + beta**k * term
    return out


class HGNNConv(nn.Module):
    r"""HGNN layer (Feng et al. 2019): :math:`X' = D_v^{-1/2} H D_e^{-1} H^\top D_v^{-1/2} X \Theta`.

    PyG's ``HypergraphConv`` normalises as ``D^{-1} H B^{-1} H^T`` (not symmetric), so the
    paper's symmetric form is written here as two sparse products ``B (B^T X Theta)``.

    Args:
        dim: input feature size. out_dim: output size (default ``dim``).
    Forward: ``x`` (n_nodes, dim); ``hyperedge_index`` ``[2, nnz]`` of (node, hyperedge) pairs,
    PyG's convention, or a cached ``(B, B^T)`` from :func:`hypergraph_operator`; ``num_edges``
    (default: max hyperedge id + 1). The operator is built (or cast) in ``x``'s dtype.
    """

    def __init__(self, dim: int, out_dim: int | None = None, bias: bool = False):
        super().__init__()
        if dim < 1 or (out_dim is not None and out_dim < 1):
            raise ValueError(f"dim and out_dim must be >= 1, got {dim}, {out_dim}")
        self.lin = nn.Linear(dim, out_dim or dim, bias=bias)

    def forward(self, x: torch.Tensor, hyperedge_index, num_edges: int | None = None) -> torch.Tensor:
        if x.dim() != 2 or x.size(1) != self.lin.in_features:
            raise ValueError(f"x must have shape (n_nodes, {self.lin.in_features}), got {tuple(x.shape)}")
        if x.size(0) == 0:
            raise ValueError("x has no nodes")
        if isinstance(hyperedge_index, tuple):  # a cached (B, B^T) from hypergraph_operator
            b, bt = hyperedge_index
            if b.shape[0] != x.size(0):
                raise ValueError(f"operator has {b.shape[0]} nodes, x has {x.size(0)}")
            if b.dtype != x.dtype:
                b, bt = b.to(x.dtype), bt.to(x.dtype)
        else:
            b, bt = hypergraph_operator(hyperedge_index, x.size(0), num_edges, dtype=x.dtype)
        return _SparseMM.apply(b, bt, _SparseMM.apply(bt, b, self.lin(x)))


class _SparseMM(torch.autograd.Function):
    """``A @ X`` for a constant sparse A whose transpose is already at hand (no re-sort in backward)."""

    @staticmethod
    def forward(ctx, a, a_t, x):
        ctx.a_t = a_t
        return a @ x

    @staticmethod
    def backward(ctx, grad):
        return None, None, ctx.a_t @ grad


def hypergraph_operator(hyperedge_index: torch.Tensor, num_nodes: int, num_edges: int | None = None,
                        dtype: torch.dtype | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``(B, B^T)`` as CSR tensors, ``B = D_v^{-1/2} H D_e^{-1/2}``, so that ``P = B B^T``.

    ``hyperedge_index`` is ``[2, nnz]`` of (node, hyperedge) pairs (duplicates count once); the
    operator lives on its device, in ``dtype`` (default: torch's default float dtype).
    """
    if not isinstance(hyperedge_index, torch.Tensor) or hyperedge_index.is_floating_point() \
            or hyperedge_index.is_complex() or hyperedge_index.dtype == torch.bool:
        got = hyperedge_index.dtype if isinstance(hyperedge_index, torch.Tensor) else type(hyperedge_index).__name__
        raise TypeError(f"hyperedge_index must be an integer (torch.long) tensor, got {got}")
    if num_nodes < 1:
        raise ValueError(f"num_nodes must be >= 1, got {num_nodes}")
    dtype = torch.get_default_dtype() if dtype is None else dtype
    if hyperedge_index.dim() != 2 or hyperedge_index.size(0) != 2:
        raise ValueError("hyperedge_index must have shape [2, nnz]")
    if hyperedge_index.size(1) == 0:
        raise ValueError("hyperedge_index is empty")
    node, edge = hyperedge_index
    if node.min() < 0 or node.max() >= num_nodes or edge.min() < 0:
        raise ValueError("hyperedge_index has a node index out of range")
    m = int(num_edges) if num_edges is not None else int(edge.max()) + 1
    if edge.max() >= m:
        raise ValueError("hyperedge_index has a hyperedge index out of range")
    ones = torch.ones(node.numel(), dtype=dtype, device=hyperedge_index.device)
    h = torch.sparse_coo_tensor(hyperedge_index, ones, (num_nodes, m)).coalesce()
    node, edge = h.indices()
    dv = torch.bincount(node, minlength=num_nodes).to(dtype)
    de = torch.bincount(edge, minlength=m).to(dtype)
    w = dv[node].rsqrt() * de[edge].rsqrt()  # degrees of present entries are >= 1
    b = torch.sparse_coo_tensor(h.indices(), w, (num_nodes, m)).coalesce()
    return b.to_sparse_csr(), b.t().coalesce().to_sparse_csr()


def normalized_adjacency(edge_index: torch.Tensor, num_nodes: int, self_loops: bool) -> torch.Tensor:
    """CSR ``D^{-1/2} (A [+ I]) D^{-1/2}`` of a symmetric ``edge_index`` (PyG's ``gcn_norm``)."""
    ei, w = gcn_norm(edge_index, None, num_nodes, add_self_loops=self_loops)
    return to_torch_csr_tensor(ei, w, size=(num_nodes, num_nodes))


def prepare_graph(data: Data) -> Data:
    """Cache every model's graph normalisation on ``data`` (done once, outside timed inference)."""
    n = data.num_users + data.num_items
    data.adj_norm = normalized_adjacency(data.edge_index, n, self_loops=False)
    data.adj_norm_self = normalized_adjacency(data.edge_index, n, self_loops=True)
    data.user_hyper = hypergraph_operator(data.train_edge_index, data.num_users, data.num_items)
    data.item_hyper = hypergraph_operator(data.train_edge_index.flip(0), data.num_items, data.num_users)
    return data


# ----------------------------------------------------------------------------- models


def _cached(data: Data, key: str):
    if key not in data:
        prepare_graph(data)
    return data[key]


def _is_graph_data(obj) -> bool:
    """A PyG ``Data`` (anything with PyG's ``keys`` and an ``edge_index``) rather than a tensor."""
    return not isinstance(obj, torch.Tensor) and hasattr(obj, "keys") and hasattr(obj, "edge_index")


def _weights_like(adj: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """A sparse adjacency cast to ``x``'s dtype (a cached float32 graph used by a float64 model); an index as is."""
    return adj.to(x.dtype) if adj.layout != torch.strided and adj.dtype != x.dtype else adj


def _check_adjacency(adj, n: int) -> None:
    """A ``[2, E]`` integer ``edge_index`` with ids in ``[0, n)``, or a sparse ``(n, n)`` adjacency.

    Index ranges are not checked on the meta device (its tensors hold no values).
    """
    if not isinstance(adj, torch.Tensor):
        raise TypeError(f"edge_index must be a torch.Tensor or a PyG Data, got {type(adj).__name__}")
    if adj.layout != torch.strided:
        if adj.shape != (n, n):
            raise ValueError(f"adjacency must be ({n}, {n}), got {tuple(adj.shape)}")
        return
    if adj.is_floating_point() or adj.is_complex() or adj.dtype == torch.bool:
        raise TypeError(f"edge_index must hold integer node ids (torch.long), got {adj.dtype}")
    if adj.dim() != 2 or adj.size(0) != 2:
        raise ValueError(f"edge_index must have shape [2, E], got {tuple(adj.shape)}")
    if not adj.is_meta and adj.numel() and (adj.min() < 0 or adj.max() >= n):
        raise ValueError("edge_index has a node index out of range")


def _mlp(d_in: int, d_hidden: int, d_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d_in, d_hidden), nn.ReLU(), nn.Linear(d_hidden, d_out))


class Teacher(nn.Module):
    """Dual HGNN + review-text + LightGCN views, fused per side; score = <f_u, f_i>.

    Fusion: ``f = sum_views + MLP([views])`` (the MLP's last layer starts at zero).

    Views: (a) ``n_layers`` HGNNConv layers on the user hypergraph (items as hyperedges) and on
    the item hypergraph, layer outputs averaged; (b) review embeddings projected to ``dim``;
    (c) LightGCN on the bipartite graph. ``text_dim = 0`` drops the text view (the no-LM ablation).

    ``forward(data) -> (Z_U, Z_I)``, the fused user and item embeddings (``data`` from
    :func:`interaction_graph`; its normalised graphs are cached on it by :func:`prepare_graph`).
    """

    def __init__(self, n_users: int, n_items: int, text_dim: int, dim: int = 64, n_layers: int = 3):
        super().__init__()
        if min(n_users, n_items, dim, n_layers) < 1 or text_dim < 0:
            raise ValueError("n_users, n_items, dim and n_layers must be >= 1 and text_dim >= 0")
        self.n_users, self.n_items, self.text_dim, self.dim = n_users, n_items, text_dim, dim
        self.user_emb, self.item_emb = nn.Embedding(n_users, dim), nn.Embedding(n_items, dim)
        self.user_convs = nn.ModuleList(HGNNConv(dim) for _ in range(n_layers))
        self.item_convs = nn.ModuleList(HGNNConv(dim) for _ in range(n_layers))
        self.lgn_emb = nn.Embedding(n_users + n_items, dim)
        self.lgn_convs = nn.ModuleList(LGConv(normalize=False) for _ in range(n_layers))
        if text_dim:
            self.user_text_proj, self.item_text_proj = nn.Linear(text_dim, dim), nn.Linear(text_dim, dim)
        n_views = 3 if text_dim else 2
        self.user_fuse, self.item_fuse = _mlp(n_views * dim, dim, dim), _mlp(n_views * dim, dim, dim)
        for fuse in (self.user_fuse, self.item_fuse):  # start from the plain sum of the views
            nn.init.zeros_(fuse[-1].weight)
            nn.init.zeros_(fuse[-1].bias)
        for emb in (self.user_emb, self.item_emb, self.lgn_emb):
            nn.init.normal_(emb.weight, std=0.1)

    @staticmethod
    def _stack(x, convs, *args):
        outs = [x]
        for conv in convs:
            outs.append(conv(outs[-1], *args))
        return torch.stack(outs).mean(0)

    def views(self, data: Data) -> dict[str, torch.Tensor]:
        nu = self.n_users
        v = {"user_hgnn": self._stack(self.user_emb.weight, self.user_convs, _cached(data, "user_hyper")),
             "item_hgnn": self._stack(self.item_emb.weight, self.item_convs, _cached(data, "item_hyper"))}
        lgn = self._stack(self.lgn_emb.weight, self.lgn_convs, _weights_like(_cached(data, "adj_norm"),
                                                                             self.lgn_emb.weight))
        v["user_lgn"], v["item_lgn"] = lgn[:nu], lgn[nu:]
        parts_u, parts_i = [v["user_hgnn"], v["user_lgn"]], [v["item_hgnn"], v["item_lgn"]]
        if self.text_dim:
            if data.user_text.shape[1] != self.text_dim:
                raise ValueError(f"data has text features of size {data.user_text.shape[1]}, "
                                 f"teacher expects {self.text_dim}")
            v["user_text"], v["item_text"] = self.user_text_proj(data.user_text), self.item_text_proj(data.item_text)
            parts_u.append(v["user_text"])
            parts_i.append(v["item_text"])
        # fusion: f = sum of views + MLP(concat of views)
        v["user"] = torch.stack(parts_u).sum(0) + self.user_fuse(torch.cat(parts_u, 1))
        v["item"] = torch.stack(parts_i).sum(0) + self.item_fuse(torch.cat(parts_i, 1))
        return v

    def embeddings(self, data: Data) -> tuple[torch.Tensor, torch.Tensor]:
        v = self.views(data)
        return v["user"], v["item"]

    def forward(self, data: Data) -> tuple[torch.Tensor, torch.Tensor]:
        """The fused embeddings ``(Z_U, Z_I)`` of :meth:`embeddings`."""
        return self.embeddings(data)

    def full_scores(self, data: Data) -> torch.Tensor:
        zu, zi = self.embeddings(data)
        return zu @ zi.T


class CompactGCN(nn.Module):
    """The student: one linear GCN layer ``Z = D^{-1/2}(A + I)D^{-1/2} X W`` on the user-item graph.

    ``X`` are ``dim``-d ID embeddings (users first, then items); no nonlinearity. Uses PyG's
    ``GCNConv`` (self-loops + symmetric normalisation, no bias). Score ``s_ui = z_u . z_i``.

    ``forward(edge_index, x=None) -> Z (n_nodes, dim)``: ``edge_index`` is the normalised ``A + I``
    as a sparse ``(n, n)`` tensor (:func:`normalized_adjacency`), a ``[2, E]`` index propagated as
    given (unnormalised), or a PyG ``Data`` from :func:`interaction_graph` (its cached ``A + I``).
    """

    def __init__(self, n_users: int, n_items: int, dim: int = 64):
        super().__init__()
        if min(n_users, n_items, dim) < 1:
            raise ValueError("n_users, n_items and dim must be >= 1")
        self.n_users, self.n_items, self.dim = n_users, n_items, dim
        self.emb = nn.Embedding(n_users + n_items, dim)
        nn.init.normal_(self.emb.weight, std=0.1)
        self.conv = GCNConv(dim, dim, bias=False, normalize=False)  # takes the cached normalised A + I

    def forward(self, edge_index, x: torch.Tensor | None = None) -> torch.Tensor:
        if _is_graph_data(edge_index):
            edge_index = _cached(edge_index, "adj_norm_self")
        x = self.emb.weight if x is None else x
        if x.dim() != 2 or x.size(1) != self.dim:
            raise ValueError(f"x must have shape (n_nodes, {self.dim}), got {tuple(x.shape)}")
        _check_adjacency(edge_index, x.size(0))
        return self.conv(x, _weights_like(edge_index, x))

    def embeddings(self, data: Data) -> tuple[torch.Tensor, torch.Tensor]:
        z = self(_cached(data, "adj_norm_self"))
        return z[: self.n_users], z[self.n_users:]

    def full_scores(self, data: Data) -> torch.Tensor:
        zu, zi = self.embeddings(data)
        return zu @ zi.T


class LightGCNRecommender(nn.Module):
    """Baseline LightGCN: mean of the embeddings after 0..n_layers PyG ``LGConv`` propagations (no self-loops).

    ``forward(edge_index) -> Z (n_users + n_items, dim)``; ``edge_index`` is the normalised adjacency
    (sparse, :func:`normalized_adjacency` without self-loops), a ``[2, E]`` index propagated as given,
    or a PyG ``Data`` from :func:`interaction_graph` (its cached adjacency).
    """

    def __init__(self, n_users: int, n_items: int, dim: int = 64, n_layers: int = 3):
        super().__init__()
        if min(n_users, n_items, dim) < 1 or n_layers < 0:
            raise ValueError(f"n_users, n_items and dim must be >= 1 and n_layers >= 0, got {n_users}, {n_items}, "
                             f"{dim}, {n_layers}")
        self.n_users = n_users
        self.emb = nn.Embedding(n_users + n_items, dim)
        nn.init.normal_(self.emb.weight, std=0.1)
        self.convs = nn.ModuleList(LGConv(normalize=False) for _ in range(n_layers))

    def forward(self, edge_index) -> torch.Tensor:
        if _is_graph_data(edge_index):
            edge_index = _cached(edge_index, "adj_norm")
        _check_adjacency(edge_index, self.emb.num_embeddings)
        return Teacher._stack(self.emb.weight, self.convs, _weights_like(edge_index, self.emb.weight))

    def embeddings(self, data: Data) -> tuple[torch.Tensor, torch.Tensor]:
        z = self(data)
        return z[: self.n_users], z[self.n_users:]

    def full_scores(self, data: Data) -> torch.Tensor:
        zu, zi = self.embeddings(data)
        return zu @ zi.T


class MatrixFactorization(nn.Module):
    """Baseline: matrix factorisation (MF), ``s_ui = p_u . q_i``.

    ``forward(users, items) -> s`` scores the pairs ``(users[k], items[k])`` (two equal-length long tensors).
    """

    def __init__(self, n_users: int, n_items: int, dim: int = 64):
        super().__init__()
        if min(n_users, n_items, dim) < 1:
            raise ValueError(f"n_users, n_items and dim must be >= 1, got {n_users}, {n_items}, {dim}")
        self.user, self.item = nn.Embedding(n_users, dim), nn.Embedding(n_items, dim)
        nn.init.normal_(self.user.weight, std=0.1)
        nn.init.normal_(self.item.weight, std=0.1)

    def forward(self, users: torch.Tensor, items: torch.Tensor) -> torch.Tensor:
        for name, idx, n in (("users", users, self.user.num_embeddings), ("items", items, self.item.num_embeddings)):
            if not isinstance(idx, torch.Tensor) or idx.is_floating_point() or idx.dtype == torch.bool:
                raise TypeError(f"{name} must be an integer (torch.long) tensor of ids")
            if not idx.is_meta and idx.numel() and (idx.min() < 0 or idx.max() >= n):
                raise ValueError(f"{name} has an id out of range [0, {n})")
        if users.shape != items.shape:
            raise ValueError(f"users and items must have the same shape, got {tuple(users.shape)} and "
                             f"{tuple(items.shape)}")
        return (self.user(users) * self.item(items)).sum(-1)

    def embeddings(self, data: Data) -> tuple[torch.Tensor, torch.Tensor]:
        return self.user.weight, self.item.weight

    def full_scores(self, data: Data) -> torch.Tensor:
        return self.user.weight @ self.item.weight.T


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


# ----------------------------------------------------------------------------- losses


def temperature(e: float, T_max: float = 10.0, T_min: float = 1.0, E: int = 200) -> float:
    """Annealed distillation temperature ``T(e) = T_max - (T_max - T_min) min(1, e/E)``."""
    if E <= 0:
        raise ValueError(f"E must be > 0, got {E}")
    if not e >= 0:  # also NaN
        raise ValueError(f"epoch e must be >= 0, got {e}")
    if not 0 < T_min <= T_max:
        raise ValueError(f"need 0 < T_min <= T_max, got T_min={T_min}, T_max={T_max}")
    return T_max - (T_max - T_min) * min(1.0, e / E)


LOSSES = ("mse", "bpr")
"""Prediction losses: ``"mse"`` (Eq. 8, pointwise MSE on 0/1 labels, per the authors' rebuttal) or ``"bpr"``."""


def _check_loss(loss: str) -> None:
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")


def score_loss(pos: torch.Tensor, neg: torch.Tensor, loss: str = "mse") -> torch.Tensor:
    """Prediction loss on the scores of B positive pairs (u, i) and B sampled negatives (u, j).

    ``"mse"`` (Eq. 8 as the authors' rebuttal corrects it: a pointwise MSE over binary labels):
    ``mean over the 2B labelled pairs of (sigmoid(s) - y)^2`` with ``y = 1`` for (u, i) and ``y = 0``
    for (u, j); the sigmoid makes ``s`` an interaction likelihood, as in NeuMF (our reading: the
    rebuttal does not say whether the MSE acts on ``s`` or on ``sigmoid(s)``). ``"bpr"``:
    ``-mean log sigmoid(s_ui - s_uj)``.
    """
    _check_loss(loss)
    if pos.shape != neg.shape:
        raise ValueError(f"pos and neg scores must have the same shape, got {tuple(pos.shape)} and "
                         f"{tuple(neg.shape)}")
    if loss == "bpr":
        return -F.logsigmoid(pos - neg).mean()
    return 0.5 * ((torch.sigmoid(pos) - 1).square().mean() + torch.sigmoid(neg).square().mean())


def _l2(zu: torch.Tensor, zi: torch.Tensor, zj: torch.Tensor, reg: float) -> torch.Tensor:
    """``reg (|z_u|^2 + |z_i|^2 + |z_j|^2) / B`` (per-example, LightGCN's convention; the official
    script sums over the batch without dividing by B)."""
    return reg * (zu.square().sum() + zi.square().sum() + zj.square().sum()) / zu.size(0)


def bpr_loss(zu: torch.Tensor, zi: torch.Tensor, zj: torch.Tensor, reg: float = 1e-3) -> torch.Tensor:
    """``-mean log sigmoid(z_u.z_i - z_u.z_j) + reg * (|z_u|^2 + |z_i|^2 + |z_j|^2) / B``."""
    return score_loss((zu * zi).sum(1), (zu * zj).sum(1), "bpr") + _l2(zu, zi, zj, reg)


def pointwise_mse_loss(zu: torch.Tensor, zi: torch.Tensor, zj: torch.Tensor, reg: float = 1e-3) -> torch.Tensor:
    """Eq. 8 (the authors' rebuttal): ``mean (sigmoid(s) - y)^2`` over positives (y = 1) and negatives
    (y = 0), ``s = z_u . z_i``, plus the same L2 term as :func:`bpr_loss`."""
    return score_loss((zu * zi).sum(1), (zu * zj).sum(1), "mse") + _l2(zu, zi, zj, reg)


def prediction_loss(zu: torch.Tensor, zi: torch.Tensor, zj: torch.Tensor, reg: float = 1e-3,
                    loss: str = "mse") -> torch.Tensor:
    """:func:`pointwise_mse_loss` (``loss="mse"``, the paper's Eq. 8) or :func:`bpr_loss` (``"bpr"``)."""
    _check_loss(loss)
    return pointwise_mse_loss(zu, zi, zj, reg) if loss == "mse" else bpr_loss(zu, zi, zj, reg)


def info_nce(logits: torch.Tensor, tau: float) -> torch.Tensor:
    """InfoNCE with diagonal positives: ``CE(logits / tau, arange)`` for a (B, B) similarity matrix."""
    return F.cross_entropy(logits / tau, torch.arange(logits.size(0), device=logits.device))


def cosine_matrix(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.normalize(a, dim=1) @ F.normalize(b, dim=1).T


def distillation_kl(student_logits: torch.Tensor, teacher_logits: torch.Tensor, T: float) -> torch.Tensor:
    """``T^2 KL(softmax(t/T) || softmax(s/T))`` over the last axis, averaged over rows (0 iff s = t + c)."""
    if not T > 0:
        raise ValueError(f"T must be > 0, got {T}")
    if student_logits.shape != teacher_logits.shape:
        raise ValueError(f"student and teacher logits must have the same shape, got {tuple(student_logits.shape)} "
                         f"and {tuple(teacher_logits.shape)}")
    return F.kl_div(F.log_softmax(student_logits / T, -1), F.softmax(teacher_logits / T, -1),
                    reduction="batchmean") * T**2


# ----------------------------------------------------------------------------- training


@dataclass(frozen=True)
class SharpDistillConfig:
    """The SHARP-Distill recipe: the teacher's training (Eq. 9 as the rebuttal corrects it, :func:`train_teacher`),
    then the distillation of CompactGCN from it (:func:`distill`), with one optimiser setting for both.

    ``lr``, ``batch_size`` and ``dim`` are also those of the reproduction's baselines (every model trained alike);
    the distillation's own constants (gamma, alpha, lambdas, tau, T_max, T_min, K, beta) keep :func:`distill`'s
    defaults, the official script's values. The defaults are the reproduction's quick settings; the paper's are
    200 epochs, batch 256, lr 1e-3 (official README).
    """

    dim: int = 64
    """Embedding size of the teacher and the student (and of every baseline)."""
    teacher_epochs: int = 15
    """Training epochs of the teacher (:func:`train_teacher`)."""
    student_epochs: int = 10
    """Distillation epochs of the student (:func:`distill`; also E of the temperature schedule T(e))."""
    batch_size: int = 2048
    """Interactions per mini-batch (one uniform negative each)."""
    lr: float = 0.01
    """Adam learning rate."""
    loss: str = "mse"
    """Prediction loss of the teacher and the student: "mse" (Eq. 8, pointwise MSE on 0/1 labels, as the authors'
    rebuttal states) or "bpr"."""

    def __post_init__(self) -> None:
        check_fields(self, integer=("dim", "teacher_epochs", "student_epochs", "batch_size"),
                     positive=("dim", "teacher_epochs", "student_epochs", "batch_size", "lr"),
                     choices={"loss": LOSSES})
        # bounds: a job beyond these would need > ~100 GB or days
        check_fields(self, at_most={"dim": 10**4, "teacher_epochs": 10**6, "student_epochs": 10**6,
                                    "batch_size": 10**6})


def _batches(n: int, batch_size: int, gen: torch.Generator, device: torch.device):
    """Shuffled index batches, drawn from the CPU generator ``gen`` (the same stream on every device)."""
    perm = torch.randperm(n, generator=gen).to(device)
    for s in range(0, n, batch_size):
        yield perm[s:s + batch_size]


def _negatives(num: int, n_items: int, gen: torch.Generator, device: torch.device) -> torch.Tensor:
    return torch.randint(n_items, (num,), generator=gen).to(device)


def _check_training(epochs: int, lr: float, batch_size: int, reg: float, loss: str = "mse") -> None:
    _check_loss(loss)
    for name, value in (("epochs", epochs), ("batch_size", batch_size)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} must be an int, got {value!r}")
    if epochs < 0:
        raise ValueError(f"epochs must be >= 0, got {epochs}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if not lr > 0:
        raise ValueError(f"lr must be > 0, got {lr}")
    if not reg >= 0:
        raise ValueError(f"reg must be >= 0, got {reg}")


def train_recommender(model: nn.Module, data: Data, epochs: int, lr: float = 1e-3, batch_size: int = 256,
                      reg: float = 1e-3, loss: str = "mse", seed: int = 0,
                      progress: Callable[[int, int], None] | None = None) -> nn.Module:
    """Train any model with ``embeddings(data)`` on one uniform negative per positive.

    ``loss="mse"``: the pointwise MSE of Eq. 8 (:func:`pointwise_mse_loss`, the paper's loss for
    every model); ``"bpr"``: :func:`bpr_loss`. Runs on the device of ``data``'s tensors (move
    ``model`` and ``data`` there first); the shuffling and the negatives come from a CPU generator
    seeded with ``seed``, so every device sees the same draws.
    """
    _check_training(epochs, lr, batch_size, reg, loss)
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    tr = data.train_edge_index
    model.train()
    for ep in range(epochs):
        for b in _batches(tr.size(1), batch_size, gen, tr.device):
            u, i = tr[0, b], tr[1, b]
            j = _negatives(b.numel(), data.num_items, gen, tr.device)
            zu, zi = model.embeddings(data)
            value = prediction_loss(zu[u], zi[i], zi[j], reg, loss)
            opt.zero_grad()
            value.backward()
            opt.step()
        if progress:
            progress(ep + 1, epochs)
    return model.eval()


def train_bpr(model: nn.Module, data: Data, epochs: int, lr: float = 1e-3, batch_size: int = 256,
              reg: float = 1e-3, seed: int = 0, progress: Callable[[int, int], None] | None = None) -> nn.Module:
    """:func:`train_recommender` with ``loss="bpr"`` (kept for the BPR baselines)."""
    return train_recommender(model, data, epochs, lr, batch_size, reg, "bpr", seed, progress)


def train_teacher(teacher: Teacher, data: Data, epochs: int, lr: float = 1e-3, batch_size: int = 256,
                  reg: float = 1e-3, tau_user: float = 0.1, tau_item: float = 0.2, weight_con: float = 1.0,
                  loss: str = "mse", seed: int = 0, progress: Callable[[int, int], None] | None = None) -> Teacher:
    """Teacher loss (Eq. 9 as the rebuttal corrects it): prediction loss on the fused score (Eq. 8,
    ``loss="mse"`` by default, or ``"bpr"``) ``+ weight_con (L_con^U + L_con^I)``, InfoNCE terms aligning
    the HGNN and text views of users (tau 0.1) and items (tau 0.2, the official script's value; its
    README says 0.1).

    Runs on the device of ``data``'s tensors, with the same CPU-generator draws as :func:`train_recommender`.
    """
    _check_training(epochs, lr, batch_size, reg, loss)
    if not (tau_user > 0 and tau_item > 0):
        raise ValueError(f"tau_user and tau_item must be > 0, got {tau_user}, {tau_item}")
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(teacher.parameters(), lr=lr)
    tr = data.train_edge_index
    teacher.train()
    for ep in range(epochs):
        for b in _batches(tr.size(1), batch_size, gen, tr.device):
            u, i = tr[0, b], tr[1, b]
            j = _negatives(b.numel(), data.num_items, gen, tr.device)
            v = teacher.views(data)
            value = prediction_loss(v["user"][u], v["item"][i], v["item"][j], reg, loss)  # Eq. 8
            if teacher.text_dim and weight_con:
                ub, ib = u.unique(), i.unique()
                value = value + weight_con * (
                    info_nce(cosine_matrix(v["user_hgnn"][ub], v["user_text"][ub]), tau_user)
                    + info_nce(cosine_matrix(v["item_hgnn"][ib], v["item_text"][ib]), tau_item))
            opt.zero_grad()
            value.backward()
            opt.step()
        if progress:
            progress(ep + 1, epochs)
    return teacher.eval()


def distill(teacher: nn.Module, student: CompactGCN, data: Data, epochs: int, lr: float = 1e-3,
            batch_size: int = 256, reg: float = 1e-3, gamma: float = 0.5, alpha: float = 0.5,
            lambdas: Sequence[float] = (1.0, 1.0, 1.0), tau: float = 0.1, T_max: float = 10.0, T_min: float = 1.0,
            K: int = 3, beta: float = 0.5, loss: str = "mse", seed: int = 0,
            progress: Callable[[int, int], None] | None = None) -> CompactGCN:
    """Distil a trained (frozen) teacher into CompactGCN.

    Per batch of (u, i+, j-) with ``T = temperature(epoch, T_max, T_min, epochs)``:

    * the prediction loss (``loss="mse"``: Eq. 8's pointwise MSE, default; ``"bpr"``) on the
      student's score ``z_u . z_i`` and on the MLP head's score ``MLP([z~_u || z~_i || y_ui])``,
      where ``z~ = gamma z^s + (1 - gamma) z^t`` (embedding interpolation, training only) and
      ``y_ui = n_items * softmax(t_u / T)_i`` the teacher's soft label;
    * ``lambda1 T^2 KL(softmax(t_u/T) || softmax(s_u/T))`` over all items, for the batch's users;
    * ``lambda2 L_con,U + lambda3 L_con,I``: InfoNCE (``tau``, diagonal positives) on
      ``alpha cos(z^t_a, z^s_b) + (1 - alpha) cos(P_a, P_b)``, P the hypergraph positional encodings.

    The head is kept as ``student.head_`` but is not used for ranking: at inference the student
    scores by dot products alone (the head needs the teacher's soft labels). Runs on the device of
    ``data``'s tensors (the head is created there, in the student's dtype).
    """
    _check_training(epochs, lr, batch_size, reg, loss)
    if not 0 <= gamma <= 1 or not 0 <= alpha <= 1:
        raise ValueError("gamma and alpha must lie in [0, 1]")
    if len(lambdas) != 3:
        raise ValueError("lambdas must be (lambda1, lambda2, lambda3)")
    if not tau > 0:
        raise ValueError(f"tau must be > 0, got {tau}")
    lam1, lam2, lam3 = lambdas
    teacher.eval()
    with torch.no_grad():
        tu, ti = teacher.embeddings(data)
        t_scores = tu @ ti.T
        h_u, h_i = build_hypergraphs(data.train_edge_index, data.num_users, data.num_items)
        pos_u = F.normalize(hypergraph_positional_encoding(h_u, K, beta), dim=1) if lam2 else None
        pos_i = F.normalize(hypergraph_positional_encoding(h_i, K, beta), dim=1) if lam3 else None
    d, weight = student.dim, student.emb.weight
    head = _mlp(2 * d + 1, d, 1).to(device=weight.device, dtype=weight.dtype)  # initialised on the CPU RNG
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(list(student.parameters()) + list(head.parameters()), lr=lr)
    tr, n_items = data.train_edge_index, data.num_items
    student.train()
    for ep in range(epochs):
        T = temperature(ep, T_max, T_min, epochs)
        for b in _batches(tr.size(1), batch_size, gen, tr.device):
            u, i = tr[0, b], tr[1, b]
            j = _negatives(b.numel(), n_items, gen, tr.device)
            zu, zi = student.embeddings(data)
            value = prediction_loss(zu[u], zi[i], zi[j], reg, loss)  # Eq. 8 on the student's score
            # interpolated embeddings + teacher soft label -> MLP head (training only)
            soft = F.softmax(t_scores[u] / T, dim=1) * n_items
            ar = torch.arange(u.numel(), device=u.device)
            mix_u = gamma * zu[u] + (1 - gamma) * tu[u]
            mix_i, mix_j = gamma * zi[i] + (1 - gamma) * ti[i], gamma * zi[j] + (1 - gamma) * ti[j]
            head_pos = head(torch.cat([mix_u, mix_i, soft[ar, i, None]], 1)).squeeze(1)
            head_neg = head(torch.cat([mix_u, mix_j, soft[ar, j, None]], 1)).squeeze(1)
            value = value + score_loss(head_pos, head_neg, loss)
            ub, ib = u.unique(), i.unique()
            if lam1:
                value = value + lam1 * distillation_kl(zu[ub] @ zi.T, t_scores[ub], T)
            if lam2:  # Eq. 16: alpha cos(z^t, z^s) + (1 - alpha) cos(P_a, P_b)
                sim = alpha * cosine_matrix(tu[ub], zu[ub]) + (1 - alpha) * pos_u[ub] @ pos_u[ub].T
                value = value + lam2 * info_nce(sim, tau)
            if lam3:
                sim = alpha * cosine_matrix(ti[ib], zi[ib]) + (1 - alpha) * pos_i[ib] @ pos_i[ib].T
                value = value + lam3 * info_nce(sim, tau)
            opt.zero_grad()
            value.backward()
            opt.step()
        if progress:
            progress(ep + 1, epochs)
    student.head_ = head.eval()
    return student.eval()


# ----------------------------------------------------------------------------- evaluation


def evaluate_topk(model, train, test, k: int = 10, data: Data | None = None) -> dict[str, float]:
    """Full-ranking top-k metrics with training items excluded, averaged over users with test items.

    Args:
        model: a score matrix ``(n_users, n_items)`` (tensor or array), or a model with
            ``full_scores(data)`` (then pass ``data``).
        train, test: ``[2, N]`` (user, item) pairs.
    Returns:
        ``{"P", "R", "NDCG", "HR"}`` at k: precision hits/k, recall hits/|test_u|,
        NDCG with binary gains (ideal DCG over min(|test_u|, k) hits), hit rate 1[hits > 0].

    Items are ranked in the scores' own precision (an integer matrix is ranked as float32) on their
    device; the metrics are averaged in float32.
    """
    if isinstance(model, (torch.Tensor, np.ndarray)):
        scores = torch.as_tensor(model)
        if not scores.is_floating_point():
            if scores.dtype == torch.bool or scores.is_complex():
                raise TypeError(f"scores must be real numbers, got {scores.dtype}")
            scores = scores.float()
    else:
        if data is None:
            raise ValueError("pass data= when model is a model rather than a score matrix")
        with torch.no_grad():
            scores = model.full_scores(data)
    scores = scores.detach().clone()
    if scores.dim() != 2:
        raise ValueError(f"scores must be a (n_users, n_items) matrix, got shape {tuple(scores.shape)}")
    if bool(torch.isnan(scores).any()):  # -inf is a valid "never recommend" score, NaN has no rank
        raise ValueError("scores has NaN entries")
    nu, ni = scores.shape
    if not 1 <= k <= ni:
        raise ValueError(f"k must lie in [1, n_items={ni}], got {k}")
    train, _, _ = _check_interactions(torch.as_tensor(train, device=scores.device), nu, ni)
    test, _, _ = _check_interactions(torch.as_tensor(test, device=scores.device), nu, ni)
    scores[train[0], train[1]] = -torch.inf
    relevant = torch.zeros(nu, ni, dtype=torch.bool, device=scores.device)
    relevant[test[0], test[1]] = True
    relevant[train[0], train[1]] = False  # a training item never counts as a test hit
    n_rel = relevant.sum(1)
    users = n_rel > 0
    top = scores[users].topk(k, dim=1).indices
    hits = relevant[users].gather(1, top).float()
    disc = 1.0 / torch.log2(torch.arange(k, dtype=torch.float32, device=scores.device) + 2)
    dcg = (hits * disc).sum(1)
    ideal = torch.cumsum(disc, 0)[(n_rel[users].clamp(max=k) - 1)]
    n_hits = hits.sum(1)
    return {"P": float((n_hits / k).mean()), "R": float((n_hits / n_rel[users]).mean()),
            "NDCG": float((dcg / ideal).mean()), "HR": float((n_hits > 0).float().mean())}


@torch.no_grad()
def time_inference(model, n_repeats: int = 10, data: Data | None = None, warmup: int = 2) -> float:
    """Median wall time in ms of scoring all users against all items from raw inputs.

    ``model`` is a model with ``full_scores(data)`` (pass ``data``), or a zero-argument callable.
    """
    if n_repeats < 1:
        raise ValueError(f"n_repeats must be >= 1, got {n_repeats}")
    score = (lambda: model.full_scores(data)) if data is not None else model
    if not callable(score):
        raise ValueError("model must be callable, or pass data= for a model with full_scores")
    params = list(model.parameters()) if isinstance(model, nn.Module) else []
    on_cuda = bool(params) and params[0].is_cuda

    def fn():  # a CUDA kernel launch returns at once: wait for the result before reading the clock
        out = score()
        if on_cuda:
            torch.cuda.synchronize(params[0].device)
        return out

    was_training = getattr(model, "training", None)
    if was_training:
        model.eval()
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(n_repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    if was_training:
        model.train()
    return float(np.median(times))

"""Primphormer: graph attention in the primal space of an asymmetric kernel SVD (He et al., ICML 2025).

Self-attention on the nodes of a graph reads as the *dual* form of a kernel machine with the asymmetric
kernel ``kappa(x_i, x_j) = <phi_q(x_i), phi_k(x_j)>``: every output sums over all node pairs, O(N^2)
(the paper's Figure 1(b)). Primphormer uses the *primal* form instead (Figure 1(c), Sec. 2.3-2.5): per
graph and head (head width p, rank s, N_s the inner dimension of the primal weights),

    f_X = F + B mean_pool(X) 1_{N_s}^T                           (virtual node, s x N_s, data-dependent)
    e_i = f_X W_e phi_q(x_i),   r_i = f_X W_r phi_k(x_i)         (primal scores in R^s; W_e, W_r: N_s x p)
    o_i = W_c [e_i ; r_i]                                        (output)

with learned ``F`` (s x N_s), ``B`` (s x d), ``W_e``, ``W_r`` (N_s x p) and ``W_c`` (p x 2s), and
``phi_q(x) = q / ||q||``, ``phi_k(x) = k / ||k||``. ``f_X`` pools every node of the graph, so the layer is
permutation equivariant (the paper introduces the virtual node because sampling nodes would break it);
no node is sampled. The cost is O(N p s) per head: no N x N tensor exists at any point. Training adds
``eta * sum_l J_l^2`` with the KSVD objective of Eq. (2.5), per graph and layer,

    J = 1/2 sum_i e_i^T Lambda e_i + 1/2 sum_j r_j^T Lambda r_j - Tr(W_e^T W_r),

zero at a stationary point of the KSVD problem (Lemma 2.3; Lambda diagonal, learned).

Sources: the paper's Figure 1 (first-hand, a copy with its caption) and the equations as a public reading
note quotes them (second-hand); see docs/papers/primphormer.md, "Sources and verification".
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn import GCNConv, GINEConv, GPSConv, global_mean_pool
from torch_geometric.nn.resolver import activation_resolver, normalization_resolver
from torch_geometric.utils import scatter

from icml25.common.checks import ConfigError, check_fields
from icml25.common.graphs import check_graph_input

__all__ = [
    "PrimalGraphAttention", "PrimphormerLayer", "Primphormer", "GPSBaseline", "MPNNBlock", "mpnn_conv",
    "ksvd_objective", "ksvd_loss", "check_graph_input", "N_S_PER_RANK", "PrimphormerConfig",
    "train_node_classifier", "predict_nodes",
]

N_S_PER_RANK = 10
"""Default N_s = 10 x rank: the authors' sequence code (PrimalAttention) uses N_s = low_rank x rank_multi with
rank_multi = 10; the graph paper's N_s was not found."""


@dataclass(frozen=True)
class PrimphormerConfig:
    """Primphormer's settings in an experiment: the network (:class:`Primphormer`) and its training recipe
    (:func:`train_node_classifier`: AdamW with cosine decay on ``task loss + eta sum_l J_l^2``, Sec. 3).

    The baselines an experiment compares with it (:class:`GPSBaseline`) are built with the same width, depth and
    heads and trained with the same recipe (``eta`` and ``rank``/``n_s`` are Primphormer's only), so every model
    gets the same budget.
    """

    hidden: int = 32
    """Hidden width of every model, in [1, 10^4]; divisible by ``heads``."""
    n_layers: int = 3
    """GPS blocks (or MPNN blocks for the MPNN-only baseline), in [1, 10^3]."""
    heads: int = 4
    """Attention heads, in [1, 10^3]."""
    rank: int = 16
    """Primphormer rank s (width of the primal scores e and r per head), in [1, 10^4]."""
    n_s: int = 0
    """N_s, inner dimension of the learned W_e, W_r (N_s x p) and of f_X (s x N_s), in [0, 10^5]; 0: 10 x rank
    (the authors' sequence code's ratio; the graph paper's value was not found)."""
    eta: float = 0.05
    """Weight of the KSVD regulariser sum_l J_l^2 (J of Eq. 2.5), >= 0 (the authors' sequence scripts use
    0.05-0.1; the paper's value was not found)."""
    epochs: int = 30
    """Training epochs, in [1, 10^6]."""
    batch_size: int = 32
    """Graphs per mini-batch, in [1, 10^6]."""
    lr: float = 3e-3
    """AdamW learning rate (cosine decay to 0), > 0."""
    weight_decay: float = 1e-5
    """AdamW weight decay, >= 0."""

    def __post_init__(self) -> None:
        # bounds: a job beyond these would need > ~100 GB or days
        check_fields(self, integer=("hidden", "n_layers", "heads", "rank", "n_s", "epochs", "batch_size"),
                     finite=("eta", "lr", "weight_decay"),
                     positive=("hidden", "n_layers", "heads", "rank", "epochs", "batch_size", "lr"),
                     nonnegative=("n_s", "eta", "weight_decay"),
                     at_most={"hidden": 10**4, "n_layers": 10**3, "heads": 10**3, "rank": 10**4, "n_s": 10**5,
                              "epochs": 10**6, "batch_size": 10**6})
        if self.hidden % self.heads:
            raise ConfigError(f"PrimphormerConfig.hidden must be divisible by heads={self.heads}, got {self.hidden}")


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
    """Validate a graph's tensors once, at a model's boundary; return ``batch`` unchanged.

    On the meta device (tensors without data) only dtypes and shapes are checked; elsewhere the
    shared :func:`check_graph_input` also checks index ranges and the batch layout, and ``x`` must
    be finite (these read values, i.e. synchronise with an accelerator: the layers do not repeat them).
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


def _check_shape(x: Tensor, batch: Tensor | None, dim: int) -> None:
    """Shape checks that read no tensor values (no accelerator synchronisation); TypeError for non-tensors."""
    if not isinstance(x, Tensor):
        kind = type(x).__module__ + "." + type(x).__qualname__
        raise TypeError(f"x must be a torch.Tensor, got {kind} (convert it with torch.as_tensor)")
    if x.dim() != 2 or x.size(1) != dim:
        raise ValueError(f"x must have shape (num_nodes, {dim}), got {tuple(x.shape)}")
    if x.size(0) == 0:
        raise ValueError("empty graph: x has no nodes")
    if batch is not None and (not isinstance(batch, Tensor) or batch.shape != (x.size(0),)):
        got = tuple(batch.shape) if isinstance(batch, Tensor) else type(batch).__name__
        raise ValueError(f"batch must be a tensor of shape ({x.size(0)},), got {got}")


def _is_graph_data(obj) -> bool:
    """A PyG ``Data`` / ``Batch`` (anything with the node features ``x`` and PyG's ``keys``)."""
    return not isinstance(obj, Tensor) and hasattr(obj, "keys") and hasattr(obj, "x")


class PrimalGraphAttention(nn.Module):
    """Primal-space graph self-attention of the paper's Figure 1(c), O(N * p * s) per head.

    Args:
        dim: node feature width d (divisible by ``heads``).
        heads: attention heads H; head width p = d / H. Each head has its own ``W_e, W_r, F, B, Lambda``;
            ``W_c`` is shared by the heads (as in the authors' sequence code), and an output map
            ``W_o`` (d x d) merges the heads (standard multi-head practice; not drawn in Figure 1(c)).
        rank: s, the width of the primal scores e and r.
        n_s: N_s, the inner dimension of ``W_e, W_r`` (N_s x p) and of ``f_X`` (s x N_s); default
            ``N_S_PER_RANK * rank``.
        feature_map: ``"cos"`` (phi(x) = q / ||q||, the paper's choice) or ``"identity"`` (raw q, k; tests).

    ``forward(x, batch=None) -> (out, aux)`` with ``x: (N, d)``, ``batch: (N,)`` PyG graph ids (sorted; None
    for one graph); ``out: (N, d)``; ``aux`` holds ``e, r: (N, H, s)``, ``W_e, W_r: (H, N_s, p)``,
    ``Lambda: (H, s)`` and ``batch`` for :func:`ksvd_objective`. The input is not validated beyond its shape
    (no value is read; a model validates once at its boundary, see :func:`check_graph_input`).
    """

    def __init__(self, dim: int, heads: int = 4, rank: int = 16, n_s: int | None = None,
                 feature_map: Literal["cos", "identity"] = "cos"):
        super().__init__()
        n_s = N_S_PER_RANK * rank if n_s is None else n_s
        for name, value in (("dim", dim), ("heads", heads), ("rank", rank), ("n_s", n_s)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        if dim % heads:
            raise ValueError(f"dim ({dim}) must be divisible by heads ({heads})")
        if feature_map not in ("cos", "identity"):
            raise ValueError(f"feature_map must be 'cos' or 'identity', got {feature_map!r}")
        self.dim, self.heads, self.rank, self.n_s, self.head_dim = dim, heads, rank, n_s, dim // heads
        self.feature_map = feature_map
        p = self.head_dim
        self.W_q = nn.Linear(dim, dim)
        self.W_k = nn.Linear(dim, dim)
        # learned primal weights W_e, W_r (N_s x p per head); orthogonal init as the authors' sequence code
        self.W_e = nn.Parameter(torch.empty(heads, n_s, p))
        self.W_r = nn.Parameter(torch.empty(heads, n_s, p))
        # virtual node f_X = F + B mean_pool(X) 1^T (s x N_s per head)
        self.F = nn.Parameter(torch.empty(heads, rank, n_s))
        self.B = nn.Linear(dim, heads * rank, bias=False)
        self.Lambda = nn.Parameter(torch.empty(heads, rank))  # diag of Lambda in J (Eq. 2.5)
        self.W_c = nn.Linear(2 * rank, p)  # o = W_c [e; r], shared by heads
        self.out = nn.Linear(dim, dim)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for lin in (self.W_q, self.W_k, self.B, self.W_c, self.out):
            lin.reset_parameters()
        for h in range(self.heads):
            nn.init.orthogonal_(self.W_e.data[h])
            nn.init.orthogonal_(self.W_r.data[h])
        bound = 1.0 / math.sqrt(self.n_s)
        nn.init.uniform_(self.F, -bound, bound)  # a linear map's default init (fan-in N_s)
        nn.init.uniform_(self.Lambda)  # uniform on [0, 1) as in the authors' sequence code

    def _phi(self, z: Tensor) -> Tensor:
        return F.normalize(z, p=2, dim=-1) if self.feature_map == "cos" else z

    def virtual_node(self, x: Tensor, batch: Tensor | None = None) -> Tensor:
        """``f_X`` of each node's graph, ``(N, H, s, N_s)``.

        Materialises N x H x s x N_s numbers: for tests and inspection; :meth:`forward` uses the factored form.
        """
        bx = self._pooled_B(x, batch)
        return self.F.unsqueeze(0) + bx.unsqueeze(-1)

    def _pooled_B(self, x: Tensor, batch: Tensor | None) -> Tensor:
        """``B mean_pool(X)`` of each node's graph, ``(N, H, s)``."""
        if batch is None:  # one graph (the same arithmetic as an all-zero batch vector, bit for bit)
            batch = torch.zeros(x.size(0), dtype=torch.long, device=x.device)
        # per-graph means without reading the number of graphs (graph ids < N), gathered back to the nodes
        pooled = scatter(x, batch, dim=0, dim_size=x.size(0), reduce="mean")[batch]
        return self.B(pooled).view(-1, self.heads, self.rank)

    def forward(self, x: Tensor, batch: Tensor | None = None) -> tuple[Tensor, dict[str, Tensor]]:
        _check_shape(x, batch, self.dim)
        n, H, p = x.size(0), self.heads, self.head_dim
        phi_q = self._phi(self.W_q(x).view(n, H, p))
        phi_k = self._phi(self.W_k(x).view(n, H, p))
        bx = self._pooled_B(x, batch)  # (N, H, s)
        # e_i = f_X W_e phi_q(x_i) = F W_e phi_q(x_i) + (B xbar) (1^T W_e phi_q(x_i)), O(N p s) per head
        e = (torch.einsum("nhp,hsp->nhs", phi_q, torch.einsum("hsk,hkp->hsp", self.F, self.W_e))
             + bx * torch.einsum("nhp,hp->nh", phi_q, self.W_e.sum(1)).unsqueeze(-1))
        r = (torch.einsum("nhp,hsp->nhs", phi_k, torch.einsum("hsk,hkp->hsp", self.F, self.W_r))
             + bx * torch.einsum("nhp,hp->nh", phi_k, self.W_r.sum(1)).unsqueeze(-1))
        o = self.W_c(torch.cat([e, r], dim=-1))  # (N, H, p)
        aux = {"e": e, "r": r, "W_e": self.W_e, "W_r": self.W_r, "Lambda": self.Lambda,
               "batch": torch.zeros(n, dtype=torch.long, device=x.device) if batch is None else batch}
        return self.out(o.reshape(n, self.dim)), aux


def ksvd_objective(aux: dict[str, Tensor]) -> Tensor:
    """KSVD objective J of Eq. (2.5) for each graph of one layer's batch, shape ``(num_graphs,)``.

    ``J_g = 1/2 sum_{i in g} e_i^T Lambda e_i + 1/2 sum_{j in g} r_j^T Lambda r_j - Tr(W_e^T W_r)``, each
    head a separate problem (J_g sums the heads' objectives). Zero at a stationary point (Lemma 2.3).
    """
    missing = [k for k in ("e", "r", "W_e", "W_r", "Lambda", "batch") if k not in aux]
    if missing:
        raise ValueError(f"aux must be the dict returned by PrimalGraphAttention; it lacks {missing}")
    lam = aux["Lambda"]
    quad = 0.5 * ((aux["e"].pow(2) * lam).sum((1, 2)) + (aux["r"].pow(2) * lam).sum((1, 2)))  # (N,)
    batch = aux["batch"]
    num_graphs = int(batch.max()) + 1 if batch.numel() else 0
    per_graph = scatter(quad, batch, dim=0, dim_size=num_graphs, reduce="sum")
    trace = torch.einsum("hkp,hkp->", aux["W_e"], aux["W_r"])
    return per_graph - trace


def ksvd_loss(aux_list: list[dict[str, Tensor]]) -> Tensor:
    """The regulariser of the training loss, ``sum_l J_l^2`` (Sec. 3), each layer's J^2 averaged over the
    graphs of the batch (as the task loss is); multiply by eta."""
    if not aux_list:
        raise ValueError("ksvd_loss needs the aux dict of at least one PrimalGraphAttention layer")
    return torch.stack([ksvd_objective(a).pow(2).mean() for a in aux_list]).sum()


def mpnn_conv(kind: str, dim: int) -> nn.Module:
    """The local MPNN of a GPS block: ``"gine"`` (GINE with a 2-layer MLP, edge features of width dim) or ``"gcn"``."""
    if kind == "gine":
        return GINEConv(nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim)), edge_dim=dim)
    if kind == "gcn":
        return GCNConv(dim, dim)
    raise ValueError(f"mpnn must be 'gine' or 'gcn', got {kind!r}")


class PrimphormerLayer(nn.Module):
    """GPS block (Figure 1(a)) with the primal attention of Figure 1(c); the interface of PyG's ``GPSConv``.

    ``h_M = N1(Dropout(conv(h, edge_index, **kwargs)) + h)``, ``h_A = N2(Dropout(PrimalAttn(h)) + h)``,
    ``out = N3(h_M + h_A + MLP(h_M + h_A))`` (``h_M`` left out when ``conv`` is None), exactly as ``GPSConv``
    with its attention replaced. ``conv`` is any PyG message-passing layer (injected, e.g.
    ``mpnn_conv("gine", channels)``); ``**kwargs`` of ``forward`` (``edge_attr=...``) go to it.

    ``forward(x, edge_index, batch=None, *, return_aux=False, **kwargs)`` returns the new node features
    (``(N, channels)``), or ``(out, aux)`` with ``return_aux=True`` (``aux`` for :func:`ksvd_loss`). No value
    of the input is read for validation (a model validates once at its boundary).
    """

    def __init__(self, channels: int, conv: nn.Module | None, heads: int = 1, rank: int = 16, n_s: int | None = None,
                 dropout: float = 0.0, act: str = "relu", act_kwargs: dict[str, Any] | None = None,
                 norm: str | None = "batch_norm", norm_kwargs: dict[str, Any] | None = None,
                 feature_map: Literal["cos", "identity"] = "cos"):
        super().__init__()
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must lie in [0, 1), got {dropout}")
        self.channels, self.conv, self.dropout = channels, conv, dropout
        self.attn = PrimalGraphAttention(channels, heads, rank, n_s, feature_map)
        self.mlp = nn.Sequential(nn.Linear(channels, 2 * channels), activation_resolver(act, **(act_kwargs or {})),
                                 nn.Dropout(dropout), nn.Linear(2 * channels, channels), nn.Dropout(dropout))
        norm_kwargs = norm_kwargs or {}
        self.norm1 = normalization_resolver(norm, channels, **norm_kwargs)
        self.norm2 = normalization_resolver(norm, channels, **norm_kwargs)
        self.norm3 = normalization_resolver(norm, channels, **norm_kwargs)
        self.norm_with_batch = self.norm1 is not None and "batch" in inspect.signature(self.norm1.forward).parameters

    def _norm(self, norm, h, batch):
        if norm is None:
            return h
        return norm(h, batch=batch) if self.norm_with_batch else norm(h)

    def forward(self, x: Tensor, edge_index: Tensor, batch: Tensor | None = None, *, return_aux: bool = False,
                **kwargs) -> Tensor | tuple[Tensor, dict[str, Tensor]]:
        _check_shape(x, batch, self.channels)
        hs = []
        if self.conv is not None:  # local MPNN branch, residual before the merge (Fig. 1(a))
            h = F.dropout(self.conv(x, edge_index, **kwargs), self.dropout, self.training)
            hs.append(self._norm(self.norm1, h + x, batch))
        a, aux = self.attn(x, batch)  # global primal attention branch (Fig. 1(c))
        hs.append(self._norm(self.norm2, F.dropout(a, self.dropout, self.training) + x, batch))
        out = sum(hs)
        out = self._norm(self.norm3, out + self.mlp(out), batch)
        return (out, aux) if return_aux else out


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
        """Validate the input (the model's boundary: the only place values are checked) and embed it."""
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
    """The full model: embeddings, ``n_layers`` :class:`PrimphormerLayer` blocks (GPS with the primal
    attention, local MPNN ``mpnn``), a node or graph head.

    ``forward(x, edge_index, batch=None, edge_attr=None, pe=None) -> (pred, aux_list)``; train with
    ``task_loss + eta * ksvd_loss(aux_list)``. ``x`` may also be a PyG ``Data`` / ``Batch`` (its ``x``,
    ``edge_index``, ``batch``, ``edge_attr`` and ``pe``). The input is validated here, once.
    """

    def __init__(self, in_dim: int, hidden: int, n_layers: int, out_dim: int, task: str = "node", pe_dim: int = 0,
                 edge_dim: int = 0, mpnn: str = "gine", heads: int = 4, rank: int = 16, n_s: int | None = None,
                 dropout: float = 0.0):
        super().__init__(in_dim, hidden, n_layers, out_dim, task, pe_dim, edge_dim)
        self.mpnn = mpnn
        self.layers = nn.ModuleList(PrimphormerLayer(hidden, mpnn_conv(mpnn, hidden), heads, rank, n_s, dropout)
                                    for _ in range(n_layers))

    def forward(self, x, edge_index=None, batch=None, edge_attr=None, pe=None):
        x, edge_index, batch, edge_attr, pe = _unpack(x, edge_index, batch, edge_attr, pe)
        h, e, batch = self.embed(x, edge_index, batch, edge_attr, pe)
        conv_kwargs = {"edge_attr": e} if self.mpnn == "gine" else {}
        aux_list = []
        for layer in self.layers:
            h, aux = layer(h, edge_index, batch, return_aux=True, **conv_kwargs)
            aux_list.append(aux)
        return self.readout(h, batch), aux_list


class MPNNBlock(nn.Module):
    """The GPS block without its attention branch (MPNN-only baseline)."""

    def __init__(self, dim: int, dropout: float):
        super().__init__()
        self.conv = mpnn_conv("gine", dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.ReLU(), nn.Dropout(dropout), nn.Linear(2 * dim, dim),
                                 nn.Dropout(dropout))
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


def train_node_classifier(model: nn.Module, graphs: Sequence, cfg: PrimphormerConfig, *, seed: int = 0,
                          device: torch.device | str = "cpu",
                          on_epoch: Callable[[int], None] | None = None) -> float:
    """Train a node classifier (:class:`Primphormer` or :class:`GPSBaseline`) in place; the training recipe.

    Minimises ``cross_entropy(pred, y) + eta * sum_l J_l^2`` (Sec. 3; ``J`` of Eq. (2.5) by :func:`ksvd_loss`)
    with AdamW (``cfg.lr``, ``cfg.weight_decay``) and a cosine decay to 0 over ``cfg.epochs`` epochs of shuffled
    mini-batches of ``cfg.batch_size`` graphs. A model that returns no ``aux`` (the baselines), or ``cfg.eta = 0``,
    trains on the task loss alone.

    Args:
        model: returns ``(pred (N, C), aux_list)`` for a PyG batch's ``x, edge_index, batch, pe=...``.
        graphs: PyG ``Data`` objects with ``x``, ``edge_index``, ``y`` (N,) and ``pe``.
        cfg: the recipe (``epochs``, ``batch_size``, ``lr``, ``weight_decay``, ``eta``).
        seed: seeds the shuffling (the model's initialisation is the caller's).
        device: where the batches go (the model must already be there).
        on_epoch: called with the number of finished epochs after each epoch (progress).

    Returns:
        The KSVD regulariser ``sum_l J_l^2`` of the last batch that used it (0.0 when none did).
    """
    from torch_geometric.loader import DataLoader

    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    loader = DataLoader(graphs, batch_size=cfg.batch_size, shuffle=True, generator=torch.Generator().manual_seed(seed))
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=cfg.epochs * len(loader))
    ksvd_last = 0.0
    for epoch in range(cfg.epochs):
        model.train()
        for b in loader:
            b = b.to(device)
            pred, aux = model(b.x, b.edge_index, b.batch, pe=b.pe)
            loss = F.cross_entropy(pred, b.y)
            if aux and cfg.eta > 0:  # + eta sum_l J_l^2 (Sec. 3)
                reg = ksvd_loss(aux)
                loss = loss + cfg.eta * reg
                ksvd_last = float(reg.detach())
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        if on_epoch is not None:
            on_epoch(epoch + 1)
    return ksvd_last


@torch.no_grad()
def predict_nodes(model: nn.Module, graphs: Sequence, *, batch_size: int = 64,
                  device: torch.device | str = "cpu") -> tuple[Tensor, Tensor]:
    """``(predicted labels, true labels)`` of every node of ``graphs``, both ``(sum N,)`` CPU tensors, in eval mode."""
    from torch_geometric.loader import DataLoader

    model.eval()
    preds, ys = [], []
    for b in DataLoader(graphs, batch_size=batch_size):
        b = b.to(device)
        preds.append(model(b.x, b.edge_index, b.batch, pe=b.pe)[0].argmax(-1).cpu())
        ys.append(b.y.cpu())
    return torch.cat(preds), torch.cat(ys)

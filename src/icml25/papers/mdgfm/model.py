"""MDGFM: multi-domain graph pre-training with topology alignment, then prompt tuning.

Wang, Wang, Shen, Deng and Kang, "Multi-Domain Graph Foundation Models: Robust Knowledge Transfer
via Topology Alignment", ICML 2025 (arXiv 2502.02017). Official code: wbkzwqtzw/MDGFM (read for facts).

Order of the method (Sec. 4 of the paper, and MDGFM.py / preprompt.py / downprompt.py):

1. ``unify_features``: PCA of each domain's raw features to a common width (50).
2. Per source k: ``x~ = t_s * ReLU(t_k * x)`` (domain token t_k, shared token t_s; elementwise),
   balance token ``b_k`` on ``[x~ ; A^ x~]``; the ``GraphLearner`` turns that into a refined graph S_k.
3. Shared GCN encoder on both views, ``Z_ref = f(x~, S_k)`` and ``Z_orig = f(x~, A^_k)``;
   loss ``sum_k L(Z_ref, Z_orig, I) + L(Z_ref, Z_orig, S_k.detach())`` with ``L = info_nce_bound``.
4. Target: frozen tokens and encoder, prompts ``x' = ELU(c1 t_s * ReLU((w . T) * x) + c2 (u * x))``,
   new balance prompt + learner, adjacency ``0.5 A^ + 0.5 S``, cosine-prototype classifier.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.data import Data
from torch_geometric.nn import GCNConv
from torch_geometric.nn.conv.gcn_conv import gcn_norm
from torch_geometric.utils import to_undirected

from icml25.common.checks import check_fields

EPS = 1e-10


@dataclass(frozen=True)
class MDGFMConfig:
    """MDGFM's settings in an experiment: the model's width and learner depth, and its two training recipes,
    pre-training (:meth:`MDGFM.pretrain`, Sec. 4's topology-aligned multi-domain pre-training) and prompt tuning
    (:meth:`MDGFM.prompt_tune`, Sec. 4's downstream prompts).

    The learning rates and the pre-training epochs default to ``None``: the official value of the real data set
    the target stands in for (the official README's few-shot commands, ``data.OFFICIAL_TARGET_SETTINGS``);
    setting one overrides it for every target. The other constants (unify_dim 50, 3 GCN layers, dropout 0.1,
    tau 0.2, dropedge 0.5, weight decay 1e-4) are :class:`MDGFM`'s constructor defaults, the official ones.
    """

    hidden: int = 256
    """Encoder width, in [1, 10^4] (the paper: 256)."""
    pretrain_epochs: int | None = None
    """Full-batch pre-training epochs, in [1, 10^7]; None = the official value of the target's analogue (60 or
    100)."""
    pretrain_lr: float | None = None
    """Pre-training Adam learning rate, > 0; None = the official value of the target's analogue (1e-4 to 2e-2)."""
    prompt_steps: int = 400
    """Prompt-tuning Adam steps per task, in [0, 10^7] (the paper: 400)."""
    prompt_lr: float | None = None
    """Prompt-tuning learning rate, > 0; None = the official value of the target's analogue (3e-4 to 2e-2)."""
    k_homophilic: int = 30
    """Learner kNN size for homophilic graphs, in [1, 10^4] (the official 30)."""
    k_heterophilic: int = 15
    """Learner kNN size for heterophilic graphs, in [1, 10^4] (the official 15)."""
    learner_layers: int = 0
    """Attentive layers in the graph learners, in [0, 10^3] (0 = the official code, where they are never
    applied; see :class:`GraphLearner`)."""

    def __post_init__(self) -> None:
        # bounds: a job beyond these would need > ~100 GB or days
        check_fields(self, integer=("hidden", "pretrain_epochs", "prompt_steps", "k_homophilic", "k_heterophilic",
                                    "learner_layers"),
                     finite=("pretrain_lr", "prompt_lr"),
                     positive=("hidden", "pretrain_epochs", "pretrain_lr", "prompt_lr", "k_homophilic",
                               "k_heterophilic"),
                     nonnegative=("prompt_steps", "learner_layers"),
                     at_most={"hidden": 10**4, "pretrain_epochs": 10**7, "prompt_steps": 10**7,
                              "k_homophilic": 10**4, "k_heterophilic": 10**4, "learner_layers": 10**3})

    def k_of(self, homophilic: bool) -> int:
        """The learner's kNN size for a graph of that kind."""
        return self.k_homophilic if homophilic else self.k_heterophilic


# ----------------------------------------------------------------------------- input checks

def check_graph(x, edge_index, name: str = "graph", *, dtype: torch.dtype = torch.float32,
                device: torch.device | str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Validate ``x`` (N, d) and ``edge_index`` (2, E); return them as ``dtype`` / long tensors on ``device``.

    Raises:
        TypeError: ``x`` not numeric, or ``edge_index`` of a non-integer dtype.
        ValueError: an empty or non-2-D ``x``, NaN / inf, a malformed or out-of-range ``edge_index``.
    """
    if not isinstance(x, torch.Tensor):
        x = np.array(x)  # a writable copy (torch warns on read-only NumPy buffers)
        if x.dtype.kind not in "biuf":
            raise TypeError(f"{name}: x must be numeric, got dtype {x.dtype}")
    elif x.is_complex():
        raise TypeError(f"{name}: x must be real, got dtype {x.dtype}")
    x = torch.as_tensor(x, dtype=dtype)
    edge_index = torch.as_tensor(edge_index)
    if edge_index.numel() and (edge_index.is_floating_point() or edge_index.is_complex()
                               or edge_index.dtype == torch.bool):
        raise TypeError(f"{name}: edge_index must hold integer node ids, got dtype {edge_index.dtype}")
    edge_index = edge_index.long()
    if x.dim() != 2 or x.size(0) == 0 or x.size(1) == 0:
        raise ValueError(f"{name}: x must be a non-empty (N, d) matrix, got shape {tuple(x.shape)}")
    if not torch.isfinite(x).all():
        raise ValueError(f"{name}: x contains NaN or inf")
    if edge_index.dim() != 2 or edge_index.size(0) != 2:
        raise ValueError(f"{name}: edge_index must have shape (2, E), got {tuple(edge_index.shape)}")
    if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= x.size(0)):
        raise ValueError(f"{name}: edge_index has entries outside [0, {x.size(0)})")
    return x.to(device), edge_index.to(device)


def normalized_adjacency(edge_index: torch.Tensor, num_nodes: int,
                         dtype: torch.dtype | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``A^ = D^-1/2 (A + I) D^-1/2`` as (edge_index, edge_weight), the paper's normalised graph.

    The graph is treated as undirected, as the paper's data sets are: an edge given in one direction only is
    added in the other, and repeated edges count once (``to_undirected``), so a one-direction edge list and its
    symmetric version give the same ``A^`` (and the same predictions). The weights have ``dtype`` (float32 when
    None) and live on ``edge_index``'s device.
    """
    edge_index = to_undirected(edge_index, num_nodes=num_nodes)
    return gcn_norm(edge_index, None, num_nodes, add_self_loops=True, dtype=dtype)


def propagate(edge_index: torch.Tensor, edge_weight: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Sparse ``A x`` for ``A[dst, src] = edge_weight`` (PyG's source-to-target convention)."""
    out = torch.zeros_like(x)
    return out.index_add_(0, edge_index[1], edge_weight.unsqueeze(1) * x[edge_index[0]])


# ----------------------------------------------------------------------------- step 1: PCA

def unify_features(X, dim: int = 50, *, dtype: torch.dtype = torch.float32,
                   device: torch.device | str | None = None) -> torch.Tensor:
    """PCA of raw features to ``dim`` columns (``unify_dim = 50`` in the official code).

    The PCA is fitted on ``X`` itself: each graph is reduced on its own, as the paper does per dataset.

    Args:
        X: (N, d) raw features (NumPy array or tensor), N >= dim and d >= dim.
        dim: output width (>= 1).
        dtype, device: of the returned tensor (computed in float64 on the CPU).

    Returns:
        (N, dim) tensor of principal-component scores (centred).
    """
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
        raise ValueError(f"dim must be an int >= 1, got {dim!r}")
    x = np.asarray(X.detach().cpu().numpy() if isinstance(X, torch.Tensor) else X)
    if x.dtype.kind not in "biuf":
        raise TypeError(f"X must be numeric, got dtype {x.dtype}")
    x = x.astype(np.float64, copy=False)
    if x.ndim != 2:
        raise ValueError(f"X must be a 2-D (N, d) matrix, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError("X contains NaN or inf")
    if min(x.shape) < dim:
        raise ValueError(f"PCA to dim={dim} needs at least {dim} samples and {dim} features, got "
                         f"n_samples={x.shape[0]}, n_features={x.shape[1]}")
    xc = torch.as_tensor(x - x.mean(axis=0))
    u, s, vt = torch.linalg.svd(xc, full_matrices=False)   # same scores as sklearn's PCA, up to column signs
    flip = torch.sign(u[u.abs().argmax(dim=0), torch.arange(u.size(1))])  # deterministic column signs
    scores = u[:, :dim] * s[:dim] * flip[:dim]
    return torch.as_tensor(scores, dtype=dtype).to(device)


# ----------------------------------------------------------------------------- step 2: graph learner

class Attentive(nn.Module):
    """SUBLIME's attentive layer: a learnable per-dimension weight, ``h * w`` (w initialised to 1)."""

    def __init__(self, dim: int):
        super().__init__()
        if dim < 1:
            raise ValueError(f"dim must be >= 1, got {dim}")
        self.weight = nn.Parameter(torch.ones(dim))

    def reset_parameters(self) -> None:
        nn.init.ones_(self.weight)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """``h (..., dim) -> h * w``."""
        if not isinstance(h, torch.Tensor) or h.size(-1) != self.weight.numel():
            raise ValueError(f"Attentive expects (..., {self.weight.numel()}) input, got "
                             f"{tuple(getattr(h, 'shape', ()))}")
        return h * self.weight


class GraphLearner(nn.Module):
    """Refined graph from node embeddings: cosine kNN, degree-normalised, symmetrised, ReLU, edge dropout.

    ``S_ij = ReLU(cos(h_i, h_j) / sqrt(n_i n_j))`` for ``j`` among the ``k + 1`` nearest neighbours of
    ``i`` (itself included) or ``i`` among those of ``j``; ``n_i`` = sum of node i's top-(k+1) cosines
    plus the cosines of the rows that selected i (the official ``knn_fast`` normalisation). Then
    entrywise dropout ``dropedge`` in training mode. Before dropout S is symmetric and non-negative, with
    at most ``N (2k + 1)`` non-zeros (a row: its own k+1 picks plus the rows that picked it).

    Returned as a PyG edge list; ``dense`` gives the (N, N) matrix. ``n_layers`` attentive layers
    (ReLU between) map the input first. The official code builds two
    but never calls them (``graph_process`` runs on its input directly): ``n_layers=0`` reproduces that.
    """

    def __init__(self, dim: int, n_layers: int = 2, k: int = 30, dropedge: float = 0.5):
        super().__init__()
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        if not 0.0 <= dropedge < 1.0:
            raise ValueError(f"dropedge must lie in [0, 1), got {dropedge}")
        if dim < 1 or n_layers < 0:
            raise ValueError(f"need dim >= 1 and n_layers >= 0, got {dim}, {n_layers}")
        self.dim, self.k, self.dropedge = dim, k, dropedge
        self.layers = nn.ModuleList(Attentive(dim) for _ in range(n_layers))

    def reset_parameters(self) -> None:
        for layer in self.layers:
            layer.reset_parameters()

    def embed(self, h: torch.Tensor) -> torch.Tensor:
        for i, layer in enumerate(self.layers):
            h = layer(h)
            if i < len(self.layers) - 1:
                h = F.relu(h)
        return h

    def forward(self, h: torch.Tensor, k: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Refined graph of the rows of ``h`` (N, dim) as ``(edge_index (2, E), edge_weight (E,))``.

        The neighbour search runs without gradient; the weights are differentiable in ``h``.
        """
        if not isinstance(h, torch.Tensor) or h.dim() != 2 or h.size(1) != self.dim:
            raise ValueError(f"GraphLearner expects (N, {self.dim}) input, got {tuple(getattr(h, 'shape', ()))}")
        if h.size(0) == 0:
            raise ValueError("GraphLearner needs at least one node")
        k = self.k if k is None else k
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        n = h.size(0)
        z = F.normalize(self.embed(h), dim=1)
        sim = z @ z.t()                                                   # cosine similarities
        inds = sim.detach().topk(min(k + 1, n), dim=1).indices            # (N, k+1), self included
        vals = sim.gather(1, inds)
        norm = vals.sum(1) + vals.new_zeros(n).index_add(0, inds.reshape(-1), vals.reshape(-1))  # row + column sums
        # union of i->j and j->i, each undirected pair once (the value is symmetric in i, j)
        with torch.no_grad():
            mask = torch.zeros(n, n, dtype=torch.bool, device=h.device).scatter_(1, inds, True)
            r, c = (mask | mask.t()).nonzero().t()
        w = sim[r, c] * norm[r].pow(-0.5) * norm[c].pow(-0.5)
        w = F.relu(torch.nan_to_num(w, nan=0.0))  # negative norms give NaN, zeroed as in the official code
        w = F.dropout(w, p=self.dropedge, training=self.training)
        return torch.stack([c, r]), w  # PyG order: (source, target); S is symmetric anyway

    def dense(self, h: torch.Tensor, k: int | None = None) -> torch.Tensor:
        """The refined graph as a dense (N, N) matrix ``S[i, j]``."""
        ei, w = self(h, k)
        return w.new_zeros(h.size(0), h.size(0)).index_put((ei[1], ei[0]), w, accumulate=True)


# ----------------------------------------------------------------------------- step 3: encoder + loss

class GCNEncoder(nn.Module):
    """The shared encoder: ``n_layers`` GCN layers ``PReLU(A (h W) + b)`` with residuals after the first.

    ``pretext=True`` is the pre-training path of the official code (BatchNorm and dropout after each
    layer, ELU at the end); ``pretext=False`` is the plain stack used downstream.
    Takes ``x, edge_index, edge_weight`` (weights already normalised: GCNConv(normalize=False); no
    weights means weight 1 on every given edge), or a PyG ``Data`` with ``x``, ``edge_index`` and
    optionally ``edge_weight``. Graphs in a batch are disjoint blocks of the edge list, so ``batch``
    is accepted and needs no special treatment.
    """

    def __init__(self, in_dim: int, hidden: int = 256, n_layers: int = 3, dropout: float = 0.1):
        super().__init__()
        if in_dim < 1 or hidden < 1 or n_layers < 1:
            raise ValueError(f"in_dim, hidden and n_layers must be >= 1, got {in_dim}, {hidden}, {n_layers}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must lie in [0, 1), got {dropout}")
        self.in_dim = in_dim
        self.convs = nn.ModuleList(GCNConv(in_dim if i == 0 else hidden, hidden, normalize=False)
                                   for i in range(n_layers))
        self.acts = nn.ModuleList(nn.PReLU() for _ in range(n_layers))
        self.norms = nn.ModuleList(nn.BatchNorm1d(hidden) for _ in range(n_layers))
        self.dropout = dropout

    def forward(self, x, edge_index=None, edge_weight=None, pretext: bool = False, batch=None) -> torch.Tensor:
        """Node embeddings ``(N, hidden)``."""
        if isinstance(x, Data):
            edge_index, edge_weight = x.edge_index, getattr(x, "edge_weight", None)
            x = x.x
        if not isinstance(x, torch.Tensor) or not x.is_floating_point():
            raise TypeError(f"GCNEncoder expects a floating tensor x, got {type(x).__name__}")
        if x.dim() != 2 or x.size(1) != self.in_dim:
            raise ValueError(f"GCNEncoder expects (N, {self.in_dim}) features, got {tuple(x.shape)}")
        if edge_index is None or edge_index.dim() != 2 or edge_index.size(0) != 2:
            raise ValueError("GCNEncoder expects an edge_index of shape (2, E)")
        if edge_weight is not None and edge_weight.shape != (edge_index.size(1),):
            raise ValueError(f"edge_weight must have shape ({edge_index.size(1)},), got {tuple(edge_weight.shape)}")
        h = x
        for i, (conv, act) in enumerate(zip(self.convs, self.acts)):
            out = act(conv(h, edge_index, edge_weight))
            h = out + h if i > 0 else out
            if pretext:
                h = F.dropout(self.norms[i](h), p=self.dropout, training=self.training)
        return F.elu(h) if pretext else h


def info_nce_bound(z1: torch.Tensor, z2: torch.Tensor, pos: torch.Tensor, tau: float = 0.2) -> torch.Tensor:
    """Symmetric InfoNCE with weighted positives (the official ``calc_lower_bound``).

    ``M_ij = exp(cos(z1_i, z2_j) / tau)``; ``L1 = -mean_i log sum_j pos_ij M_ij / sum_j M_ij`` and
    ``L2`` the same on ``M^T``; returns ``(L1 + L2) / 2``. Special cases: identical orthonormal rows
    with ``pos = I`` give ~0 as ``tau -> 0``; constant embeddings with ``pos = I`` give ``log N``.

    Args:
        z1, z2: (N, D) embeddings of the same N nodes.
        pos: (N, N) non-negative positive weights (identity, or a detached refined adjacency).
        tau: temperature (> 0).
    """
    if z1.shape != z2.shape or z1.dim() != 2:
        raise ValueError(f"z1 and z2 must be (N, D) of the same shape, got {tuple(z1.shape)}, {tuple(z2.shape)}")
    if pos.shape != (z1.size(0), z1.size(0)):
        raise ValueError(f"pos must be ({z1.size(0)}, {z1.size(0)}), got {tuple(pos.shape)}")
    if not tau > 0:
        raise ValueError(f"tau must be > 0, got {tau}")
    return _info_nce_sum(z1, z2, [pos], tau)


def _info_nce_sum(z1, z2, positives: list[torch.Tensor], tau: float) -> torch.Tensor:
    """Sum of ``info_nce_bound(z1, z2, pos, tau)`` over ``positives``, sharing the similarity matrix."""
    n1, n2 = z1.norm(dim=1, keepdim=True), z2.norm(dim=1, keepdim=True)
    m = torch.exp((z1 @ z2.t()) / (n1 @ n2.t() + EPS) / tau)
    rows = m / (m.sum(dim=1, keepdim=True) + EPS)
    cols = m.t() / (m.t().sum(dim=1, keepdim=True) + EPS)
    total = 0.0
    for pos in positives:
        l1 = -torch.log(torch.clamp((rows * pos).sum(dim=1), min=1e-10)).mean()
        l2 = -torch.log(torch.clamp((cols * pos).sum(dim=1), min=1e-10)).mean()
        total = total + (l1 + l2) / 2
    return total


# ----------------------------------------------------------------------------- step 4: prompts

def xavier_row(dim: int) -> nn.Parameter:
    w = torch.empty(1, dim)
    nn.init.xavier_uniform_(w)
    return nn.Parameter(w.squeeze(0))


class TargetPrompt(nn.Module):
    """Downstream prompts: token mixture ``w``, target token ``u``, combination ``c``, balance ``b``, learner.

    ``forward(x, domain_tokens, shared_token)`` is the prompted feature map
    ``x' = ELU(c1 t_s * ReLU((w . [t_1..t_K]) * x) + c2 (u * x))`` on ``x (N, dim)``,
    ``domain_tokens (K, dim)``, ``shared_token (dim,)``. ``balance`` and ``learner`` build the
    target's refined graph inside :class:`MDGFM`.
    """

    def __init__(self, n_sources: int, dim: int, k: int, learner_layers: int, dropedge: float):
        super().__init__()
        if n_sources < 0 or dim < 1:
            raise ValueError(f"need n_sources >= 0 and dim >= 1, got {n_sources}, {dim}")
        self.n_sources, self.dim = n_sources, dim
        self.mix = nn.Parameter(torch.empty(n_sources))
        self.target_token = nn.Parameter(torch.empty(dim))
        self.combine = nn.Parameter(torch.empty(2))
        self.balance = nn.Parameter(torch.empty(2 * dim))
        self.learner = GraphLearner(2 * dim, n_layers=learner_layers, k=k, dropedge=dropedge)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Fresh prompts: each vector drawn as a Xavier-uniform (1, n) row (official code), learner weights 1."""
        for p in (self.mix, self.target_token, self.combine, self.balance):
            nn.init.xavier_uniform_(p.data.view(1, -1))
        self.learner.reset_parameters()

    def features(self, x, domain_tokens, shared_token) -> torch.Tensor:
        # x' = ELU(c1 * t_s * ReLU((w . [t_1..t_K]) * x) + c2 * (u * x))
        composed = shared_token * F.relu((self.mix @ domain_tokens) * x)
        return F.elu(self.combine[0] * composed + self.combine[1] * (self.target_token * x))

    def forward(self, x: torch.Tensor, domain_tokens: torch.Tensor, shared_token: torch.Tensor) -> torch.Tensor:
        """The prompted features ``x' (N, dim)``."""
        if not isinstance(x, torch.Tensor) or x.dim() != 2 or x.size(1) != self.dim:
            raise ValueError(f"TargetPrompt expects x of shape (N, {self.dim}), got {tuple(getattr(x, 'shape', ()))}")
        if domain_tokens.shape != (self.n_sources, self.dim) or shared_token.shape != (self.dim,):
            raise ValueError(f"domain_tokens must be ({self.n_sources}, {self.dim}) and shared_token ({self.dim},), "
                             f"got {tuple(domain_tokens.shape)} and {tuple(shared_token.shape)}")
        return self.features(x, domain_tokens, shared_token)


def xavier_rows(n_rows: int, dim: int) -> nn.Parameter:
    """``n_rows`` tokens, each drawn as a Xavier-uniform (1, dim) row (the official initialisation)."""
    rows = [xavier_row(dim).data for _ in range(n_rows)]
    return nn.Parameter(torch.stack(rows) if rows else torch.empty(0, dim))


def untouched_rng_prompt(n_sources: int, dim: int, k: int, learner_layers: int, dropedge: float) -> TargetPrompt:
    """A :class:`TargetPrompt` built without advancing the global RNG.

    Every ``prompt_tune`` call redraws the prompts (``reset_parameters``); building them at
    construction must not shift the random numbers that pre-training draws after it.
    """
    with torch.random.fork_rng(devices=[]):
        return TargetPrompt(n_sources, dim, k, learner_layers, dropedge)



def source_pair(source, j: int) -> tuple:
    """``(x, edge_index)`` of one source graph given as a PyG ``Data`` or as a pair; a clear error otherwise."""
    if isinstance(source, Data):
        if source.x is None or source.edge_index is None:
            raise ValueError(f"source {j}: a Data source needs both x and edge_index")
        return source.x, source.edge_index
    if isinstance(source, (tuple, list)) and len(source) == 2:
        return source[0], source[1]
    raise TypeError(f"source {j}: expected a torch_geometric Data or an (X, edge_index) pair, got "
                    f"{type(source).__name__}" + (f" of length {len(source)}" if isinstance(source, (tuple, list))
                                                  else ""))


def unified_graph_input(x: torch.Tensor | Data, edge_index: torch.Tensor | None, unify_dim: int,
                        who: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``(x, edge_index)`` of a forward call given a tensor pair or a PyG ``Data``; ``x`` must be ``(N, unify_dim)``."""
    if isinstance(x, Data):
        x, edge_index = x.x, x.edge_index
    if not isinstance(x, torch.Tensor) or x.dim() != 2 or x.size(1) != unify_dim:
        raise ValueError(f"{who} expects unified features of shape (N, {unify_dim}), got "
                         f"{tuple(getattr(x, 'shape', ()))}")
    if edge_index is None:
        raise ValueError("edge_index is required (or pass a torch_geometric Data)")
    return x, edge_index

class MDGFM(nn.Module):
    """Multi-domain graph foundation model: pre-train on source graphs, prompt-tune on a new one.

    Args:
        unify_dim: PCA width shared by all domains (50).
        hidden: encoder width (256).
        n_layers: GCN layers (3).
        dropout: encoder dropout in pre-training (0.1).
        tau: InfoNCE temperature (0.2).
        dropedge: learner edge dropout (0.5).
        learner_layers: attentive layers in the learners (0 = official code's behaviour, see GraphLearner).
        refine_downstream: use the learned graph downstream (``False`` = ablation: ``A^`` only).
        weight_decay: Adam weight decay in pre-training (1e-4).
        n_sources: number of source domains K. Give it, and every parameter (domain and balance
            tokens, target prompts) exists at construction, so a saved ``state_dict`` loads into a
            fresh ``MDGFM(..., n_sources=K)``. Left ``None`` (the older call form), the tokens are
            empty until :meth:`pretrain` sizes them from its sources.

    ``forward(x, edge_index)`` (or ``forward(data)``) embeds the nodes of a target graph whose
    features are already unified (``(N, unify_dim)``, e.g. by :func:`unify_features`) through the
    target prompts, the prompt's refined graph and the frozen encoder: ``(N, hidden)``.
    """

    def __init__(self, unify_dim: int = 50, hidden: int = 256, n_layers: int = 3, dropout: float = 0.1,
                 tau: float = 0.2, dropedge: float = 0.5, learner_layers: int = 0,
                 refine_downstream: bool = True, weight_decay: float = 1e-4, n_sources: int | None = None):
        super().__init__()
        if unify_dim < 1:
            raise ValueError(f"unify_dim must be >= 1, got {unify_dim}")
        if not tau > 0:
            raise ValueError(f"tau must be > 0, got {tau}")
        if n_sources is not None and n_sources < 1:
            raise ValueError(f"n_sources must be >= 1 (or None), got {n_sources}")
        self.unify_dim, self.tau, self.dropedge = unify_dim, tau, dropedge
        self.learner_layers, self.refine_downstream, self.weight_decay = learner_layers, refine_downstream, weight_decay
        self.encoder = GCNEncoder(unify_dim, hidden, n_layers, dropout)
        self.shared_token = xavier_row(unify_dim)
        self.learner = GraphLearner(2 * unify_dim, n_layers=learner_layers, k=30, dropedge=dropedge)
        self.register_buffer("is_pretrained", torch.tensor(False))
        self.n_sources = n_sources
        self._init_tokens(n_sources or 0)

    def _init_tokens(self, n_sources: int) -> None:
        # the same draws, in the same order, as the official code: all domain tokens, then all balance tokens
        self.domain_tokens = xavier_rows(n_sources, self.unify_dim)
        self.balance_tokens = xavier_rows(n_sources, 2 * self.unify_dim)
        self.prompt_ = untouched_rng_prompt(n_sources, self.unify_dim, 30, self.learner_layers, self.dropedge)
        self.to(self.shared_token.device, self.shared_token.dtype)

    # -- pre-training ------------------------------------------------------------------------
    def _source_loss(self, j: int, x, adj, k: int) -> torch.Tensor:
        xt = self.shared_token * F.relu(self.domain_tokens[j] * x)            # x~ = t_s * ReLU(t_k * x)
        balanced = self.balance_tokens[j] * torch.cat([xt, propagate(*adj, xt)], dim=1)  # b_k * [x~; A^ x~]
        s_ei, s_w = self.learner(balanced, k)                                  # refined graph S_k
        z_ref = self.encoder(xt, s_ei, s_w, pretext=True)
        z_orig = self.encoder(xt, adj[0], adj[1], pretext=True)
        n = x.size(0)
        s_dense = s_w.new_zeros(n, n).index_put((s_ei[1], s_ei[0]), s_w.detach(), accumulate=True)
        # L(Z_ref, Z_orig, I) + L(Z_ref, Z_orig, S_k.detach())
        return _info_nce_sum(z_ref, z_orig, [torch.eye(n, dtype=x.dtype, device=x.device), s_dense], self.tau)

    def pretrain(self, sources: Sequence[tuple], epochs: int = 60, lr: float = 1e-2,
                 k: Sequence[int] | None = None) -> "MDGFM":
        """Pre-train tokens, learner and encoder on the source graphs only; keep the lowest-loss epoch.

        Args:
            sources: list of source graphs, each a PyG ``Data`` (``x``, ``edge_index``) or an ``(X, edge_index)``
                pair, with raw features of any width (>= unify_dim).
            epochs: full-batch epochs. lr: Adam learning rate (weight decay ``self.weight_decay``).
            k: kNN size per source (paper: 30 homophilic, 15 heterophilic); default 30 for all.
        """
        if len(sources) == 0:
            raise ValueError("pretrain needs at least one source graph")
        k = [30] * len(sources) if k is None else list(k)
        if len(k) != len(sources):
            raise ValueError(f"k must give one value per source ({len(sources)}), got {len(k)}")
        if epochs < 1:
            raise ValueError(f"epochs must be >= 1, got {epochs}")
        if not lr > 0:
            raise ValueError(f"lr must be > 0, got {lr}")
        if any(int(kj) < 1 for kj in k):
            raise ValueError(f"every k must be >= 1, got {k}")
        if self.n_sources is not None and len(sources) != self.n_sources:
            raise ValueError(f"this model was built for n_sources={self.n_sources}, got {len(sources)} sources")
        device, dtype = self.shared_token.device, self.shared_token.dtype
        graphs = []
        for j, source in enumerate(sources):
            x, ei = check_graph(*source_pair(source, j), f"source {j}", dtype=dtype, device=device)
            graphs.append((unify_features(x, self.unify_dim, dtype=dtype, device=device),
                           normalized_adjacency(ei, x.size(0), dtype=dtype)))
        if self.n_sources is None:  # the older call form: size the tokens now
            self.n_sources = len(sources)
            self._init_tokens(len(sources))
        opt = torch.optim.Adam(self.parameters(), lr=lr, weight_decay=self.weight_decay)
        best, best_state = float("inf"), None
        self.train()
        self.history_ = []
        for _ in range(epochs):
            opt.zero_grad()
            loss = sum(self._source_loss(j, x, adj, kj) for j, ((x, adj), kj) in enumerate(zip(graphs, k)))
            loss.backward()
            opt.step()
            self.history_.append(loss.item())
            if loss.item() < best:  # the official code keeps the lowest-loss checkpoint
                best, best_state = loss.item(), copy.deepcopy(self.state_dict())
        self.load_state_dict(best_state)
        self.is_pretrained.fill_(True)
        self.eval()
        return self

    # -- prompt tuning -----------------------------------------------------------------------
    def frozen_parameters(self) -> dict[str, torch.Tensor]:
        """The pre-trained parameters (encoder, tokens, source learner) that prompt tuning must not touch."""
        return {n: p for n, p in self.named_parameters() if not n.startswith("prompt_.")}

    def _target_embeddings(self, x, adj) -> torch.Tensor:
        p = self.prompt_
        xp = p.features(x, self.domain_tokens.detach(), self.shared_token.detach())
        if not self.refine_downstream:
            return self.encoder(xp, adj[0], adj[1])
        balanced = p.balance * torch.cat([xp, propagate(*adj, xp)], dim=1)
        s_ei, s_w = p.learner(balanced)
        ei = torch.cat([adj[0], s_ei], dim=1)              # 0.5 A^ + 0.5 S (alpha fixed, as in the code)
        w = torch.cat([0.5 * adj[1], 0.5 * s_w])
        return self.encoder(xp, ei, w)

    def _prepare_target(self, X, A):
        device, dtype = self.shared_token.device, self.shared_token.dtype
        x, ei = check_graph(X, A, "target", dtype=dtype, device=device)
        return (unify_features(x, self.unify_dim, dtype=dtype, device=device),
                normalized_adjacency(ei, x.size(0), dtype=dtype))

    def forward(self, x: torch.Tensor | Data, edge_index: torch.Tensor | None = None) -> torch.Tensor:
        """Prompted target embeddings ``(N, hidden)`` of unified features ``x (N, unify_dim)``."""
        x, edge_index = unified_graph_input(x, edge_index, self.unify_dim, "MDGFM")
        return self._target_embeddings(x, normalized_adjacency(edge_index, x.size(0), dtype=x.dtype))

    def prompt_tune(self, X, A, support_idx, support_y, steps: int = 400, lr: float = 1e-3,
                    k_down: int = 30) -> "MDGFM":
        """Fit the target prompts on a few labelled nodes; the pre-trained model stays frozen.

        Args:
            X: (N, d) raw target features; A: (2, E) target edge_index.
            support_idx: (S,) node indices; support_y: (S,) labels 0..C-1, every class present.
            steps: Adam steps (400). lr: prompt learning rate. k_down: learner kNN size (30 / 15).
        """
        if not bool(self.is_pretrained):
            raise ValueError("call pretrain before prompt_tune")
        if steps < 0 or not lr > 0 or k_down < 1:
            raise ValueError(f"need steps >= 0, lr > 0 and k_down >= 1, got {steps}, {lr}, {k_down}")
        x, adj = self._prepare_target(X, A)
        idx, y = check_support(support_idx, support_y, x.size(0), x.device)
        for p in self.frozen_parameters().values():
            p.requires_grad_(False)
        self.prompt_.reset_parameters()  # new prompts for every task
        self.prompt_.learner.k = k_down
        opt = torch.optim.Adam(self.prompt_.parameters(), lr=lr)
        self.encoder.eval()
        self.prompt_.train()
        n_classes = int(y.max()) + 1
        for _ in range(steps):
            opt.zero_grad()
            emb = self._target_embeddings(x, adj)[idx]
            probs = F.softmax(cosine_to_prototypes(emb, emb, y, n_classes), dim=1)
            loss = F.cross_entropy(probs, y)  # CE on softmax(cos), as the official code does
            loss.backward()
            opt.step()
        self.prompt_.eval()
        self.support_ = (idx, y, n_classes)
        return self

    @torch.no_grad()
    def predict(self, X, A) -> torch.Tensor:
        """Labels ``(N,)`` (a CPU tensor) of all target nodes: nearest class prototype (mean support embedding)."""
        if getattr(self, "support_", None) is None:
            raise ValueError("call prompt_tune before predict")
        x, adj = self._prepare_target(X, A)
        idx, y, n_classes = self.support_
        if int(idx.max()) >= x.size(0):
            raise ValueError("predict must get the graph that prompt_tune was fitted on")
        emb = self._target_embeddings(x, adj)
        return cosine_to_prototypes(emb, emb[idx], y, n_classes).argmax(dim=1).cpu()


def _integer_ids(values, name: str) -> torch.Tensor:
    t = torch.as_tensor(np.asarray(values) if not isinstance(values, torch.Tensor) else values).reshape(-1)
    if t.numel() and (t.is_floating_point() or t.is_complex() or t.dtype == torch.bool):
        raise TypeError(f"{name} must hold integers, got dtype {t.dtype}")
    return t.long()


def check_support(support_idx, support_y, n: int, device=None) -> tuple[torch.Tensor, torch.Tensor]:
    idx = _integer_ids(support_idx, "support_idx")
    y = _integer_ids(support_y, "support_y")
    if idx.numel() == 0 or idx.numel() != y.numel():
        raise ValueError(f"support_idx and support_y must be non-empty and of equal length, got {idx.numel()}, "
                         f"{y.numel()}")
    if int(idx.min()) < 0 or int(idx.max()) >= n:
        raise ValueError(f"support_idx has entries outside [0, {n})")
    if int(y.min()) < 0 or set(y.tolist()) != set(range(int(y.max()) + 1)):
        raise ValueError("support_y must use labels 0..C-1 with every class present")
    return idx.to(device), y.to(device)


def class_prototypes(support_emb: torch.Tensor, y: torch.Tensor, n_classes: int) -> torch.Tensor:
    """(C, D) mean embedding of each class's support rows."""
    protos = support_emb.new_zeros(n_classes, support_emb.size(1)).index_add_(0, y, support_emb)
    return protos / torch.bincount(y, minlength=n_classes).clamp(min=1).unsqueeze(1)


def cosine_to_prototypes(emb: torch.Tensor, support_emb: torch.Tensor, y: torch.Tensor, n_classes: int):
    """(N, C) cosine similarity of each row of ``emb`` to the class means of ``support_emb``."""
    return F.normalize(emb, dim=1) @ F.normalize(class_prototypes(support_emb, y, n_classes), dim=1).t()

"""Baselines run in the same experiment as MDGFM.

* :class:`GCNProto` / :class:`MLPProto`: no pre-training; a 2-layer GCN (or MLP) on the target's PCA
  features trained on the support set only, classifying by cosine to class prototypes. Both are
  scikit-learn classifiers (``fit`` / ``predict`` on NumPy arrays) holding a small torch network.
* :class:`PretrainNoRefine`: the MDGPT-like ablation of MDGFM: the same domain/shared tokens and GCN
  encoder, pre-trained without the graph learner and balance tokens (so no refined view exists and
  the pretext is MDGPT's link-contrast: a neighbour against random non-neighbours); downstream the same
  feature prompt and prototype classifier on ``A^`` only.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data
from torch import nn
from torch_geometric.data import Data
from torch_geometric.nn import GCNConv

from icml25.papers.mdgfm.model import (
    GCNEncoder,
    check_graph,
    check_support,
    class_prototypes,
    cosine_to_prototypes,
    normalized_adjacency,
    source_pair,
    unified_graph_input,
    unify_features,
    untouched_rng_prompt,
    xavier_row,
    xavier_rows,
)

__all__ = ["GCNProto", "MLPProto", "PretrainNoRefine"]


def _seeded(random_state: int | None, device: torch.device):
    """Run under ``torch.manual_seed(random_state)`` without touching the caller's RNG; None: the global RNG."""
    if random_state is None:
        return contextlib.nullcontext()
    devices = [device.index or 0] if device.type == "cuda" else []

    @contextlib.contextmanager
    def seeded():
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(int(random_state))
            yield
    return seeded()


class _GCNNet(nn.Module):
    """2-layer GCN on a normalised graph: ``conv2(dropout(ReLU(conv1(x))))``."""

    def __init__(self, in_dim: int, hidden: int, dropout: float):
        super().__init__()
        self.conv1 = GCNConv(in_dim, hidden, normalize=False)  # A^ is normalised once per call
        self.conv2 = GCNConv(hidden, hidden, normalize=False)
        self.dropout = dropout

    def forward(self, x, edge_index, edge_weight) -> torch.Tensor:
        h = F.dropout(F.relu(self.conv1(x, edge_index, edge_weight)), p=self.dropout, training=self.training)
        return self.conv2(h, edge_index, edge_weight)


class _MLPNet(nn.Module):
    """2-layer MLP; the graph arguments are ignored."""

    def __init__(self, in_dim: int, hidden: int, dropout: float):
        super().__init__()
        self.lin1 = nn.Linear(in_dim, hidden)
        self.lin2 = nn.Linear(hidden, hidden)
        self.dropout = dropout

    def forward(self, x, edge_index=None, edge_weight=None) -> torch.Tensor:
        return self.lin2(F.dropout(F.relu(self.lin1(x)), p=self.dropout, training=self.training))


class _ProtoNet(ClassifierMixin, BaseEstimator):
    """Supervised few-shot baseline: a network trained on the support set with a cosine-prototype head.

    Two call forms of :meth:`fit`:

    * graph form (few-shot, transductive): ``fit(X, A, support_idx, support_y)`` with ``X (N, d)``
      raw features of every node, ``A (2, E)`` its edge_index, and the labelled support nodes
      (labels ``0..C-1``, every class present);
    * scikit-learn form: ``fit(X, y, edge_index=None)``: every row of ``X (N, d)`` is a labelled node
      (any hashable labels), ``edge_index`` an optional ``(2, E)`` graph over the rows (none: each
      node sees only itself).

    Features are reduced by PCA to ``unify_dim`` columns on each graph given (``fit`` and
    ``predict`` alike: the paper reduces each dataset on its own), so ``predict`` needs at least
    ``unify_dim`` rows. After training, the class prototypes (mean support embedding in eval mode)
    are kept in ``prototypes_``; ``predict`` returns the label of the nearest prototype by cosine.

    Args:
        unify_dim: PCA width. hidden: network width. dropout: dropout after the first layer.
        temperature: softmax temperature of the cosine logits. steps, lr, weight_decay: Adam
            training. random_state: seed of the weights and dropout (None: the global torch RNG).
        device: where the network runs (``cpu`` / ``cuda``).
    """

    def __init__(self, unify_dim: int = 50, hidden: int = 64, dropout: float = 0.5, temperature: float = 0.1,
                 steps: int = 100, lr: float = 1e-2, weight_decay: float = 5e-4, random_state: int | None = None,
                 device: str = "cpu"):
        self.unify_dim, self.hidden, self.dropout, self.temperature = unify_dim, hidden, dropout, temperature
        self.steps, self.lr, self.weight_decay = steps, lr, weight_decay
        self.random_state, self.device = random_state, device

    def _network(self) -> nn.Module:
        raise NotImplementedError

    def _check_params(self, steps, lr, weight_decay) -> None:
        if isinstance(self.unify_dim, bool) or not isinstance(self.unify_dim, (int, np.integer)) or self.unify_dim < 1:
            raise ValueError(f"unify_dim must be an int >= 1, got {self.unify_dim!r}")
        if not (isinstance(self.hidden, (int, np.integer)) and self.hidden >= 1):
            raise ValueError(f"hidden must be an int >= 1, got {self.hidden!r}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must lie in [0, 1), got {self.dropout!r}")
        if not self.temperature > 0:
            raise ValueError(f"temperature must be > 0, got {self.temperature!r}")
        if not (isinstance(steps, (int, np.integer)) and steps >= 0):
            raise ValueError(f"steps must be an int >= 0, got {steps!r}")
        if not lr > 0 or not weight_decay >= 0:
            raise ValueError(f"need lr > 0 and weight_decay >= 0, got {lr!r}, {weight_decay!r}")

    def _graph(self, x: torch.Tensor, edge_index) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """PCA features and ``A^`` of one graph, on the estimator's device."""
        device = torch.device(self.device)
        return (unify_features(x, self.unify_dim, device=device),
                normalized_adjacency(edge_index.to(device), x.size(0)))

    def fit(self, X, y, support_idx=None, support_y=None, *, edge_index=None, steps: int | None = None,
            lr: float | None = None, weight_decay: float | None = None) -> "_ProtoNet":
        """Train on the support set (graph form) or on every row (scikit-learn form); returns ``self``.

        ``steps``, ``lr`` and ``weight_decay`` override the constructor's values for this fit.
        """
        steps = self.steps if steps is None else steps
        lr = self.lr if lr is None else lr
        weight_decay = self.weight_decay if weight_decay is None else weight_decay
        self._check_params(steps, lr, weight_decay)
        device = torch.device(self.device)
        if support_idx is not None or support_y is not None:  # graph form: y is the edge_index
            if support_idx is None or support_y is None:
                raise ValueError("the graph form needs both support_idx and support_y")
            if edge_index is not None:
                raise ValueError("the graph form takes the edge_index as its second argument, not edge_index=")
            X = validate_data(self, X, dtype=[np.float64, np.float32])
            x, ei = check_graph(X, y, "target")
            idx, labels = check_support(support_idx, support_y, x.size(0))
            self.classes_ = np.arange(int(labels.max()) + 1)
        else:
            X, y = validate_data(self, X, y, dtype=[np.float64, np.float32])
            check_classification_targets(y)
            self.classes_, encoded = np.unique(y, return_inverse=True)
            x, ei = check_graph(X, _edges(edge_index), "X")
            idx, labels = torch.arange(x.size(0)), torch.as_tensor(encoded, dtype=torch.long)
        idx, labels = idx.to(device), labels.to(device)
        n_classes = len(self.classes_)
        with _seeded(self.random_state, device):
            x, graph = self._graph(x, ei)
            net = self._network().to(device)
            opt = torch.optim.Adam(net.parameters(), lr=lr, weight_decay=weight_decay)
            net.train()
            for _ in range(steps):
                opt.zero_grad()
                emb = net(x, *graph)[idx]
                logits = cosine_to_prototypes(emb, emb, labels, n_classes) / self.temperature
                F.cross_entropy(logits, labels).backward()
                opt.step()
        net.eval()
        with torch.no_grad():
            self.prototypes_ = class_prototypes(net(x, *graph)[idx], labels, n_classes)
        self.module_ = net
        self.support_ = (idx, labels, n_classes)
        return self

    @torch.no_grad()
    def predict(self, X, A=None) -> np.ndarray:
        """Labels ``(N,)`` (NumPy, from ``classes_``) of every row of ``X``; ``A``: the graph's edge_index."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        x, graph = self._graph(*check_graph(X, _edges(A), "X"))
        emb = self.module_(x, *graph)
        scores = F.normalize(emb, dim=1) @ F.normalize(self.prototypes_, dim=1).t()
        return self.classes_[scores.argmax(dim=1).cpu().numpy()]


def _edges(edge_index) -> torch.Tensor:
    """``edge_index`` as given, or an empty ``(2, 0)`` edge list."""
    return torch.zeros(2, 0, dtype=torch.long) if edge_index is None else edge_index


class GCNProto(_ProtoNet):
    """2-layer GCN (PyG ``GCNConv``, ReLU, dropout) + cosine prototypes, trained on the support set."""

    def _network(self) -> nn.Module:
        return _GCNNet(self.unify_dim, self.hidden, self.dropout)


class MLPProto(_ProtoNet):
    """2-layer MLP (the graph is ignored) + cosine prototypes, trained on the support set."""

    def _network(self) -> nn.Module:
        return _MLPNet(self.unify_dim, self.hidden, self.dropout)


class PretrainNoRefine(nn.Module):
    """MDGFM without graph learner and balance tokens (MDGPT-like tokens + link-contrast pre-training).

    ``n_sources`` as in :class:`~icml25.papers.mdgfm.model.MDGFM`: given, every parameter exists at
    construction. ``forward(x, edge_index)`` (or ``forward(data)``) embeds a target graph with
    unified features ``(N, unify_dim)`` through the feature prompt and the frozen encoder on ``A^``.
    """

    def __init__(self, unify_dim: int = 50, hidden: int = 256, n_layers: int = 3, dropout: float = 0.1,
                 tau: float = 0.2, n_negatives: int = 50, weight_decay: float = 1e-4, n_sources: int | None = None):
        super().__init__()
        if not tau > 0 or n_negatives < 1:
            raise ValueError(f"need tau > 0 and n_negatives >= 1, got {tau}, {n_negatives}")
        if n_sources is not None and n_sources < 1:
            raise ValueError(f"n_sources must be >= 1 (or None), got {n_sources}")
        self.unify_dim, self.tau, self.n_negatives, self.weight_decay = unify_dim, tau, n_negatives, weight_decay
        self.encoder = GCNEncoder(unify_dim, hidden, n_layers, dropout)
        self.shared_token = xavier_row(unify_dim)
        self.register_buffer("is_pretrained", torch.tensor(False))
        self.n_sources = n_sources
        self._init_tokens(n_sources or 0)

    def _init_tokens(self, n_sources: int) -> None:
        self.domain_tokens = xavier_rows(n_sources, self.unify_dim)
        self.prompt_ = untouched_rng_prompt(n_sources, self.unify_dim, k=1, learner_layers=0, dropedge=0.0)
        self.to(self.shared_token.device, self.shared_token.dtype)

    def _link_loss(self, z, ei, gen) -> torch.Tensor:
        # one random neighbour as positive, n_negatives random nodes as negatives (MDGPT's pretext);
        # the draws come from the CPU generator ``gen`` and then move to z's device
        n, device = z.size(0), z.device
        deg = torch.bincount(ei[1], minlength=n)
        start = torch.cumsum(deg, 0) - deg
        order = torch.argsort(ei[1], stable=True)
        u = torch.rand(n, generator=gen).to(device)
        pick = start + (u * deg.clamp(min=1)).long().clamp(max=(deg - 1).clamp(min=0))
        pos = torch.where(deg > 0, ei[0][order][pick.clamp(max=ei.size(1) - 1)], torch.arange(n, device=device))
        neg = torch.randint(0, n, (n, self.n_negatives), generator=gen).to(device)
        zn = F.normalize(z, dim=1)
        s_pos = (zn * zn[pos]).sum(1, keepdim=True)
        s_neg = torch.einsum("nd,nkd->nk", zn, zn[neg])
        logits = torch.cat([s_pos, s_neg], dim=1) / self.tau
        return F.cross_entropy(logits, torch.zeros(n, dtype=torch.long, device=device))

    def _prepare(self, X, A, name: str):
        device, dtype = self.shared_token.device, self.shared_token.dtype
        x, ei = check_graph(X, A, name, dtype=dtype, device=device)
        return (unify_features(x, self.unify_dim, dtype=dtype, device=device),
                normalized_adjacency(ei, x.size(0), dtype=dtype), ei)

    def pretrain(self, sources: Sequence[tuple], epochs: int = 60, lr: float = 1e-2, seed: int = 0):
        """Pre-train tokens and encoder on ``sources`` (PyG ``Data`` or ``(X, edge_index)`` pairs); keep the lowest-loss
        epoch."""
        if len(sources) == 0:
            raise ValueError("pretrain needs at least one source graph")
        if epochs < 1 or not lr > 0:
            raise ValueError(f"need epochs >= 1 and lr > 0, got {epochs}, {lr}")
        if self.n_sources is not None and len(sources) != self.n_sources:
            raise ValueError(f"this model was built for n_sources={self.n_sources}, got {len(sources)} sources")
        graphs = [self._prepare(*source_pair(src, j), f"source {j}") for j, src in enumerate(sources)]
        if self.n_sources is None:  # the older call form: size the tokens now
            self.n_sources = len(sources)
            self._init_tokens(len(sources))
        opt = torch.optim.Adam(self.parameters(), lr=lr, weight_decay=self.weight_decay)
        gen = torch.Generator().manual_seed(seed)
        best, best_state = float("inf"), None
        self.train()
        for _ in range(epochs):
            opt.zero_grad()
            loss = 0.0
            for j, (x, adj, ei) in enumerate(graphs):
                xt = self.shared_token * F.relu(self.domain_tokens[j] * x)
                loss = loss + self._link_loss(self.encoder(xt, *adj, pretext=True), ei, gen)
            loss.backward()
            opt.step()
            if loss.item() < best:
                best, best_state = loss.item(), copy.deepcopy(self.state_dict())
        self.load_state_dict(best_state)
        self.is_pretrained.fill_(True)
        self.eval()
        return self

    def forward(self, x: torch.Tensor | Data, edge_index: torch.Tensor | None = None) -> torch.Tensor:
        """Prompted target embeddings ``(N, hidden)`` of unified features ``x (N, unify_dim)``."""
        x, edge_index = unified_graph_input(x, edge_index, self.unify_dim, "PretrainNoRefine")
        adj = normalized_adjacency(edge_index, x.size(0), dtype=x.dtype)
        return self.encoder(self.prompt_.features(x, self.domain_tokens, self.shared_token), *adj)

    def prompt_tune(self, X, A, support_idx, support_y, steps: int = 400, lr: float = 1e-3) -> "PretrainNoRefine":
        """Fit the feature prompt on the support nodes; everything pre-trained stays frozen."""
        if not bool(self.is_pretrained):
            raise ValueError("call pretrain before prompt_tune")
        if steps < 0 or not lr > 0:
            raise ValueError(f"need steps >= 0 and lr > 0, got {steps}, {lr}")
        x, adj, _ = self._prepare(X, A, "target")
        idx, y = check_support(support_idx, support_y, x.size(0), x.device)
        for name, p in self.named_parameters():
            p.requires_grad_(name.startswith("prompt_."))
        self.prompt_.reset_parameters()  # new prompts for every task
        opt = torch.optim.Adam(self.prompt_.parameters(), lr=lr)
        n_classes = int(y.max()) + 1
        for _ in range(steps):
            opt.zero_grad()
            xp = self.prompt_.features(x, self.domain_tokens, self.shared_token)
            emb = self.encoder(xp, *adj)[idx]
            loss = F.cross_entropy(F.softmax(cosine_to_prototypes(emb, emb, y, n_classes), dim=1), y)
            loss.backward()
            opt.step()
        self.support_ = (idx, y, n_classes)
        return self

    @torch.no_grad()
    def predict(self, X, A) -> torch.Tensor:
        """Labels ``(N,)`` (a CPU tensor) of all target nodes by cosine to the support prototypes."""
        if getattr(self, "support_", None) is None:
            raise ValueError("call prompt_tune before predict")
        x, adj, _ = self._prepare(X, A, "target")
        idx, y, n_classes = self.support_
        if int(idx.max()) >= x.size(0):
            raise ValueError("predict must get the graph that prompt_tune was fitted on")
        emb = self.encoder(self.prompt_.features(x, self.domain_tokens, self.shared_token), *adj)
        return cosine_to_prototypes(emb, emb[idx], y, n_classes).argmax(dim=1).cpu()

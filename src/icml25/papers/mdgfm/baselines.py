"""Baselines run in the same experiment as MDGFM.

* :class:`GCNProto` / :class:`MLPProto`: no pre-training; a 2-layer GCN (or MLP) on the target's PCA
  features trained on the support set only, classifying by cosine to class prototypes.
* :class:`PretrainNoRefine`: the MDGPT-like ablation of MDGFM: the same domain/shared tokens and GCN
  encoder, pre-trained without the graph learner and balance tokens (so no refined view exists and
  the pretext is MDGPT's link-contrast: a neighbour against random non-neighbours); downstream the same
  feature prompt and prototype classifier on ``A^`` only.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import GCNConv

from icml25.papers.mdgfm.model import (
    GCNEncoder,
    TargetPrompt,
    _check_support,
    _cosine_to_prototypes,
    _xavier_row,
    check_graph,
    normalized_adjacency,
    unify_features,
)


class _ProtoNet(nn.Module):
    """Supervised few-shot baseline: encoder trained on the support set with a cosine-prototype head."""

    def __init__(self, unify_dim: int = 50, hidden: int = 64, dropout: float = 0.5, temperature: float = 0.1):
        super().__init__()
        self.unify_dim, self.hidden, self.dropout, self.temperature = unify_dim, hidden, dropout, temperature

    def _build(self) -> None:
        raise NotImplementedError

    def _embed(self, x, graph: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        """Embeddings from features and the normalised graph ``A^`` as (edge_index, edge_weight)."""
        raise NotImplementedError

    def fit(self, X, A, support_idx, support_y, steps: int = 100, lr: float = 1e-2,
            weight_decay: float = 5e-4) -> "_ProtoNet":
        x, ei = check_graph(X, A, "target")
        x, graph = unify_features(x, self.unify_dim), normalized_adjacency(ei, x.size(0))
        idx, y = _check_support(support_idx, support_y, x.size(0))
        self._build()
        n_classes = int(y.max()) + 1
        opt = torch.optim.Adam(self.parameters(), lr=lr, weight_decay=weight_decay)
        self.train()
        for _ in range(steps):
            opt.zero_grad()
            emb = self._embed(x, graph)[idx]
            logits = _cosine_to_prototypes(emb, emb, y, n_classes) / self.temperature
            F.cross_entropy(logits, y).backward()
            opt.step()
        self.eval()
        self.support_ = (idx, y, n_classes)
        return self

    @torch.no_grad()
    def predict(self, X, A) -> torch.Tensor:
        x, ei = check_graph(X, A, "target")
        emb = self._embed(unify_features(x, self.unify_dim), normalized_adjacency(ei, x.size(0)))
        idx, y, n_classes = self.support_
        return _cosine_to_prototypes(emb, emb[idx], y, n_classes).argmax(dim=1)


class GCNProto(_ProtoNet):
    """2-layer GCN (PyG ``GCNConv``, ReLU, dropout) + cosine prototypes, trained on the support set."""

    def _build(self) -> None:
        self.conv1 = GCNConv(self.unify_dim, self.hidden, normalize=False)  # A^ is normalised once per call
        self.conv2 = GCNConv(self.hidden, self.hidden, normalize=False)

    def _embed(self, x, graph) -> torch.Tensor:
        h = F.dropout(F.relu(self.conv1(x, *graph)), p=self.dropout, training=self.training)
        return self.conv2(h, *graph)


class MLPProto(_ProtoNet):
    """2-layer MLP (the graph is ignored) + cosine prototypes, trained on the support set."""

    def _build(self) -> None:
        self.lin1 = nn.Linear(self.unify_dim, self.hidden)
        self.lin2 = nn.Linear(self.hidden, self.hidden)

    def _embed(self, x, graph) -> torch.Tensor:
        return self.lin2(F.dropout(F.relu(self.lin1(x)), p=self.dropout, training=self.training))


class PretrainNoRefine(nn.Module):
    """MDGFM without graph learner and balance tokens (MDGPT-like tokens + link-contrast pre-training)."""

    def __init__(self, unify_dim: int = 50, hidden: int = 256, n_layers: int = 3, dropout: float = 0.1,
                 tau: float = 0.2, n_negatives: int = 50, weight_decay: float = 1e-4):
        super().__init__()
        self.unify_dim, self.tau, self.n_negatives, self.weight_decay = unify_dim, tau, n_negatives, weight_decay
        self.encoder = GCNEncoder(unify_dim, hidden, n_layers, dropout)
        self.shared_token = _xavier_row(unify_dim)
        self.domain_tokens: nn.Parameter | None = None
        self.prompt_: TargetPrompt | None = None

    def _link_loss(self, z, ei, gen) -> torch.Tensor:
        # one random neighbour as positive, n_negatives random nodes as negatives (MDGPT's pretext)
        n = z.size(0)
        deg = torch.bincount(ei[1], minlength=n)
        start = torch.cumsum(deg, 0) - deg
        order = torch.argsort(ei[1], stable=True)
        pick = start + (torch.rand(n, generator=gen) * deg.clamp(min=1)).long().clamp(max=(deg - 1).clamp(min=0))
        pos = torch.where(deg > 0, ei[0][order][pick.clamp(max=ei.size(1) - 1)], torch.arange(n))
        neg = torch.randint(0, n, (n, self.n_negatives), generator=gen)
        zn = F.normalize(z, dim=1)
        s_pos = (zn * zn[pos]).sum(1, keepdim=True)
        s_neg = torch.einsum("nd,nkd->nk", zn, zn[neg])
        logits = torch.cat([s_pos, s_neg], dim=1) / self.tau
        return F.cross_entropy(logits, torch.zeros(n, dtype=torch.long))

    def pretrain(self, sources: Sequence[tuple], epochs: int = 60, lr: float = 1e-2, seed: int = 0):
        if len(sources) == 0:
            raise ValueError("pretrain needs at least one source graph")
        graphs = []
        for j, (x, ei) in enumerate(sources):
            x, ei = check_graph(x, ei, f"source {j}")
            graphs.append((unify_features(x, self.unify_dim), normalized_adjacency(ei, x.size(0)), ei))
        self.domain_tokens = nn.Parameter(torch.stack([_xavier_row(self.unify_dim).data for _ in sources]))
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
        self.eval()
        return self

    def prompt_tune(self, X, A, support_idx, support_y, steps: int = 400, lr: float = 1e-3) -> "PretrainNoRefine":
        if self.domain_tokens is None:
            raise ValueError("call pretrain before prompt_tune")
        x, ei = check_graph(X, A, "target")
        x, adj = unify_features(x, self.unify_dim), normalized_adjacency(ei, x.size(0))
        idx, y = _check_support(support_idx, support_y, x.size(0))
        for p in self.parameters():
            p.requires_grad_(False)
        self.prompt_ = TargetPrompt(self.domain_tokens.size(0), self.unify_dim, k=1, learner_layers=0, dropedge=0.0)
        opt = torch.optim.Adam(self.prompt_.parameters(), lr=lr)
        n_classes = int(y.max()) + 1
        for _ in range(steps):
            opt.zero_grad()
            xp = self.prompt_.features(x, self.domain_tokens, self.shared_token)
            emb = self.encoder(xp, *adj)[idx]
            loss = F.cross_entropy(F.softmax(_cosine_to_prototypes(emb, emb, y, n_classes), dim=1), y)
            loss.backward()
            opt.step()
        self.support_ = (idx, y, n_classes)
        return self

    @torch.no_grad()
    def predict(self, X, A) -> torch.Tensor:
        if self.prompt_ is None:
            raise ValueError("call prompt_tune before predict")
        x, ei = check_graph(X, A, "target")
        x, adj = unify_features(x, self.unify_dim), normalized_adjacency(ei, x.size(0))
        emb = self.encoder(self.prompt_.features(x, self.domain_tokens, self.shared_token), *adj)
        idx, y, n_classes = self.support_
        return _cosine_to_prototypes(emb, emb[idx], y, n_classes).argmax(dim=1)

"""DragSolver (reconstruction) and point-cloud C_d baselines, in PyTorch.

DragSolver: scale normalisation -> multi-scale FPS/kNN groups encoded by a shared
mini-PointNet -> surface-guided gate g = sigmoid(MLP([token, exterior cues])) ->
Transformer encoder -> gated attention pooling -> MLP head with (MC) dropout.
Every architectural detail is inferred (the paper was not retrieved).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from icml25.common.checks import ConfigError, check_fields


def normalize_points(xyz: torch.Tensor) -> torch.Tensor:
    """Centre each cloud (B, N, 3) at its bounding-box centre and divide by the box diagonal."""
    lo, hi = xyz.amin(1, keepdim=True), xyz.amax(1, keepdim=True)
    return (xyz - (lo + hi) / 2) / (hi - lo).norm(dim=-1, keepdim=True).clamp_min(1e-12)


def farthest_point_sample(xyz: torch.Tensor, s: int) -> torch.Tensor:
    """Indices (B, s) of farthest-point sampling, started at the point farthest from the centroid.

    The start makes the selected set independent of point order (no ties assumed).
    """
    b, n, _ = xyz.shape
    if not 1 <= s <= n:
        raise ValueError(f"cannot sample {s} centres from {n} points")
    idx = torch.empty(b, s, dtype=torch.long, device=xyz.device)
    far = (xyz - xyz.mean(1, keepdim=True)).square().sum(-1).argmax(1)
    dist = torch.full((b, n), float("inf"), device=xyz.device, dtype=xyz.dtype)
    ar = torch.arange(b, device=xyz.device)
    for i in range(s):
        idx[:, i] = far
        dist = torch.minimum(dist, (xyz - xyz[ar, far][:, None]).square().sum(-1))
        far = dist.argmax(1)
    return idx


def knn(query: torch.Tensor, points: torch.Tensor, k: int) -> torch.Tensor:
    """Indices (B, Q, k) of the k nearest ``points`` (B, N, 3) of each ``query`` (B, Q, 3)."""
    return torch.cdist(query, points).topk(k, dim=-1, largest=False).indices


def gather(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """x (B, N, C) indexed by idx (B, ...) -> (B, ..., C)."""
    b = x.shape[0]
    flat = idx.reshape(b, -1)
    return x[torch.arange(b, device=x.device)[:, None], flat].reshape(*idx.shape, x.shape[-1])


def _mlp(*dims: int, dropout: float = 0.0) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i in range(len(dims) - 1):
        layers.append(nn.Linear(dims[i], dims[i + 1]))
        if i < len(dims) - 2:
            layers += [nn.GELU()] + ([nn.Dropout(dropout)] if dropout > 0 else [])
    return nn.Sequential(*layers)


def _all_finite(*tensors: torch.Tensor) -> bool:
    """True when every entry is finite; a meta tensor has no values and counts as finite."""
    return all(t.is_meta or bool(torch.isfinite(t).all()) for t in tensors)


def _check_inputs(xyz, normals, cues) -> torch.Tensor:
    if not (isinstance(xyz, torch.Tensor) and isinstance(normals, torch.Tensor)):
        raise TypeError(f"xyz and normals must be tensors, got {type(xyz).__name__}, {type(normals).__name__}")
    if not (xyz.is_floating_point() and normals.is_floating_point()):
        raise TypeError(f"xyz and normals must be floating tensors, got {xyz.dtype}, {normals.dtype}")
    if xyz.ndim != 3 or xyz.shape[-1] != 3:
        raise ValueError(f"xyz must have shape (B, N, 3), got {tuple(xyz.shape)}")
    if normals.shape != xyz.shape:
        raise ValueError(f"normals must have the shape of xyz {tuple(xyz.shape)}, got {tuple(normals.shape)}")
    if cues is None:
        cues = torch.zeros(xyz.shape[:2], dtype=xyz.dtype, device=xyz.device)
    if cues.shape != xyz.shape[:2]:
        raise ValueError(f"cues must have shape (B, N) = {tuple(xyz.shape[:2])}, got {tuple(cues.shape)}")
    if not _all_finite(xyz, normals, cues):
        raise ValueError("xyz, normals and cues must be finite")
    return cues


def gated_attention_pool(h: torch.Tensor, logits: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
    """Gated attention pooling: sum_t w_t h_t with w = softmax_t(logits_t + log g_t).

    ``h`` (B, T, d) token states, ``logits`` (B, T) attention logits, ``gate`` (B, T) in [0, 1].
    A token with g = 0 (floored at 1e-6) gets no weight; all g equal gives plain attention pooling.
    """
    w = torch.softmax(logits + torch.log(gate.clamp_min(1e-6)), 1)
    return (w[..., None] * h).sum(1)


class CdRegressor(nn.Module):
    """Shared pieces: target standardisation buffers and MC-dropout prediction."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("target_mean", torch.zeros(()))
        self.register_buffer("target_std", torch.ones(()))

    def embed(self, xyz, normals, cues):  # pragma: no cover - abstract
        raise NotImplementedError

    def forward(self, xyz: torch.Tensor, normals: torch.Tensor, cues: torch.Tensor | None = None) -> torch.Tensor:
        """Predicted C_d (B,) from points (B, N, 3), unit normals (B, N, 3) and per-point cues (B, N)."""
        cues = _check_inputs(xyz, normals, cues)
        return self.target_mean + self.target_std * self.head(self.embed(xyz, normals, cues)).squeeze(-1)

    @torch.no_grad()
    def predict_mc(self, x, T: int = 30) -> tuple[torch.Tensor, torch.Tensor]:
        """MC-dropout prediction: mean and std (both (B,)) of ``T`` stochastic passes of the head.

        ``x`` is ``(xyz, normals, cues)``. Only dropout layers are switched to train mode; the
        encoder (no dropout) is run once. With dropout 0 the std is exactly 0.
        """
        if T < 1:
            raise ValueError(f"T must be >= 1, got {T}")
        xyz, normals, cues = x
        cues = _check_inputs(xyz, normals, cues)
        was = self.training
        self.eval()
        emb = self.embed(xyz, normals, cues)
        for m in self.head.modules():
            if isinstance(m, nn.Dropout):
                m.train()
        out = self.head(emb.repeat(T, 1)).reshape(T, -1)
        self.train(was)
        out = self.target_mean + self.target_std * out
        return out.mean(0), out.std(0, unbiased=False)


class DragSolver(CdRegressor):
    """Multi-scale, surface-gated point Transformer for C_d (reconstruction of DragSolver).

    Args:
        scales: ((S, k), ...) FPS centres and neighbours per scale.
        d_model, depth, heads: Transformer width, layers and heads.
        dropout: dropout rate of the MLP head (used for MC dropout).
        gating: multiply tokens by g = sigmoid(MLP([token, cues])) and add log g to the pooling logits.
        exterior_cues: feed the gate the group's mean winding number and normal-orientation agreement.
        normalize: centre/scale every cloud by its bounding box (scale invariance).
    """

    def __init__(self, scales=((256, 16), (64, 48)), d_model: int = 128, depth: int = 4, heads: int = 4,
                 dropout: float = 0.1, gating: bool = True, exterior_cues: bool = True, normalize: bool = True):
        super().__init__()
        scales = tuple((int(s), int(k)) for s, k in scales)
        if not scales or any(s < 1 or k < 1 for s, k in scales):
            raise ValueError(f"scales must be non-empty positive (S, k) pairs, got {scales}")
        if d_model % heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by heads ({heads})")
        if not 0 <= dropout < 1:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        self.scales, self.gating, self.exterior_cues, self.normalize = scales, gating, exterior_cues, normalize
        self.local = _mlp(6, d_model // 2, d_model)  # mini-PointNet on (p - centre, normal)
        self.pos = _mlp(3, d_model // 2, d_model)
        self.scale_emb = nn.Parameter(torch.zeros(len(scales), d_model))
        self.global_token = nn.Parameter(torch.zeros(1, 1, d_model))
        self.gate = _mlp(d_model + (2 if exterior_cues else 0), d_model // 2, 1) if gating else None
        layer = nn.TransformerEncoderLayer(d_model, heads, 2 * d_model, dropout=0.0, batch_first=True,
                                           norm_first=True, activation="gelu")
        self.encoder = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.pool = nn.Linear(d_model, 1)
        self.head = _mlp(2 * d_model, d_model, 1, dropout=dropout)

    def tokens(self, xyz, normals, cues):
        """Tokens (B, T, d), their gates (B, T) (ones without gating) and cue features (B, T, 2)."""
        if self.normalize:
            xyz = normalize_points(xyz)
        centre = (xyz.amin(1, keepdim=True) + xyz.amax(1, keepdim=True)) / 2
        radial = torch.nn.functional.normalize(xyz - centre, dim=-1)
        agree = (normals * radial).sum(-1)  # normal-orientation agreement with the outward radial direction
        per_point = torch.stack([cues, agree], -1)
        toks, cue_feats = [], []
        for j, (s, k) in enumerate(self.scales):
            k = min(k, xyz.shape[1])
            cidx = farthest_point_sample(xyz, min(s, xyz.shape[1]))
            ctr = gather(xyz, cidx)
            nb = knn(ctr, xyz, k)
            feats = torch.cat([gather(xyz, nb) - ctr[:, :, None], gather(normals, nb)], -1)
            toks.append(self.local(feats).amax(2) + self.pos(ctr) + self.scale_emb[j])
            cue_feats.append(gather(per_point, nb).mean(2))
        tok, cue = torch.cat(toks, 1), torch.cat(cue_feats, 1)
        if self.gate is None:
            return tok, torch.ones(tok.shape[:2], device=tok.device, dtype=tok.dtype), cue
        g = torch.sigmoid(self.gate(torch.cat([tok, cue], -1) if self.exterior_cues else tok)).squeeze(-1)
        return tok * g[..., None], g, cue

    def embed(self, xyz, normals, cues):
        tok, g, _ = self.tokens(xyz, normals, cues)
        h = self.encoder(torch.cat([self.global_token.expand(len(tok), -1, -1), tok], 1))
        h = self.norm(h)
        pooled = gated_attention_pool(h[:, 1:], self.pool(h[:, 1:]).squeeze(-1), g)
        return torch.cat([h[:, 0], pooled], -1)


class PlainPointTransformer(DragSolver):
    """Baseline: single-scale point Transformer, no gating, no cues, no normalisation."""

    def __init__(self, scale=(256, 16), d_model: int = 128, depth: int = 4, heads: int = 4, dropout: float = 0.1,
                 normalize: bool = False):
        super().__init__((scale,), d_model, depth, heads, dropout, gating=False, exterior_cues=False,
                         normalize=normalize)


class PointNetRegressor(CdRegressor):
    """Baseline: PointNet (shared MLP on (xyz, normal), max pool, MLP head) on normalised clouds."""

    def __init__(self, hidden: int = 128, dropout: float = 0.1, normalize: bool = True):
        super().__init__()
        if hidden < 2 or not 0 <= dropout < 1:
            raise ValueError(f"need hidden >= 2 and dropout in [0, 1), got hidden={hidden}, dropout={dropout}")
        self.normalize = normalize
        self.point = _mlp(6, hidden // 2, hidden, 2 * hidden)
        self.head = _mlp(2 * hidden, hidden, 1, dropout=dropout)

    def embed(self, xyz, normals, cues):
        if self.normalize:
            xyz = normalize_points(xyz)
        return self.point(torch.cat([xyz, normals], -1)).amax(1)


class DGCNNRegressor(CdRegressor):
    """Baseline: lite DGCNN (two EdgeConv layers, dynamic kNN graph, max pool, MLP head) on normalised clouds."""

    def __init__(self, k: int = 20, hidden: int = 64, dropout: float = 0.1, normalize: bool = True):
        super().__init__()
        if k < 1 or hidden < 1 or not 0 <= dropout < 1:
            raise ValueError(f"need k >= 1, hidden >= 1 and dropout in [0, 1), got k={k}, hidden={hidden}, "
                             f"dropout={dropout}")
        self.k, self.normalize = k, normalize
        self.edge1 = _mlp(12, hidden, hidden)
        self.edge2 = _mlp(2 * hidden, hidden, hidden)
        self.out = _mlp(2 * hidden, 2 * hidden)
        self.head = _mlp(2 * hidden, hidden, 1, dropout=dropout)

    @staticmethod
    def _edge(x: torch.Tensor, nb: torch.Tensor, mlp: nn.Module) -> torch.Tensor:
        xj = gather(x, nb)
        xi = x[:, :, None].expand_as(xj)
        return mlp(torch.cat([xi, xj - xi], -1)).amax(2)  # EdgeConv: max_j h([x_i, x_j - x_i])

    def embed(self, xyz, normals, cues):
        if self.normalize:
            xyz = normalize_points(xyz)
        k = min(self.k, xyz.shape[1])
        x = torch.cat([xyz, normals], -1)
        h1 = self._edge(x, knn(xyz, xyz, k), self.edge1)
        h2 = self._edge(h1, torch.cdist(h1, h1).topk(k, -1, largest=False).indices, self.edge2)
        return self.out(torch.cat([h1, h2], -1)).amax(1)


@dataclass(frozen=True)
class DragSolverConfig:
    """DragSolver's settings: the architecture (:class:`DragSolver`), the training recipe (:func:`train_regressor`)
    and the MC-dropout passes of :meth:`DragSolver.predict_mc`.

    Every value is ours (the paper was not retrieved); the defaults are the reproduction's quick settings.
    """

    scales: tuple[int, ...] = (32, 8, 8, 16)
    """Scales as a flat tuple S1, k1, S2, k2, ... (FPS centres and kNN neighbours per scale; :attr:`scale_pairs`)."""
    d_model: int = 32
    """Transformer width."""
    depth: int = 1
    """Transformer layers."""
    heads: int = 4
    """Attention heads (they divide ``d_model``)."""
    dropout: float = 0.1
    """Dropout rate of the MLP head, in [0, 1) (MC dropout at test time)."""
    epochs: int = 30
    """Training epochs (:func:`train_regressor`'s default)."""
    batch_size: int = 16
    """Mini-batch size."""
    lr: float = 3e-3
    """AdamW learning rate (cosine schedule)."""
    mc_samples: int = 30
    """MC-dropout passes T."""

    def __post_init__(self) -> None:
        check_fields(self, integer=("scales", "d_model", "depth", "heads", "epochs", "batch_size", "mc_samples"),
                     positive=("scales", "d_model", "depth", "heads", "epochs", "batch_size", "lr", "mc_samples"),
                     nonempty=("scales",))
        # bounds: a job beyond these would need > ~100 GB or days (attention over sum of S tokens)
        check_fields(self, at_most={"scales": 10**4, "d_model": 10**4, "depth": 10**3, "heads": 10**4,
                                    "epochs": 10**5, "batch_size": 10**5, "mc_samples": 10**5})
        name = type(self).__name__
        if len(self.scales) % 2:
            raise ConfigError(f"{name}.scales must be a flat tuple S1, k1, S2, k2, ... of even length, "
                              f"got {self.scales!r}")
        if self.d_model % self.heads:
            raise ConfigError(f"{name}.d_model must be divisible by heads={self.heads}, got {self.d_model}")
        if not 0 <= self.dropout < 1:
            raise ConfigError(f"{name}.dropout must be in [0, 1), got {self.dropout!r}")

    @property
    def scale_pairs(self) -> tuple[tuple[int, int], ...]:
        """(S1, k1, S2, k2, ...) -> ((S1, k1), (S2, k2), ...), the ``scales`` of :class:`DragSolver`."""
        flat = self.scales
        return tuple((flat[i], flat[i + 1]) for i in range(0, len(flat), 2))


def train_regressor(model: CdRegressor, xyz, normals, cues, y, epochs: int = 30, batch_size: int = 32,
                    lr: float = 2e-3, weight_decay: float = 1e-2, seed: int = 0) -> CdRegressor:
    """Fit ``model`` by MSE on standardised C_d with AdamW and a cosine schedule; returns the model in eval mode.

    ``xyz`` (M, N, 3), ``normals`` (M, N, 3) and ``cues`` (M, N) are tensors on the model's device; ``y`` (M,)
    holds the targets (array or tensor). Minibatch order comes from a CPU generator seeded by ``seed``, so the
    same seed gives the same batches on every device.
    """
    if epochs < 1 or batch_size < 1:
        raise ValueError(f"epochs and batch_size must be >= 1, got {epochs}, {batch_size}")
    if not lr > 0 or not weight_decay >= 0:
        raise ValueError(f"need lr > 0 and weight_decay >= 0, got lr={lr}, weight_decay={weight_decay}")
    cues = _check_inputs(xyz, normals, cues)
    y = torch.as_tensor(y, dtype=torch.float32)
    if y.shape != (len(xyz),):
        raise ValueError(f"y must have shape ({len(xyz)},) (one target per cloud), got {tuple(y.shape)}")
    if len(y) < 2:
        raise ValueError("need at least 2 training examples")
    if not torch.isfinite(y).all():
        raise ValueError("y must be finite (no NaN or inf)")
    y = y.to(xyz.device)
    torch.manual_seed(seed)
    model.target_mean.fill_(float(y.mean()))
    model.target_std.fill_(float(y.std().clamp_min(1e-8)))
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    steps = epochs * math.ceil(len(y) / batch_size)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    gen = torch.Generator().manual_seed(seed)
    model.train()
    for _ in range(epochs):
        perm = torch.randperm(len(y), generator=gen)
        for s in range(0, len(y), batch_size):
            b = perm[s:s + batch_size].to(xyz.device)
            pred = model(xyz[b], normals[b], cues[b])
            loss = ((pred - y[b]) / model.target_std).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
    return model.eval()


def relative_l2(pred, target) -> float:
    """||pred - target||_2 / ||target||_2 of two arrays of one shape (a non-zero target)."""
    pred, target = np.asarray(pred, float), np.asarray(target, float)
    if pred.shape != target.shape:
        raise ValueError(f"pred and target must have one shape, got {pred.shape} and {target.shape}")
    norm = np.linalg.norm(target)
    if not norm > 0:
        raise ValueError("target must have a non-zero, finite norm")
    return float(np.linalg.norm(pred - target) / norm)

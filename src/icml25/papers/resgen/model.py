"""ResGen: a masked Transformer that predicts the cumulative embedding of masked RVQ tokens with a
mixture of Gaussians, and its T-step sampler (Kim et al., ICML 2025, arXiv 2412.10208).

Training (Sec. 3 of the paper): mask a depth suffix at every position (:func:`forward_mask`), predict
z_i = sum_{masked j} e(x_{i,j}; j) at each position with a mixture of Gaussians, minimise
L_mask = -log p_theta(z | x^(t)) over positions that have a masked token (in practice its Jensen split,
:func:`split_mog_loss`).

Sampling: start fully masked; each of T steps samples z at masked positions, residual-quantises it with the
remaining codebooks, scores the new tokens, keeps the most confident ones (a depth prefix at each position,
as many as the cosine schedule allows) and re-masks the rest. The number of network evaluations is T,
whatever the depth D.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from icml25.common.checks import ConfigError, check_fields, check_ranges
from icml25.papers.resgen.rvq import ResidualVQ, cumulative_masked_embedding, forward_mask, mask_schedule


@dataclass(frozen=True)
class ResGenConfig:
    """ResGen's settings: the network (:class:`ResGenTransformer`), its training (:func:`train_generator`, the
    masked-token objective of Sec. 3) and its T-step sampler (:func:`sample`).

    The defaults are the digits experiment's quick preset (a toy model next to the paper's 574M parameters). The
    baselines of that experiment are built, trained and sampled with the same settings (``n_mix`` is ResGen's
    only), so every model gets the same Transformer, budget and sampler.
    """

    dim: int = 64
    """Transformer width, in [1, 10^4]; a multiple of ``n_heads``."""
    n_layers: int = 2
    """Transformer blocks, in [1, 10^3]."""
    n_heads: int = 4
    """Attention heads, in [1, 10^3]."""
    n_mix: int = 4
    """Mixture components of the output distribution over z, in [1, 10^3]."""
    train_steps: int = 400
    """Optimiser steps, in [1, 10^7]."""
    batch_size: int = 128
    """Sequences per step, in [1, 10^5]."""
    lr: float = 2e-3
    """AdamW peak learning rate (cosine decay), > 0."""
    sample_steps: int = 8
    """T: sampling steps, i.e. network evaluations whatever the depth D, in [1, 10^4]."""
    temperature: float = 1.0
    """Sampling temperature (scale of the Gaussian std), >= 0."""
    top_p: float = 1.0
    """Nucleus over the mixture components, in (0, 1]."""
    choice_temperature: float = 1.0
    """Weight of the Gumbel noise in the confidence used to choose which tokens to keep, >= 0."""

    def __post_init__(self) -> None:
        check_fields(self, integer=("dim", "n_layers", "n_heads", "n_mix", "train_steps", "batch_size",
                                    "sample_steps"),
                     finite=("lr", "temperature", "top_p", "choice_temperature"),
                     positive=("dim", "n_layers", "n_heads", "n_mix", "train_steps", "batch_size", "lr",
                               "sample_steps", "top_p"),
                     nonnegative=("temperature", "choice_temperature"),
                     at_most={"dim": 10**4, "n_layers": 10**3, "n_heads": 10**3, "n_mix": 10**3, "train_steps": 10**7,
                              "batch_size": 10**5, "sample_steps": 10**4, "top_p": 1.0})
        if self.dim % self.n_heads:
            raise ConfigError(f"ResGenConfig.n_heads must divide dim={self.dim}, got {self.n_heads}")


def check_integer_tensor(x: Tensor, name: str) -> None:
    if not isinstance(x, Tensor) or x.is_floating_point() or x.is_complex() or x.dtype == torch.bool:
        raise TypeError(f"{name} must be an integer tensor, got {getattr(x, 'dtype', type(x).__name__)}")


def check_codes(tokens: Tensor, codebook_size: int, free: Tensor | None = None, name: str = "tokens") -> None:
    """Token ids must lie in [0, codebook_size) wherever ``free`` (masked slots, whose ids are ignored) is False.

    The check needs values, so it is skipped for meta tensors (shape-only tracing).
    """
    if tokens.is_meta or tokens.numel() == 0:
        return
    ok = (tokens >= 0) & (tokens < codebook_size)
    if free is not None:
        ok |= free
    if not bool(ok.all()):
        raise ValueError(f"{name} must lie in [0, {codebook_size}) at every unmasked slot, got values in "
                         f"[{int(tokens.min())}, {int(tokens.max())}]")


def param_device(model: nn.Module) -> torch.device:
    """The device of a model's parameters (where its inputs and generators must live)."""
    return next(model.parameters()).device


class MaskedTokenTrunk(nn.Module):
    """Bidirectional Transformer over L positions of D RVQ tokens, plus one class token.

    A position's input is sum_j E_j[x_{i,j}] where masked depths use a learned mask embedding E_j[K];
    the class token is C[y] with y = n_classes the null class (classifier-free guidance).
    ``forward(tokens, mask, class_labels)`` gives the (B, L, dim) output features of the L positions.
    """

    def __init__(self, n_pos: int, depth: int, codebook_size: int, dim: int, n_layers: int, n_heads: int,
                 n_classes: int, causal: bool = False, seq_len: int | None = None):
        super().__init__()
        check_ranges("MaskedTokenTrunk", {"n_pos": n_pos, "depth": depth, "codebook_size": codebook_size, "dim": dim, "n_layers": n_layers, "n_heads": n_heads, "n_classes": n_classes},
                     integer=True, positive=True)
        if dim % n_heads:
            raise ValueError(f"dim={dim} must be divisible by n_heads={n_heads}")
        self.n_pos, self.depth, self.codebook_size, self.n_classes = n_pos, depth, codebook_size, n_classes
        self.token_emb = nn.Embedding(depth * (codebook_size + 1), dim)  # per depth: K codes + mask
        self.pos_emb = nn.Parameter(torch.randn(1, (seq_len or n_pos) + 1, dim) * 0.02)
        self.class_emb = nn.Embedding(n_classes + 1, dim)
        layer = nn.TransformerEncoderLayer(dim, n_heads, 4 * dim, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.causal = causal
        self.forward_calls = 0
        """Number of network evaluations since creation (the NFE counter)."""

    def labels(self, class_labels: Tensor | None, batch: int) -> Tensor:
        """Class labels as a (B,) long tensor; ``None`` gives the null class."""
        device = self.class_emb.weight.device
        if class_labels is None:
            return torch.full((batch,), self.n_classes, dtype=torch.long, device=device)
        if isinstance(class_labels, Tensor) and (class_labels.is_floating_point() or class_labels.is_complex()):
            raise TypeError(f"class_labels must be integers, got {class_labels.dtype}")
        y = torch.as_tensor(class_labels, dtype=torch.long, device=device).reshape(-1)
        if y.numel() != batch or (not y.is_meta and bool(torch.any((y < 0) | (y > self.n_classes)))):
            raise ValueError(f"class_labels must be {batch} ints in [0, {self.n_classes}], got {class_labels!r}")
        return y

    def embed_tokens(self, tokens: Tensor, mask: Tensor) -> Tensor:
        """(B, L, D) tokens and mask -> (B, L, dim) sum of per-depth (or mask) embeddings."""
        check_integer_tensor(tokens, "tokens")
        if tokens.dim() != 3 or tokens.shape[1:] != (self.n_pos, self.depth):
            raise ValueError(f"tokens must have shape (B, {self.n_pos}, {self.depth}), got {tuple(tokens.shape)}")
        if not isinstance(mask, Tensor) or mask.dtype != torch.bool or mask.shape != tokens.shape:
            raise ValueError(f"mask must be a bool tensor of the tokens' shape {tuple(tokens.shape)}, got "
                             f"{getattr(mask, 'dtype', type(mask).__name__)} {tuple(getattr(mask, 'shape', ()))}")
        check_codes(tokens, self.codebook_size, mask)
        idx = torch.where(mask, torch.full_like(tokens, self.codebook_size), tokens.clamp(min=0))
        offset = torch.arange(self.depth, device=tokens.device) * (self.codebook_size + 1)
        return self.token_emb(idx + offset).sum(-2)

    def run(self, h: Tensor, class_labels: Tensor | None) -> Tensor:
        """Prepend the class token, add positions, apply the blocks; returns (B, S, dim) without the class token."""
        self.forward_calls += 1
        y = self.labels(class_labels, h.shape[0])
        h = torch.cat([self.class_emb(y)[:, None], h], 1) + self.pos_emb[:, : h.shape[1] + 1]
        attn = None
        if self.causal:
            s = h.shape[1]
            attn = torch.triu(torch.full((s, s), float("-inf"), device=h.device, dtype=h.dtype), 1)
        return self.norm(self.blocks(h, mask=attn, is_causal=self.causal))[:, 1:]

    def forward(self, tokens: Tensor, mask: Tensor, class_labels: Tensor | None = None) -> Tensor:
        """(B, L, D) tokens, (B, L, D) bool mask, (B,) labels -> (B, L, dim) features (one network evaluation)."""
        return self.run(self.embed_tokens(tokens, mask), class_labels)


class MoGParams(NamedTuple):
    """Per-position mixture of diagonal Gaussians: logits (B, L, M), means and log_scales (B, L, M, c).

    A named tuple, so that tools that walk a module's outputs (``.to``, tracing, hooks) see its tensors.
    """

    logits: Tensor
    means: Tensor
    log_scales: Tensor

    def guided(self, uncond: "MoGParams", scale: float) -> "MoGParams":
        """Classifier-free guidance on every parameter: u + s (c - u); s = 0 unconditional, s = 1 conditional."""
        mix = lambda c, u: u + scale * (c - u)  # noqa: E731
        return MoGParams(mix(self.logits, uncond.logits), mix(self.means, uncond.means),
                         mix(self.log_scales, uncond.log_scales))


def mog_nll(params: MoGParams, z: Tensor) -> Tensor:
    """-log sum_k pi_k N(z; mu_k, diag(sigma_k^2)) per position.

    Args:
        params: :class:`MoGParams` with logits (..., M), means and log_scales (..., M, c).
        z: (..., c) targets.

    Returns:
        (...) negative log-likelihoods.
    """
    if z.shape[-1] != params.means.shape[-1] or z.shape[:-1] != params.logits.shape[:-1]:
        raise ValueError(f"z of shape {tuple(z.shape)} does not match MoG means {tuple(params.means.shape)}")
    diff = (z[..., None, :] - params.means) * torch.exp(-params.log_scales)
    log_norm = -0.5 * diff.pow(2).sum(-1) - params.log_scales.sum(-1) - 0.5 * z.shape[-1] * math.log(2 * math.pi)
    return -torch.logsumexp(F.log_softmax(params.logits, -1) + log_norm, -1)


class ResGenTransformer(nn.Module):
    """ResGen's network: masked RVQ tokens + class label -> a mixture of Gaussians over z_i at every position.

    Args:
        n_pos: sequence length L; depth: RVQ depth D; codebook_size: K;
        dim: Transformer width; n_layers, n_heads: Transformer size;
        n_mix: mixture components M; n_classes: number of classes (one more embedding is the null class);
        code_dim: dimension c of the RVQ code vectors (of z);
        min_scale: floor of every Gaussian's standard deviation. Without it, components collapse onto exactly
            repeated targets (e.g. blank patches) and their 1/sigma^2 gradients drown the rest of the loss.
    """

    def __init__(self, n_pos: int, depth: int, codebook_size: int, dim: int, n_layers: int, n_heads: int,
                 n_mix: int, n_classes: int, code_dim: int, min_scale: float = 1e-3):
        super().__init__()
        check_ranges("ResGenTransformer", {"n_mix": n_mix, "code_dim": code_dim}, integer=True, positive=True)
        if not min_scale > 0:
            raise ValueError(f"min_scale must be > 0, got {min_scale!r}")
        self.min_scale = float(min_scale)
        self.trunk = MaskedTokenTrunk(n_pos, depth, codebook_size, dim, n_layers, n_heads, n_classes)
        self.n_mix, self.code_dim = n_mix, code_dim
        self.head = nn.Linear(dim, n_mix * (1 + code_dim))  # mixture logits and means
        self.scale_head = nn.Linear(dim, n_mix * code_dim)  # standard deviations, on detached features

    @property
    def forward_calls(self) -> int:
        """Network evaluations since creation."""
        return self.trunk.forward_calls

    def forward(self, tokens: Tensor, mask: Tensor, class_labels: Tensor | None = None) -> MoGParams:
        """(B, L, D) tokens, (B, L, D) bool mask, (B,) labels -> :class:`MoGParams` at every position."""
        h = self.trunk.run(self.trunk.embed_tokens(tokens, mask), class_labels)
        m, c = self.n_mix, self.code_dim
        logits, means = self.head(h).split([m, m * c], -1)
        shape = (*logits.shape[:-1], m, c)
        # sigma = min_scale + softplus(raw), from detached features: the scales are a calibration head whose
        # 1/sigma^2 gradients must not drive the shared Transformer
        scales = self.min_scale + F.softplus(self.scale_head(h.detach()).reshape(shape))
        return MoGParams(logits, means.reshape(shape), torch.log(scales))

    def loss(self, tokens: Tensor, class_labels: Tensor, rvq: ResidualVQ, generator: torch.Generator | None = None,
             schedule: str = "cosine", label_dropout: float = 0.1, kind: str = "split") -> Tensor:
        """L_mask at random coarse-to-fine masks, averaged over positions with a masked token.

        ``kind="nll"``: the exact MoG negative log-likelihood -log p(z | x^(t)) (:func:`mog_nll`).
        ``kind="split"`` (default): the Jensen split with a one-hot q on the component k* nearest to z:
        cross-entropy of the mixture logits on k*, a regression of mu_{k*} on z (squared error relative to
        the batch's mean ||z||^2), and the Gaussian NLL of sigma_{k*} with mu detached. See
        :func:`split_mog_loss`.
        """
        b, device = tokens.shape[0], tokens.device
        ratio = torch.rand(b, generator=generator, dtype=torch.float64, device=device)
        mask = forward_mask(tokens, ratio, schedule, generator)
        z = cumulative_masked_embedding(tokens, mask, rvq)
        drop = torch.rand(b, generator=generator, device=device) < label_dropout
        y = torch.where(drop, self.trunk.n_classes, class_labels)
        params = self(tokens, mask, y)
        has_mask = mask.any(-1)
        if kind == "nll":
            return mog_nll(params, z)[has_mask].mean()
        if kind == "split":
            return split_mog_loss(params, z, has_mask)
        raise ValueError(f"kind must be 'split' or 'nll', got {kind!r}")


def split_mog_loss(params: MoGParams, z: Tensor, weight: Tensor) -> Tensor:
    """Jensen split of the MoG NLL used for training (one-hot q on the nearest component k*).

    -log sum_k pi_k N_k(z) <= -log pi_{k*} - log N_{k*}(z); the second term is split into a scale-free
    regression of the mean, ||z - mu_{k*}||^2 / mean||z||^2, and the NLL of sigma_{k*} with mu_{k*}
    detached, so that tiny scales (exactly repeated targets) cannot drown the mean's gradient.
    Assigning by distance (not by posterior) keeps every component in use.

    Args:
        params: MoG parameters (B, L, ...); z: (B, L, c) targets; weight: (B, L) bool, positions to count.
    """
    w = weight.to(z.dtype)
    with torch.no_grad():
        k = (z[..., None, :] - params.means).pow(2).sum(-1).argmin(-1)  # (B, L)
        z_power = ((z.pow(2).sum(-1) * w).sum() / w.sum().clamp(min=1.0)).clamp(min=1e-8)
    idx = k[..., None, None].expand(*k.shape, 1, z.shape[-1])
    mu = params.means.gather(-2, idx).squeeze(-2)
    log_s = params.log_scales.gather(-2, idx).squeeze(-2)
    ce = F.cross_entropy(params.logits.reshape(-1, params.logits.shape[-1]), k.reshape(-1), reduction="none")
    reg = (z - mu).pow(2).sum(-1) / z_power
    scale_nll = (log_s + 0.5 * (z - mu.detach()).pow(2) * torch.exp(-2 * log_s)).sum(-1)
    per_pos = ce.view_as(reg) + reg + scale_nll
    return (per_pos * w).sum() / w.sum().clamp(min=1.0)


def masked_counts(steps: int, total: int, schedule: str = "cosine") -> list[int]:
    """Tokens still masked after each of ``steps`` sampling steps: strictly decreasing, ending at 0."""
    check_ranges("masked_counts", {"steps": steps, "total": total}, integer=True, positive=True)
    counts, prev = [], total
    for t in range(steps):
        m = int(math.floor(float(mask_schedule(1.0 - (t + 1) / steps, schedule)) * total))
        m = max(0, min(m, prev - 1))
        counts.append(m)
        prev = m
    counts[-1] = 0
    return counts


def select_prefix_tokens(confidence: Tensor, masked: Tensor, n_reveal: int) -> Tensor:
    """Pick ``n_reveal`` masked tokens per sequence by confidence so that each position reveals a depth prefix.

    Confidence is made non-increasing along depth (cumulative minimum over the masked depths, ties broken
    towards coarser depths), then the top ``n_reveal`` masked slots are taken.

    Args:
        confidence: (B, L, D) scores; masked: (B, L, D) bool, a depth suffix at every position.

    Returns:
        (B, L, D) bool, True for the tokens to reveal.
    """
    if masked.dim() != 3 or confidence.shape != masked.shape:
        raise ValueError(f"confidence {tuple(confidence.shape)} and masked {tuple(masked.shape)} must be equal "
                         "(B, L, D) shapes")
    if int(n_reveal) != n_reveal or n_reveal < 0:
        raise ValueError(f"n_reveal must be an integer >= 0, got {n_reveal!r}")
    b, n_pos, depth = masked.shape
    c = torch.where(masked, confidence, torch.full_like(confidence, float("inf")))
    c = torch.cummin(c, -1).values - 1e-6 * torch.arange(depth, device=c.device, dtype=c.dtype)
    c = torch.where(masked, c, torch.full_like(c, float("-inf"))).reshape(b, -1)
    k = min(int(n_reveal), n_pos * depth)
    reveal = torch.zeros_like(c, dtype=torch.bool)
    if k > 0:
        reveal.scatter_(1, c.topk(k, -1).indices, True)
    return reveal.view(b, n_pos, depth) & masked


def gumbel(shape: tuple[int, ...], generator: torch.Generator | None, device: torch.device | str | None = None,
           dtype: torch.dtype | None = None) -> Tensor:
    """Standard Gumbel noise of ``shape`` on ``device`` (default: the generator's, else the CPU)."""
    if device is None and generator is not None:
        device = generator.device
    u = torch.rand(shape, generator=generator, device=device, dtype=dtype).clamp(1e-10, 1 - 1e-10)
    return -torch.log(-torch.log(u))


def _sample_mog(p: MoGParams, temperature: float, top_p: float, generator: torch.Generator | None) -> tuple[Tensor, Tensor]:
    """Draw z from the mixture (top-p over components, std scaled by temperature); returns z and the component."""
    probs = torch.softmax(p.logits, -1)
    if top_p < 1.0:  # keep the smallest set of components whose mass reaches top_p
        sp, order = probs.sort(-1, descending=True)
        keep = (sp.cumsum(-1) - sp) < top_p
        probs = torch.zeros_like(probs).scatter(-1, order, sp * keep)
    flat = probs.reshape(-1, probs.shape[-1])
    comp = torch.multinomial(flat / flat.sum(-1, keepdim=True), 1, generator=generator).view(probs.shape[:-1])
    idx = comp[..., None, None].expand(*comp.shape, 1, p.means.shape[-1])
    mu, ls = p.means.gather(-2, idx).squeeze(-2), p.log_scales.gather(-2, idx).squeeze(-2)
    z = mu + temperature * torch.exp(ls) * torch.randn(mu.shape, generator=generator, device=mu.device, dtype=mu.dtype)
    return z, ls


@torch.no_grad()
def sample(model: nn.Module, rvq: ResidualVQ, steps: int, cfg_scale: float = 1.0, temperature: float = 1.0,
           top_p: float = 1.0, class_labels: Tensor | None = None, n_samples: int | None = None,
           choice_temperature: float = 1.0, schedule: str = "cosine",
           generator: torch.Generator | None = None) -> Tensor:
    """Generate RVQ tokens with ResGen's T-step unmasking (or a baseline's own sampler).

    Each step: one network evaluation (conditional and null-class rows batched together when guided),
    z ~ MoG at masked positions, greedy RVQ of z with the codebooks of the masked depths, confidence of a new
    token = log softmax_k(-||r - e(k; j)||^2 / (2 s^2)) at the chosen code (r the residual at depth j, s the
    component's mean std) + choice_temperature (1 - t/T) Gumbel noise; the most confident tokens are kept
    (a depth prefix per position, :func:`select_prefix_tokens`), the rest re-masked.

    Args:
        model: a :class:`ResGenTransformer`; any other model's ``generate`` is called with the same arguments.
        rvq: the fitted tokenizer; steps: T, the number of network evaluations.
        cfg_scale: guidance scale s (0 unconditional, 1 conditional, > 1 guided).
        temperature: scale of the Gaussian std; top_p: nucleus over mixture components.
        class_labels: (B,) labels or ``None`` (null class, needs ``n_samples``).
        choice_temperature: weight of the Gumbel noise in the confidence.

    Returns:
        (B, L, D) long tokens with nothing masked.
    """
    if not isinstance(model, ResGenTransformer):
        return model.generate(rvq, steps, cfg_scale=cfg_scale, temperature=temperature, top_p=top_p,
                              class_labels=class_labels, n_samples=n_samples,
                              choice_temperature=choice_temperature, schedule=schedule, generator=generator)
    check_ranges("sample", {"steps": steps}, integer=True, positive=True)
    if not (0.0 < top_p <= 1.0) or not (0 <= temperature < math.inf):
        raise ValueError(f"need 0 < top_p <= 1 and a finite temperature >= 0, got top_p={top_p}, "
                         f"temperature={temperature}")
    check_sampling(cfg_scale, choice_temperature)
    trunk = model.trunk
    device = param_device(model)
    b = sample_batch_size(class_labels, n_samples)
    l_, d_ = trunk.n_pos, trunk.depth
    tokens = torch.zeros(b, l_, d_, dtype=torch.long, device=device)
    masked = torch.ones(b, l_, d_, dtype=torch.bool, device=device)
    counts = masked_counts(steps, l_ * d_, schedule)
    books = rvq._check().to(device)
    for t in range(steps):
        p = guided_forward(model, tokens, masked, class_labels, cfg_scale, b)
        z, log_s = _sample_mog(p, temperature, top_p, generator)
        start = d_ - masked.sum(-1)  # first masked depth per position
        new = rvq.residual_quantize(z, start)
        # confidence of each new token: softmax over the codebook of the residual at its depth
        s2 = (temperature * torch.exp(log_s)).pow(2).mean(-1).clamp(min=1e-6)  # (B, L)
        r, conf = z.clone(), torch.zeros(b, l_, d_, device=device, dtype=z.dtype)
        for j in range(d_):
            act = masked[..., j]
            d2 = torch.cdist(r.reshape(-1, r.shape[-1]), books[j]).pow(2).view(b, l_, -1)
            logp = torch.log_softmax(-d2 / (2 * s2[..., None]), -1)
            code = new[..., j].clamp(min=0)
            conf[..., j] = logp.gather(-1, code[..., None]).squeeze(-1)
            r = r - books[j][code] * act[..., None]
        conf = conf + choice_temperature * (1 - (t + 1) / steps) * gumbel((b, l_, d_), generator, device, conf.dtype)
        n_reveal = int(masked[0].sum()) - counts[t]
        reveal = select_prefix_tokens(conf, masked, n_reveal)
        tokens = torch.where(reveal, new, tokens)
        masked = masked & ~reveal
    return tokens


def check_sampling(cfg_scale: float, choice_temperature: float) -> None:
    """Clear errors for a guidance scale or a choice temperature that is not a finite number (>= 0)."""
    if not -math.inf < cfg_scale < math.inf:
        raise ValueError(f"cfg_scale must be a finite number, got {cfg_scale!r}")
    if not 0 <= choice_temperature < math.inf:
        raise ValueError(f"choice_temperature must be a finite number >= 0, got {choice_temperature!r}")


def sample_batch_size(class_labels: Tensor | None, n_samples: int | None) -> int:
    if class_labels is None:
        if n_samples is None or n_samples < 1:
            raise ValueError(f"give class_labels or a positive n_samples, got n_samples={n_samples!r}")
        return int(n_samples)
    return int(torch.as_tensor(class_labels).numel())


def guided_forward(model: nn.Module, tokens: Tensor, masked: Tensor, class_labels: Tensor | None,
                    cfg_scale: float, b: int):
    """One network evaluation with classifier-free guidance (conditional and null rows in one batch)."""
    if class_labels is None or cfg_scale == 1.0:
        return model(tokens, masked, class_labels)
    null = torch.full((b,), model_n_classes(model), dtype=torch.long, device=tokens.device)
    y = torch.cat([torch.as_tensor(class_labels, dtype=torch.long, device=tokens.device).reshape(-1), null])
    out = model(torch.cat([tokens, tokens]), torch.cat([masked, masked]), y)
    if isinstance(out, MoGParams):
        cond = MoGParams(out.logits[:b], out.means[:b], out.log_scales[:b])
        unc = MoGParams(out.logits[b:], out.means[b:], out.log_scales[b:])
        return cond.guided(unc, cfg_scale)
    return out[b:] + cfg_scale * (out[:b] - out[b:])


def model_n_classes(model: nn.Module) -> int:
    """Number of real classes of a model built on :class:`MaskedTokenTrunk` (its null class id)."""
    return model.trunk.n_classes


def train_generator(model: nn.Module, tokens: Tensor, class_labels: Tensor, rvq: ResidualVQ, steps: int,
                    batch_size: int = 128, lr: float = 1e-3, seed: int = 0, progress=None) -> list[float]:
    """Train any model of this package (its ``loss`` method) with AdamW and a cosine learning-rate decay.

    Runs on the device of the model's parameters (``tokens`` and ``class_labels`` are moved there).

    Returns:
        the training loss every 50 steps.
    """
    check_ranges("train_generator", {"steps": steps, "batch_size": batch_size}, integer=True, positive=True)
    if not 0 < lr < math.inf:
        raise ValueError(f"lr must be a finite number > 0, got {lr!r}")
    if tokens.dim() != 3 or class_labels.shape != tokens.shape[:1]:
        raise ValueError(f"need (N, L, D) tokens and (N,) class_labels, got {tuple(tokens.shape)} and "
                         f"{tuple(class_labels.shape)}")
    device = param_device(model)
    tokens, class_labels = tokens.to(device), class_labels.to(device)
    g = torch.Generator(device=device).manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * s / steps)))
    model.train()
    history = []
    for step in range(steps):
        idx = torch.randint(0, tokens.shape[0], (batch_size,), generator=g, device=device)
        loss = model.loss(tokens[idx], class_labels[idx], rvq, generator=g)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % 50 == 0:
            history.append(loss.item())
        if progress is not None:
            progress(step + 1, steps)
    model.eval()
    return history

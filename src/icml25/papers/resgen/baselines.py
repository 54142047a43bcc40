"""Baselines of the ResGen reproduction, all on the same RVQ tokens and the same Transformer trunk.

* :class:`TokenMaskGIT`: same coarse-to-fine masking and T steps as ResGen, but a categorical head per depth
  that samples every masked token of a position independently (NFE = T).
* :class:`DepthSequentialMask`: MaskGIT run depth by depth (SoundStorm-style), T steps per depth (NFE = T D).
* :class:`ARRQ`: autoregressive over the L*D tokens, position-major (a flattened RQ-Transformer; NFE = L D).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from icml25.common.checks import check_ranges
from icml25.papers.resgen.model import (
    MaskedTokenTrunk,
    check_codes,
    check_integer_tensor,
    check_sampling,
    guided_forward,
    gumbel,
    masked_counts,
    param_device,
    sample_batch_size,
    select_prefix_tokens,
)
from icml25.papers.resgen.rvq import ResidualVQ, forward_mask, mask_schedule


def _sample_logits(logits: Tensor, temperature: float, top_p: float, generator: torch.Generator | None) -> Tensor:
    """Categorical sample from (..., K) logits with temperature and nucleus (top-p) truncation."""
    if not (0.0 < top_p <= 1.0) or not (0 < temperature < float("inf")):
        raise ValueError(f"need 0 < top_p <= 1 and a finite temperature > 0, got top_p={top_p}, "
                         f"temperature={temperature}")
    probs = torch.softmax(logits / temperature, -1)
    if top_p < 1.0:
        sp, order = probs.sort(-1, descending=True)
        probs = torch.zeros_like(probs).scatter(-1, order, sp * ((sp.cumsum(-1) - sp) < top_p))
    flat = probs.reshape(-1, probs.shape[-1])
    return torch.multinomial(flat / flat.sum(-1, keepdim=True), 1, generator=generator).view(probs.shape[:-1])


class TokenMaskGIT(nn.Module):
    """Masked token model with one categorical head per depth: (B, L, D) tokens -> (B, L, D, K) logits."""

    def __init__(self, n_pos: int, depth: int, codebook_size: int, dim: int, n_layers: int, n_heads: int,
                 n_classes: int):
        super().__init__()
        self.trunk = MaskedTokenTrunk(n_pos, depth, codebook_size, dim, n_layers, n_heads, n_classes)
        self.head = nn.Linear(dim, depth * codebook_size)

    @property
    def forward_calls(self) -> int:
        """Network evaluations since creation."""
        return self.trunk.forward_calls

    def forward(self, tokens: Tensor, mask: Tensor, class_labels: Tensor | None = None) -> Tensor:
        """Logits (B, L, D, K) of every token given the unmasked ones."""
        h = self.trunk.run(self.trunk.embed_tokens(tokens, mask), class_labels)
        t = self.trunk
        return self.head(h).view(h.shape[0], t.n_pos, t.depth, t.codebook_size)

    def _train_mask(self, tokens: Tensor, generator: torch.Generator | None, schedule: str) -> tuple[Tensor, Tensor]:
        """Input mask and loss mask: ResGen's depth-suffix masking, loss on every masked token."""
        ratio = torch.rand(tokens.shape[0], generator=generator, dtype=torch.float64, device=tokens.device)
        mask = forward_mask(tokens, ratio, schedule, generator)
        return mask, mask

    def loss(self, tokens: Tensor, class_labels: Tensor, rvq: ResidualVQ | None = None,
             generator: torch.Generator | None = None, schedule: str = "cosine", label_dropout: float = 0.1) -> Tensor:
        """Cross-entropy of the masked tokens."""
        b = tokens.shape[0]
        mask, target = self._train_mask(tokens, generator, schedule)
        drop = torch.rand(b, generator=generator, device=tokens.device) < label_dropout
        y = torch.where(drop, self.trunk.n_classes, class_labels)
        ce = F.cross_entropy(self(tokens, mask, y).permute(0, 3, 1, 2), tokens, reduction="none")
        w = target.to(ce.dtype)
        return (ce * w).sum() / w.sum().clamp(min=1.0)

    @torch.no_grad()
    def generate(self, rvq: ResidualVQ | None, steps: int, cfg_scale: float = 1.0, temperature: float = 1.0,
                 top_p: float = 1.0, class_labels: Tensor | None = None, n_samples: int | None = None,
                 choice_temperature: float = 1.0, schedule: str = "cosine",
                 generator: torch.Generator | None = None) -> Tensor:
        """T steps of coarse-to-fine unmasking, every masked token sampled from its own categorical."""
        check_ranges("generate", {"steps": steps}, integer=True, positive=True)
        check_sampling(cfg_scale, choice_temperature)
        t_ = self.trunk
        b = sample_batch_size(class_labels, n_samples)
        tokens = torch.zeros(b, t_.n_pos, t_.depth, dtype=torch.long, device=param_device(self))
        masked = torch.ones_like(tokens, dtype=torch.bool)
        counts = masked_counts(steps, t_.n_pos * t_.depth, schedule)
        for t in range(steps):
            logits = guided_forward(self, tokens, masked, class_labels, cfg_scale, b)
            new = _sample_logits(logits, temperature, top_p, generator)
            conf = torch.log_softmax(logits, -1).gather(-1, new[..., None]).squeeze(-1)
            conf = conf + choice_temperature * (1 - (t + 1) / steps) * gumbel(tuple(conf.shape), generator,
                                                                               conf.device, conf.dtype)
            reveal = select_prefix_tokens(conf, masked, int(masked[0].sum()) - counts[t])
            tokens = torch.where(reveal, new, tokens)
            masked = masked & ~reveal
        return tokens


class DepthSequentialMask(TokenMaskGIT):
    """MaskGIT over positions, one depth after the other: T steps per depth, NFE = T * D.

    Training picks a depth j per sequence: depths < j are given, depths > j are masked, and a cosine-schedule
    fraction of the positions of depth j is masked; the loss is on the masked tokens of depth j.
    """

    def _train_mask(self, tokens: Tensor, generator: torch.Generator | None, schedule: str) -> tuple[Tensor, Tensor]:
        b, n_pos, depth = tokens.shape
        device = tokens.device
        j = torch.randint(0, depth, (b,), generator=generator, device=device)
        r = torch.rand(b, generator=generator, dtype=torch.float64, device=device)
        n = torch.ceil(mask_schedule(r, schedule) * n_pos).long().clamp(1, n_pos)
        rank = torch.rand(b, n_pos, generator=generator, device=device).argsort(1).argsort(1)
        at_j = rank < n[:, None]  # (B, L) masked positions of depth j
        d = torch.arange(depth, device=device)[None, None, :]
        jj = j[:, None, None]
        target = (d == jj) & at_j[..., None]
        return (d > jj) | target, target

    @torch.no_grad()
    def generate(self, rvq: ResidualVQ | None, steps: int, cfg_scale: float = 1.0, temperature: float = 1.0,
                 top_p: float = 1.0, class_labels: Tensor | None = None, n_samples: int | None = None,
                 choice_temperature: float = 1.0, schedule: str = "cosine",
                 generator: torch.Generator | None = None) -> Tensor:
        """For each depth j = 1..D, T MaskGIT steps over the L positions of depth j."""
        check_ranges("generate", {"steps": steps}, integer=True, positive=True)
        check_sampling(cfg_scale, choice_temperature)
        t_ = self.trunk
        b = sample_batch_size(class_labels, n_samples)
        tokens = torch.zeros(b, t_.n_pos, t_.depth, dtype=torch.long, device=param_device(self))
        masked = torch.ones_like(tokens, dtype=torch.bool)
        counts = masked_counts(steps, t_.n_pos, schedule)
        for j in range(t_.depth):
            for t in range(steps):
                logits = guided_forward(self, tokens, masked, class_labels, cfg_scale, b)[:, :, j]
                new = _sample_logits(logits, temperature, top_p, generator)
                conf = torch.log_softmax(logits, -1).gather(-1, new[..., None]).squeeze(-1)
                conf = conf + choice_temperature * (1 - (t + 1) / steps) * gumbel(tuple(conf.shape), generator,
                                                                                   conf.device, conf.dtype)
                m_j = masked[:, :, j]
                conf = torch.where(m_j, conf, torch.full_like(conf, float("-inf")))
                k = int(m_j[0].sum()) - counts[t]
                reveal = torch.zeros_like(m_j)
                if k > 0:
                    reveal.scatter_(1, conf.topk(k, -1).indices, True)
                reveal &= m_j
                tokens[:, :, j] = torch.where(reveal, new, tokens[:, :, j])
                masked[:, :, j] = m_j & ~reveal
        return tokens


class ARRQ(nn.Module):
    """Autoregressive model over the L*D RVQ tokens in position-major order (causal Transformer).

    NFE = L * D: one network evaluation per generated token (no key-value cache).
    """

    def __init__(self, n_pos: int, depth: int, codebook_size: int, dim: int, n_layers: int, n_heads: int,
                 n_classes: int):
        super().__init__()
        self.trunk = MaskedTokenTrunk(n_pos, depth, codebook_size, dim, n_layers, n_heads, n_classes,
                                      causal=True, seq_len=n_pos * depth)
        self.head = nn.Linear(dim, depth * codebook_size)

    @property
    def forward_calls(self) -> int:
        """Network evaluations since creation."""
        return self.trunk.forward_calls

    def forward(self, prefix: Tensor, class_labels: Tensor | None = None) -> Tensor:
        """(B, S) flattened tokens (S <= L*D) -> (B, S, K) logits of tokens 1..S+1's successors.

        Output s predicts flattened token s (the class token plays the start token), so the last
        output predicts the next token.
        """
        t = self.trunk
        check_integer_tensor(prefix, "prefix")
        if prefix.dim() != 2:
            raise ValueError(f"prefix must have shape (B, S), got {tuple(prefix.shape)}")
        s = prefix.shape[1]
        if s >= t.n_pos * t.depth:
            raise ValueError(f"prefix length must be < {t.n_pos * t.depth}, got {s}")
        check_codes(prefix, t.codebook_size, name="prefix")
        device = prefix.device
        depth_of = torch.arange(s, device=device) % t.depth
        h = t.token_emb(prefix + depth_of * (t.codebook_size + 1))  # (B, S, dim)
        y = t.labels(class_labels, prefix.shape[0])
        t.forward_calls += 1
        x = torch.cat([t.class_emb(y)[:, None], h], 1) + t.pos_emb[:, : s + 1]
        attn = torch.triu(torch.full((s + 1, s + 1), float("-inf"), device=device, dtype=x.dtype), 1)
        out = self.head(t.norm(t.blocks(x, mask=attn, is_causal=True)))  # (B, S+1, D*K)
        step = torch.arange(s + 1, device=device)
        out = out.view(out.shape[0], s + 1, t.depth, t.codebook_size)
        return out[:, step, step % t.depth]

    def loss(self, tokens: Tensor, class_labels: Tensor, rvq: ResidualVQ | None = None,
             generator: torch.Generator | None = None, label_dropout: float = 0.1, **_: object) -> Tensor:
        """Next-token cross-entropy over the flattened sequence."""
        b = tokens.shape[0]
        flat = tokens.reshape(b, -1)
        drop = torch.rand(b, generator=generator, device=tokens.device) < label_dropout
        y = torch.where(drop, self.trunk.n_classes, class_labels)
        logits = self(flat[:, :-1], y)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), flat.reshape(-1))

    @torch.no_grad()
    def generate(self, rvq: ResidualVQ | None, steps: int | None = None, cfg_scale: float = 1.0,
                 temperature: float = 1.0, top_p: float = 1.0, class_labels: Tensor | None = None,
                 n_samples: int | None = None, generator: torch.Generator | None = None, **_: object) -> Tensor:
        """Sample token by token (``steps`` is ignored: NFE = L * D)."""
        t = self.trunk
        check_sampling(cfg_scale, 0.0)
        b = sample_batch_size(class_labels, n_samples)
        device = param_device(self)
        flat = torch.zeros(b, 0, dtype=torch.long, device=device)
        guided = class_labels is not None and cfg_scale != 1.0
        for _s in range(t.n_pos * t.depth):
            if guided:
                y = torch.cat([torch.as_tensor(class_labels, device=device).reshape(-1),
                               torch.full((b,), t.n_classes, device=device)])
                out = self(torch.cat([flat, flat]), y)[:, -1]
                logits = out[b:] + cfg_scale * (out[:b] - out[b:])
            else:
                logits = self(flat, class_labels)[:, -1]
            flat = torch.cat([flat, _sample_logits(logits, temperature, top_p, generator)[:, None]], 1)
        return flat.view(b, t.n_pos, t.depth)


__all__ = ["ARRQ", "DepthSequentialMask", "TokenMaskGIT"]

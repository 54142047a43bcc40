"""HaploVL-style early-fusion single transformer (mini), its two-stage recipe and baselines.

Architecture (Yang et al., ICML 2025, arXiv 2503.14694; released modeling_haplo.py read for facts):
text ids -> token embedding; image -> patch embedding scattered at ``<image>`` placeholders;
one decoder stack ``layers[:n_pre]`` (pre-decoder, width d_pre) -> linear ``pre_connector``
-> ``layers[n_pre:]`` (post-decoder, width d_post, LLM-initialised) -> RMSNorm -> LM head.
Pre-norm RMSNorm, SwiGLU MLP, RoPE. Mask: key j visible to query i iff start(j) <= i, where
start(j) is the first index of j's image for image tokens and j itself for text tokens.

The recipe: :func:`pretrain_stage1` (distillation of the pre-decoder from a vision teacher and the LLM's
embeddings, the text side by the current-token prediction loss of the paper's Algorithm 1), then
:func:`finetune_stage2` (instruction tuning); :class:`HaploConfig` holds their settings. The teachers here are
trained by :func:`train_vision_teacher` and :func:`train_teacher_lm` (stand-ins for CLIP-ViT and a pretrained LLM).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from icml25.common.checks import check_fields, check_recipe


def _check_ids(input_ids: torch.Tensor, vocab: int, image_token_id: int | None = None) -> None:
    """Clear errors for token ids: an integer (B, L) tensor with ids in [0, vocab) (``image_token_id`` allowed).

    The range check needs values, so it is skipped for meta tensors (shape-only tracing).
    """
    if not isinstance(input_ids, torch.Tensor) or input_ids.is_floating_point() or input_ids.is_complex() \
            or input_ids.dtype == torch.bool:
        raise TypeError(f"input_ids must be an integer tensor, got {getattr(input_ids, 'dtype', type(input_ids))}")
    if input_ids.dim() != 2:
        raise ValueError(f"input_ids must have shape (B, L), got {tuple(input_ids.shape)}")
    if input_ids.is_meta or input_ids.numel() == 0:
        return
    ok = (input_ids >= 0) & (input_ids < vocab)
    if image_token_id is not None:
        ok |= input_ids == image_token_id
    if not bool(ok.all()):
        raise ValueError(f"input_ids must lie in [0, {vocab}) (or be the image token), got values in "
                         f"[{int(input_ids.min())}, {int(input_ids.max())}]")


def _check_pixels(pixel_values: torch.Tensor) -> None:
    """Pixel values must be a floating tensor of finite values (checked unless on the meta device)."""
    if not isinstance(pixel_values, torch.Tensor) or not pixel_values.is_floating_point():
        raise TypeError(f"pixel_values must be a floating tensor, got {getattr(pixel_values, 'dtype', pixel_values)}")
    if not pixel_values.is_meta and not bool(torch.isfinite(pixel_values).all()):
        raise ValueError("pixel_values must be finite (they contain NaN or inf)")


def _check_placeholders(is_img: torch.Tensor, n_embeddings: int) -> None:
    """The number of ``<image>`` placeholders must equal the number of image embeddings (unless on meta)."""
    if is_img.is_meta:
        return
    n_place = int(is_img.sum())
    if n_place != n_embeddings:
        raise ValueError(f"image placeholders ({n_place}) != image embeddings ({n_embeddings})")


def _causal(length: int, device: torch.device) -> torch.Tensor:
    """(L, L) bool causal mask, True = may attend."""
    return torch.ones(length, length, dtype=torch.bool, device=device).tril()


class RMSNorm(nn.Module):
    """RMSNorm: x / sqrt(mean(x^2) + eps) * w."""

    def __init__(self, d: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def _rope(x: torch.Tensor) -> torch.Tensor:
    """Rotary position embedding on (B, H, L, Dh), rotate-half convention, base 10000."""
    L, dh = x.shape[-2], x.shape[-1]
    inv = 1.0 / (10000 ** (torch.arange(0, dh, 2, device=x.device, dtype=x.dtype) / dh))
    ang = torch.arange(L, device=x.device, dtype=x.dtype)[:, None] * inv[None]
    cos, sin = torch.cat([ang.cos()] * 2, -1), torch.cat([ang.sin()] * 2, -1)
    x1, x2 = x[..., : dh // 2], x[..., dh // 2:]
    return x * cos + torch.cat([-x2, x1], -1) * sin


class Block(nn.Module):
    """Pre-norm decoder block: x + Attn(RMSNorm(x)); x + SwiGLU(RMSNorm(x))."""

    def __init__(self, d: int, n_heads: int):
        super().__init__()
        if d % n_heads or (d // n_heads) % 2:
            raise ValueError(f"width {d} must split into {n_heads} heads of even size")
        self.h = n_heads
        self.norm1, self.norm2 = RMSNorm(d), RMSNorm(d)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        hidden = 2 * d
        self.gate, self.up, self.down = nn.Linear(d, hidden, bias=False), nn.Linear(d, hidden, bias=False), \
            nn.Linear(hidden, d, bias=False)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        B, L, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(B, L, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(_rope(q), _rope(k), v, attn_mask=mask[:, None] if mask.dim() == 3 else mask)
        x = x + self.o(a.transpose(1, 2).reshape(B, L, d))
        h = self.norm2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))

    def make_identity(self) -> None:
        """Zero the output projections so the block is the identity map (residual only)."""
        nn.init.zeros_(self.o.weight)
        nn.init.zeros_(self.down.weight)


def build_attention_mask(token_types: torch.Tensor, image_spans: list[list[tuple[int, int]]]) -> torch.BoolTensor:
    """Attention mask, True = may attend: causal for text, bidirectional inside each image.

    Args:
        token_types: (B, L) ints, 0 for text, 1 for image tokens.
        image_spans: per batch row, a list of half-open ``(start, end)`` spans of image tokens.
    Returns:
        (B, L, L) bool; entry [b, i, j] is True iff start_b(j) <= i, with start(j) the span start
        for image tokens and j for text tokens (the released code's ``attention_start_ids``).
    """
    if token_types.dim() != 2:
        raise ValueError(f"token_types must be (B, L), got shape {tuple(token_types.shape)}")
    B, L = token_types.shape
    if len(image_spans) != B:
        raise ValueError(f"image_spans has {len(image_spans)} rows, token_types has {B}")
    start = torch.arange(L, device=token_types.device).expand(B, L).clone()
    for b, spans in enumerate(image_spans):
        for s, e in spans:
            if not (0 <= s < e <= L) or not bool((token_types[b, s:e] == 1).all()):
                raise ValueError(f"row {b}: span ({s}, {e}) is not a run of image tokens inside length {L}")
            start[b, s:e] = s
    if int(token_types.sum()) != sum(e - s for spans in image_spans for s, e in spans):
        raise ValueError("image_spans do not cover every image token in token_types")
    return start[:, None, :] <= torch.arange(L, device=token_types.device)[None, :, None]


class PatchEmbed(nn.Module):
    """Non-overlapping patches -> linear -> + learned position embedding: (B, 3, S, S) -> (B, P, d)."""

    def __init__(self, d: int, patch: int, img: int):
        super().__init__()
        if img % patch:
            raise ValueError(f"img={img} is not a multiple of patch={patch}")
        self.patch, self.img = patch, img
        self.proj = nn.Linear(3 * patch * patch, d)
        self.pos = nn.Parameter(torch.randn((img // patch) ** 2, d) * 0.02)

    @property
    def n_patches(self) -> int:
        return (self.img // self.patch) ** 2

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        _check_pixels(pixels)
        if pixels.dim() != 4 or pixels.shape[1:] != (3, self.img, self.img):
            raise ValueError(f"pixel_values must be (N, 3, {self.img}, {self.img}), got {tuple(pixels.shape)}")
        p = self.patch
        x = pixels.unfold(2, p, p).unfold(3, p, p).permute(0, 2, 3, 1, 4, 5).flatten(3).flatten(1, 2)
        return self.proj(x) + self.pos


class TinyViT(nn.Module):
    """Vision teacher: patch embedding + bidirectional blocks; ``forward`` gives (B, P, d) token features."""

    def __init__(self, d: int = 64, n_layers: int = 2, n_heads: int = 4, patch: int = 8, img: int = 32):
        super().__init__()
        self.d = d
        self.patch_embed = PatchEmbed(d, patch, img)
        self.blocks = nn.ModuleList(Block(d, n_heads) for _ in range(n_layers))

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        x = self.patch_embed(pixels)
        full = torch.ones(x.shape[1], x.shape[1], dtype=torch.bool, device=x.device)
        for blk in self.blocks:
            x = blk(x, full)
        return x


class TinyLM(nn.Module):
    """Text teacher: causal decoder LM with embedding, blocks, final RMSNorm and LM head."""

    def __init__(self, vocab: int, d: int = 64, n_layers: int = 2, n_heads: int = 4):
        super().__init__()
        self.d = d
        self.embed = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(Block(d, n_heads) for _ in range(n_layers))
        self.norm = RMSNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, input_ids: torch.Tensor, inputs_embeds: torch.Tensor | None = None,
                mask: torch.Tensor | None = None) -> torch.Tensor:
        """Logits (B, L, vocab); ``inputs_embeds`` replaces the embedding lookup when given."""
        if inputs_embeds is None:
            _check_ids(input_ids, self.embed.num_embeddings)
        x = self.embed(input_ids) if inputs_embeds is None else inputs_embeds
        mask = _causal(x.shape[1], x.device) if mask is None else mask
        for blk in self.blocks:
            x = blk(x, mask)
        return self.head(self.norm(x))


class EarlyFusionLMM(nn.Module):
    """Single transformer with a pre-decoder (d_pre) and a post-decoder (d_post), HaploVL layout.

    Args:
        vocab: text vocabulary size.
        d_pre, d_post: widths of the pre- and post-decoder.
        n_pre, n_post: number of blocks in each segment.
        n_heads: attention heads (both segments).
        patch, img: patch size and square image side of the patch embedding.
    """

    def __init__(self, vocab: int, d_pre: int, d_post: int, n_pre: int, n_post: int, n_heads: int,
                 patch: int = 4, img: int = 32):
        super().__init__()
        for name, v in (("vocab", vocab), ("d_pre", d_pre), ("d_post", d_post), ("n_heads", n_heads)):
            if v <= 0:
                raise ValueError(f"{name} must be positive, got {v}")
        if n_pre < 0 or n_post < 0:
            raise ValueError(f"n_pre and n_post must be >= 0, got {n_pre}, {n_post}")
        self.d_pre, self.d_post = d_pre, d_post
        self.embed = nn.Embedding(vocab, d_pre)
        self.patch_embed = PatchEmbed(d_pre, patch, img)
        self.pre = nn.ModuleList(Block(d_pre, n_heads) for _ in range(n_pre))
        self.pre_connector = nn.Linear(d_pre, d_post, bias=False)
        self.post = nn.ModuleList(Block(d_post, n_heads) for _ in range(n_post))
        self.norm = RMSNorm(d_post)
        self.head = nn.Linear(d_post, vocab, bias=False)

    def embed_inputs(self, input_ids: torch.Tensor, pixel_values: torch.Tensor | None,
                     image_token_id: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Token embeddings with image patches scattered at the placeholders; also returns the mask."""
        _check_ids(input_ids, self.embed.num_embeddings, image_token_id)
        is_img = input_ids == image_token_id
        x = self.embed(input_ids.masked_fill(is_img, 0))
        if pixel_values is None:
            if not is_img.is_meta and bool(is_img.any()):
                raise ValueError(f"{int(is_img.sum())} image placeholders but no pixel_values")
        else:
            feats = self.patch_embed(pixel_values).reshape(-1, self.d_pre)
            _check_placeholders(is_img, feats.shape[0])
            x = x.masked_scatter(is_img[..., None], feats.to(x.dtype))
        return x, attention_mask_from_ids(input_ids, image_token_id)

    def forward_pre(self, input_ids, pixel_values=None, image_token_id: int = -1) -> tuple[torch.Tensor, torch.Tensor]:
        """Pre-decoder output (B, L, d_pre) (before the connector) and the attention mask."""
        x, mask = self.embed_inputs(input_ids, pixel_values, image_token_id)
        for blk in self.pre:
            x = blk(x, mask)
        return x, mask

    def forward(self, input_ids: torch.Tensor, pixel_values: torch.Tensor | None = None,
                image_token_id: int = -1) -> torch.Tensor:
        """Logits (B, L, vocab)."""
        x, mask = self.forward_pre(input_ids, pixel_values, image_token_id)
        x = self.pre_connector(x)
        for blk in self.post:
            x = blk(x, mask)
        return self.head(self.norm(x))

    @torch.no_grad()
    def generate(self, input_ids: torch.Tensor, pixel_values: torch.Tensor | None = None, image_token_id: int = -1,
                 max_new_tokens: int = 1) -> torch.Tensor:
        """Greedy decoding; returns the (B, max_new_tokens) generated ids."""
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        ids, out = input_ids, []
        for _ in range(max_new_tokens):
            nxt = self(ids, pixel_values, image_token_id)[:, -1].argmax(-1)
            out.append(nxt)
            ids = torch.cat([ids, nxt[:, None]], 1)
        return torch.stack(out, 1)


def attention_mask_from_ids(input_ids: torch.Tensor, image_token_id: int) -> torch.BoolTensor:
    """Vectorised :func:`build_attention_mask` where each maximal run of placeholders is one image."""
    is_img = input_ids == image_token_id
    B, L = input_ids.shape
    idx = torch.arange(L, device=input_ids.device).expand(B, L)
    run_start = is_img & ~torch.cat([torch.zeros(B, 1, dtype=torch.bool, device=input_ids.device), is_img[:, :-1]], 1)
    # start(j) = latest run start <= j for image tokens, j for text tokens
    start = torch.where(run_start, idx, torch.zeros_like(idx)).cummax(1).values
    start = torch.where(is_img, start, idx)
    return start[:, None, :] <= torch.arange(L, device=input_ids.device)[None, :, None]


class DistillHeads(nn.Module):
    """Stage-1 heads on the pre-decoder output: visual (d_pre -> d_teacher_vis), text (d_pre -> d_llm_emb)."""

    def __init__(self, d_pre: int, d_teacher_vis: int, d_llm_emb: int):
        super().__init__()
        self.visual = nn.Linear(d_pre, d_teacher_vis)
        self.text = nn.Linear(d_pre, d_llm_emb)

    def forward(self, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Both heads on pre-decoder states (..., d_pre): (visual (..., d_teacher_vis), text (..., d_llm_emb)).

        Stage 1 uses the visual head on image tokens and the text head on text tokens (:func:`stage1_loss`).
        """
        return self.visual(hidden), self.text(hidden)


def init_post_from_lm(model: EarlyFusionLMM, lm: TinyLM, identity_pre: bool = False) -> EarlyFusionLMM:
    """Copy the LM's blocks, final norm and head into the post-decoder (and its embedding if widths match).

    With ``identity_pre`` the pre-decoder blocks are zeroed to the identity and the connector set to I
    (needs d_pre == d_post == lm.d), so text-only logits equal the LM's exactly.
    """
    if len(model.post) != len(lm.blocks) or model.d_post != lm.d:
        raise ValueError(f"post-decoder ({len(model.post)} x {model.d_post}) does not match the LM "
                         f"({len(lm.blocks)} x {lm.d})")
    model.post.load_state_dict(lm.blocks.state_dict())
    model.norm.load_state_dict(lm.norm.state_dict())
    model.head.load_state_dict(lm.head.state_dict())
    if model.d_pre == lm.d:
        model.embed.load_state_dict(lm.embed.state_dict())
    if identity_pre:
        if model.d_pre != model.d_post:
            raise ValueError(f"identity_pre needs d_pre == d_post, got {model.d_pre} != {model.d_post}")
        for blk in model.pre:
            blk.make_identity()
        with torch.no_grad():
            model.pre_connector.weight.copy_(torch.eye(model.d_post, dtype=model.pre_connector.weight.dtype))
    return model


def current_token_prediction_loss(hidden: torch.Tensor, embed_table: torch.Tensor, token_ids: torch.Tensor,
                                  logit_scale: float = 1.0) -> torch.Tensor:
    """Current-token prediction loss (the paper's Algorithm 1) on text positions.

    ``logits = logit_scale * hidden @ embed_table.T`` scores each text-head output against every row of the
    frozen LLM's input embedding table, and the cross-entropy is taken against the token *at that position*
    (not the next one): the pre-decoder must keep each text token identifiable in the LLM's embedding space.

    Args:
        hidden: (N, C) text-head outputs of the N text tokens.
        embed_table: (K, C) the LLM's token embedding table (used as a fixed classifier; no gradient).
        token_ids: (N,) the current token ids, in [0, K).
        logit_scale: positive multiplier of the dot products (the paper's value is not known; 1.0 here).
    Returns:
        scalar mean cross-entropy.
    """
    if not (0 < logit_scale < float("inf")):
        raise ValueError(f"logit_scale must be a finite number > 0, got {logit_scale!r}")
    if hidden.dim() != 2 or embed_table.dim() != 2 or hidden.shape[1] != embed_table.shape[1]:
        raise ValueError(f"hidden (N, C) and embed_table (K, C) must share C, got {tuple(hidden.shape)} and "
                         f"{tuple(embed_table.shape)}")
    if token_ids.shape != hidden.shape[:1]:
        raise ValueError(f"token_ids must have shape ({hidden.shape[0]},), got {tuple(token_ids.shape)}")
    logits = logit_scale * hidden @ embed_table.detach().to(hidden.dtype).T  # (N, K)
    return F.cross_entropy(logits, token_ids)


TEXT_LOSSES = ("ctp", "mse", "cosine")
"""Stage-1 text-side losses: current-token prediction (Algorithm 1, default), or regression onto the embedding."""
VISUAL_LOSSES = ("mse", "cosine")
"""Stage-1 visual-side losses (the paper's choice was not confirmed first-hand)."""


def stage1_loss(model: EarlyFusionLMM, heads: DistillHeads, teacher_vision: nn.Module, teacher_lm_embed: nn.Embedding,
                input_ids: torch.Tensor, pixel_values: torch.Tensor, image_token_id: int,
                loss: str = "ctp", text_weight: float = 1.0, visual_loss: str = "mse",
                logit_scale: float = 1.0, teacher_features: torch.Tensor | None = None) -> torch.Tensor:
    """Stage-1 distillation loss ``L_v + text_weight * L_t`` on the pre-decoder's outputs.

    Visual tokens: the visual head's outputs against the frozen vision teacher's patch features,
    ``visual_loss`` = ``"mse"`` (default) or ``"cosine"`` (``1 - cos``). Text tokens: with ``loss="ctp"``
    (default, Algorithm 1) the current-token prediction cross-entropy of the text head's outputs against the
    frozen LLM embedding table (:func:`current_token_prediction_loss`); with ``"mse"`` / ``"cosine"`` the text
    head's outputs are regressed onto the LLM's embeddings of the same tokens.

    ``teacher_features`` (B, P, C), when given, are the vision teacher's precomputed patch features of these images
    (e.g. CLIP-ViT-L's, read from a file by the paper-data experiment); ``teacher_vision`` is then not called.
    """
    if loss not in TEXT_LOSSES:
        raise ValueError(f"loss must be one of {TEXT_LOSSES}, got {loss!r}")
    if visual_loss not in VISUAL_LOSSES:
        raise ValueError(f"visual_loss must be one of {VISUAL_LOSSES}, got {visual_loss!r}")
    h, _ = model.forward_pre(input_ids, pixel_values, image_token_id)
    is_img = input_ids == image_token_id
    txt_ids = input_ids[~is_img]
    with torch.no_grad():
        t_vis = (teacher_vision(pixel_values) if teacher_features is None else teacher_features.to(h.dtype)) \
            .reshape(-1, heads.visual.out_features)
        t_txt = teacher_lm_embed(txt_ids)
    pv, pt = heads.visual(h[is_img]), heads.text(h[~is_img])
    if visual_loss == "mse":
        lv = F.mse_loss(pv, t_vis)
    else:
        lv = (1 - F.cosine_similarity(pv, t_vis, dim=-1)).mean()
    if loss == "ctp":
        lt = current_token_prediction_loss(pt, teacher_lm_embed.weight, txt_ids, logit_scale)
    elif loss == "mse":
        lt = F.mse_loss(pt, t_txt)
    else:
        lt = (1 - F.cosine_similarity(pt, t_txt, dim=-1)).mean()
    return lv + text_weight * lt


@dataclass
class HaploConfig:
    """Settings of the HaploVL recipe (mini): the single transformer's pre-decoder depth and the two stages.

    The experiment nests it whole as ``haplo`` (``--set haplo.s1_steps=500 haplo.distill_loss=mse``); the model
    widths, heads and post-decoder depth come from the teachers it inherits (the experiment's ``d``, ``n_heads``,
    ``lm_layers``). A value out of range raises :class:`~icml25.common.checks.ConfigError` (a ``ValueError``)
    naming the field.
    """

    n_pre: int = 2
    """Pre-decoder blocks of the single transformer."""
    s1_steps: int = 200
    """Stage-1 distillation steps (:func:`pretrain_stage1`)."""
    s2_steps: int = 250
    """Stage-2 instruction-tuning steps (:func:`finetune_stage2`; the baselines get the same budget)."""
    batch: int = 64
    """Batch size of every training stage (the teachers' and the baselines' too)."""
    lr: float = 2e-3
    """AdamW learning rate of every training stage (the teachers' and the baselines' too)."""
    distill_loss: str = "ctp"
    """Stage-1 text-side loss: ``ctp`` (current-token prediction against the LM embedding table, the paper's
    Algorithm 1), or ``mse`` / ``cosine`` regression onto the LM embeddings (our earlier guesses)."""
    visual_distill_loss: str = "mse"
    """Stage-1 visual-side loss: ``mse`` or ``cosine`` (not confirmed first-hand; a second-hand summary says
    cosine)."""
    ctp_logit_scale: float = 1.0
    """Logit scale of the current-token prediction loss (Algorithm 1; the paper's value is not known)."""

    def __post_init__(self) -> None:
        # bounds: a run beyond these would need > ~100 GB or days
        check_fields(self, positive=("batch", "lr", "ctp_logit_scale"), finite=("lr", "ctp_logit_scale"),
                     nonnegative=("n_pre", "s1_steps", "s2_steps"),
                     choices={"distill_loss": TEXT_LOSSES, "visual_distill_loss": VISUAL_LOSSES},
                     at_most={"n_pre": 10**3, "s1_steps": 10**7, "s2_steps": 10**7, "batch": 10**5})


def gather_rows(data: dict, key: str, idx: torch.Tensor) -> torch.Tensor:
    """Rows ``idx`` of ``data[key]``: per example, or, when ``data`` holds ``image_index`` (N,), the rows of the
    per-image table ``data[key]`` of those examples' images (many questions share one image)."""
    if "image_index" in data:
        return data[key][data["image_index"][idx]]
    return data[key][idx]


def _batches(n: int, batch: int, steps: int, gen: torch.Generator):
    """``steps`` random (batch,) index tensors into n rows, drawn on the generator's device."""
    for _ in range(steps):
        yield torch.randint(0, n, (batch,), generator=gen, device=gen.device)


def pretrain_stage1(model: EarlyFusionLMM, teacher_vision: nn.Module | None, teacher_lm_embed: nn.Embedding, data: dict,
                    steps: int, image_token_id: int, lr: float = 3e-3, batch: int = 64, loss: str = "ctp",
                    text_weight: float = 1.0, seed: int = 0, visual_loss: str = "mse",
                    logit_scale: float = 1.0) -> list[float]:
    """Stage 1: train embeddings + pre-decoder (+ heads) by distillation; teachers and post-decoder frozen.

    ``data`` holds ``input_ids`` (N, L) and ``pixel_values`` (N, 3, S, S). Returns the loss curve.
    ``loss``, ``visual_loss``, ``text_weight`` and ``logit_scale`` are those of :func:`stage1_loss`.
    The heads are discarded afterwards (only the model is kept). With ``teacher_vision=None`` the vision teacher's
    precomputed patch features ``data["teacher_features"]`` (N, P, C) are the visual targets; with
    ``data["image_index"]`` the pixel and feature tables are per image (:func:`gather_rows`).
    """
    check_recipe(steps, batch, lr)
    if loss not in TEXT_LOSSES or visual_loss not in VISUAL_LOSSES:
        raise ValueError(f"loss must be one of {TEXT_LOSSES} and visual_loss one of {VISUAL_LOSSES}, "
                         f"got {loss!r}, {visual_loss!r}")
    if teacher_vision is None and "teacher_features" not in data:
        raise ValueError("pretrain_stage1 needs a teacher_vision module or data['teacher_features']")
    d_vis = teacher_vision.d if teacher_vision is not None else data["teacher_features"].shape[-1]
    heads = DistillHeads(model.d_pre, d_vis, teacher_lm_embed.embedding_dim).to(model.head.weight.device)
    params = [*model.embed.parameters(), *model.patch_embed.parameters(), *model.pre.parameters(),
              *heads.parameters()]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    gen, curve = torch.Generator(device=data["input_ids"].device).manual_seed(seed), []
    for idx in _batches(len(data["input_ids"]), batch, steps, gen):
        feats = gather_rows(data, "teacher_features", idx) if teacher_vision is None else None
        batch_loss = stage1_loss(model, heads, teacher_vision, teacher_lm_embed, data["input_ids"][idx],
                                 gather_rows(data, "pixel_values", idx), image_token_id, loss, text_weight,
                                 visual_loss, logit_scale, teacher_features=feats)
        opt.zero_grad()
        batch_loss.backward()
        opt.step()
        curve.append(float(batch_loss.detach()))
    return curve


def answer_loss(logits: torch.Tensor, answers: torch.Tensor) -> torch.Tensor:
    """Next-token loss on the single answer token predicted at the last position."""
    return F.cross_entropy(logits[:, -1], answers)


def finetune_stage2(model: nn.Module, instruct_data: dict, steps: int, image_token_id: int, lr: float = 2e-3,
                    batch: int = 64, seed: int = 0, params=None) -> list[float]:
    """Stage 2: full fine-tuning on (image, question) -> answer with the answer next-token loss.

    With ``instruct_data["image_index"]`` the ``pixel_values`` are a per-image table (:func:`gather_rows`)."""
    check_recipe(steps, batch, lr)
    opt = torch.optim.AdamW(model.parameters() if params is None else params, lr=lr, weight_decay=0.0)
    gen, curve = torch.Generator(device=instruct_data["input_ids"].device).manual_seed(seed), []
    for idx in _batches(len(instruct_data["input_ids"]), batch, steps, gen):
        logits = model(instruct_data["input_ids"][idx], gather_rows(instruct_data, "pixel_values", idx),
                       image_token_id)
        batch_loss = answer_loss(logits, instruct_data["answers"][idx])
        opt.zero_grad()
        batch_loss.backward()
        opt.step()
        curve.append(float(batch_loss.detach()))
    return curve


class CompositionalLMM(nn.Module):
    """LLaVA-style baseline: frozen vision encoder -> 2-layer MLP projector -> LM (copied from the teacher LM)."""

    def __init__(self, vision: TinyViT, lm: TinyLM):
        super().__init__()
        self.vision = vision.requires_grad_(False)
        self.lm = lm
        self.projector = nn.Sequential(nn.Linear(vision.d, lm.d), nn.GELU(), nn.Linear(lm.d, lm.d))

    def forward(self, input_ids: torch.Tensor, pixel_values: torch.Tensor, image_token_id: int) -> torch.Tensor:
        """Logits (B, L, vocab): projected vision tokens at the ``<image>`` placeholders, causal LM over all."""
        _check_ids(input_ids, self.lm.embed.num_embeddings, image_token_id)
        is_img = input_ids == image_token_id
        x = self.lm.embed(input_ids.masked_fill(is_img, 0))
        feats = self.projector(self.vision(pixel_values)).reshape(-1, self.lm.d)
        _check_placeholders(is_img, feats.shape[0])
        x = x.masked_scatter(is_img[..., None], feats)
        return self.lm(input_ids, inputs_embeds=x, mask=_causal(x.shape[1], x.device))


class PrecomputedVision(nn.Module):
    """A frozen vision encoder whose outputs were computed beforehand (e.g. CLIP-ViT-L patch features read from a
    file): ``forward`` returns its (B, P, d) input unchanged, so :class:`CompositionalLMM` can project them."""

    def __init__(self, d: int):
        super().__init__()
        self.d = d

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        if features.dim() != 3 or features.shape[-1] != self.d:
            raise ValueError(f"precomputed features must be (B, P, {self.d}), got {tuple(features.shape)}")
        return features


def ScratchSingleTransformer(vocab: int, d_pre: int, d_post: int, n_pre: int, n_post: int, n_heads: int,
                             patch: int = 4, img: int = 32) -> EarlyFusionLMM:
    """Baseline: the same early-fusion architecture, random init, trained by stage 2 only."""
    return EarlyFusionLMM(vocab, d_pre, d_post, n_pre, n_post, n_heads, patch, img)


def train_vision_teacher(vit: TinyViT, data: dict, steps: int, lr: float, batch: int, gen: torch.Generator) -> float:
    """Train the vision teacher on per-cell (colour, shape, size) with 'empty' classes; return the last batch's
    accuracy (the mean over the three attributes).

    ``data`` holds ``pixel_values`` (N, 3, S, S) and ``attrs`` (N, 4, 3) with -1 for an empty cell (a 2x2 grid);
    a linear head on the flattened patch features is trained with it and discarded. Batches are drawn
    from ``gen`` (on its device).
    """
    check_recipe(steps, batch, lr)
    P = vit.patch_embed.n_patches
    head = torch.nn.Linear(P * vit.d, 4 * 12).to(vit.patch_embed.pos.device)
    opt = torch.optim.AdamW([*vit.parameters(), *head.parameters()], lr=lr)
    tgt = data["attrs"] + 1  # empty -> 0
    acc = 0.0
    for _ in range(steps):
        idx = torch.randint(0, len(tgt), (batch,), generator=gen, device=gen.device)
        out = head(vit(data["pixel_values"][idx]).flatten(1)).view(batch, 4, 12)
        t = tgt[idx]
        logits = (out[..., :5], out[..., 5:9], out[..., 9:12])
        loss = sum(F.cross_entropy(lg.reshape(-1, lg.shape[-1]), t[..., i].reshape(-1)) for i, lg in enumerate(logits))
        opt.zero_grad()
        loss.backward()
        opt.step()
        acc = float(sum((lg.argmax(-1) == t[..., i]).float().mean() for i, lg in enumerate(logits)) / 3)
    return acc


def train_teacher_lm(lm: TinyLM, seqs: torch.Tensor, steps: int, lr: float, batch: int, gen: torch.Generator) -> float:
    """Train the teacher LM by next-token prediction on (N, L) text sequences; return the last batch's loss.

    Batches are drawn from ``gen`` (on its device).
    """
    check_recipe(steps, batch, lr)
    opt = torch.optim.AdamW(lm.parameters(), lr=lr)
    loss = torch.tensor(0.0)
    for _ in range(steps):
        s = seqs[torch.randint(0, len(seqs), (batch,), generator=gen, device=gen.device)]
        loss = F.cross_entropy(lm(s[:, :-1]).flatten(0, 1), s[:, 1:].flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
    return float(loss.detach())

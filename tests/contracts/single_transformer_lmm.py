"""Contract cases of the single_transformer_lmm row (see README.md here): modules and bad inputs."""

from __future__ import annotations

import math

import numpy as np
import torch

from icml25.papers.single_transformer_lmm import (
    CompositionalLMM,
    DistillHeads,
    EarlyFusionLMM,
    TinyLM,
    TinyViT,
    build_attention_mask,
    current_token_prediction_loss,
    finetune_stage2,
    make_vqa,
    render_scenes,
    stage1_loss,
)

IMG, VOCAB = 1, 12
"""Image placeholder id and vocabulary of the small cases."""


def _ids(batch: int = 2, n_image: int = 4, n_text: int = 3) -> torch.Tensor:
    """(B, n_image + n_text) ids: one image's placeholders, then text ids in [2, VOCAB)."""
    return torch.cat([torch.full((batch, n_image), IMG), torch.randint(2, VOCAB, (batch, n_text))], 1)


def _fusion() -> EarlyFusionLMM:
    return EarlyFusionLMM(VOCAB, d_pre=8, d_post=8, n_pre=1, n_post=1, n_heads=2, patch=8, img=16)


def _compositional() -> CompositionalLMM:
    return CompositionalLMM(TinyViT(d=8, n_layers=1, n_heads=2, patch=8, img=16), TinyLM(VOCAB, 8, 1, 2))


MODULES = {
    "EarlyFusionLMM": lambda: (_fusion(), (_ids(), torch.rand(2, 3, 16, 16), IMG)),
    "CompositionalLMM": lambda: (_compositional(), (_ids(), torch.rand(2, 3, 16, 16), IMG)),
    "TinyViT": lambda: (TinyViT(d=8, n_layers=1, n_heads=2, patch=8, img=16), (torch.rand(2, 3, 16, 16),)),
    "TinyLM": lambda: (TinyLM(VOCAB, 8, 1, 2), (torch.randint(0, VOCAB, (2, 5)),)),
    "DistillHeads": lambda: (DistillHeads(8, 6, 4), (torch.randn(2, 5, 8),)),
}


def _nan_pixels() -> torch.Tensor:
    x = torch.rand(2, 3, 16, 16)
    x[0, 0, 0, 0] = math.nan
    return x


def _data(n: int = 4) -> dict:
    return make_vqa(n, 0, patch=8, img=16)


BAD_INPUTS = [
    ("fusion_zero_width", lambda: EarlyFusionLMM(VOCAB, 0, 8, 1, 1, 2), ValueError),
    ("fusion_negative_blocks", lambda: EarlyFusionLMM(VOCAB, 8, 8, -1, 1, 2), ValueError),
    ("fusion_heads_do_not_split", lambda: EarlyFusionLMM(VOCAB, 8, 8, 1, 1, 3), ValueError),
    ("fusion_patch_does_not_divide", lambda: EarlyFusionLMM(VOCAB, 8, 8, 1, 1, 2, patch=5, img=16), ValueError),
    ("fusion_id_out_of_vocab", lambda: _fusion()(torch.tensor([[2, VOCAB]])), ValueError),
    ("fusion_negative_id", lambda: _fusion()(torch.tensor([[2, -3]])), ValueError),
    ("fusion_float_ids", lambda: _fusion()(torch.tensor([[2.0, 3.0]])), TypeError),
    ("fusion_1d_ids", lambda: _fusion()(torch.tensor([2, 3])), ValueError),
    ("fusion_placeholders_without_pixels", lambda: _fusion()(_ids(), None, IMG), ValueError),
    ("fusion_placeholder_count_mismatch", lambda: _fusion()(_ids(n_image=3), torch.rand(2, 3, 16, 16), IMG),
     ValueError),
    ("fusion_wrong_pixel_shape", lambda: _fusion()(_ids(), torch.rand(2, 3, 8, 8), IMG), ValueError),
    ("fusion_nan_pixels", lambda: _fusion()(_ids(), _nan_pixels(), IMG), ValueError),
    ("fusion_generate_zero_tokens", lambda: _fusion().generate(torch.tensor([[2, 3]]), max_new_tokens=0),
     ValueError),
    ("compositional_count_mismatch", lambda: _compositional()(_ids(n_image=3), torch.rand(2, 3, 16, 16), IMG),
     ValueError),
    ("vit_wrong_pixel_shape", lambda: TinyViT(d=8, n_layers=1, n_heads=2, patch=8, img=16)(torch.rand(2, 16, 16)),
     ValueError),
    ("lm_id_out_of_vocab", lambda: TinyLM(VOCAB, 8, 1, 2)(torch.tensor([[VOCAB + 5]])), ValueError),
    ("mask_1d_types", lambda: build_attention_mask(torch.tensor([1, 1, 0]), [[(0, 2)]]), ValueError),
    ("mask_rows_mismatch", lambda: build_attention_mask(torch.tensor([[1, 1, 0]]), []), ValueError),
    ("mask_span_outside", lambda: build_attention_mask(torch.tensor([[1, 1, 0]]), [[(0, 5)]]), ValueError),
    ("mask_span_negative", lambda: build_attention_mask(torch.tensor([[1, 1, 0]]), [[(-1, 2)]]), ValueError),
    ("render_zero_scenes", lambda: render_scenes(0, np.random.default_rng(0)), ValueError),
    ("render_odd_image", lambda: render_scenes(2, np.random.default_rng(0), img=17), ValueError),
    ("make_vqa_patch_does_not_divide", lambda: make_vqa(4, 0, patch=5, img=32), ValueError),
    ("stage1_unknown_loss", lambda: stage1_loss(_fusion(), DistillHeads(8, 8, 8),
                                                TinyViT(d=8, n_layers=1, n_heads=2, patch=8, img=16),
                                                torch.nn.Embedding(VOCAB, 8), _ids(), torch.rand(2, 3, 16, 16),
                                                IMG, loss="l1"), ValueError),
    ("stage1_unknown_visual_loss", lambda: stage1_loss(_fusion(), DistillHeads(8, 8, 8),
                                                       TinyViT(d=8, n_layers=1, n_heads=2, patch=8, img=16),
                                                       torch.nn.Embedding(VOCAB, 8), _ids(), torch.rand(2, 3, 16, 16),
                                                       IMG, visual_loss="ctp"), ValueError),
    ("ctp_negative_logit_scale", lambda: current_token_prediction_loss(torch.randn(3, 8), torch.randn(VOCAB, 8),
                                                                       torch.tensor([1, 2, 3]), -1.0), ValueError),
    ("ctp_width_mismatch", lambda: current_token_prediction_loss(torch.randn(3, 8), torch.randn(VOCAB, 6),
                                                                 torch.tensor([1, 2, 3])), ValueError),
    ("stage2_negative_steps", lambda: finetune_stage2(_fusion(), _data(), -1, IMG), ValueError),
    ("stage2_zero_batch", lambda: finetune_stage2(_fusion(), _data(), 1, IMG, batch=0), ValueError),
]

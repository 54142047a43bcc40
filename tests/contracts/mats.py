"""Contract cases of the mats row (see README.md here): its modules and its bad inputs."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from icml25.papers.mats import (
    MATS,
    SantaMemory,
    TinyCLAP,
    TinyLM,
    TransformerMapper,
    kmeans,
    make_scenes,
    noise_injection,
)


def _bank(n: int = 40, dim: int = 8) -> torch.Tensor:
    """Unit-norm text embeddings from the global RNG (the battery seeds it differently per instance)."""
    return F.normalize(torch.randn(n, dim), dim=-1)


def _clap() -> TinyCLAP:
    return TinyCLAP(n_audio_features=6, vocab=20, dim=8, hidden=16)


def _mats(use_santa: bool = True) -> MATS:
    clap = _clap()
    santa = SantaMemory(_bank(), n_clusters=4, k=3, noise_variance=0.01) if use_santa else None
    mapper = TransformerMapper(dim_clip=8, dim_embed=16, prefix_len=2, clip_len=2, n_layers=1, n_heads=2)
    return MATS(clap, mapper, TinyLM(vocab=20, d=16, n_layers=1, n_heads=2, max_len=16), use_santa=use_santa,
                santa=santa)


MODULES = {
    "MATS": lambda: (_mats(), (torch.randn(3, 6), torch.randint(3, 20, (3, 4)))),
    "SantaMemory": lambda: (SantaMemory(_bank(), n_clusters=4, k=3, noise_variance=0.01),
                            (F.normalize(torch.randn(5, 8), dim=-1),)),
    "TinyCLAP": lambda: (_clap(), (torch.randn(3, 6), torch.randint(0, 20, (4, 5)))),
    "TinyLM": lambda: (TinyLM(vocab=20, d=16, n_layers=1, n_heads=2, max_len=16), (torch.randn(2, 5, 16),)),
    "TransformerMapper": lambda: (TransformerMapper(8, 16, prefix_len=3, clip_len=2, n_layers=1, n_heads=2),
                                  (torch.randn(4, 8),)),
}


def _nan(x: torch.Tensor) -> torch.Tensor:
    x = x.clone()
    x[0, 0] = math.nan
    return x


BAD_INPUTS = [
    ("noise_injection_negative_variance", lambda: noise_injection(torch.randn(3, 4), -0.1), ValueError),
    ("noise_injection_nan_variance", lambda: noise_injection(torch.randn(3, 4), math.nan), ValueError),
    ("noise_injection_empty_last_dim", lambda: noise_injection(torch.randn(3, 0)), ValueError),
    ("noise_injection_integer_input", lambda: noise_injection(torch.ones(3, 4, dtype=torch.long)), TypeError),
    ("noise_injection_nan_input", lambda: noise_injection(_nan(torch.randn(3, 4))), ValueError),
    ("kmeans_too_many_clusters", lambda: kmeans(torch.randn(5, 2), 6), ValueError),
    ("kmeans_zero_clusters", lambda: kmeans(torch.randn(5, 2), 0), ValueError),
    ("kmeans_negative_iters", lambda: kmeans(torch.randn(5, 2), 2, iters=-1), ValueError),
    ("kmeans_inf_points", lambda: kmeans(torch.tensor([[math.inf, 0.0], [0.0, 1.0]]), 1), ValueError),
    ("kmeans_1d_points", lambda: kmeans(torch.randn(5), 2), ValueError),
    ("santa_empty_bank", lambda: SantaMemory(torch.zeros(0, 4), 1, 1), ValueError),
    ("santa_nan_bank", lambda: SantaMemory(_nan(_bank()), 2, 2), ValueError),
    ("santa_integer_bank", lambda: SantaMemory(torch.ones(10, 4, dtype=torch.long), 2, 2), TypeError),
    ("santa_lam_above_one", lambda: SantaMemory(_bank(), 2, 2, lam=1.5), ValueError),
    ("santa_zero_k", lambda: SantaMemory(_bank(), 2, 0), ValueError),
    ("santa_nan_temperature", lambda: SantaMemory(_bank(), 2, 2, temperature=math.nan), ValueError),
    ("santa_normalize_query_not_bool", lambda: SantaMemory(_bank(), 2, 2, normalize_query="yes"), ValueError),
    ("santa_wrong_query_width", lambda: SantaMemory(_bank(), 2, 2).fuse(torch.randn(3, 7)), ValueError),
    ("santa_nan_query", lambda: SantaMemory(_bank(), 2, 2).fuse(_nan(torch.randn(3, 8))), ValueError),
    ("mapper_zero_layers", lambda: TransformerMapper(8, 16, n_layers=0), ValueError),
    ("mapper_wrong_width", lambda: TransformerMapper(8, 16, 2, 2, 1, 2)(torch.randn(3, 7)), ValueError),
    ("lm_too_long", lambda: TinyLM(d=16, n_layers=1, max_len=4)(torch.randn(1, 5, 16)), ValueError),
    ("lm_token_out_of_vocab", lambda: TinyLM(vocab=20, d=16, n_layers=1).embed(torch.tensor([[20]])), ValueError),
    ("clap_negative_token", lambda: _clap().encode_text(torch.tensor([[-1, 3]])), ValueError),
    ("clap_wrong_audio_width", lambda: _clap().encode_audio(torch.randn(2, 5)), ValueError),
    ("mats_needs_santa", lambda: MATS(_clap(), TransformerMapper(8, 16, 2, 2, 1, 2), TinyLM(vocab=20, d=16),
                                      use_santa=True), ValueError),
    ("mats_prompt_batch_mismatch", lambda: _mats().generate_from_embedding(
        F.normalize(torch.randn(3, 8), dim=-1), torch.randint(3, 20, (2, 1))), ValueError),
    ("mats_zero_new_tokens", lambda: _mats().generate_from_embedding(
        F.normalize(torch.randn(3, 8), dim=-1), torch.tensor([3]), max_new_tokens=0), ValueError),
    ("make_scenes_zero", lambda: make_scenes(0, seed=0), ValueError),
]

"""Contract cases of the resgen row (see README.md here): DigitFeatures, the networks, bad inputs."""

from __future__ import annotations

import math

import numpy as np
import torch

from icml25.papers.resgen import (
    ARRQ,
    DepthSequentialMask,
    DigitFeatures,
    MaskedTokenTrunk,
    MoGParams,
    ResGenTransformer,
    ResidualVQ,
    TokenMaskGIT,
    cumulative_masked_embedding,
    digits_patches,
    forward_mask,
    frechet_distance,
    images_to_patches,
    mask_schedule,
    masked_counts,
    mog_nll,
    patches_to_images,
    sample,
    select_prefix_tokens,
    train_generator,
)

ESTIMATORS = [DigitFeatures(hidden=8, max_iter=30)]

L, D, K, C = 3, 2, 5, 4
"""Positions, depth, codebook size and code dimension of the small networks."""
NET = dict(n_pos=L, depth=D, codebook_size=K, dim=8, n_layers=1, n_heads=2, n_classes=3)


def _tokens(b: int = 2) -> torch.Tensor:
    return torch.randint(0, K, (b, L, D))


def _mask(b: int = 2) -> torch.Tensor:
    return torch.arange(D).expand(b, L, D) >= torch.randint(0, D + 1, (b, L, 1))  # a depth suffix per position


MODULES = {
    "ResGenTransformer": lambda: (ResGenTransformer(**NET, n_mix=2, code_dim=C), (_tokens(), _mask(),
                                                                                 torch.tensor([0, 3]))),
    "MaskedTokenTrunk": lambda: (MaskedTokenTrunk(**NET), (_tokens(), _mask(), torch.tensor([2, 1]))),
    "TokenMaskGIT": lambda: (TokenMaskGIT(**NET), (_tokens(), _mask(), torch.tensor([1, 0]))),
    "DepthSequentialMask": lambda: (DepthSequentialMask(**NET), (_tokens(), _mask())),
    "ARRQ": lambda: (ARRQ(**NET), (_tokens().reshape(2, -1)[:, :4], torch.tensor([0, 2]))),
}


def _rvq() -> ResidualVQ:
    return ResidualVQ(C, D, K).fit(np.random.default_rng(0).normal(size=(50, C)))


def _net() -> ResGenTransformer:
    return ResGenTransformer(**NET, n_mix=2, code_dim=C)


def _mog(b: int = 2) -> MoGParams:
    return MoGParams(torch.zeros(b, L, 2), torch.zeros(b, L, 2, C), torch.zeros(b, L, 2, C))


_X = np.random.default_rng(0).normal(size=(20, 3))

BAD_INPUTS = [
    # networks
    ("trunk_zero_depth", lambda: MaskedTokenTrunk(L, 0, K, 8, 1, 2, 3), ValueError),
    ("trunk_heads_do_not_split", lambda: MaskedTokenTrunk(L, D, K, 8, 1, 3, 3), ValueError),
    ("resgen_zero_min_scale", lambda: ResGenTransformer(**NET, n_mix=2, code_dim=C, min_scale=0.0), ValueError),
    ("resgen_wrong_token_shape", lambda: _net()(torch.zeros(2, L, D + 1, dtype=torch.long),
                                                torch.zeros(2, L, D + 1, dtype=torch.bool)), ValueError),
    ("resgen_token_out_of_codebook", lambda: _net()(torch.full((2, L, D), K), torch.zeros(2, L, D, dtype=torch.bool)),
     ValueError),
    ("resgen_negative_token", lambda: _net()(torch.full((2, L, D), -2), torch.zeros(2, L, D, dtype=torch.bool)),
     ValueError),
    ("resgen_float_tokens", lambda: _net()(torch.zeros(2, L, D), torch.zeros(2, L, D, dtype=torch.bool)), TypeError),
    ("resgen_mask_shape_mismatch", lambda: _net()(_tokens(), torch.zeros(2, L, dtype=torch.bool)), ValueError),
    ("resgen_label_out_of_range", lambda: _net()(_tokens(), _mask(), torch.tensor([0, 4])), ValueError),
    ("resgen_label_count_mismatch", lambda: _net()(_tokens(), _mask(), torch.tensor([0])), ValueError),
    ("arrq_prefix_too_long", lambda: ARRQ(**NET)(torch.zeros(1, L * D, dtype=torch.long)), ValueError),
    ("arrq_token_out_of_codebook", lambda: ARRQ(**NET)(torch.full((1, 2), K)), ValueError),
    ("sample_zero_steps", lambda: sample(_net(), _rvq(), 0, class_labels=torch.tensor([0])), ValueError),
    ("sample_zero_top_p", lambda: sample(_net(), _rvq(), 2, top_p=0.0, class_labels=torch.tensor([0])), ValueError),
    ("sample_no_labels_no_count", lambda: sample(_net(), _rvq(), 2), ValueError),
    ("sample_nan_cfg_scale", lambda: sample(_net(), _rvq(), 2, cfg_scale=math.nan, class_labels=torch.tensor([0])),
     ValueError),
    ("maskgit_zero_temperature", lambda: TokenMaskGIT(**NET).generate(None, 2, temperature=0.0, n_samples=1),
     ValueError),
    ("train_zero_batch", lambda: train_generator(_net(), _tokens(4), torch.zeros(4, dtype=torch.long), _rvq(), 1,
                                                 batch_size=0), ValueError),
    ("train_label_count_mismatch", lambda: train_generator(_net(), _tokens(4), torch.zeros(3, dtype=torch.long),
                                                           _rvq(), 1), ValueError),
    ("train_nan_lr", lambda: train_generator(_net(), _tokens(4), torch.zeros(4, dtype=torch.long), _rvq(), 1,
                                             lr=math.nan), ValueError),
    # masking and sampling helpers
    ("schedule_ratio_above_one", lambda: mask_schedule(1.5), ValueError),
    ("schedule_unknown", lambda: mask_schedule(0.5, "square"), ValueError),
    ("forward_mask_2d_tokens", lambda: forward_mask(torch.zeros(2, 3, dtype=torch.long), 0.5), ValueError),
    ("forward_mask_ratio_count", lambda: forward_mask(_tokens(), torch.tensor([0.5, 0.5, 0.5])), ValueError),
    ("masked_counts_zero_steps", lambda: masked_counts(0, 10), ValueError),
    ("prefix_shape_mismatch", lambda: select_prefix_tokens(torch.zeros(2, L, D), torch.ones(2, L, D + 1, dtype=bool),
                                                           1), ValueError),
    ("prefix_negative_reveal", lambda: select_prefix_tokens(torch.zeros(2, L, D), torch.ones(2, L, D, dtype=bool),
                                                            -1), ValueError),
    ("mog_nll_shape_mismatch", lambda: mog_nll(_mog(), torch.zeros(2, L, C + 1)), ValueError),
    ("cumulative_shape_mismatch", lambda: cumulative_masked_embedding(_tokens(), _mask(1), _rvq()), ValueError),
    # RVQ and data
    ("rvq_zero_codebook", lambda: ResidualVQ(C, D, 0), ValueError),
    ("rvq_nan_fit", lambda: ResidualVQ(C, 1, 2).fit(np.full((10, C), np.nan)), ValueError),
    ("rvq_unfitted_encode", lambda: ResidualVQ(C, D, K).encode(np.zeros((2, C))), ValueError),
    ("rvq_token_out_of_codebook", lambda: _rvq().decode(torch.full((2, D), K)), ValueError),
    ("rvq_wrong_vector_width", lambda: _rvq().encode(np.zeros((2, C + 1))), ValueError),
    ("digits_bad_patch", lambda: digits_patches(3), ValueError),
    ("images_to_patches_bad_patch", lambda: images_to_patches(np.zeros((2, 8, 8)), 3), ValueError),
    ("images_to_patches_2d", lambda: images_to_patches(np.zeros((8, 8)), 2), ValueError),
    ("patches_to_images_wrong_count", lambda: patches_to_images(np.zeros((2, 15, 4))), ValueError),
    ("frechet_nan", lambda: frechet_distance(np.full((5, 3), np.nan), np.zeros((5, 3))), ValueError),
    ("frechet_width_mismatch", lambda: frechet_distance(np.zeros((5, 3)), np.zeros((5, 4))), ValueError),
    ("digit_features_unfitted", lambda: DigitFeatures().transform(_X), __import__("sklearn").exceptions.NotFittedError),
    ("digit_features_nan", lambda: DigitFeatures(max_iter=5).fit(np.full((20, 3), np.nan), np.arange(20) % 2),
     ValueError),
    ("digit_features_label_count", lambda: DigitFeatures(max_iter=5).fit(_X, np.arange(19) % 2), ValueError),
    ("digit_features_width_mismatch", lambda: DigitFeatures(max_iter=5).fit(_X, np.arange(20) % 2).transform(
        np.zeros((2, 4))), ValueError),
    ("digit_features_zero_hidden", lambda: DigitFeatures(hidden=0).fit(_X, np.arange(20) % 2), ValueError),
]

"""Contract cases of the ibfs row (see README.md here): its module and its bad inputs."""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from icml25.papers.ibfs import (
    EpisodeSampler,
    GlyphClasses,
    IBFSSearch,
    SearchSpace,
    StageNet,
    cka,
    fomaml_evaluate,
    fomaml_train,
    gaussian_kernel,
    glyph_few_shot,
    grad_norm_score,
    ib_expressivity,
    jacobian_entropy_score,
    rfs_evaluate,
    rfs_train,
    spectral_entropy,
    synflow_score,
)

ARCH = (("conv3x3", 4), ("dwsep3x3", 6), ("identity", 6))

MODULES = {
    "StageNet": lambda: (StageNet(ARCH, n_way=3), (torch.randn(4, 1, 8, 8),)),
}


def _net() -> StageNet:
    return StageNet(ARCH, n_way=3)


def _support(n: int = 6) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(n, 1, 8, 8), torch.arange(n) % 3


def _with_nan(x: torch.Tensor) -> torch.Tensor:
    x = x.clone()
    x.view(-1)[0] = math.nan
    return x


_TRAIN, _TEST = glyph_few_shot(n_train_classes=6, n_test_classes=6, n_way=3, k_shot=1, n_query=2)

BAD_INPUTS = [
    ("kernel_one_row", lambda: gaussian_kernel(torch.randn(1, 4)), ValueError),
    ("kernel_negative_sigma", lambda: gaussian_kernel(torch.randn(3, 4), sigma=-1.0), ValueError),
    ("kernel_nan_sigma", lambda: gaussian_kernel(torch.randn(3, 4), sigma=math.nan), ValueError),
    ("cka_shape_mismatch", lambda: cka(torch.eye(3), torch.eye(4)), ValueError),
    ("cka_not_square", lambda: cka(torch.ones(3, 4), torch.ones(3, 4)), ValueError),
    ("ib_row_mismatch", lambda: ib_expressivity(_net(), torch.randn(6, 1, 8, 8), torch.arange(5) % 3), ValueError),
    ("ib_one_example", lambda: ib_expressivity(_net(), *_support(1)), ValueError),
    ("ib_two_adapt_steps", lambda: ib_expressivity(_net(), *_support(), adapt_steps=2), ValueError),
    ("ib_no_layers", lambda: ib_expressivity(nn.Flatten(), *_support()), ValueError),
    ("ib_unknown_layer", lambda: ib_expressivity(_net(), *_support(), layers=["stages.9"]), ValueError),
    ("ib_nan_beta", lambda: ib_expressivity(_net(), *_support(), beta=math.nan), ValueError),
    ("ib_nan_inputs", lambda: ib_expressivity(_net(), _with_nan(_support()[0]), _support()[1]), ValueError),
    ("ib_negative_label", lambda: ib_expressivity(_net(), _support()[0], torch.tensor([0, 1, 2, 0, 1, -1])),
     ValueError),
    ("ib_float_labels", lambda: ib_expressivity(_net(), _support()[0], torch.rand(6)), TypeError),
    ("synflow_empty_shape", lambda: synflow_score(_net(), ()), ValueError),
    ("synflow_zero_side", lambda: synflow_score(_net(), (1, 0, 8)), ValueError),
    ("grad_norm_row_mismatch", lambda: grad_norm_score(_net(), torch.randn(4, 1, 8, 8), torch.arange(3)), ValueError),
    ("space_zero_stages", lambda: SearchSpace(n_stages=0), ValueError),
    ("space_unknown_op", lambda: SearchSpace(ops=("conv7x7",)), ValueError),
    ("space_zero_width", lambda: SearchSpace(widths=(0, 8)), ValueError),
    ("space_sample_zero", lambda: SearchSpace().sample(0, np.random.default_rng(0)), ValueError),
    ("space_build_wrong_length", lambda: SearchSpace(n_stages=4).build(ARCH, 3), ValueError),
    ("stagenet_unknown_op", lambda: StageNet((("conv7x7", 4),), 3), ValueError),
    ("stagenet_zero_way", lambda: StageNet(ARCH, 0), ValueError),
    ("stagenet_empty_arch", lambda: StageNet((), 3), ValueError),
    ("stagenet_zero_width", lambda: StageNet((("conv3x3", 0),), 3), ValueError),
    ("search_zero_episodes", lambda: IBFSSearch(SearchSpace(), n_episodes=0), ValueError),
    ("search_nan_beta", lambda: IBFSSearch(SearchSpace(), beta=math.nan), ValueError),
    ("glyphs_zero_classes", lambda: GlyphClasses(0), ValueError),
    ("glyphs_negative_jitter", lambda: GlyphClasses(3, jitter=-0.1), ValueError),
    ("glyphs_nan_noise", lambda: GlyphClasses(3, noise=math.nan), ValueError),
    ("glyphs_class_out_of_range", lambda: GlyphClasses(3).render(np.array([3]), np.random.default_rng(0)), ValueError),
    ("episodes_too_many_ways", lambda: EpisodeSampler(GlyphClasses(4), np.arange(4), n_way=5), ValueError),
    ("few_shot_zero_test_classes", lambda: glyph_few_shot(n_test_classes=0), ValueError),
    ("fomaml_negative_iters", lambda: fomaml_train(_net(), _TRAIN, iters=-1), ValueError),
    ("fomaml_zero_episodes", lambda: fomaml_evaluate(_net(), _TEST, episodes=0), ValueError),
    ("je_nan_inputs", lambda: jacobian_entropy_score(_net(), _with_nan(_support()[0])), ValueError),
    ("je_not_a_batch", lambda: jacobian_entropy_score(nn.Linear(3, 1), torch.randn(3)), ValueError),
    ("je_no_parameters", lambda: jacobian_entropy_score(nn.Flatten(), torch.randn(3, 2)), ValueError),
    ("spectral_entropy_not_square", lambda: spectral_entropy(torch.ones(2, 3)), ValueError),
    ("search_unknown_score", lambda: IBFSSearch(SearchSpace(), score="ntk"), ValueError),
    ("search_je_with_adapt", lambda: IBFSSearch(SearchSpace(), adapt_steps=1), ValueError),
    ("rfs_negative_steps", lambda: rfs_train(_net(), _TRAIN, steps=-1), ValueError),
    ("rfs_zero_batch", lambda: rfs_train(_net(), _TRAIN, steps=1, batch_size=0), ValueError),
    ("rfs_not_episode_sampler", lambda: rfs_train(_net(), object(), steps=1), ValueError),
    ("rfs_zero_episodes", lambda: rfs_evaluate(_net(), _TEST, episodes=0), ValueError),
]

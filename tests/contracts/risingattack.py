"""Contract cases of risingattack: the two classifiers, the ordering constraints and the four attacks."""

import math

import numpy as np
import torch

from icml25.papers.risingattack import (
    MLP,
    CWTopK,
    QuadAttack,
    RisingAttack,
    SmallCNN,
    TopKPGD,
    adversarial_jacobian,
    attack_set,
    condensed_constraints,
    figure_of_merit,
    min_norm_qp,
    ordered_topk_success,
    ordering_margins,
    ordering_matrix,
    perturbation_norms,
    template_dataset,
    topk_hinge_loss,
    train_classifier,
)

MODULES = {
    "MLP": lambda: (MLP((1, 4, 4), 5, hidden=8), (torch.rand(3, 1, 4, 4),)),
    "SmallCNN": lambda: (SmallCNN((1, 8, 8), 5, width=4, feat_dim=8), (torch.rand(3, 1, 8, 8),)),
}

C = 5
X = torch.rand(4, 1, 4, 4)
Y = torch.arange(4) % C
T2 = torch.tensor([[1, 2], [0, 2], [3, 4], [4, 0]])
LOGITS = torch.randn(4, C)


def _mlp():
    torch.manual_seed(0)
    return MLP((1, 4, 4), C, hidden=8).eval()


BAD_INPUTS = [
    # models and data
    ("mlp.one_class", lambda: MLP((1, 4, 4), 1), ValueError),
    ("mlp.zero_hidden", lambda: MLP((1, 4, 4), C, hidden=0), ValueError),
    ("mlp.empty_input_shape", lambda: MLP((1, 0, 4), C), ValueError),
    ("mlp.forward_wrong_shape", lambda: _mlp()(torch.rand(2, 1, 5, 5)), ValueError),
    ("cnn.image_too_small", lambda: SmallCNN((1, 3, 3), C), ValueError),
    ("cnn.zero_width", lambda: SmallCNN((1, 8, 8), C, width=0), ValueError),
    ("cnn.forward_wrong_channels", lambda: SmallCNN((1, 8, 8), C, width=2, feat_dim=4)(torch.rand(2, 3, 8, 8)),
     ValueError),
    ("templates.one_class", lambda: template_dataset(n_classes=1), ValueError),
    ("templates.negative_noise", lambda: template_dataset(noise=-0.1), ValueError),
    ("train.negative_epochs", lambda: train_classifier(_mlp(), X, Y, epochs=-1), ValueError),
    ("train.length_mismatch", lambda: train_classifier(_mlp(), X, Y[:3], epochs=1), ValueError),
    ("train.float_labels", lambda: train_classifier(_mlp(), X, Y.float(), epochs=1), TypeError),
    ("train.zero_lr", lambda: train_classifier(_mlp(), X, Y, epochs=1, lr=0.0), ValueError),
    ("attack_set.max_k_too_large", lambda: attack_set(_mlp(), X, Y, 1, C, C), ValueError),
    ("attack_set.too_many_images", lambda: attack_set(_mlp(), X, Y, 100, C, 2), ValueError),
    ("attack_set.label_out_of_range", lambda: attack_set(_mlp(), X, torch.full((4,), C), 1, C, 2), ValueError),
    # ordering constraints
    ("ordering.duplicate_targets", lambda: ordering_matrix([1, 1], C), ValueError),
    ("ordering.float_targets", lambda: ordering_matrix([1.0, 2.0], C), ValueError),
    ("ordering.target_out_of_range", lambda: ordering_matrix([1, C], C), ValueError),
    ("ordering.reduced_without_logits", lambda: ordering_matrix([1, 2], C, reduced=2), ValueError),
    ("condensed.unknown_aggregate", lambda: condensed_constraints(T2, LOGITS, aggregate="mean"), ValueError),
    ("condensed.negative_competitors", lambda: condensed_constraints(T2, LOGITS, n_competitors=-1), ValueError),
    ("condensed.row_mismatch", lambda: condensed_constraints(T2[:2], LOGITS), ValueError),
    ("success.logits_1d", lambda: ordered_topk_success(torch.randn(C), T2[:1]), ValueError),
    ("success.row_mismatch", lambda: ordered_topk_success(LOGITS, T2[:2]), ValueError),
    ("margins.numpy_targets_row_mismatch", lambda: ordering_margins(LOGITS, np.array([[1, 2]])), ValueError),
    ("hinge.nan_margin", lambda: topk_hinge_loss(LOGITS, T2, margin=math.nan), ValueError),
    ("hinge.logits_1d", lambda: topk_hinge_loss(torch.randn(C), T2[:1]), ValueError),
    ("jacobian.unbatched_x", lambda: adversarial_jacobian(_mlp(), torch.rand(16), torch.ones(2, C)), ValueError),
    ("jacobian.D_rows_mismatch", lambda: adversarial_jacobian(_mlp(), X, torch.ones(3, 2, C)), ValueError),
    ("jacobian.zero_chunk", lambda: adversarial_jacobian(_mlp(), X, torch.ones(2, C), chunk_size=0), ValueError),
    ("qp.shape_mismatch", lambda: min_norm_qp(np.ones((3, 2)), np.ones(2)), ValueError),
    ("qp.unknown_solver", lambda: min_norm_qp(np.ones((3, 2)), np.ones(3), solver="cvx"), ValueError),
    ("qp.nan_matrix", lambda: min_norm_qp(np.full((3, 2), np.nan), np.ones(3)), ValueError),
    ("norms.scalar", lambda: perturbation_norms(torch.tensor(1.0)), ValueError),
    ("fom.asr_above_one", lambda: figure_of_merit(1.5, [1, 1, 1], [1, 1, 1]), ValueError),
    ("fom.norms_length", lambda: figure_of_merit(0.5, [1, 1], [1, 1, 1]), ValueError),
    ("fom.zero_norm", lambda: figure_of_merit(0.5, [0, 1, 1], [1, 1, 1]), ValueError),
    # attacks
    ("rising.zero_K", lambda: RisingAttack(_mlp(), 0), ValueError),
    ("rising.negative_margin", lambda: RisingAttack(_mlp(), 2, margin=-1.0), ValueError),
    ("rising.zero_step", lambda: RisingAttack(_mlp(), 2, step=0.0), ValueError),
    ("rising.unknown_solver", lambda: RisingAttack(_mlp(), 2, qp_solver="cvx"), ValueError),
    ("rising.reversed_clip", lambda: RisingAttack(_mlp(), 2, clip=(1.0, 0.0)), ValueError),
    ("rising.zero_chunk", lambda: RisingAttack(_mlp(), 2, chunk_size=0), ValueError),
    ("rising.bad_reduced", lambda: RisingAttack(_mlp(), 2, reduced=0), ValueError),
    ("rising.unknown_constraints", lambda: RisingAttack(_mlp(), 2, constraints="most"), ValueError),
    ("rising.reduced_with_condensed", lambda: RisingAttack(_mlp(), 2, reduced=2), ValueError),
    ("rising.negative_competitors", lambda: RisingAttack(_mlp(), 2, n_competitors=-2), ValueError),
    ("rising.unknown_aggregate", lambda: RisingAttack(_mlp(), 2, aggregate="mean"), ValueError),
    ("rising.nan_image", lambda: RisingAttack(_mlp(), 2)(torch.full_like(X, math.nan), T2), ValueError),
    ("rising.targets_wrong_K", lambda: RisingAttack(_mlp(), 3)(X, T2), ValueError),
    ("quad.model_without_head", lambda: QuadAttack(lambda x: x, 2), ValueError),
    ("quad.zero_lr", lambda: QuadAttack(_mlp(), 2, lr=0.0), ValueError),
    ("quad.coef_decay_above_one", lambda: QuadAttack(_mlp(), 2, coef_decay=1.5), ValueError),
    ("quad.zero_coef", lambda: QuadAttack(_mlp(), 2, coef=0.0), ValueError),
    ("quad.negative_warmup", lambda: QuadAttack(_mlp(), 2, warmup_iters=-1), ValueError),
    ("quad.negative_init_std", lambda: QuadAttack(_mlp(), 2, init_std=-1.0), ValueError),
    ("cw.negative_c", lambda: CWTopK(_mlp(), 2, c=-1.0), ValueError),
    ("cw.int_images", lambda: CWTopK(_mlp(), 2)(torch.ones(4, 1, 4, 4, dtype=torch.long), T2), ValueError),
    ("pgd.zero_eps", lambda: TopKPGD(_mlp(), 2, eps=0.0), ValueError),
    ("pgd.zero_iterations", lambda: TopKPGD(_mlp(), 2, max_iter=0), ValueError),
]

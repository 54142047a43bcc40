"""Contract cases of certified_unlearning: accountants, parameter primitives and the unlearning algorithms.

No estimators; the exported ``mlp`` is a factory of a plain ``nn.Sequential`` (no module class of its own).
"""

import math

import numpy as np
import torch

from icml25.papers.certified_unlearning import (
    Certificate,
    TensorBatches,
    accuracy,
    add_gaussian,
    clip_grad_global,
    digits_split,
    dp_sgd_noise_multiplier,
    finetune,
    global_norm,
    group_privacy,
    group_privacy_per_example_target,
    hockey_stick_gauss,
    mia_auc,
    mlp,
    model_clip_delta_path,
    output_perturbation,
    output_perturbation_sigma,
    pabi_renyi,
    pabi_sigma,
    pabi_steps,
    project_l2,
    rdp_to_dp,
    renyi_target,
    renyi_to_dp,
    renyi_to_dp_released_code,
    retrain,
    subsampled_gaussian_rdp,
    train_dp_sgd,
    unlearn_gradient_clipping,
    unlearn_model_clipping,
)

X = torch.randn(8, 4)
Y = torch.arange(8) % 3
PARAMS = [torch.ones(3), torch.ones(2, 2)]


def _model():
    torch.manual_seed(0)
    return mlp(4, 5, 3)


def _loader():
    return TensorBatches(X, Y, 4, seed=0)


def _nan_x():
    x = X.clone()
    x[0, 0] = math.nan
    return x


BAD_INPUTS = [
    # accountants
    ("pabi_steps.zero_C0", lambda: pabi_steps(0.0, 1.0, 0.1, 0.0), ValueError),
    ("pabi_steps.no_contraction", lambda: pabi_steps(1.0, 1.0, 0.5, 2.0), ValueError),
    ("pabi_steps.nan_eta", lambda: pabi_steps(1.0, 1.0, math.nan, 0.0), ValueError),
    ("pabi_renyi.length_mismatch", lambda: pabi_renyi(1.0, [0.9, 0.9], [0.1], [1.0, 1.0]), ValueError),
    ("pabi_renyi.zero_sigma", lambda: pabi_renyi(1.0, [0.9], [0.1], [0.0]), ValueError),
    ("pabi_renyi.empty", lambda: pabi_renyi(1.0, [], [], []), ValueError),
    ("pabi_renyi.nan_diam", lambda: pabi_renyi(math.nan, [0.9], [0.1], [1.0]), ValueError),
    ("pabi_sigma.zero_steps", lambda: pabi_sigma(1.0, 1.0, 0.1, 0.1, 0, 1.0), ValueError),
    ("pabi_sigma.unknown_schedule", lambda: pabi_sigma(1.0, 1.0, 0.1, 0.1, 3, 1.0, schedule="cosine"), ValueError),
    ("renyi_to_dp.delta_one", lambda: renyi_to_dp(1.0, 1.0), ValueError),
    ("renyi_to_dp.alpha_below_one", lambda: renyi_to_dp(1.0, 1e-5, alphas=np.array([0.5, 2.0])), ValueError),
    ("renyi_to_dp.negative_level", lambda: renyi_to_dp(-1.0, 1e-5), ValueError),
    ("released_code.nan_delta", lambda: renyi_to_dp_released_code(1.0, math.nan), ValueError),
    ("released_code.negative_level", lambda: renyi_to_dp_released_code(-1.0, 1e-5), ValueError),
    ("renyi_target.zero_epsilon", lambda: renyi_target(0.0, 1e-5), ValueError),
    ("hockey_stick.negative_r", lambda: hockey_stick_gauss(1.0, -1.0), ValueError),
    ("hockey_stick.nan_r", lambda: hockey_stick_gauss(1.0, math.nan), ValueError),
    ("delta_path.delta0_zero", lambda: model_clip_delta_path(1.0, 0.0, 1.0, 3), ValueError),
    ("delta_path.negative_epsilon", lambda: model_clip_delta_path(-1.0, 1.0, 1.0, 3), ValueError),
    ("delta_path.float_steps", lambda: model_clip_delta_path(1.0, 1.0, 1.0, 2.5), ValueError),
    ("op_sigma.zero_C0", lambda: output_perturbation_sigma(0.0, 1.0, 1e-5), ValueError),
    ("rdp.q_zero", lambda: subsampled_gaussian_rdp(0.0, 1.0, 10), ValueError),
    ("rdp.fractional_order", lambda: subsampled_gaussian_rdp(0.1, 1.0, 10, orders=[2.5]), ValueError),
    ("rdp.zero_noise", lambda: subsampled_gaussian_rdp(0.1, 0.0, 10), ValueError),
    ("rdp_to_dp.shape_mismatch", lambda: rdp_to_dp([2, 3], [0.1], 1e-5), ValueError),
    ("rdp_to_dp.negative_rdp", lambda: rdp_to_dp([2, 3], [0.1, -0.1], 1e-5), ValueError),
    ("group_privacy.zero_group", lambda: group_privacy(0.1, 1e-5, 0), ValueError),
    ("group_privacy.negative_epsilon", lambda: group_privacy(-0.1, 1e-5, 3), ValueError),
    ("group_target.float_group", lambda: group_privacy_per_example_target(1.0, 1e-5, 2.5), ValueError),
    ("dp_sgd_noise.zero_steps", lambda: dp_sgd_noise_multiplier(1.0, 1e-5, 0.1, 0), ValueError),
    ("dp_sgd.nan_features", lambda: train_dp_sgd(_model(), _nan_x(), Y, epochs=1, batch_size=4, clip=1.0,
                                                 epsilon=1.0, delta=1e-5), ValueError),
    ("dp_sgd.zero_clip", lambda: train_dp_sgd(_model(), X, Y, epochs=1, batch_size=4, clip=0.0, epsilon=1.0,
                                              delta=1e-5), ValueError),
    ("certificate.unknown_method", lambda: Certificate("magic", 1.0, 1e-5, 1.0, 1e-5).recompute(), ValueError),
    # parameter-vector primitives
    ("project_l2.zero_radius", lambda: project_l2(PARAMS, 0.0), ValueError),
    ("clip_grad.nan_radius", lambda: clip_grad_global(PARAMS, math.nan), ValueError),
    ("add_gaussian.negative_sigma", lambda: add_gaussian(PARAMS, -1.0), ValueError),
    ("global_norm.not_tensors", lambda: global_norm([1.0, 2.0]), TypeError),
    # data and evaluation
    ("batches.length_mismatch", lambda: TensorBatches(X, Y[:5], 4, seed=0), ValueError),
    ("batches.nan_features", lambda: TensorBatches(_nan_x(), Y, 4, seed=0), ValueError),
    ("batches.zero_batch_size", lambda: TensorBatches(X, Y, 0, seed=0), ValueError),
    ("mlp.zero_hidden", lambda: mlp(4, 0, 3), ValueError),
    ("digits_split.forget_fraction_one", lambda: digits_split(0, forget_fraction=1.0), ValueError),
    ("digits_split.test_fraction_zero", lambda: digits_split(0, test_fraction=0.0), ValueError),
    ("accuracy.length_mismatch", lambda: accuracy(_model(), X, Y[:5]), ValueError),
    ("mia_auc.empty_members", lambda: mia_auc(_model(), X[:0], Y[:0], X, Y), ValueError),
    # unlearning
    ("gc.delta_zero", lambda: unlearn_gradient_clipping(_model(), _loader(), C0=1.0, C1=1.0, eta=0.1, lam=0.0,
                                                          epsilon=1.0, delta=0.0), ValueError),
    ("gc.nan_batch", lambda: unlearn_gradient_clipping(_model(), [(_nan_x(), Y)], C0=1.0, C1=1.0, eta=0.5,
                                                         lam=0.0, epsilon=1.0, delta=1e-5), ValueError),
    ("gc.empty_loader", lambda: unlearn_gradient_clipping(_model(), [], C0=1.0, C1=1.0, eta=0.5, lam=0.0,
                                                            epsilon=1.0, delta=1e-5), ValueError),
    ("mc.zero_sigma", lambda: unlearn_model_clipping(_model(), _loader(), C2=1.0, sigma=0.0, eta=0.1, lam=0.0,
                                                       epsilon=1.0, delta=1e-5), ValueError),
    ("mc.sigma0_without_C0", lambda: unlearn_model_clipping(_model(), _loader(), C2=1.0, sigma=1.0, eta=0.1,
                                                              lam=0.0, epsilon=1.0, delta=1e-5, sigma0=1.0),
     ValueError),
    ("mc.before_projection_without_C1", lambda: unlearn_model_clipping(_model(), _loader(), C2=1.0, sigma=1.0,
                                                                         eta=0.1, lam=0.0, epsilon=1.0, delta=1e-5,
                                                                         noise_before_projection=True), ValueError),
    ("op.infinite_epsilon", lambda: output_perturbation(_model(), C0=1.0, epsilon=math.inf, delta=1e-5), ValueError),
    ("finetune.negative_steps", lambda: finetune(_model(), _loader(), -1), ValueError),
    ("finetune.zero_lr", lambda: finetune(_model(), _loader(), 2, max_lr=0.0), ValueError),
    ("retrain.factory_not_callable", lambda: retrain(_model(), _loader(), 2), TypeError),
]

"""Certified Unlearning for Neural Networks (Koloskova, Allouah, Jha, Guerraoui, Koyejo; ICML 2025, arXiv 2506.06985).

Noisy fine-tuning on the retain set, with gradient clipping (privacy amplification by iteration) or model
clipping (contraction of the hockey-stick divergence), gives (epsilon, delta)-unlearning for any loss; a
:class:`Certificate` holds every constant so the guarantee can be recomputed.
"""

from icml25.papers.certified_unlearning.digits import TensorBatches, accuracy, digits_split, mia_auc, mlp
from icml25.papers.certified_unlearning.unlearning import (
    DP_SGD_ORDERS,
    NOISY_METHODS,
    Certificate,
    UnlearningConfig,
    add_gaussian,
    clip_grad_global,
    dp_sgd_noise_multiplier,
    finetune,
    global_norm,
    group_privacy,
    group_privacy_per_example_target,
    hockey_stick_gauss,
    model_clip_delta_path,
    model_clip_radius,
    noisy_unlearning,
    output_perturbation,
    output_perturbation_sigma,
    pabi_renyi,
    pabi_sigma,
    pabi_steps,
    per_example_grads,
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

__all__ = [
    "Certificate", "DP_SGD_ORDERS", "NOISY_METHODS", "TensorBatches", "UnlearningConfig", "accuracy", "add_gaussian",
    "clip_grad_global", "digits_split", "dp_sgd_noise_multiplier", "finetune", "global_norm", "group_privacy",
    "group_privacy_per_example_target", "hockey_stick_gauss", "mia_auc", "mlp", "model_clip_delta_path",
    "model_clip_radius", "noisy_unlearning", "output_perturbation", "output_perturbation_sigma", "pabi_renyi",
    "pabi_sigma", "pabi_steps", "per_example_grads", "project_l2", "rdp_to_dp", "renyi_target", "renyi_to_dp",
    "renyi_to_dp_released_code", "retrain", "subsampled_gaussian_rdp", "train_dp_sgd", "unlearn_gradient_clipping",
    "unlearn_model_clipping",
]

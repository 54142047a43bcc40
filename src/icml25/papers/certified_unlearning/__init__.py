"""Certified Unlearning for Neural Networks (Koloskova, Allouah, Jha, Guerraoui, Koyejo; ICML 2025, arXiv 2506.06985).

Noisy fine-tuning on the retain set, with gradient clipping (privacy amplification by iteration) or model
clipping (contraction of the hockey-stick divergence), gives (epsilon, delta)-unlearning for any loss; a
:class:`Certificate` holds every constant so the guarantee can be recomputed.
"""

from icml25.papers.certified_unlearning.repro import TensorBatches, accuracy, digits_split, mia_auc, mlp
from icml25.papers.certified_unlearning.unlearning import (
    Certificate,
    add_gaussian,
    clip_grad_global,
    finetune,
    global_norm,
    hockey_stick_gauss,
    model_clip_delta_path,
    output_perturbation,
    output_perturbation_sigma,
    pabi_renyi,
    pabi_sigma,
    pabi_steps,
    project_l2,
    renyi_target,
    renyi_to_dp,
    renyi_to_dp_released_code,
    retrain,
    unlearn_gradient_clipping,
    unlearn_model_clipping,
)

__all__ = [
    "Certificate", "TensorBatches", "accuracy", "add_gaussian", "clip_grad_global", "digits_split", "finetune",
    "global_norm", "hockey_stick_gauss", "mia_auc", "mlp", "model_clip_delta_path", "output_perturbation",
    "output_perturbation_sigma", "pabi_renyi", "pabi_sigma", "pabi_steps", "project_l2", "renyi_target",
    "renyi_to_dp", "renyi_to_dp_released_code", "retrain", "unlearn_gradient_clipping", "unlearn_model_clipping",
]

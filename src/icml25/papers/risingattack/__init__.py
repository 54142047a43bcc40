"""RisingAttacK: ordered top-K adversarial attacks from the right singular vectors of the adversarial
Jacobian (Paniagua, Savadikar & Wu, ICML 2025).

Sequential QP in image space: each step linearises the condensed ordering constraints (K + M rows:
target chain, M top competitors, one aggregate), takes the thin SVD of the adversarial Jacobian
A = D dz/dx, and moves along the minimum-norm combination V_r alpha of its right singular vectors.
Baselines: QuadAttacK (feature-space QP, released settings), C&W top-K, top-K PGD.
The paper's data (ImageNet-1k validation images, torchvision weights) from a user's files: ``imagenet``.
"""

from icml25.papers.risingattack.attacks import RisingAttack, RisingAttackConfig, adversarial_jacobian, min_norm_qp
from icml25.papers.risingattack.baselines import CWTopK, QuadAttack, TopKPGD
from icml25.papers.risingattack.data import (
    MLP,
    SmallCNN,
    attack_set,
    digits_dataset,
    template_dataset,
    train_classifier,
)
from icml25.papers.risingattack.imagenet import list_imagenet_val, load_classifier, load_imagenet_images
from icml25.papers.risingattack.ordering import (
    condensed_constraints,
    figure_of_merit,
    ordered_topk_success,
    ordering_margins,
    ordering_matrices,
    ordering_matrix,
    perturbation_norms,
    topk_hinge_loss,
)

__all__ = ["CWTopK", "MLP", "QuadAttack", "RisingAttack", "RisingAttackConfig", "SmallCNN",
           "TopKPGD", "adversarial_jacobian", "attack_set", "condensed_constraints", "digits_dataset",
           "figure_of_merit", "list_imagenet_val", "load_classifier", "load_imagenet_images", "min_norm_qp",
           "ordered_topk_success", "ordering_margins", "ordering_matrices", "ordering_matrix", "perturbation_norms",
           "template_dataset", "topk_hinge_loss", "train_classifier"]

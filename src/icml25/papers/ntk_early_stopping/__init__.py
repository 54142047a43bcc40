"""Early-stopped GD on over-parameterised two-layer ReLU nets vs. NTK kernel GD.

Yingzhen Yang, "Sharp Generalization for Nonparametric Regression by Over-Parameterized
Neural Networks: A Distribution-Free Analysis in Spherical Covariate", ICML 2025
(OpenReview fPOkujQBVb; arXiv 2411.02904 with Ping Li). Theory paper: GD stopped at
T_hat = Theta(eps_n^{-2}) reaches risk O(eps_n^2), like early-stopped kernel GD with the
NTK, for any covariate distribution on the sphere.
"""

from icml25.papers.ntk_early_stopping.kernels import (
    DISTRIBUTIONS,
    KernelGD,
    check_sphere,
    critical_radius,
    data_dependent_stopping_time,
    kernel_complexity,
    kernel_gd_iterative,
    make_rkhs_target,
    ntk_relu,
    sample_sphere,
    theory_stopping_time,
)
from icml25.papers.ntk_early_stopping.network import (
    STOP_RULES,
    GDConfig,
    TwoLayerReLUGD,
    empirical_ntk,
    gradient_descent,
    init_two_layer,
    loss_gradient,
    network_output,
    network_predictions_at,
)

__all__ = [
    "DISTRIBUTIONS", "STOP_RULES", "GDConfig", "KernelGD", "TwoLayerReLUGD", "check_sphere", "critical_radius",
    "data_dependent_stopping_time", "empirical_ntk", "gradient_descent", "init_two_layer", "kernel_complexity",
    "kernel_gd_iterative", "loss_gradient", "make_rkhs_target", "network_output", "network_predictions_at", "ntk_relu",
    "sample_sphere", "theory_stopping_time",
]

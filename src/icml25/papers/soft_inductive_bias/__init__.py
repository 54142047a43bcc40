"""Soft inductive bias: the empirical demonstrations of Wilson, "Position: Deep Learning is Not So Mysterious or
Different" (ICML 2025, arXiv 2503.02113).

A flexible hypothesis space plus a soft preference for simple solutions (order-dependent polynomial
penalties, GP priors, minimum-norm solutions, compressibility) reproduces benign overfitting, double descent
and the success of over-parametrisation; countable-hypothesis and PAC-Bayes bounds describe them.
"""

from icml25.papers.soft_inductive_bias.bounds import (
    gaussian_kl,
    kl_bernoulli,
    kl_inverse,
    occam_bound,
    occam_kl_bound,
    pac_bayes_kl_bound,
    pac_bayes_sqrt_bound,
)
from icml25.papers.soft_inductive_bias.compression import (
    CompressionBoundConfig,
    SubspaceMLP,
    adaptive_arithmetic_code_bits,
    quantise_uniform,
    subspace_compression_bound,
    train_subspace,
)
from icml25.papers.soft_inductive_bias.gp import (
    GPStudyConfig,
    centred_one_hot,
    corrupt_labels,
    gibbs_error,
    gp_label_noise_study,
    gp_log_marginal_likelihood,
    gp_posterior_kl,
    median_heuristic_lengthscale,
    rbf_kernel,
)
from icml25.papers.soft_inductive_bias.polynomial import (
    OrderDependentPolyRegressor,
    SoftPolyConfig,
    order_dependent_ridge_weights,
    polynomial_features,
)
from icml25.papers.soft_inductive_bias.random_features import (
    arccos_kernel,
    draw_feature_weights,
    effective_dimensionality,
    min_norm_least_squares,
    random_features_double_descent,
    relu_random_features,
)

__all__ = [
    "CompressionBoundConfig", "GPStudyConfig", "OrderDependentPolyRegressor", "SoftPolyConfig", "SubspaceMLP",
    "adaptive_arithmetic_code_bits", "arccos_kernel",
    "centred_one_hot", "corrupt_labels", "draw_feature_weights", "effective_dimensionality", "gaussian_kl",
    "gibbs_error", "gp_label_noise_study", "gp_log_marginal_likelihood", "gp_posterior_kl", "kl_bernoulli",
    "kl_inverse", "median_heuristic_lengthscale", "min_norm_least_squares", "occam_bound", "occam_kl_bound",
    "order_dependent_ridge_weights", "pac_bayes_kl_bound", "pac_bayes_sqrt_bound", "polynomial_features",
    "quantise_uniform", "random_features_double_descent", "rbf_kernel", "relu_random_features",
    "subspace_compression_bound", "train_subspace",
]

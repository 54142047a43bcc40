"""Contract cases of soft_inductive_bias: the order-dependent polynomial regressor and a bad-input battery.

``OrderDependentPolyRegressor`` is checked at a low degree: the checks' inputs leave the
default domain [-1, 1], where a degree-150 polynomial overflows by design. With p > 1 input
columns it fits the additive model (the paper's inputs are scalars, p = 1). No torch, so no
MODULES and no device check. The bounds, GP, random-feature and compression helpers are
probed with NaN, out-of-range probabilities and sizes, mismatched shapes and bad labels.
"""

import numpy as np
from sklearn.exceptions import NotFittedError

from icml25.papers.soft_inductive_bias import (
    OrderDependentPolyRegressor,
    adaptive_arithmetic_code_bits,
    centred_one_hot,
    corrupt_labels,
    draw_feature_weights,
    effective_dimensionality,
    gaussian_kl,
    gp_label_noise_study,
    kl_bernoulli,
    kl_inverse,
    median_heuristic_lengthscale,
    min_norm_least_squares,
    occam_bound,
    order_dependent_ridge_weights,
    pac_bayes_kl_bound,
    polynomial_features,
    quantise_uniform,
    random_features_double_descent,
    rbf_kernel,
    subspace_compression_bound,
)

_rng = np.random.default_rng(0)
_x = np.linspace(-1, 1, 12)[:, None]
_y = np.sin(3 * _x[:, 0])
_xnan = _x.copy()
_xnan[3, 0] = np.nan
_yinf = _y.copy()
_yinf[0] = np.inf
_X = _rng.standard_normal((20, 4))
_labels = _rng.integers(3, size=20)


def _poly(**kw):
    return OrderDependentPolyRegressor(**{"degree": 8, **kw})


ESTIMATORS = [OrderDependentPolyRegressor(degree=3, alpha=1e-3), OrderDependentPolyRegressor(degree=2, gamma=1.0,
                                                                                             alpha=0.1)]

BAD_INPUTS = [
    ("poly_X_nan", lambda: _poly().fit(_xnan, _y), ValueError),
    ("poly_y_inf", lambda: _poly().fit(_x, _yinf), ValueError),
    ("poly_X_empty", lambda: _poly().fit(np.zeros((0, 1)), np.zeros(0)), ValueError),
    ("poly_y_wrong_length", lambda: _poly().fit(_x, _y[:-1]), ValueError),
    ("poly_degree_negative", lambda: _poly(degree=-1).fit(_x, _y), ValueError),
    ("poly_degree_fractional", lambda: _poly(degree=2.5).fit(_x, _y), ValueError),
    ("poly_gamma_below_one", lambda: _poly(gamma=0.5).fit(_x, _y), ValueError),
    ("poly_alpha_negative", lambda: _poly(alpha=-1.0).fit(_x, _y), ValueError),
    ("poly_unknown_basis", lambda: _poly(basis="hermite").fit(_x, _y), ValueError),
    ("poly_domain_reversed", lambda: _poly(domain=(1.0, -1.0)).fit(_x, _y), ValueError),
    ("poly_domain_not_a_pair", lambda: _poly(domain=(0.0,)).fit(_x, _y), ValueError),
    ("poly_predict_unfitted", lambda: _poly().predict(_x), NotFittedError),
    ("poly_predict_wrong_features", lambda: _poly().fit(_x, _y).predict(np.zeros((2, 2))), ValueError),
    ("features_degree_fractional", lambda: polynomial_features(_x[:, 0], 1.5), ValueError),
    ("features_x_nan", lambda: polynomial_features(_xnan[:, 0], 3), ValueError),
    ("ridge_weights_wrong_length", lambda: order_dependent_ridge_weights(np.ones((5, 3)), np.ones(4), 0.1, 1.5),
     ValueError),
    ("occam_n_zero", lambda: occam_bound(0.1, 10.0, 0, 0.05), ValueError),
    ("occam_bits_negative", lambda: occam_bound(0.1, -1.0, 100, 0.05), ValueError),
    ("pac_bayes_delta_above_one", lambda: pac_bayes_kl_bound(0.1, 5.0, 100, 1.5), ValueError),
    ("kl_inverse_budget_negative", lambda: kl_inverse(0.1, -1.0), ValueError),
    ("kl_bernoulli_q_above_one", lambda: kl_bernoulli(1.5, 0.5), ValueError),
    ("gaussian_kl_shapes", lambda: gaussian_kl(np.zeros(2), np.eye(2), np.zeros(3), np.eye(3)), ValueError),
    ("gaussian_kl_not_pd", lambda: gaussian_kl(np.zeros(2), -np.eye(2), np.zeros(2), np.eye(2)), ValueError),
    ("rbf_lengthscale_zero", lambda: rbf_kernel(_X, _X, 0.0), ValueError),
    ("rbf_lengthscale_nan", lambda: rbf_kernel(_X, _X, float("nan")), ValueError),
    ("rbf_column_mismatch", lambda: rbf_kernel(_X, _X[:, :3], 1.0), ValueError),
    ("one_hot_label_out_of_range", lambda: centred_one_hot(np.array([0, 3]), 3), ValueError),
    ("one_hot_label_negative", lambda: centred_one_hot(np.array([0, -1]), 3), ValueError),
    ("corrupt_fraction_above_one", lambda: corrupt_labels(_labels, 2.0, 3, np.random.default_rng(0)), ValueError),
    ("median_heuristic_one_row", lambda: median_heuristic_lengthscale(_X[:1]), ValueError),
    ("gp_study_column_mismatch", lambda: gp_label_noise_study(_X, _labels, _X[:, :3], _labels), ValueError),
    ("neff_alpha_zero", lambda: effective_dimensionality(np.ones(3), 0.0), ValueError),
    ("neff_eigvals_nan", lambda: effective_dimensionality([3, np.nan, 1], 1), ValueError),
    ("neff_eigvals_negative", lambda: effective_dimensionality([3, -2, 1], 1), ValueError),
    ("feature_weights_p_zero", lambda: draw_feature_weights(4, 0, np.random.default_rng(0)), ValueError),
    ("min_norm_nan", lambda: min_norm_least_squares(np.full((3, 2), np.nan), np.ones(3)), ValueError),
    ("double_descent_grid_not_increasing", lambda: random_features_double_descent(
        _X, np.ones((20, 1)), _X, np.ones((20, 1)), [10, 5]), ValueError),
    ("quantise_one_level", lambda: quantise_uniform(np.ones(4), 1), ValueError),
    ("quantise_nan", lambda: quantise_uniform(np.array([0.0, np.nan]), 4), ValueError),
    ("code_bits_symbol_out_of_range", lambda: adaptive_arithmetic_code_bits(np.array([0, 5]), 4), ValueError),
    ("compression_label_count", lambda: subspace_compression_bound(_X, _labels[:-1]), ValueError),
    ("compression_dims_zero", lambda: subspace_compression_bound(_X, _labels, dims=(0,)), ValueError),
]

"""Contract cases of ntk_early_stopping: the two scikit-learn regressors and a bad-input battery.

Everything is float64 NumPy (no torch, so no MODULES and no device check). The
estimators are checked with ``project_to_sphere=True``: the method's covariates lie on
the unit sphere, and the checks' data do not.
"""

import numpy as np
from sklearn.exceptions import NotFittedError

from icml25.papers.ntk_early_stopping import (
    KernelGD,
    TwoLayerReLUGD,
    critical_radius,
    init_two_layer,
    kernel_complexity,
    make_rkhs_target,
    network_predictions_at,
    ntk_relu,
    sample_sphere,
    theory_stopping_time,
)

_X = sample_sphere(12, 3, rng=0)
_y = _X[:, 0]


def _off_sphere():
    X = _X.copy()
    X[0] *= 2
    return X


def _nan_X():
    X = _X.copy()
    X[1, 1] = np.nan
    return X


_ZERO_ROW = ("casts the data to int, which leaves all-zero rows; a zero row has no direction on the unit sphere, "
             "the method's domain (project_to_sphere raises a ValueError for it)")

ESTIMATORS = [
    KernelGD(project_to_sphere=True),
    TwoLayerReLUGD(width=32, max_steps=20, seed=0, project_to_sphere=True),
]
EXPECTED_FAILED = {
    "KernelGD": {"check_estimators_dtypes": _ZERO_ROW},
    "TwoLayerReLUGD": {"check_estimators_dtypes": _ZERO_ROW},
}

BAD_INPUTS = [
    ("sphere_n_zero", lambda: sample_sphere(0, 3), ValueError),
    ("sphere_d_one", lambda: sample_sphere(5, 1), ValueError),
    ("sphere_unknown_dist", lambda: sample_sphere(5, 3, "gauss"), ValueError),
    ("sphere_kappa_zero", lambda: sample_sphere(5, 3, "vmf_mixture", kappa=0.0), ValueError),
    ("sphere_cap_angle_zero", lambda: sample_sphere(5, 3, "cap", cap_angle_deg=0.0), ValueError),
    ("ntk_off_sphere", lambda: ntk_relu(_off_sphere()), ValueError),
    ("ntk_nan", lambda: ntk_relu(_nan_X()), ValueError),
    ("ntk_dimension_mismatch", lambda: ntk_relu(_X, sample_sphere(3, 4, rng=0)), ValueError),
    ("rkhs_n_centers_zero", lambda: make_rkhs_target(3, n_centers=0), ValueError),
    ("radius_sigma_zero", lambda: critical_radius(np.ones(3), 3, 0.0), ValueError),
    ("radius_empty_eigvals", lambda: critical_radius(np.zeros(0), 3, 1.0), ValueError),
    ("complexity_n_zero", lambda: kernel_complexity(0.1, np.ones(3), 0), ValueError),
    ("stopping_time_eps_zero", lambda: theory_stopping_time(0.0, 1.0), ValueError),
    ("stopping_time_eta_negative", lambda: theory_stopping_time(0.1, -1.0), ValueError),
    ("init_width_zero", lambda: init_two_layer(0, 3), ValueError),
    ("init_odd_width_symmetric", lambda: init_two_layer(3, 3), ValueError),
    ("kernel_gd_eta_zero", lambda: KernelGD(eta=0.0).fit(_X, _y), ValueError),
    ("kernel_gd_unfitted_predict", lambda: KernelGD().predict(_X), NotFittedError),
    ("kernel_gd_y_wrong_length", lambda: KernelGD().fit(_X, _y[:-1]), ValueError),
    ("kernel_gd_off_sphere", lambda: KernelGD().fit(_off_sphere(), _y), ValueError),
    ("kernel_gd_predict_wrong_width", lambda: KernelGD().fit(_X, _y).predict(sample_sphere(3, 4, rng=0)),
     ValueError),
    ("kernel_gd_negative_time", lambda: KernelGD().fit(_X, _y).coef_path([-1]), ValueError),
    ("net_unfitted_predict", lambda: TwoLayerReLUGD().predict(_X), NotFittedError),
    ("net_unknown_stop", lambda: TwoLayerReLUGD(width=8, stop="early").fit(_X, _y), ValueError),
    ("net_oracle_without_eval", lambda: TwoLayerReLUGD(width=8, stop="oracle").fit(_X, _y), ValueError),
    ("net_eval_without_targets", lambda: TwoLayerReLUGD(width=8).fit(_X, _y, X_eval=_X), ValueError),
    ("net_y_nan", lambda: TwoLayerReLUGD(width=8).fit(_X, np.full(12, np.nan)), ValueError),
    ("predictions_at_no_steps", lambda: network_predictions_at(_X, _y, _X, 8, 1.0, []), ValueError),
    ("predictions_at_negative_step", lambda: network_predictions_at(_X, _y, _X, 8, 1.0, [-2]), ValueError),
]
BAD_INPUTS += [
    ("kernel_gd_zero_row_projected", lambda: KernelGD(project_to_sphere=True).fit(np.zeros((3, 3)), np.zeros(3)),
     ValueError),
    ("kernel_gd_one_feature", lambda: KernelGD(project_to_sphere=True).fit(np.ones((4, 1)), np.zeros(4)), ValueError),
]

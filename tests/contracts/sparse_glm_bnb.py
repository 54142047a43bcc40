"""Contract cases of sparse_glm_bnb: the scikit-learn estimator and a bad-input battery.

No torch, so no MODULES and no device check; every public entry point (the relaxation
solver, the perspective prox/value, brute force, the BnB estimator and the data
generators) is probed with NaN/inf, empty or mis-shaped arrays, out-of-range indices and
non-positive sizes.
"""

import numpy as np
from sklearn.exceptions import NotFittedError

from icml25.papers.sparse_glm_bnb import (
    SparseGLMBnB,
    breast_cancer_logistic,
    brute_force_best_subset,
    fenchel_lower_bound,
    perspective_prox,
    perspective_value,
    ridge_coefficients,
    solve_perspective_relaxation,
    synthetic_sparse_regression,
)

_rng = np.random.default_rng(0)
_X = _rng.standard_normal((20, 6))
_y = _X @ np.array([1.0, 0, 0, -1.0, 0, 0]) + 0.1 * _rng.standard_normal(20)
_Xnan = _X.copy()
_Xnan[3, 2] = np.nan
_yinf = _y.copy()
_yinf[0] = np.inf


def _relax(**kw):
    args = {"X": _X, "y": _y, "k": 2, "lam2": 1.0, "M": 5.0, **kw}
    return lambda: solve_perspective_relaxation(**args)


def _fitted():
    return SparseGLMBnB(k=2, lam2=1.0, M=5.0).fit(_X, _y)


ESTIMATORS = [SparseGLMBnB(), SparseGLMBnB(k=2, lam2=0.5, M=5.0)]

BAD_INPUTS = [
    ("relax_X_nan", _relax(X=_Xnan), ValueError),
    ("relax_y_inf", _relax(y=_yinf), ValueError),
    ("relax_X_empty", _relax(X=np.zeros((0, 6)), y=np.zeros(0)), ValueError),
    ("relax_X_1d", _relax(X=_X[:, 0]), ValueError),
    ("relax_y_wrong_length", _relax(y=_y[:-1]), ValueError),
    ("relax_k_zero", _relax(k=0), ValueError),
    ("relax_k_above_p", _relax(k=7), ValueError),
    ("relax_k_fractional", _relax(k=1.5), ValueError),
    ("relax_M_negative", _relax(M=-1.0), ValueError),
    ("relax_lam2_negative", _relax(lam2=-0.5), ValueError),
    ("relax_unknown_loss", _relax(loss="hinge"), ValueError),
    ("relax_logistic_labels_01", _relax(y=(_y > 0).astype(float), loss="logistic"), ValueError),
    ("relax_fixed_zero_out_of_range", _relax(fixed_zero=[6]), ValueError),
    ("relax_fixed_one_negative", _relax(fixed_one=[-1]), ValueError),
    ("relax_fixed_sets_overlap", _relax(fixed_zero=[1], fixed_one=[1]), ValueError),
    ("relax_fixed_one_above_k", _relax(fixed_one=[0, 1, 2]), ValueError),
    ("relax_tol_negative", _relax(tol=-1.0), ValueError),
    ("relax_max_iter_zero", _relax(max_iter=0), ValueError),
    ("relax_beta0_wrong_length", _relax(beta0=np.zeros(3)), ValueError),
    ("prox_rho_zero", lambda: perspective_prox(np.ones(4), 0.0, 2, 1.0, 1.0), ValueError),
    ("prox_v_nan", lambda: perspective_prox(np.array([1.0, np.nan, 0.0]), 1.0, 2, 1.0, 1.0), ValueError),
    ("value_M_zero", lambda: perspective_value(np.ones(3), 2, 0.0, 1.0), ValueError),
    ("fenchel_beta_wrong_length", lambda: fenchel_lower_bound(_X, _y, np.zeros(2), 2, 1.0, 5.0), ValueError),
    ("brute_force_k_above_p", lambda: brute_force_best_subset(_X, _y, 9, 1.0, 5.0), ValueError),
    ("bnb_unfitted_predict", lambda: SparseGLMBnB().predict(_X), NotFittedError),
    ("bnb_gap_tol_zero", lambda: SparseGLMBnB(k=2, lam2=1.0, M=5.0, gap_tol=0.0).fit(_X, _y), ValueError),
    ("bnb_time_limit_negative", lambda: SparseGLMBnB(k=2, lam2=1.0, M=5.0, time_limit=-1.0).fit(_X, _y),
     ValueError),
    ("bnb_predict_wrong_width", lambda: _fitted().predict(_X[:, :4]), ValueError),
    ("bnb_fit_X_nan", lambda: SparseGLMBnB(k=2, lam2=1.0, M=5.0).fit(_Xnan, _y), ValueError),
    ("data_rho_above_one", lambda: synthetic_sparse_regression(20, 5, 2, rho=1.5), ValueError),
    ("data_k_above_p", lambda: synthetic_sparse_regression(20, 5, 8), ValueError),
    ("data_n_zero", lambda: synthetic_sparse_regression(0, 5, 2), ValueError),
    ("breast_cancer_fraction_zero", lambda: breast_cancer_logistic(0.0), ValueError),
    ("breast_cancer_fraction_above_one", lambda: breast_cancer_logistic(1.5), ValueError),
    ("ridge_lam2_negative", lambda: ridge_coefficients(_X, _y, -1e9), ValueError),
    ("ridge_lam2_nan", lambda: ridge_coefficients(_X, _y, lam2=float("nan")), ValueError),
    ("ridge_y_length_mismatch", lambda: ridge_coefficients(_X, _y[:-3], 0.1), ValueError),
]

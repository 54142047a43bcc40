"""Contract cases of pas: the scikit-learn estimator (its (X, y) form) and a bad-input battery.

NumPy only (no MODULES, no device check). ``PASEstimator`` takes X = [problem id
column(s), prediction] and y with NaN for unlabelled rows; see its docstring.
"""

import numpy as np
from sklearn.exceptions import NotFittedError

from icml25.papers.pas import (
    PASEstimator,
    PredictionProblems,
    cure,
    digits_problems,
    gaussian_synthetic,
    load_amazon_reviews,
    load_galaxy_zoo,
    minimise_cure,
    pas_fit,
    pas_mean_pointestimate,
    problem_moments,
    shrink_to_grand_mean_pointestimate,
    split_labelled_fraction,
)

_rng = np.random.default_rng(0)
_Y = [_rng.normal(size=5) for _ in range(4)]
_FL = [y + 0.1 for y in _Y]
_FU = [_rng.normal(size=8) for _ in range(4)]


def _with(arrays, j, value):
    out = [a.copy() for a in arrays]
    out[j] = value
    return out


def _flat():
    y = np.concatenate(_Y)
    fl = np.concatenate(_FL)
    gl = np.repeat(np.arange(4), 5)
    fu = np.concatenate(_FU)
    gu = np.repeat(np.arange(4), 8)
    X = np.column_stack([np.concatenate([gl, gu]), np.concatenate([fl, fu])])
    yy = np.concatenate([y, np.full(fu.size, np.nan)])
    return X, yy


_XF, _YF = _flat()


def _X_with(i, j, value):
    X = _XF.copy()
    X[i, j] = value
    return X


ESTIMATORS = [PASEstimator()]
EXPECTED_FAILED = {
    "PASEstimator": {
        "check_fit_idempotent": "predicts on held-out rows whose problem ids fit never saw; PAS estimates the "
                                "mean of each problem it was fitted on, so an unseen problem raises ValueError",
    },
}

BAD_INPUTS = [
    ("empty_problem_lists", lambda: pas_mean_pointestimate([], [], []), ValueError),
    ("problem_count_mismatch", lambda: pas_mean_pointestimate(_Y, _FL, _FU[:3]), ValueError),
    ("y_nan", lambda: pas_mean_pointestimate(_with(_Y, 1, np.array([1.0, np.nan, 0, 0, 0])), _FL, _FU),
     ValueError),
    ("pred_unlabelled_inf", lambda: pas_mean_pointestimate(_Y, _FL, _with(_FU, 0, np.array([np.inf, 1.0]))),
     ValueError),
    ("one_labelled_point", lambda: pas_mean_pointestimate(_with(_Y, 2, np.ones(1)), _with(_FL, 2, np.ones(1)), _FU),
     ValueError),
    ("no_unlabelled_point", lambda: pas_mean_pointestimate(_Y, _FL, _with(_FU, 3, np.zeros(0))), ValueError),
    ("labelled_length_mismatch", lambda: pas_mean_pointestimate(_Y, _with(_FL, 0, np.ones(4)), _FU), ValueError),
    ("problem_2d", lambda: pas_mean_pointestimate(_with(_Y, 0, np.ones((5, 2))), _FL, _FU), ValueError),
    ("y_strings", lambda: pas_mean_pointestimate([["a", "b", "c"]] * len(_Y), _FL, _FU), TypeError),
    ("pred_labelled_strings", lambda: pas_mean_pointestimate(_Y, _with(_FL, 0, np.array(list("abcde"))), _FU),
     TypeError),
    ("pred_unlabelled_strings", lambda: pas_mean_pointestimate(_Y, _FL, _with(_FU, 1, ["x", "y"])), TypeError),
    ("cutoff_string", lambda: pas_mean_pointestimate(_Y, _FL, _FU, cutoff="0.9"), TypeError),
    ("omega_string", lambda: pas_mean_pointestimate(_Y, _FL, _FU, omega="1"), TypeError),
    ("lam_string", lambda: pas_mean_pointestimate(_Y, _FL, _FU, lam="half"), TypeError),
    ("clip_lambda_string", lambda: pas_mean_pointestimate(_Y, _FL, _FU, clip_lambda="no"), TypeError),
    ("share_var_string", lambda: pas_mean_pointestimate(_Y, _FL, _FU, share_var="yes"), TypeError),
    ("known_moments_strings", lambda: pas_mean_pointestimate(_Y, _FL, _FU, known_moments=("a", "b", "c")),
     TypeError),
    ("cutoff_above_one", lambda: pas_mean_pointestimate(_Y, _FL, _FU, cutoff=1.5), ValueError),
    ("omega_negative", lambda: pas_fit(_Y, _FL, _FU, omega=-1.0), ValueError),
    ("omega_nan", lambda: pas_fit(_Y, _FL, _FU, omega=np.nan), ValueError),
    ("lam_nan", lambda: pas_fit(_Y, _FL, _FU, lam=np.nan), ValueError),
    ("lam_wrong_length", lambda: pas_fit(_Y, _FL, _FU, lam=np.ones(3)), ValueError),
    ("known_moments_wrong_shape", lambda: problem_moments(_Y, _FL, _FU, known_moments=(np.ones(3),) * 3),
     ValueError),
    ("minimise_cure_cutoff_zero",
     lambda: minimise_cure(np.zeros(3), np.zeros(3), np.ones(3), np.zeros(3), np.ones(3), np.ones(3), cutoff=0.0),
     ValueError),
    ("cure_shape_mismatch",
     lambda: cure(1.0, np.zeros(3), np.zeros(2), np.ones(3), np.zeros(3), np.ones(3), np.ones(3)), ValueError),
    ("estimator_unfitted_predict", lambda: PASEstimator().predict(_XF), NotFittedError),
    ("estimator_cutoff_out_of_range", lambda: PASEstimator(cutoff=2.0).fit(_XF, _YF), ValueError),
    ("estimator_X_one_column", lambda: PASEstimator().fit(_XF[:, :1], _YF), ValueError),
    ("estimator_X_inf", lambda: PASEstimator().fit(_X_with(0, 1, np.inf), _YF), ValueError),
    ("estimator_y_all_nan", lambda: PASEstimator().fit(_XF, np.full(_YF.size, np.nan)), ValueError),
    ("estimator_y_inf", lambda: PASEstimator().fit(_XF, np.where(np.isnan(_YF), np.nan, np.inf)), ValueError),
    ("estimator_y_wrong_length", lambda: PASEstimator().fit(_XF, _YF[:-1]), ValueError),
    ("estimator_unknown_problem", lambda: PASEstimator().fit(_XF, _YF).predict(_X_with(0, 0, 99)), ValueError),
    ("estimator_legacy_length_mismatch",
     lambda: PASEstimator().fit(np.ones(4), np.ones(4), np.zeros(3), np.ones(2), np.zeros(2)), ValueError),
    ("synthetic_m_zero", lambda: gaussian_synthetic(m=0), ValueError),
    ("digits_train_fraction_negative", lambda: digits_problems(train_fraction=-0.3), ValueError),
    ("digits_n_clusters_zero", lambda: digits_problems(n_clusters=0), ValueError),
    ("grand_mean_cutoff_one", lambda: shrink_to_grand_mean_pointestimate(_Y, _FL, _FU, cutoff=1.0), ValueError),
    ("grand_mean_problem_count_mismatch", lambda: shrink_to_grand_mean_pointestimate(_Y, _FL[:3], _FU), ValueError),
    ("variance_unknown", lambda: pas_mean_pointestimate(_Y, _FL, _FU, variance="shared"), ValueError),
    ("estimator_variance_unknown", lambda: PASEstimator(variance="pool").fit(_XF, _YF), ValueError),
    ("galaxy_zoo_missing_file", lambda: load_galaxy_zoo("/nonexistent/galaxy.csv"), ValueError),
    ("amazon_missing_file", lambda: load_amazon_reviews("/nonexistent/amazon.h5"), ValueError),
    ("split_fraction_zero", lambda: split_labelled_fraction(PredictionProblems([np.ones(20)], [np.ones(20)],
                                                                               np.ones(1)), 0.0), ValueError),
]
BAD_INPUTS += [
    ("estimator_problem_without_labels",
     lambda: PASEstimator().fit(np.vstack([_XF, [[7.0, 0.5]]]), np.append(_YF, np.nan)), ValueError),
    ("estimator_five_arrays_then_wrong_arity", lambda: PASEstimator().fit(_XF, _YF, np.zeros(3)), TypeError),
    ("estimator_predict_wrong_width", lambda: PASEstimator().fit(_XF, _YF).predict(np.zeros((2, 3))), ValueError),
]

"""Contract cases of icfl: three scikit-learn transformers and a bad-input battery.

``ControlWhitener``, ``ICFL`` and ``TopKSAE`` are transformers (TransformerMixin first) taking
NumPy input and returning float32 NumPy arrays; the two dictionary learners run a few steps
here so the whole check set takes seconds. No ``nn.Module`` is exported. The experiment
trains on ``cfg.device`` (checked statically by the battery). Every public entry point is
probed with NaN/inf, empty or mis-shaped arrays, out-of-range sizes and options.
"""

import numpy as np
import torch
from sklearn.exceptions import NotFittedError

from icml25.papers.icfl import (
    ICFL,
    ControlWhitener,
    TopKSAE,
    batched_omp,
    dictionary_recovery,
    perturbation_screen,
    reconstruction_cosine,
    reset_duplicate_columns,
    selectivity,
)

_rng = np.random.default_rng(0)
_X = _rng.standard_normal((40, 6)).astype(np.float32)
_Xnan = _X.copy()
_Xnan[2, 3] = np.nan
_Xinf = _X.copy()
_Xinf[0, 0] = np.inf
_W = _rng.standard_normal((6, 10))
_W /= np.linalg.norm(_W, axis=0)


def _cheap_icfl(**kw):
    return ICFL(**{"n_features": 8, "J": 2, "L": 2, "lr": 1e-2, "batch_size": 32, "n_steps": 4, "dead_window": 2,
                   **kw})


def _cheap_topk(**kw):
    return TopKSAE(**{"n_features": 8, "k": 2, "aux_k": 2, "lr": 1e-2, "batch_size": 32, "n_steps": 4,
                      "dead_window": 2, **kw})


def _omp(**kw):
    args = {"X": torch.as_tensor(_X), "W": torch.as_tensor(_W, dtype=torch.float32), "J": 2, "L": 2, **kw}
    return lambda: batched_omp(**args)


ESTIMATORS = [ControlWhitener(), ControlWhitener(whiten=False), _cheap_icfl(), _cheap_topk()]

BAD_INPUTS = [
    ("whitener_fit_nan", lambda: ControlWhitener().fit(_Xnan), ValueError),
    ("whitener_fit_inf", lambda: ControlWhitener().fit(_Xinf), ValueError),
    ("whitener_fit_empty", lambda: ControlWhitener().fit(np.zeros((0, 6))), ValueError),
    ("whitener_fit_one_sample", lambda: ControlWhitener().fit(_X[:1]), ValueError),
    ("whitener_fit_1d", lambda: ControlWhitener().fit(_X[:, 0]), ValueError),
    ("whitener_eps_negative", lambda: ControlWhitener(eps=-1.0).fit(_X), ValueError),
    ("whitener_eps_zero_singular", lambda: ControlWhitener(eps=0.0).fit(np.ones((10, 3))), ValueError),
    ("whitener_transform_unfitted", lambda: ControlWhitener().transform(_X), NotFittedError),
    ("whitener_transform_wrong_columns", lambda: ControlWhitener().fit(_X).transform(_X[:, :5]), ValueError),
    ("icfl_n_features_zero", lambda: _cheap_icfl(n_features=0).fit(_X), ValueError),
    ("icfl_L_above_n_features", lambda: _cheap_icfl(L=9).fit(_X), ValueError),
    ("icfl_J_zero", lambda: _cheap_icfl(J=0).fit(_X), ValueError),
    ("icfl_lr_nan", lambda: _cheap_icfl(lr=float("nan")).fit(_X), ValueError),
    ("icfl_dead_fraction_one", lambda: _cheap_icfl(dead_fraction=1.0).fit(_X), ValueError),
    ("icfl_unknown_device", lambda: _cheap_icfl(device="gpu").fit(_X), ValueError),
    ("icfl_fit_inf", lambda: _cheap_icfl().fit(_Xinf), ValueError),
    ("icfl_fit_empty", lambda: _cheap_icfl().fit(np.zeros((0, 6))), ValueError),
    ("icfl_transform_unfitted", lambda: _cheap_icfl().transform(_X), NotFittedError),
    ("icfl_transform_wrong_columns", lambda: _cheap_icfl().fit(_X).transform(_X[:, :4]), ValueError),
    ("icfl_inverse_wrong_columns", lambda: _cheap_icfl().fit(_X).inverse_transform(np.zeros((2, 5))), ValueError),
    ("topk_k_above_n_features", lambda: _cheap_topk(k=9).fit(_X), ValueError),
    ("topk_aux_k_negative", lambda: _cheap_topk(aux_k=-1).fit(_X), ValueError),
    ("topk_fit_nan", lambda: _cheap_topk().fit(_Xnan), ValueError),
    ("omp_wrong_columns", _omp(X=torch.zeros(3, 5)), ValueError),
    ("omp_nan", _omp(X=torch.full((2, 6), float("nan"))), ValueError),
    ("omp_L_above_M", _omp(L=11), ValueError),
    ("omp_J_zero", _omp(J=0), ValueError),
    ("omp_b_wrong_length", _omp(b=torch.zeros(5)), ValueError),
    ("omp_unknown_selection", _omp(selection="max"), ValueError),
    ("omp_unknown_refit", _omp(refit="all"), ValueError),
    ("reset_cos_zero", lambda: reset_duplicate_columns(torch.randn(6, 4), 0.0), ValueError),
    ("reset_numpy_W", lambda: reset_duplicate_columns(_W.copy(), 0.9), TypeError),
    ("selectivity_wrong_length", lambda: selectivity(np.ones((4, 2)), np.arange(3)), ValueError),
    ("selectivity_one_label", lambda: selectivity(np.ones((4, 2)), np.zeros(4)), ValueError),
    ("selectivity_nan_codes", lambda: selectivity(np.full((4, 2), np.nan), np.array([0, 0, 1, 1])), ValueError),
    ("recovery_d_mismatch", lambda: dictionary_recovery(_W, _W[:5]), ValueError),
    ("recovery_thr_above_one", lambda: dictionary_recovery(_W, _W, thr=2.0), ValueError),
    ("recovery_nan", lambda: dictionary_recovery(np.full((6, 3), np.nan), _W), ValueError),
    ("recovery_empty_truth", lambda: dictionary_recovery(_W, np.zeros((6, 0))), ValueError),
    ("cosine_shape_mismatch", lambda: reconstruction_cosine(_X, _X[:, :5]), ValueError),
    ("cosine_nan", lambda: reconstruction_cosine(_Xnan, _X), ValueError),
    ("cosine_all_zero", lambda: reconstruction_cosine(np.zeros((4, 3)), np.zeros((4, 3))), ValueError),
    ("cosine_zero_reconstruction_row", lambda: reconstruction_cosine(_X, np.vstack([_X[:-1], np.zeros((1, 6))])),
     ValueError),
    ("cosine_empty", lambda: reconstruction_cosine(np.zeros((0, 3)), np.zeros((0, 3))), ValueError),
    ("screen_n_control_zero", lambda: perturbation_screen(n_control=0), ValueError),
    ("screen_p_on_above_one", lambda: perturbation_screen(100, 100, 16, 40, 4, p_on=1.5), ValueError),
    ("screen_nuisance_rank_d", lambda: perturbation_screen(100, 100, 8, 40, 4, nuisance_rank=8), ValueError),
    ("screen_atoms_too_few", lambda: perturbation_screen(100, 100, 16, 10, 5), ValueError),
]

"""Contract cases of naiad: the two pair regressors, the NAIADNet module and a bad-input battery.

The regressors take X = [gene_a, gene_b, single effects...] (see ``NAIADRegressor``); the
three-array form ``fit(pairs, single, y)`` is exercised by the paper's own tests.
"""

import numpy as np
import torch
from sklearn.exceptions import NotFittedError

from icml25.papers.naiad import (
    ActiveLearner,
    NAIADNet,
    NAIADRegressor,
    SingleEffectLinearRegressor,
    acquisition_scores,
    adaptive_embed_dim,
    make_synthetic_screen,
    screen_from_arrays,
    top_n_recall,
    top_n_tpr,
    warmup_linear_lr_factor,
)

_S = make_synthetic_screen(n_genes=8, seed=0)
_P, _SI, _Y = _S.pairs, _S.single, _S.y
_X = np.column_stack([_P, _SI])


def _cheap(**kw):
    return NAIADRegressor(n_epoch=1, d_pheno_hid=4, **kw)


def _pairs_with(value):
    p = _P.astype(np.float64)
    p[0, 0] = value
    return p


def _single_nan():
    s = _SI.copy()
    s[2, 1] = np.nan
    return s


_NEGATIVE_IDS = ("passes negative values in every column; the two gene-id columns are non-negative integer codes "
                 "(the single-effect columns may be negative, so the positive_only tag would be wrong)")

ESTIMATORS = [NAIADRegressor(n_epoch=2, d_pheno_hid=4), SingleEffectLinearRegressor(),
              SingleEffectLinearRegressor(product_term=True), SingleEffectLinearRegressor(tied=True)]
EXPECTED_FAILED = {
    "NAIADRegressor": {"check_positive_only_tag_during_fit": _NEGATIVE_IDS},
    "SingleEffectLinearRegressor": {"check_positive_only_tag_during_fit": _NEGATIVE_IDS},
}


def _net():
    pairs = torch.tensor([[0, 1], [2, 3], [4, 0], [1, 1]])
    return NAIADNet(n_genes=5, d_embed=4, d_pheno_hid=8), (pairs, torch.randn(4, 2))


MODULES = {"NAIADNet": _net}

BAD_INPUTS = [
    ("embed_dim_negative_n", lambda: adaptive_embed_dim(-1, 10), ValueError),
    ("embed_dim_no_genes", lambda: adaptive_embed_dim(10, 0), ValueError),
    ("lr_factor_negative_warmup", lambda: warmup_linear_lr_factor(0, -1, 10), ValueError),
    ("lr_factor_warmup_not_below_total", lambda: warmup_linear_lr_factor(0, 10, 10), ValueError),
    ("net_unknown_mode", lambda: NAIADNet(5, 2, mode="x"), ValueError),
    ("net_no_genes", lambda: NAIADNet(0, 2), ValueError),
    ("net_dropout_one", lambda: NAIADNet(5, 2, p_dropout=1.0), ValueError),
    ("net_forward_without_single", lambda: NAIADNet(5, 2)(torch.zeros(3, 2, dtype=torch.long)), ValueError),
    ("net_forward_float_ids", lambda: NAIADNet(5, 2, mode="embed")(torch.zeros(3, 2)), TypeError),
    ("fit_pairs_three_columns", lambda: _cheap().fit(np.zeros((4, 3), int), np.zeros((4, 2)), np.zeros(4)),
     ValueError),
    ("fit_negative_gene_id", lambda: _cheap().fit(_pairs_with(-1), _SI, _Y), ValueError),
    ("fit_fractional_gene_id", lambda: _cheap().fit(_pairs_with(0.5), _SI, _Y), ValueError),
    ("fit_single_nan", lambda: _cheap().fit(_P, _single_nan(), _Y), ValueError),
    ("fit_y_wrong_length", lambda: _cheap().fit(_P, _SI, _Y[:-1]), ValueError),
    ("fit_n_epoch_zero", lambda: NAIADRegressor(n_epoch=0).fit(_P, _SI, _Y), ValueError),
    ("fit_gene_above_n_genes", lambda: _cheap(n_genes=3).fit(_P, _SI, _Y), ValueError),
    ("fit_val_without_y", lambda: _cheap().fit(_P, _SI, _Y, X_val=(_P, _SI)), ValueError),
    ("predict_unfitted", lambda: NAIADRegressor().predict(_X), NotFittedError),
    ("predict_gene_out_of_range", lambda: _cheap().fit(_P, _SI, _Y).predict(_pairs_with(50), _SI), ValueError),
    ("fit_X_one_column", lambda: _cheap().fit(_X[:, :1], _Y), ValueError),
    ("fit_X_fractional_ids", lambda: _cheap().fit(_X + np.array([0.5, 0, 0, 0]), _Y), ValueError),
    ("linear_unfitted_predict", lambda: SingleEffectLinearRegressor().predict(_X), NotFittedError),
    ("linear_y_nan", lambda: SingleEffectLinearRegressor().fit(_P, _SI, np.full(_Y.size, np.nan)), ValueError),
    ("recall_n_zero", lambda: top_n_recall(_Y, _Y, 0), ValueError),
    ("recall_empty", lambda: top_n_recall([], [], 3), ValueError),
    ("recall_n_float", lambda: top_n_recall(_Y, _Y, 2.5), TypeError),
    ("tpr_empty", lambda: top_n_tpr([], [], [10]), ValueError),
    ("tpr_no_n_values", lambda: top_n_tpr(_Y, _Y, []), ValueError),
    ("tpr_n_above_size", lambda: top_n_tpr(_Y, _Y, [_Y.size + 1]), ValueError),
    ("tpr_lengths_differ", lambda: top_n_tpr(_Y, _Y[:-1], [1]), ValueError),
    ("scores_random", lambda: acquisition_scores(np.zeros((2, 3)), "random"), ValueError),
    ("learner_no_models", lambda: ActiveLearner(lambda s: None, n_ensemble=0), ValueError),
    ("learner_decreasing_schedule", lambda: ActiveLearner(lambda s: None, method="random").run(_S, [10, 5]),
     ValueError),
    ("screen_y_nan", lambda: screen_from_arrays(_P, _SI, np.full(_Y.size, np.nan)), ValueError),
    ("synthetic_two_genes", lambda: make_synthetic_screen(n_genes=2), ValueError),
]
BAD_INPUTS += [
    ("fit_X_val_wrong_width", lambda: _cheap().fit(_X, _Y, X_val=_X[:, :3], y_val=_Y), ValueError),
    ("predict_X_wrong_width", lambda: SingleEffectLinearRegressor().fit(_X, _Y).predict(_X[:, :3]), ValueError),
    ("pheno_mode_without_single_columns", lambda: _cheap(mode="pheno").fit(_X[:, :2], _Y), ValueError),
    ("net_single_wrong_width", lambda: NAIADNet(5, 2)(torch.zeros(3, 2, dtype=torch.long), torch.zeros(3, 3)),
     ValueError),
]

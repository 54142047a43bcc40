"""Contract cases of cdvi: the log-normal AFT regressor, the CD-CVAE network and a bad-input battery.

``LogNormalAFT`` is a scikit-learn regressor whose ``y`` is a survival target: a structured
(event, time) array, an ``(n, 2)`` array of ``(time, event)`` columns, or an ``(n,)`` array of
fully observed times (the form scikit-learn's checks use; ``log_time=False`` because their
targets can be negative). ``CDCVAENet`` is the network inside ``CDCVAE`` (split encoder and an
x-dependent scale, the branchiest configuration). Both experiments train on ``cfg.device``.
"""

import numpy as np
import torch
from sklearn.exceptions import NotFittedError

from icml25.papers.cdvi import (
    CDCVAE,
    CDCVAENet,
    LogNormalAFT,
    censored_loglik,
    load_bundled,
    make_survival_array,
    metrics,
    primitive_logpdf,
    simulate_censored_gibbs,
    split_indices,
    split_standardise,
    split_survival_array,
    survival_target,
)

_rng = np.random.default_rng(0)
_X = _rng.standard_normal((30, 2))
_logt = _X @ [0.5, -0.3] + 0.4 * _rng.standard_normal(30)
_y = make_survival_array(_rng.random(30) < 0.7, np.exp(_logt))
_Xnan = _X.copy()
_Xnan[4, 1] = np.nan


def _cdcvae_net():
    net = CDCVAENet(3, 2, [8], [8], encoder="split", sigma="x")
    x = torch.randn(5, 3)
    t = torch.randn(5)
    d = torch.tensor([1.0, 0.0, 1.0, 1.0, 0.0])
    return net, (x, t, d)


def _aft():
    return LogNormalAFT().fit(_X, _y)


def _cdcvae():
    return CDCVAE(latent_dim=1, enc_hidden=(4,), dec_hidden=(4,), epochs=1, n_mc=4).fit(_X, _y)


ESTIMATORS = [LogNormalAFT(log_time=False)]

MODULES = {"CDCVAENet": _cdcvae_net}

BAD_INPUTS = [
    ("aft_X_nan", lambda: LogNormalAFT().fit(_Xnan, _y), ValueError),
    ("aft_X_empty", lambda: LogNormalAFT().fit(np.zeros((0, 2)), _y[:0]), ValueError),
    ("aft_X_1d", lambda: LogNormalAFT().fit(_X[:, 0], _y), ValueError),
    ("aft_y_wrong_length", lambda: LogNormalAFT().fit(_X, _y[:-1]), ValueError),
    ("aft_y_time_inf", lambda: LogNormalAFT().fit(_X, np.column_stack([np.r_[np.inf, _y["time"][1:]],
                                                                        _y["event"]])), ValueError),
    ("aft_y_event_not_01", lambda: LogNormalAFT().fit(_X, np.column_stack([_y["time"], np.full(30, 2.0)])),
     ValueError),
    ("aft_y_three_columns", lambda: LogNormalAFT().fit(_X, np.ones((30, 3))), ValueError),
    ("aft_y_none", lambda: LogNormalAFT().fit(_X, None), ValueError),
    ("aft_log_time_negative_times", lambda: LogNormalAFT().fit(_X, -_y["time"]), ValueError),
    ("aft_max_iter_zero", lambda: LogNormalAFT(max_iter=0).fit(_X, _y), ValueError),
    ("aft_predict_unfitted", lambda: LogNormalAFT().predict(_X), NotFittedError),
    ("aft_survival_unfitted", lambda: LogNormalAFT().predict_survival_function(_X, [1.0]), NotFittedError),
    ("aft_predict_wrong_features", lambda: _aft().predict(np.zeros((2, 3))), ValueError),
    ("aft_survival_times_2d", lambda: _aft().predict_survival_function(_X, np.ones((2, 2))), ValueError),
    ("aft_score_censored", lambda: _aft().score(_X, _y), ValueError),
    ("cdcvae_unknown_encoder", lambda: CDCVAE(encoder="cnn").fit(_X, _y), ValueError),
    ("cdcvae_latent_dim_zero", lambda: CDCVAE(latent_dim=0).fit(_X, _y), ValueError),
    ("cdcvae_unknown_device", lambda: CDCVAE(device="gpu").fit(_X, _y), ValueError),
    ("cdcvae_X_nan", lambda: CDCVAE().fit(_Xnan, _y), ValueError),
    ("cdcvae_y_not_structured", lambda: CDCVAE().fit(_X, _y["time"]), ValueError),
    ("cdcvae_elbo_unfitted", lambda: CDCVAE().elbo(_X, _y), NotFittedError),
    ("cdcvae_iwae_K_zero", lambda: _cdcvae().iwae_loglik(_X, _y, K=0), ValueError),
    ("cdcvae_survival_wrong_features", lambda: _cdcvae().predict_survival_function(np.zeros((2, 5)), [1.0]),
     ValueError),
    ("net_unknown_encoder", lambda: CDCVAENet(3, 2, [8], [8], encoder="cnn", sigma="joint"), ValueError),
    ("net_unknown_sigma", lambda: CDCVAENet(3, 2, [8], [8], encoder="dense", sigma="learned"), ValueError),
    ("net_latent_dim_zero", lambda: CDCVAENet(3, 0, [8], [8], encoder="dense", sigma="joint"), ValueError),
    ("loglik_delta_half", lambda: censored_loglik(torch.zeros(3), torch.tensor([1.0, 0.5, 0.0]), torch.zeros(3),
                                                  torch.tensor(1.0)), ValueError),
    ("loglik_scale_zero", lambda: censored_loglik(torch.zeros(3), torch.ones(3), torch.zeros(3), torch.tensor(0.0)),
     ValueError),
    ("logpdf_unknown_primitive", lambda: primitive_logpdf(torch.zeros(2), torch.zeros(2), torch.ones(2), "weibull"),
     ValueError),
    ("survival_array_lengths", lambda: make_survival_array([1, 0, 1], [1.0, 2.0]), ValueError),
    ("survival_array_event_2", lambda: make_survival_array([1, 2], [1.0, 2.0]), ValueError),
    ("survival_array_time_nan", lambda: make_survival_array([True, False], [np.nan, 2.0]), ValueError),
    ("survival_array_time_negative", lambda: make_survival_array([True, False], [-1.0, 2.0]), ValueError),
    ("split_indices_n_negative", lambda: split_indices(-5), ValueError),
    ("split_indices_n_float", lambda: split_indices(2.5), TypeError),
    ("split_survival_not_structured", lambda: split_survival_array(np.ones(4)), ValueError),
    ("survival_target_3d", lambda: survival_target(np.ones((2, 2, 2))), ValueError),
    ("gibbs_unknown_level", lambda: simulate_censored_gibbs(10, "extreme"), ValueError),
    ("gibbs_n_zero", lambda: simulate_censored_gibbs(0, "high"), ValueError),
    ("split_bad_fractions", lambda: split_standardise(_X, _y, fractions=(0.5, 0.5, 0.5)), ValueError),
    ("ctd_wrong_shape", lambda: metrics.ctd(_y, np.zeros((3, 3))), ValueError),
    ("ctd_pycox_wrong_shape", lambda: metrics.ctd_pycox(_y, np.zeros((30, 3)), [1.0, 2.0]), ValueError),
    ("ctd_pycox_grid_not_increasing", lambda: metrics.ctd_pycox(_y, np.zeros((30, 2)), [2.0, 1.0]), ValueError),
    ("cdcvae_unknown_criterion", lambda: CDCVAE(criterion="ctdpycox").fit(_X, _y), ValueError),
    ("cdcvae_ctd_without_validation_events", lambda: CDCVAE(epochs=1).fit(
        _X, _y, _X, make_survival_array(np.zeros(30, bool), _y["time"])), ValueError),
    ("ibs_grid_not_increasing", lambda: metrics.ibs(_y, _y, np.zeros((30, 2)), [1.0, 1.0]), ValueError),
    ("load_unknown_dataset", lambda: load_bundled("support"), ValueError),
]

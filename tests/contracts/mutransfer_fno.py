"""Contract cases of mutransfer_fno: FNO and SpectralConvNd (nn.Modules) and bad input."""

from __future__ import annotations

import numpy as np
import torch

from icml25.papers.mutransfer_fno import (
    FNO,
    SpectralConvNd,
    TrainSettings,
    burgers_dataset,
    burgers_solve,
    clip_grad_elementwise_,
    grf_1d,
    lr_sweep,
    mup_param_groups,
    mup_scale,
    neuralop_n_modes,
    optimum_index,
    relative_l2,
    train_fno,
    train_fno_lr_grid,
    transfer_hyperparameters,
)

ESTIMATORS: list = []  # no scikit-learn estimators: FNO is an nn.Module, training is train_fno / lr_sweep

MODULES = {
    "FNO": lambda: (FNO(1, 1, 1, width=4, n_layers=2, modes=4), (torch.randn(2, 16, 1),)),
    "FNO2d": lambda: (FNO(2, 2, 1, width=4, n_layers=1, modes=3, param="mup"), (torch.randn(2, 8, 8, 2),)),
    "SpectralConvNd": lambda: (SpectralConvNd(3, 2, (4,), param="mup", k_base=2), (torch.randn(2, 3, 16),)),
    "SpectralConvNd3d": lambda: (SpectralConvNd(2, 2, (2, 2, 2)), (torch.randn(1, 2, 6, 6, 6),)),
}

_A = torch.randn(4, 16)
_SETTINGS = TrainSettings(width=4, n_layers=1, epochs=1, batch_size=2)

BAD_INPUTS = [
    ("fno_bad_dimension", lambda: FNO(4, 1, 1), ValueError),
    ("fno_modes_wrong_length", lambda: FNO(2, 1, 1, modes=(4,)), ValueError),
    ("fno_zero_layers", lambda: FNO(1, 1, 1, n_layers=0), ValueError),
    ("fno_zero_width", lambda: FNO(1, 1, 1, width=0), ValueError),
    ("fno_zero_in_channels", lambda: FNO(1, 0, 1), ValueError),
    ("fno_unknown_param", lambda: FNO(1, 1, 1, param="ntk"), ValueError),
    ("fno_forward_wrong_rank", lambda: FNO(1, 1, 1, width=4, modes=4)(torch.zeros(2, 16)), ValueError),
    ("fno_forward_wrong_channels", lambda: FNO(1, 1, 1, width=4, modes=4)(torch.zeros(2, 16, 3)), ValueError),
    ("fno_forward_grid_too_small", lambda: FNO(1, 1, 1, width=4, modes=8)(torch.zeros(2, 8, 1)), ValueError),
    ("fno_forward_integer_input", lambda: FNO(1, 1, 1, width=4, modes=4)(torch.zeros(2, 16, 1, dtype=torch.long)),
     TypeError),
    ("spectral_unequal_modes", lambda: SpectralConvNd(2, 2, (4, 3)), ValueError),
    ("spectral_zero_channels", lambda: SpectralConvNd(0, 2, (4,)), ValueError),
    ("spectral_negative_init_std", lambda: SpectralConvNd(2, 2, (4,), init_std_base=-1.0), ValueError),
    ("spectral_forward_wrong_channels", lambda: SpectralConvNd(2, 2, (4,))(torch.zeros(1, 3, 16)), ValueError),
    ("mup_scale_one_mode", lambda: mup_scale(1, 4), ValueError),
    ("mup_scale_float_modes", lambda: mup_scale(4.5, 4), ValueError),
    ("transfer_negative_lr", lambda: transfer_hyperparameters(-1e-3, 1.0, 4, 16), ValueError),
    ("transfer_nan_variance", lambda: transfer_hyperparameters(1e-3, float("nan"), 4, 16), ValueError),
    ("grf_odd_resolution", lambda: grf_1d(2, 63, seed=0), ValueError),
    ("burgers_nan_initial", lambda: burgers_solve(np.full(16, np.nan), 0.01), ValueError),
    ("burgers_nonpositive_viscosity", lambda: burgers_solve(np.zeros(16), 0.0), ValueError),
    ("burgers_dataset_bad_solver_res", lambda: burgers_dataset(2, res=64, solver_res=100), ValueError),
    ("relative_l2_shape_mismatch", lambda: relative_l2(torch.zeros(2, 8), torch.ones(2, 9)), ValueError),
    ("clip_nonpositive", lambda: clip_grad_elementwise_(torch.nn.Linear(2, 2), 0.0), ValueError),
    ("param_groups_zero_lr", lambda: mup_param_groups(torch.nn.Linear(2, 2), 0.0), ValueError),
    ("optimum_index_empty", lambda: optimum_index([]), ValueError),
    ("optimum_index_nan", lambda: optimum_index([0.3, float("nan"), 0.2]), ValueError),
    ("train_fno_zero_lr", lambda: train_fno(_A, _A, _A, _A, modes=4, param="sp", lr=0.0, settings=_SETTINGS,
                                            seed=0), ValueError),
    ("train_fno_length_mismatch", lambda: train_fno(_A, _A[:3], _A, _A, modes=4, param="sp", lr=1e-3,
                                                    settings=_SETTINGS, seed=0), ValueError),
    ("lr_grid_empty_lrs", lambda: train_fno_lr_grid(_A, _A, _A, _A, modes=4, params=("sp",), lrs=(),
                                                    settings=_SETTINGS, seed=0), ValueError),
    ("lr_grid_unknown_param", lambda: train_fno_lr_grid(_A, _A, _A, _A, modes=4, params=("ntk",), lrs=(1e-3,),
                                                        settings=_SETTINGS, seed=0), ValueError),
    ("lr_sweep_empty_ks", lambda: lr_sweep((_A, _A, _A, _A), ("sp",), (), (1e-3,), (0,), _SETTINGS), ValueError),
    ("settings_zero_epochs", lambda: TrainSettings(epochs=0), ValueError),
    ("spectral_unknown_complex_init", lambda: SpectralConvNd(2, 2, (4,), complex_init="uniform"), ValueError),
    ("fno_unknown_complex_init", lambda: FNO(1, 1, 1, width=4, modes=4, complex_init="real"), ValueError),
    ("settings_unknown_complex_init", lambda: TrainSettings(complex_init="kaiming"), ValueError),
    ("neuralop_n_modes_zero", lambda: neuralop_n_modes(0, 2), ValueError),
    ("neuralop_n_modes_d4", lambda: neuralop_n_modes(4, 4), ValueError),
]

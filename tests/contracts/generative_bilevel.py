"""Contract cases of generative_bilevel: EpsMLP and LearnableNoiseSchedule (nn.Modules) and bad input."""

from __future__ import annotations

import numpy as np
import torch

from icml25.papers.generative_bilevel import (
    BilevelEntropyTuner,
    BilevelScheduleConfig,
    EntropyTunerConfig,
    EpsMLP,
    GaussianMixture,
    LearnableNoiseSchedule,
    ReverseSDEConfig,
    VPSchedule,
    bilevel_schedule_train,
    ddim_sample,
    dsm_loss,
    grid_search,
    lambda_grad_est1,
    lambda_grad_est2,
    penalty_hypergrad,
    penalty_objective,
    random_search,
    rbf_mmd2,
    ring_mixture,
    tilted_guided_sampler,
    tilted_upper_value,
    train_with_schedule,
    zo_gradient,
)

ESTIMATORS: list = []  # no scikit-learn estimators (BilevelEntropyTuner has fit but no predict/transform)

MODULES = {
    "EpsMLP": lambda: (EpsMLP(2, hidden=8, T=10, n_freq=3), (torch.randn(5, 2), torch.randint(0, 10, (5,)))),
    "LearnableNoiseSchedule": lambda: (LearnableNoiseSchedule("cosine", T=12), ()),
    "LearnableNoiseSchedule_sigmoid": lambda: (LearnableNoiseSchedule("sigmoid", T=12), ()),
    "LearnableNoiseSchedule_linear": lambda: (LearnableNoiseSchedule("linear", T=12), ()),
}

_NET = EpsMLP(2, hidden=4, T=10, n_freq=2)
_SCHED = LearnableNoiseSchedule("cosine", T=10)
_DATA = torch.randn(8, 2)
_MIX = ring_mixture(4)
_ZERO_SAMPLER = lambda reward, lam, n, seed: (torch.zeros(n, 2), torch.zeros(n))  # noqa: E731

BAD_INPUTS = [
    ("schedule_unknown_kind", lambda: LearnableNoiseSchedule("quadratic"), ValueError),
    ("schedule_one_step", lambda: LearnableNoiseSchedule("cosine", T=1), ValueError),
    ("schedule_wrong_param_count", lambda: LearnableNoiseSchedule("cosine", 10, (0.0, 1.0)), ValueError),
    ("schedule_nan_param", lambda: LearnableNoiseSchedule("linear", 10, (float("nan"), 0.02)), ValueError),
    ("eps_mlp_zero_dim", lambda: EpsMLP(0), ValueError),
    ("eps_mlp_zero_steps", lambda: EpsMLP(2, T=0), ValueError),
    ("eps_mlp_wrong_x_shape", lambda: _NET(torch.zeros(3, 5), torch.zeros(3, dtype=torch.long)), ValueError),
    ("eps_mlp_t_wrong_length", lambda: _NET(torch.zeros(3, 2), torch.zeros(4, dtype=torch.long)), ValueError),
    ("dsm_loss_1d_data", lambda: dsm_loss(_NET, _SCHED, torch.zeros(4), torch.Generator()), ValueError),
    ("ddim_zero_steps", lambda: ddim_sample(_NET, _SCHED, 4, 0), ValueError),
    ("ddim_too_many_steps", lambda: ddim_sample(_NET, _SCHED, 4, 11), ValueError),
    ("mmd_dim_mismatch", lambda: rbf_mmd2(torch.zeros(3, 2), torch.zeros(3, 3)), ValueError),
    ("mmd_empty", lambda: rbf_mmd2(torch.zeros(0, 2), torch.zeros(3, 2)), ValueError),
    ("mmd_nonpositive_bandwidth", lambda: rbf_mmd2(torch.zeros(3, 2), torch.ones(3, 2), (0.0,)), ValueError),
    ("zo_zero_mu", lambda: zo_gradient(lambda t: t.sum(), torch.zeros(2), mu=0.0), ValueError),
    ("zo_unknown_kind", lambda: zo_gradient(lambda t: t.sum(), torch.zeros(2), kind="three_point"), ValueError),
    ("bilevel_unknown_zo_kind", lambda: bilevel_schedule_train(_DATA, lambda: _NET, lambda s: s.sum(), zo=True,
                                                               zo_kind="three_point"), ValueError),
    ("bilevel_1d_data", lambda: bilevel_schedule_train(torch.zeros(8), lambda: _NET, lambda s: s.sum()),
     ValueError),
    ("bilevel_zero_gamma", lambda: bilevel_schedule_train(_DATA, lambda: _NET, lambda s: s.sum(), gamma=0.0),
     ValueError),
    ("train_schedule_nan_data", lambda: train_with_schedule(torch.full((8, 2), float("nan")), lambda: _NET, _SCHED,
                                                            iters=1), ValueError),
    ("hypergrad_zero_gamma", lambda: penalty_hypergrad(1.0, 1.0, 1.0, 0.0), ValueError),
    ("hypergrad_shape_mismatch", lambda: penalty_hypergrad(np.ones(2), np.ones(3), np.ones(2), 1.0), ValueError),
    ("est1_nan_reward", lambda: lambda_grad_est1([1.0, np.nan], [0.0, 1.0], 1.0, 10.0), ValueError),
    ("est1_length_mismatch", lambda: lambda_grad_est1([1.0, 2.0, 3.0], [0.0, 1.0], 1.0, 10.0), ValueError),
    ("est1_unknown_form", lambda: lambda_grad_est1([1.0, 2.0], [0.0, 1.0], 1.0, 10.0, form="paper"), ValueError),
    ("est2_nan_kl", lambda: lambda_grad_est2([np.nan, 1.0], [0.0, 1.0], 10.0), ValueError),
    ("penalty_objective_zero_lambda", lambda: penalty_objective([1.0, 2.0], [0.0, 1.0], 0.0, 10.0), ValueError),
    ("sampler_zero_steps", lambda: tilted_guided_sampler(_MIX.score(), None, 1.0, 0), ValueError),
    ("sampler_t_min_out_of_range", lambda: tilted_guided_sampler(_MIX.score(), None, 1.0,
                                                                 ReverseSDEConfig(steps=4, t_min=1.5)), ValueError),
    ("sampler_zero_samples", lambda: tilted_guided_sampler(_MIX.score(), None, 1.0, 4, n=0), ValueError),
    ("tuner_config_one_sample", lambda: EntropyTunerConfig(n_samples=1), ValueError),
    ("tuner_config_unknown_step", lambda: EntropyTunerConfig(step="sqrt"), ValueError),
    ("schedule_config_nan_lr", lambda: BilevelScheduleConfig(lr=float("nan")), ValueError),
    ("schedule_config_zero_truncation", lambda: BilevelScheduleConfig(truncation=0), ValueError),
    ("vp_schedule_reversed_rates", lambda: VPSchedule(beta_min=2.0, beta_max=1.0), ValueError),
    ("vp_schedule_negative_beta", lambda: VPSchedule(beta_min=-1.0), ValueError),
    ("tuner_unknown_estimator", lambda: BilevelEntropyTuner(_ZERO_SAMPLER, lambda x: x[:, 0], lambda x: x[:, 1],
                                                            estimator="est3").fit(1.0, 1), ValueError),
    ("tuner_negative_lambda0", lambda: BilevelEntropyTuner(_ZERO_SAMPLER, lambda x: x[:, 0],
                                                           lambda x: x[:, 1]).fit(-1.0, 1), ValueError),
    ("mixture_weights_not_normalised", lambda: GaussianMixture(np.zeros((2, 2)), 1.0, np.array([0.5, 0.6])),
     ValueError),
    ("ring_zero_modes", lambda: ring_mixture(0), ValueError),
    ("upper_value_zero_lambda", lambda: tilted_upper_value(_MIX, [1, 0], [2, 0], 0.0), ValueError),
    ("grid_search_reversed_bounds", lambda: grid_search(lambda _lam: 0.0, 2.0, 1.0, 3), ValueError),
    ("random_search_zero_calls", lambda: random_search(lambda _lam: 0.0, 0.1, 1.0, 0, np.random.default_rng(0)),
     ValueError),
]

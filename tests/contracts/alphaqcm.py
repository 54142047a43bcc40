"""Contract cases of the alphaqcm row (see README.md here): its module and its bad inputs."""

from __future__ import annotations

import math

import numpy as np
import torch

from icml25.papers.alphaqcm import (
    AlphaEnv,
    AlphaPool,
    AlphaQCMAgent,
    AlphaQCMConfig,
    TokenLSTMNet,
    TokenSet,
    evaluate_rpn,
    forward_return,
    lasso_weights,
    make_synthetic_env,
    parse_rpn,
    qcm_moments,
    quantile_huber_loss,
    quantile_midpoints,
    random_search,
    reduced_token_set,
    rolling_pair,
    rolling_stat,
    synthetic_market,
)

TAUS8 = quantile_midpoints(8)


def _prefixes() -> torch.Tensor:
    """Three padded token prefixes over 10 tokens (0 = padding), of lengths 0, 2 and 5."""
    return torch.tensor([[0, 0, 0, 0, 0, 0], [3, 7, 0, 0, 0, 0], [1, 2, 3, 4, 5, 0]])


MODULES = {
    "TokenLSTMNet": lambda: (TokenLSTMNet(10, n_out=3, d_model=8, hidden=8), (_prefixes(),)),
}


def _panel(days: int = 30, stocks: int = 4) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {f: rng.uniform(1, 2, (days, stocks)) for f in ("open", "close", "high", "low", "volume", "vwap")}


def _pool(days: int = 30, stocks: int = 4) -> AlphaPool:
    return AlphaPool(3, np.random.default_rng(1).normal(size=(days, stocks)), tokens=reduced_token_set())


def _env_step(action):
    env = make_synthetic_env(n_stocks=5, n_days=150)
    env.reset(seed=0)
    return env.step(action)


BAD_INPUTS = [
    ("quantile_midpoints_zero", lambda: quantile_midpoints(0), ValueError),
    ("qcm_moments_nan_taus", lambda: qcm_moments(np.zeros(8), np.full(8, math.nan)), ValueError),
    ("qcm_moments_level_mismatch", lambda: qcm_moments(np.zeros(7), TAUS8), ValueError),
    ("quantile_huber_taus_mismatch",
     lambda: quantile_huber_loss(torch.zeros(2, 4), torch.zeros(2, 4), torch.full((3,), 0.5)), ValueError),
    ("quantile_huber_batch_mismatch",
     lambda: quantile_huber_loss(torch.zeros(2, 4), torch.zeros(3, 4), torch.full((4,), 0.5)), ValueError),
    ("forward_return_zero_horizon", lambda: forward_return(np.ones((30, 3)), horizon=0), ValueError),
    ("synthetic_market_nan_noise", lambda: synthetic_market(5, 100, noise=math.nan), ValueError),
    ("synthetic_market_one_stock", lambda: synthetic_market(1, 100), ValueError),
    ("lasso_nan_penalty", lambda: lasso_weights(np.eye(2), np.ones(2), l1_alpha=math.nan), ValueError),
    ("lasso_shape_mismatch", lambda: lasso_weights(np.eye(3), np.ones(2)), ValueError),
    ("pool_zero_capacity", lambda: AlphaPool(0, np.zeros((5, 3))), ValueError),
    ("pool_nan_l1_alpha", lambda: AlphaPool(2, np.zeros((5, 3)), l1_alpha=math.nan), ValueError),
    ("pool_mutual_ic_out_of_range", lambda: AlphaPool(2, np.zeros((5, 3)), max_mutual_ic=1.5), ValueError),
    ("pool_wrong_value_shape", lambda: _pool().try_new_expr(np.zeros((30, 5))), ValueError),
    ("rolling_unknown_op_long_window", lambda: rolling_stat(np.ones((5, 2)), 10, "Nope"), ValueError),
    ("rolling_pair_zero_window", lambda: rolling_pair(np.ones((5, 2)), np.ones((5, 2)), 0, "Corr"), ValueError),
    ("token_set_nan_constant", lambda: TokenSet(constants=(math.nan,)), ValueError),
    ("parse_incomplete_rpn", lambda: parse_rpn("close open", reduced_token_set()), ValueError),
    ("evaluate_rpn_out_of_range_id", lambda: evaluate_rpn([10_000], reduced_token_set(), _panel()), ValueError),
    ("evaluate_rpn_negative_id", lambda: evaluate_rpn([-1], reduced_token_set(), _panel()), ValueError),
    ("env_panel_missing_feature", lambda: AlphaEnv(_pool(), {"close": np.ones((30, 4))}, reduced_token_set()),
     ValueError),
    ("env_zero_max_len", lambda: AlphaEnv(_pool(), _panel(), reduced_token_set(), max_len=0), ValueError),
    ("env_action_out_of_range", lambda: _env_step(10_000), ValueError),
    ("env_negative_action", lambda: _env_step(-1), ValueError),
    ("agent_config_negative_lr", lambda: AlphaQCMConfig(lr=-1.0), ValueError),
    ("agent_config_unknown_encoder", lambda: AlphaQCMConfig(encoder="transformer"), ValueError),
    ("agent_config_dropout_one", lambda: AlphaQCMConfig(dropout=1.0), ValueError),
    ("agent_config_per_beta_above_one", lambda: AlphaQCMConfig(per_beta=1.5), ValueError),
    ("agent_config_nan_per_alpha", lambda: AlphaQCMConfig(per_alpha=math.nan), ValueError),
    ("lstm_net_unknown_encoder", lambda: TokenLSTMNet(10, encoder="gru"), ValueError),
    ("lstm_net_obs_longer_than_max_len", lambda: TokenLSTMNet(10, max_len=4)(torch.ones(2, 6, dtype=torch.long)),
     ValueError),
    ("quantile_huber_weights_wrong_shape",
     lambda: quantile_huber_loss(torch.zeros(2, 4), torch.zeros(2, 4), torch.full((4,), 0.5), weights=torch.ones(3)),
     ValueError),
    ("agent_too_few_quantiles", lambda: AlphaQCMAgent(AlphaQCMConfig(n_quantiles=2, memory_size=10), 5, 4), ValueError),
    ("agent_zero_actions", lambda: AlphaQCMAgent(AlphaQCMConfig(n_quantiles=8, memory_size=10), 0, 4), ValueError),
    ("agent_mask_wrong_length",
     lambda: AlphaQCMAgent(AlphaQCMConfig(n_quantiles=8, memory_size=10), 5, 4).act(np.zeros(4, np.int64),
                                                                                    np.ones(3, bool)), ValueError),
    ("random_search_negative_episodes", lambda: random_search(make_synthetic_env(5, 150), -1), ValueError),
]

"""Contract cases of robust_markov_games: TV-robust expectations, the Markov game and Robust-Q-FTRL.

No estimators, modules or environments.
"""

import numpy as np

from icml25.papers.robust_markov_games import (
    CorrelatedPolicy,
    MarkovGame,
    estimate_joint_model,
    ftrl_step_sizes,
    joint_model_baseline,
    mixture_weights,
    random_general_sum_game,
    robust_best_response_values,
    robust_cce_gap,
    robust_cce_gaps,
    robust_policy_values,
    robust_q_ftrl,
    tv_robust_expectation,
    tv_robust_expectation_batch,
)

GAME = random_general_sum_game(2, 2, 3, 2, seed=0)
H, S = GAME.horizon, GAME.n_states
UNIFORM = CorrelatedPolicy.product([np.full((H, S, 2), 0.5)] * 2)
RNG = np.random.default_rng(0)


def _nan_P():
    P = GAME.P.copy()
    P[0, 0, 0, 0, 0] = np.nan
    return P


BAD_INPUTS = [
    ("tv.negative_sigma", lambda: tv_robust_expectation([0.5, 0.5], [1.0, 2.0], -0.1), ValueError),
    ("tv.nan_sigma", lambda: tv_robust_expectation([0.5, 0.5], [1.0, 2.0], np.nan), ValueError),
    ("tv.p_not_distribution", lambda: tv_robust_expectation([0.5, 0.6], [1.0, 2.0], 0.1), ValueError),
    ("tv.length_mismatch", lambda: tv_robust_expectation([0.5, 0.5], [1.0, 2.0, 3.0], 0.1), ValueError),
    ("tv.inf_values", lambda: tv_robust_expectation([0.5, 0.5], [1.0, np.inf], 0.1), ValueError),
    ("tv.empty", lambda: tv_robust_expectation([], [], 0.1), ValueError),
    ("tv_batch.sigma_shape", lambda: tv_robust_expectation_batch(np.full((3, 2), 0.5), np.ones(2), np.ones(4) * 0.1),
     ValueError),
    ("game.nan_P", lambda: MarkovGame(_nan_P(), GAME.R, H), ValueError),
    ("game.reward_above_one", lambda: MarkovGame(GAME.P, GAME.R + 2.0, H), ValueError),
    ("game.horizon_mismatch", lambda: MarkovGame(GAME.P, GAME.R, H + 1), ValueError),
    ("game.joint_action_out_of_range", lambda: GAME.joint_index([0, 2]), ValueError),
    ("game.sample_float_step", lambda: GAME.sample_next(0.5, 0, [0, 0], RNG), TypeError),
    ("game.sample_state_out_of_range", lambda: GAME.sample_next(0, S, [0, 0], RNG), ValueError),
    ("random_game.zero_agents", lambda: random_general_sum_game(0, 2, 3, 2), ValueError),
    ("random_game.action_count_length", lambda: random_general_sum_game(2, [2, 2, 2], 3, 2), ValueError),
    ("policy.not_distribution", lambda: CorrelatedPolicy(np.ones((H, S, 2, 2))), ValueError),
    ("policy.product_of_nothing", lambda: CorrelatedPolicy.product([]), ValueError),
    ("policy.marginal_agent_out_of_range", lambda: UNIFORM.marginal(2), ValueError),
    ("policy.others_marginal_negative_agent", lambda: UNIFORM.others_marginal(-1), ValueError),
    ("policy.mixture_shape_mismatch",
     lambda: CorrelatedPolicy.mixture(np.ones((H, S, 1)), [np.full((H, S, 2, 2), 0.5), np.full((H, S + 1, 1, 2), 0.5)]),
     ValueError),
    ("values.policy_shape_mismatch",
     lambda: robust_policy_values(GAME, CorrelatedPolicy(np.full((H, S, 4), 0.25)), 0.1), ValueError),
    ("best_response.sigma_per_agent_length", lambda: robust_best_response_values(GAME, UNIFORM, [0.1, 0.1, 0.1]),
     ValueError),
    ("gap.not_a_policy", lambda: robust_cce_gap(GAME, np.ones((H, S, 2, 2)) / 4, 0.1), ValueError),
    ("gaps.initial_state_out_of_range", lambda: robust_cce_gaps(GAME, UNIFORM, 0.1, initial_state=S), ValueError),
    ("gaps.float_initial_state", lambda: robust_cce_gaps(GAME, UNIFORM, 0.1, initial_state=0.5), TypeError),
    ("ftrl_step_sizes.zero_rounds", lambda: ftrl_step_sizes(0), ValueError),
    ("ftrl_step_sizes.nan_c_alpha", lambda: ftrl_step_sizes(5, np.nan), ValueError),
    ("ftrl_step_sizes.absurd_c_alpha", lambda: ftrl_step_sizes(5, 1e308), ValueError),
    ("rqftrl.absurd_c_alpha", lambda: robust_q_ftrl(GAME, 0.1, 5, 2, c_alpha=1e308), ValueError),
    ("rqftrl.inf_c_alpha", lambda: robust_q_ftrl(GAME, 0.1, 5, 2, c_alpha=np.inf), ValueError),
    ("joint_model.fractional_above_one", lambda: estimate_joint_model(GAME, 1.5), ValueError),
    ("mixture_weights.nan", lambda: mixture_weights([1.0, np.nan]), ValueError),
    ("mixture_weights.outside_unit_interval", lambda: mixture_weights([1.0, 1.5]), ValueError),
    ("mixture_weights.empty", lambda: mixture_weights([]), ValueError),
    ("rqftrl.not_a_game", lambda: robust_q_ftrl("game", 0.1, 5, 2), ValueError),
    ("rqftrl.sigma_above_one", lambda: robust_q_ftrl(GAME, 1.5, 5, 2), ValueError),
    ("rqftrl.zero_samples", lambda: robust_q_ftrl(GAME, 0.1, 5, 0), ValueError),
    ("rqftrl.negative_bonus", lambda: robust_q_ftrl(GAME, 0.1, 5, 2, c_bonus=-1.0), ValueError),
    ("joint_model.zero_samples", lambda: estimate_joint_model(GAME, 0), ValueError),
    ("joint_baseline.zero_rounds", lambda: joint_model_baseline(GAME, 0.1, 1, 0), ValueError),
]

"""Contract cases of r1vi: plain NumPy planners and learners (no estimators, no modules)."""

import numpy as np

from icml25.common.mdp import garnet_mdp, generative_model
from icml25.papers.r1vi import power_step, r1_q_learning, r1_q_value_iteration, r1_value_iteration

P, R = garnet_mdp(4, 2, 2, seed=0)
P_PI = P[0]
D = np.full(4, 0.25)
SAMPLER = generative_model(P)


def _nan(a, index=(0, 0)):
    a = np.array(a, dtype=float)
    a[index] = np.nan
    return a


def _sampler_returning(next_states):
    return lambda rng: np.asarray(next_states)


BAD_INPUTS = [
    ("r1vi.nan_transition", lambda: r1_value_iteration(_nan(P, (0, 0, 0)), R, 0.9), ValueError),
    ("r1vi.nan_reward", lambda: r1_value_iteration(P, _nan(R), 0.9), ValueError),
    ("r1vi.inf_reward", lambda: r1_value_iteration(P, np.full((4, 2), np.inf), 0.9), ValueError),
    ("r1vi.empty_P", lambda: r1_value_iteration(np.zeros((0, 0, 0)), np.zeros((0, 0)), 0.9), ValueError),
    ("r1vi.reward_shape", lambda: r1_value_iteration(P, R.T, 0.9), ValueError),
    ("r1vi.gamma_one", lambda: r1_value_iteration(P, R, 1.0), ValueError),
    ("r1vi.gamma_nan", lambda: r1_value_iteration(P, R, np.nan), ValueError),
    ("r1vi.negative_power_steps", lambda: r1_value_iteration(P, R, 0.9, power_steps=-1), ValueError),
    ("r1vi.zero_max_iter", lambda: r1_value_iteration(P, R, 0.9, max_iter=0), ValueError),
    ("r1vi.negative_d0", lambda: r1_value_iteration(P, R, 0.9, d0=[-1.0, 1.0, 0.5, 0.5]), ValueError),
    ("r1vi.d0_wrong_length", lambda: r1_value_iteration(P, R, 0.9, d0=[1.0, 0.0]), ValueError),
    ("r1qvi.q0_shape", lambda: r1_q_value_iteration(P, R, 0.9, q0=np.zeros(4)), ValueError),
    ("r1qvi.nan_tol", lambda: r1_q_value_iteration(P, R, 0.9, tol=np.nan), ValueError),
    ("r1qvi.float_power_steps", lambda: r1_q_value_iteration(P, R, 0.9, power_steps=2.5), ValueError),
    ("power_step.not_square", lambda: power_step(np.ones((4, 3)) / 3, D, 1), ValueError),
    ("power_step.nan_matrix", lambda: power_step(_nan(P_PI), D, 1), ValueError),
    ("power_step.d_wrong_length", lambda: power_step(P_PI, np.ones(3) / 3, 1), ValueError),
    ("power_step.negative_steps", lambda: power_step(P_PI, D, -1), ValueError),
    ("power_step.zero_d", lambda: power_step(P_PI, np.zeros(4), 1), ValueError),
    ("r1ql.sampler_not_callable", lambda: r1_q_learning(P, R, 0.9, 10), ValueError),
    ("r1ql.negative_n_iter", lambda: r1_q_learning(SAMPLER, R, 0.9, -1), ValueError),
    ("r1ql.bad_step_size", lambda: r1_q_learning(SAMPLER, R, 0.9, 10, step_size=0.0), ValueError),
    ("r1ql.sampler_negative_state", lambda: r1_q_learning(_sampler_returning(-np.ones((4, 2), int)), R, 0.9, 3),
     ValueError),
    ("r1ql.sampler_out_of_range_state",
     lambda: r1_q_learning(_sampler_returning(np.full((4, 2), 4)), R, 0.9, 3), ValueError),
    ("r1ql.sampler_float_states", lambda: r1_q_learning(_sampler_returning(np.zeros((4, 2))), R, 0.9, 3),
     ValueError),
    ("r1ql.sampler_wrong_shape", lambda: r1_q_learning(_sampler_returning(np.zeros(4, int)), R, 0.9, 3),
     ValueError),
    ("r1ql.d0_negative", lambda: r1_q_learning(SAMPLER, R, 0.9, 3, d0=-np.ones((4, 2))), ValueError),
]

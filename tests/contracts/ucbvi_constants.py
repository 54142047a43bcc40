"""Contract cases of ucbvi_constants: tabular agents, bonuses and episodic MDP simulators.

No estimators or modules; ``TabularEpisodicMDP`` is a plain simulator (not a ``gym.Env``).
"""

import numpy as np

from icml25.papers.ucbvi_constants import (
    MVP,
    UCBVI,
    TabularEpisodicMDP,
    Trajectory,
    bonus_bf,
    bonus_ch,
    bonus_ch_refined,
    bonus_mvp,
    check_episodic_mdp,
    greedy_policy,
    illustrative_mdp,
    log_term,
    mvp_iota,
    optimistic_backward_induction,
    policy_value,
    random_episodic_mdp,
    riverswim,
    run_regret,
)

S, A, H = 3, 2, 4
ENV = riverswim(S, H)
P_SAS = np.full((S, A, S), 1.0 / S)
V = np.zeros(S)
N = np.ones((S, A))
GOOD_TRAJ = Trajectory(np.zeros(H + 1, dtype=int), np.zeros(H, dtype=int), np.zeros(H))


def _ucbvi():
    return UCBVI(S, A, H, K=10, seed=0)


def _mvp():
    return MVP(S, A, H, K=10, seed=0)


def _traj(states=None, actions=None, rewards=None):
    s, a, r = GOOD_TRAJ
    return Trajectory(s if states is None else np.asarray(states), a if actions is None else np.asarray(actions),
                      r if rewards is None else np.asarray(rewards))


def _nan(a, index=(0, 0)):
    a = np.array(a, dtype=float)
    a[index] = np.nan
    return a


BAD_INPUTS = [
    # act / update indices (fixed earlier; kept as battery cases)
    ("ucbvi.act_float_step", lambda: _ucbvi().act(1.0, 0), TypeError),
    ("ucbvi.act_negative_state", lambda: _ucbvi().act(0, -1), ValueError),
    ("ucbvi.act_state_out_of_range", lambda: _ucbvi().act(0, S), ValueError),
    ("ucbvi.act_step_out_of_range", lambda: _ucbvi().act(H, 0), ValueError),
    ("mvp.act_bool_state", lambda: _mvp().act(0, True), TypeError),
    ("ucbvi.update_float_states", lambda: _ucbvi().update(_traj(states=np.zeros(H + 1))), TypeError),
    ("mvp.update_action_out_of_range", lambda: _mvp().update(_traj(actions=np.full(H, A))), ValueError),
    ("ucbvi.update_wrong_length", lambda: _ucbvi().update(_traj(actions=np.zeros(H - 1, dtype=int))), ValueError),
    ("ucbvi.update_nan_reward", lambda: _ucbvi().update(_traj(rewards=np.full(H, np.nan))), ValueError),
    ("mvp.update_negative_state", lambda: _mvp().update(_traj(states=-np.ones(H + 1, dtype=int))), ValueError),
    # construction
    ("ucbvi.zero_states", lambda: UCBVI(0, A, H, K=10), ValueError),
    ("ucbvi.delta_out_of_range", lambda: UCBVI(S, A, H, K=10, delta=1.5), ValueError),
    ("ucbvi.unknown_bonus", lambda: UCBVI(S, A, H, K=10, bonus="xyz"), ValueError),
    ("ucbvi.nan_bonus_scale", lambda: UCBVI(S, A, H, K=10, bonus_scale=np.nan), ValueError),
    ("ucbvi.refined_wrong_keys", lambda: UCBVI(S, A, H, K=10, bonus="ch_refined", refined_constants={"c": 2.0}),
     ValueError),
    ("ucbvi.unknown_tie_break", lambda: UCBVI(S, A, H, K=10, tie_break="last"), ValueError),
    ("mvp.unknown_variance", lambda: MVP(S, A, H, K=10, variance="std"), ValueError),
    ("mvp.delta_zero", lambda: MVP(S, A, H, K=10, delta=0.0), ValueError),
    ("mvp.negative_bonus_scale", lambda: MVP(S, A, H, K=10, bonus_scale=-1.0), ValueError),
    ("mvp.float_horizon", lambda: MVP(S, A, 2.5, K=10), ValueError),
    # bonuses and planning
    ("log_term.zero_states", lambda: log_term(0, A, 10, 0.1), ValueError),
    ("log_term.nan_delta", lambda: log_term(S, A, 10, np.nan), ValueError),
    ("bonus_ch.negative_counts", lambda: bonus_ch(-N, H, 1.0), ValueError),
    ("bonus_ch.nan_counts", lambda: bonus_ch(_nan(N), H, 1.0), ValueError),
    ("bonus_ch.nan_L", lambda: bonus_ch(N, 10, np.nan), ValueError),
    ("bonus_ch.negative_H", lambda: bonus_ch(N, -1, 1.0), ValueError),
    ("bonus_ch.inf_H", lambda: bonus_ch(N, np.inf, 1.0), ValueError),
    ("bonus_ch.negative_L", lambda: bonus_ch(N, H, -1.0), ValueError),
    ("bonus_ch.negative_c", lambda: bonus_ch(N, H, 1.0, c=-7.0), ValueError),
    ("bonus_ch.nan_c", lambda: bonus_ch(N, H, 1.0, c=np.nan), ValueError),
    ("bonus_ch.string_L", lambda: bonus_ch(N, H, "1.0"), TypeError),
    ("bonus_ch_refined.negative_c", lambda: bonus_ch_refined(N, H, 1.0, constants={"c": -2.0, "c_log": 5.0}),
     ValueError),
    ("bonus_ch_refined.missing_key", lambda: bonus_ch_refined(N, H, 1.0, constants={"c": 1.0}), ValueError),
    ("bonus_bf.p_hat_shape", lambda: bonus_bf(N, np.ones((S, A, S + 1)), V, np.ones(S), H, 1.0), ValueError),
    ("bonus_bf.nan_next_counts", lambda: bonus_bf(N, P_SAS, V, _nan(np.ones(S), 0), H, 1.0), ValueError),
    ("bonus_bf.v_next_length", lambda: bonus_bf(N, P_SAS, np.zeros(S + 1), np.ones(S), H, 1.0), ValueError),
    ("bonus_mvp.negative_reward_variance", lambda: bonus_mvp(N, P_SAS, V, -N, H, 1.0), ValueError),
    ("bonus_mvp.nan_v_next", lambda: bonus_mvp(N, P_SAS, _nan(V, 0), N, H, 1.0), ValueError),
    ("greedy_policy.nan_q", lambda: greedy_policy(_nan(N), np.random.default_rng(0)), ValueError),
    ("greedy_policy.not_a_generator", lambda: greedy_policy(N, 0), TypeError),
    ("obi.zero_horizon", lambda: optimistic_backward_induction(P_SAS, N, N > 0, 0, lambda h, v: 0.0), ValueError),
    ("obi.r_hat_shape", lambda: optimistic_backward_induction(P_SAS, np.ones((S, A + 1)), N > 0, H,
                                                              lambda h, v: 0.0), ValueError),
    # environments
    ("check_episodic_mdp.zero_horizon", lambda: check_episodic_mdp(ENV.P[0], ENV.R[0], 0), ValueError),
    ("check_episodic_mdp.reward_above_one", lambda: check_episodic_mdp(ENV.P[0], ENV.R[0] + 2.0, H), ValueError),
    ("check_episodic_mdp.nan_P", lambda: check_episodic_mdp(_nan(ENV.P[0], (0, 0, 0)), ENV.R[0], H), ValueError),
    ("env.s0_out_of_range", lambda: TabularEpisodicMDP(ENV.P[0], ENV.R[0], H, s0=S), ValueError),
    ("env.step_float_action", lambda: (ENV.reset(seed=0), ENV.step(0.5)), TypeError),
    ("env.step_negative_action", lambda: (ENV.reset(seed=0), ENV.step(-1)), ValueError),
    ("policy_value.action_out_of_range", lambda: policy_value(ENV.P, ENV.R, np.full((H, S), A)), ValueError),
    ("policy_value.wrong_shape", lambda: policy_value(ENV.P, ENV.R, np.zeros((H - 1, S), dtype=int)), ValueError),
    ("expected_regret.float_policy", lambda: ENV.expected_regret(np.zeros((H, S))), TypeError),
    ("riverswim.one_state", lambda: riverswim(1, H), ValueError),
    ("random_mdp.branching_above_states", lambda: random_episodic_mdp(3, 2, 4, branching=5), ValueError),
    ("run_regret.zero_episodes", lambda: run_regret(ENV, _ucbvi(), 0), ValueError),
    ("run_regret.agent_without_policy", lambda: run_regret(ENV, object(), 5), ValueError),
    ("run_regret.unknown_regret", lambda: run_regret(ENV, _ucbvi(), 5, regret="pseudo"), ValueError),
    ("illustrative_mdp.negative_seed", lambda: illustrative_mdp(S, A, H, seed=-1), ValueError),
    ("mvp_iota.delta_above_one", lambda: mvp_iota(S, A, H, 10, delta=2.0), ValueError),
]

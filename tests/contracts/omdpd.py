"""Contract cases of omdpd: online CMDP learners, occupancy LPs and the episodic CMDP simulator.

No estimators or modules; ``EpisodicCMDP`` is a plain simulator (not a ``gym.Env``).
"""

import numpy as np

from icml25.papers.omdpd import (
    OMDPD,
    EpisodicCMDP,
    IIDCostSchedule,
    KLPolicyOMDPD,
    OptimisticModel,
    OptPrimalDualCMDP,
    ReactiveSchedule,
    SwitchingSchedule,
    Trajectory,
    UnconstrainedUCBVI,
    adversarial_instance,
    evaluate_policy,
    flow_residual,
    min_max_constraint_value,
    mirror_descent_step,
    occupancy_from_policy,
    occupancy_lp,
    paper_instance,
    policy_from_occupancy,
    policy_value,
    project_occupancy,
    random_cmdp,
    run_online,
)

S, A, H = 3, 2, 2
P, R = random_cmdp(S, A, H, seed=0)
P4 = np.broadcast_to(P, (H, *P.shape))
G = np.zeros((S, A))
UNIFORM = np.full((H, S, A), 1.0 / A)


def _traj(states=(0, 1, 2), actions=(0, 1), rewards=(0.0, 1.0)):
    return Trajectory(np.asarray(states), np.asarray(actions), np.asarray(rewards))


def _omdpd():
    return OMDPD(S, A, H)


def _env():
    return EpisodicCMDP(P, R, H, seed=0)


def _stepped(action):
    env = _env()
    env.reset()
    return env.step(action)


BAD_INPUTS = [
    # learners
    ("omdpd.zero_states", lambda: OMDPD(0, A, H), ValueError),
    ("omdpd.zero_eta", lambda: OMDPD(S, A, H, eta=0.0), ValueError),
    ("omdpd.zero_alpha", lambda: OMDPD(S, A, H, alpha=0.0), ValueError),
    ("omdpd.nan_beta", lambda: OMDPD(S, A, H, beta=np.nan), ValueError),
    ("omdpd.cost_optimism_not_bool", lambda: OMDPD(S, A, H, cost_optimism=1.5), ValueError),
    ("omdpd.stage_dependent_not_bool", lambda: OMDPD(S, A, H, stage_dependent="no"), ValueError),
    ("omdpd_kl.nan_eta_dual", lambda: KLPolicyOMDPD(S, A, H, eta_dual=np.nan), ValueError),
    ("omdpd_kl.zero_eta", lambda: KLPolicyOMDPD(S, A, H, eta=0.0), ValueError),
    ("omdpd.delta_one", lambda: OMDPD(S, A, H, delta=1.0), ValueError),
    ("omdpd.unknown_setting", lambda: OMDPD(S, A, H, eta_dual=1.0), TypeError),
    ("ucbvi.negative_bonus_scale", lambda: UnconstrainedUCBVI(S, A, H, bonus_scale=-0.1), ValueError),
    ("mirror_step.negative_eta", lambda: mirror_descent_step(np.zeros(A), np.zeros(A), -1.0), ValueError),
    ("omdpd.reversed_g_range", lambda: OMDPD(S, A, H, g_range=(1.0, -1.0)), ValueError),
    ("omdpd.nan_g_range", lambda: OMDPD(S, A, H, g_range=(np.nan, 1.0)), ValueError),
    ("omdpd.mu_out_of_range", lambda: OMDPD(S, A, H, mu=S), ValueError),
    ("omdpd.update_state_out_of_range", lambda: _omdpd().update(_traj(states=(0, 1, S)), G), ValueError),
    ("omdpd.update_negative_action", lambda: _omdpd().update(_traj(actions=(0, -1)), G), ValueError),
    ("omdpd.update_float_states", lambda: _omdpd().update(_traj(states=(0.0, 1.0, 2.0)), G), TypeError),
    ("omdpd.update_nan_reward", lambda: _omdpd().update(_traj(rewards=(np.nan, 0.0)), G), ValueError),
    ("omdpd.update_wrong_length", lambda: _omdpd().update(_traj(actions=(0,)), G), ValueError),
    ("omdpd.update_nan_constraint", lambda: _omdpd().update(_traj(), np.full((S, A), np.nan)), ValueError),
    ("omdpd.update_constraint_outside_range", lambda: _omdpd().update(_traj(), np.full((S, A), 5.0)), ValueError),
    ("pd.negative_eta_dual", lambda: OptPrimalDualCMDP(S, A, H, eta_dual=-1.0), ValueError),
    ("pd.update_state_out_of_range", lambda: OptPrimalDualCMDP(S, A, H).update(_traj(states=(0, 9, 1)), G),
     ValueError),
    ("ucbvi.update_action_out_of_range", lambda: UnconstrainedUCBVI(S, A, H).update(_traj(actions=(0, A))),
     ValueError),
    ("model.negative_bonus_scale", lambda: OptimisticModel(S, A, H, bonus_scale=-1.0), ValueError),
    ("model.add_negative_state", lambda: OptimisticModel(S, A, H).add(_traj(states=(-1, 0, 0))), ValueError),
    # environment and schedules
    ("env.reward_mean_above_one", lambda: EpisodicCMDP(P, R + 1.0, H), ValueError),
    ("env.nan_P", lambda: EpisodicCMDP(np.full_like(P, np.nan), R, H), ValueError),
    ("env.step_float_action", lambda: _stepped(1.5), TypeError),
    ("env.step_action_out_of_range", lambda: _stepped(A), ValueError),
    ("env.rollout_bad_policy_shape", lambda: _env().rollout(np.ones((H, S))), ValueError),
    ("switching.shape_mismatch", lambda: SwitchingSchedule(G, np.zeros((S, A + 1))), ValueError),
    ("reactive.nan_penalty", lambda: ReactiveSchedule(G, np.nan), ValueError),
    ("reactive.nan_base", lambda: ReactiveSchedule(np.full((S, A), np.nan), 0.5), ValueError),
    ("iid_costs.empty_values", lambda: IIDCostSchedule([], (H, S, A)), ValueError),
    ("iid_costs.bad_shape", lambda: IIDCostSchedule([0.0, 1.0], (H, 0, A)), ValueError),
    ("paper_instance.zero_concentration", lambda: paper_instance(S, A, H, concentration=0.0), ValueError),
    ("project_occupancy.z_shape", lambda: project_occupancy(np.zeros((H, S, A + 1)), P), ValueError),
    ("project_occupancy.nan_z", lambda: project_occupancy(np.full((H, S, A), np.nan), P), ValueError),
    ("project_occupancy.zero_tol", lambda: project_occupancy(np.zeros((H, S, A)), P, tol=0.0), ValueError),
    ("random_cmdp.zero_concentration", lambda: random_cmdp(S, A, H, concentration=0.0), ValueError),
    ("adversarial.unknown_kind", lambda: adversarial_instance("random", S, A, H), ValueError),
    ("adversarial.tightness_above_one", lambda: adversarial_instance("switching", S, A, H, tightness=2.0),
     ValueError),
    ("run_online.zero_episodes", lambda: run_online(_env(), _omdpd(), 0), ValueError),
    # occupancy measures and LPs
    ("occupancy.policy_not_distribution", lambda: occupancy_from_policy(P, np.ones((H, S, A))), ValueError),
    ("occupancy.policy_wrong_ndim", lambda: occupancy_from_policy(P, np.ones((S, A)) / A), ValueError),
    ("policy_from_occupancy.negative", lambda: policy_from_occupancy(-np.ones((H, S, A))), ValueError),
    ("policy_from_occupancy.nan", lambda: policy_from_occupancy(np.full((H, S, A), np.nan)), ValueError),
    ("policy_value.f_shape", lambda: policy_value(P, np.ones((S + 1, A)), UNIFORM), ValueError),
    ("flow_residual.q_shape", lambda: flow_residual(P, np.ones((H, S + 1, A))), ValueError),
    ("occupancy_lp.nan_reward", lambda: occupancy_lp(P, np.full((S, A), np.nan), None, 0, H), ValueError),
    ("occupancy_lp.infeasible", lambda: occupancy_lp(P, R, [np.ones((S, A))], 0, H), ValueError),
    ("min_max.no_constraints", lambda: min_max_constraint_value(P, [], 0, H), ValueError),
    ("evaluate_policy.policy_shape", lambda: evaluate_policy(P4, np.zeros((H, S, A)), np.ones((H, S))),
     ValueError),
    ("evaluate_policy.nan_f", lambda: evaluate_policy(P4, np.full((H, S, A), np.nan), UNIFORM), ValueError),
    ("mirror_descent.shape_mismatch", lambda: mirror_descent_step(np.zeros((H, S, A)), np.zeros((H, S)), 1.0),
     ValueError),
    ("mirror_descent.nan_eta", lambda: mirror_descent_step(np.zeros((H, S, A)), np.zeros((H, S, A)), np.nan),
     ValueError),
]

"""Contract cases of the infeasible_targets row (see README.md here): its module and its bad inputs."""

from __future__ import annotations

import math

import numpy as np
import torch

from icml25.papers.infeasible_targets import (
    HallucinatingGenerator,
    RejectingPlanner,
    ReplayBuffer,
    SSMTaskSet,
    SwordShieldMonster,
    TabularHERAgent,
    TargetEvaluator,
    distributional_td_target,
    relabel,
    scalar_td_target,
    train_evaluator,
    two_hot,
)

FEATURES = np.eye(12, dtype=np.float32)[:, :6] + np.arange(12, dtype=np.float32)[:, None] / 12
"""Features of 12 states, 6 columns each."""

MODULES = {
    "TargetEvaluator": lambda: (TargetEvaluator(FEATURES, n_actions=3, n_bins=4, hidden=8),
                                (torch.tensor([0, 5, 11]), torch.tensor([2, 2, 7]))),
}


def _replay(episodes=(0, 0, 1, 1)) -> ReplayBuffer:
    n = len(episodes)
    return ReplayBuffer(np.arange(n), np.zeros(n, np.int64), np.arange(1, n + 1), np.zeros(n, bool),
                        np.zeros(n, bool), np.asarray(episodes))


def _evaluator() -> TargetEvaluator:
    return TargetEvaluator(FEATURES, n_actions=3, n_bins=4, hidden=8)


def _nan_features() -> np.ndarray:
    f = FEATURES.copy()
    f[0, 0] = math.nan
    return f


_ENV = SwordShieldMonster(size=5, seed=0)

BAD_INPUTS = [
    ("env_too_small", lambda: SwordShieldMonster(size=3), ValueError),
    ("env_difficulty_one", lambda: SwordShieldMonster(difficulty=1.0), ValueError),
    ("env_nan_difficulty", lambda: SwordShieldMonster(difficulty=math.nan), ValueError),
    ("env_zero_max_steps", lambda: SwordShieldMonster(max_steps=0), ValueError),
    ("env_action_out_of_range", lambda: (_ENV.reset(seed=0), _ENV.step(4)), ValueError),
    ("env_reachable_out_of_range", lambda: _ENV.reachable(0, _ENV.n_states), ValueError),
    ("env_encode_row_off_grid", lambda: _ENV.encode(5, 0, 0, 0), ValueError),
    ("env_encode_flag_not_binary", lambda: _ENV.encode(0, 0, 2, 0), ValueError),
    ("env_decode_negative_state", lambda: _ENV.decode(-1), ValueError),
    ("env_unknown_feature_kind", lambda: _ENV.state_features("pixels"), ValueError),
    ("env_layout_not_square", lambda: SwordShieldMonster.from_layout(np.zeros((4, 5), bool), (0, 0), (0, 1), (1, 1)),
     ValueError),
    ("replay_empty", lambda: _replay(()), ValueError),
    ("replay_length_mismatch", lambda: ReplayBuffer(np.arange(3), np.zeros(2), np.arange(3), np.zeros(3, bool),
                                                    np.zeros(3, bool), np.zeros(3)), ValueError),
    ("replay_episodes_decreasing", lambda: _replay((1, 1, 0, 0)), ValueError),
    ("relabel_unknown_strategy", lambda: relabel(np.array([0]), "nearest", _replay()), ValueError),
    ("relabel_batch_out_of_range", lambda: relabel(np.array([4]), "episode", _replay()), ValueError),
    ("relabel_negative_mixture_weight", lambda: relabel(np.array([0]), {"episode": -1.0}, _replay()), ValueError),
    ("relabel_generate_without_generator", lambda: relabel(np.array([0]), "generate", _replay()), ValueError),
    ("relabel_pertask_single_episode", lambda: relabel(np.array([0]), "pertask", _replay((0, 0, 0)),
                                                       pertask_own_episode=False), ValueError),
    ("replay_task_varies_in_episode", lambda: ReplayBuffer(np.arange(2), np.zeros(2, np.int64), np.arange(1, 3),
                                                           np.zeros(2, bool), np.zeros(2, bool), np.zeros(2),
                                                           task=np.array([0, 1])), ValueError),
    ("scalar_td_target_length_mismatch",
     lambda: scalar_td_target(torch.full((3, 5), 0.2), torch.zeros(2, dtype=torch.bool),
                              torch.zeros(3, dtype=torch.bool)), ValueError),
    ("two_hot_one_atom", lambda: two_hot(torch.ones(3), 1), ValueError),
    ("evaluator_layernorm_not_bool", lambda: TargetEvaluator(FEATURES, layernorm="yes"), TypeError),
    ("evaluator_terminal_out_of_range", lambda: _evaluator().is_terminal(np.array([12])), ValueError),
    ("train_unknown_td_rule", lambda: train_evaluator(_evaluator(), _replay(), lambda s, g: np.zeros_like(s),
                                                      "episode", updates=1, td_rule="c51"), ValueError),
    ("train_negative_grad_clip", lambda: train_evaluator(_evaluator(), _replay(), lambda s, g: np.zeros_like(s),
                                                         "episode", updates=1, max_grad_norm=-1.0), ValueError),
    ("planner_unknown_rule", lambda: RejectingPlanner(TabularHERAgent(10), None, rule="budget"), ValueError),
    ("planner_zero_cutoff", lambda: RejectingPlanner(TabularHERAgent(10), None, dist_cutoff=0.0), ValueError),
    ("taskset_zero_tasks", lambda: SSMTaskSet(size=4, n_tasks=0), ValueError),
    ("taskset_state_out_of_range", lambda: SSMTaskSet(size=4, n_tasks=2).distance(0, 10**6), ValueError),
    ("agent_zero_tasks", lambda: TabularHERAgent(10, n_tasks=0), ValueError),
    ("td_target_length_mismatch",
     lambda: distributional_td_target(torch.full((3, 5), 0.2), torch.zeros(2, dtype=torch.bool),
                                      torch.zeros(3, dtype=torch.bool)), ValueError),
    ("td_target_one_bin",
     lambda: distributional_td_target(torch.ones(2, 1), torch.zeros(2, dtype=torch.bool),
                                      torch.zeros(2, dtype=torch.bool)), ValueError),
    ("evaluator_1d_features", lambda: TargetEvaluator(np.zeros(12)), ValueError),
    ("evaluator_nan_features", lambda: TargetEvaluator(_nan_features()), ValueError),
    ("evaluator_one_bin", lambda: TargetEvaluator(FEATURES, n_bins=1), ValueError),
    ("evaluator_state_out_of_range", lambda: _evaluator()(np.array([12]), np.array([0])), ValueError),
    ("evaluator_negative_state", lambda: _evaluator()(np.array([-1]), np.array([0])), ValueError),
    ("evaluator_float_state_ids", lambda: _evaluator()(np.array([1.5]), np.array([0])), TypeError),
    ("evaluator_length_mismatch", lambda: _evaluator()(np.array([1, 2]), np.array([0])), ValueError),
    ("evaluator_action_out_of_range", lambda: _evaluator().feasibility(np.array([1]), np.array([2]), np.array([3])),
     ValueError),
    ("train_negative_updates", lambda: train_evaluator(_evaluator(), _replay(), lambda s, g: np.zeros_like(s),
                                                       "episode", updates=-1), ValueError),
    ("agent_zero_states", lambda: TabularHERAgent(0), ValueError),
    ("agent_gamma_one", lambda: TabularHERAgent(10, gamma=1.0), ValueError),
    ("generator_probability_above_one", lambda: HallucinatingGenerator(_ENV, 1.5), ValueError),
    ("planner_nan_threshold", lambda: RejectingPlanner(TabularHERAgent(10), None, threshold=math.nan), ValueError),
]

"""Contract cases of the valt_sac row (see README.md here): its modules and its bad inputs."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import torch

from icml25.papers.valt_sac import (
    Actor,
    PerturbationModel,
    PointMassReach,
    TwinCritic,
    ValtSACConfig,
    agent_soft_worst_case_value,
    env_factory,
    evaluate_under_attack,
    gibbs_adversary,
    mad_attack,
    make_attack,
    pgd_q_attack,
    policy_kl,
    random_attack,
    random_sa_mdp,
    valt_sac_train,
)

LOW, HIGH = -np.ones(2, np.float32), np.ones(2, np.float32)

MODULES = {
    "Actor": lambda: (Actor(4, 2, 8, LOW, HIGH), (torch.randn(3, 4),)),
    "TwinCritic": lambda: (TwinCritic(4, 2, 8), (torch.randn(3, 4), torch.rand(3, 2) * 2 - 1)),
    "PerturbationModel": lambda: (PerturbationModel(4, 8, eps=0.1), (torch.randn(3, 4),)),
}


def _actor() -> Actor:
    return Actor(4, 2, 8, LOW, HIGH)


BAD_INPUTS = [
    ("config_unknown_variant", lambda: ValtSACConfig(variant="minimax"), ValueError),
    ("config_gamma_one", lambda: ValtSACConfig(gamma=1.0), ValueError),
    ("config_nan_eps", lambda: ValtSACConfig(eps=math.nan), ValueError),
    ("config_zero_alpha_init", lambda: ValtSACConfig(alpha_init=0.0), ValueError),
    ("config_negative_lr", lambda: ValtSACConfig(lr_critic=-1e-3), ValueError),
    ("config_zero_batch", lambda: ValtSACConfig(batch_size=0), ValueError),
    ("config_adv_ratio_above_one", lambda: ValtSACConfig(adv_ratio=1.5), ValueError),
    ("actor_zero_obs_dim", lambda: Actor(0, 2, 8, LOW, HIGH), ValueError),
    ("actor_bounds_wrong_shape", lambda: Actor(4, 3, 8, LOW, HIGH), ValueError),
    ("actor_empty_action_box", lambda: Actor(4, 2, 8, HIGH, LOW), ValueError),
    ("critic_zero_hidden", lambda: TwinCritic(4, 2, 0), ValueError),
    ("perturbation_nan_eps", lambda: PerturbationModel(4, 8, math.nan), ValueError),
    ("perturbation_log_prob_shape_mismatch",
     lambda: PerturbationModel(4, 8, 0.1).log_prob(torch.zeros(2, 4), torch.zeros(3, 4)), ValueError),
    ("perturbation_log_prob_zero_eps",
     lambda: PerturbationModel(4, 8, 0.0).log_prob(torch.zeros(2, 4), torch.zeros(2, 4)), ValueError),
    ("random_attack_negative_eps", lambda: random_attack(torch.zeros(2, 4), -0.1), ValueError),
    ("random_attack_inf_eps", lambda: random_attack(torch.zeros(2, 4), math.inf), ValueError),
    ("random_attack_integer_obs", lambda: random_attack(torch.zeros(2, 4, dtype=torch.long), 0.1), TypeError),
    ("pgd_wrong_obs_width", lambda: pgd_q_attack(_actor(), TwinCritic(4, 2, 8), torch.zeros(2, 5), 0.1), ValueError),
    ("pgd_negative_steps", lambda: pgd_q_attack(_actor(), TwinCritic(4, 2, 8), torch.zeros(2, 4), 0.1, steps=-1),
     ValueError),
    ("mad_1d_obs", lambda: mad_attack(_actor(), torch.zeros(4), 0.1), ValueError),
    ("policy_kl_shape_mismatch", lambda: policy_kl(_actor(), torch.zeros(2, 4), torch.zeros(3, 4)), ValueError),
    ("make_attack_unknown", lambda: make_attack("fgsm", _actor(), None, 0.1), ValueError),
    ("make_attack_pgd_without_critic", lambda: make_attack("pgd_q", _actor(), None, 0.1), ValueError),
    ("evaluate_zero_episodes", lambda: evaluate_under_attack(_actor(), PointMassReach(), n_episodes=0), ValueError),
    ("env_factory_not_an_env", lambda: env_factory(42), ValueError),
    ("train_discrete_actions", lambda: valt_sac_train(gym.make("CartPole-v1"), ValtSACConfig(total_steps=1)),
     ValueError),
    ("point_mass_zero_horizon", lambda: PointMassReach(horizon=0), ValueError),
    ("sa_mdp_even_ball", lambda: random_sa_mdp(6, 3, ball_size=2), ValueError),
    ("sa_mdp_gamma_one", lambda: random_sa_mdp(gamma=1.0), ValueError),
    ("soft_value_nan_alpha_attk", lambda: agent_soft_worst_case_value(random_sa_mdp(), 0.1, math.nan), ValueError),
    ("gibbs_shape_mismatch", lambda: gibbs_adversary(np.zeros((3, 3)), np.full((3, 2), 0.5), 1.0), ValueError),
]

"""Robust Markov games with fictitious uncertainty sets and Robust-Q-FTRL (Shi, Gai, Mazumdar, Chi & Wierman,
ICML 2025, arXiv 2409.20067).

Each agent hedges against TV perturbations (radius sigma_i) of the transition kernel averaged over the other
agents' policy; Robust-Q-FTRL learns a robust coarse correlated equilibrium from a generative model with a
number of samples linear in sum_i A_i instead of prod_i A_i.
"""

from icml25.papers.robust_markov_games.game import (
    CorrelatedPolicy,
    MarkovGame,
    random_general_sum_game,
    robust_best_response_values,
    robust_cce_gap,
    robust_cce_gaps,
    robust_policy_values,
    tv_robust_expectation,
    tv_robust_expectation_batch,
)
from icml25.papers.robust_markov_games.robust_q_ftrl import (
    RobustQFTRLConfig,
    estimate_joint_model,
    ftrl_step_sizes,
    joint_model_baseline,
    mixture_weights,
    robust_q_ftrl,
)

__all__ = [
    "CorrelatedPolicy", "MarkovGame", "RobustQFTRLConfig", "estimate_joint_model", "ftrl_step_sizes",
    "joint_model_baseline", "mixture_weights", "random_general_sum_game", "robust_best_response_values",
    "robust_cce_gap", "robust_cce_gaps", "robust_policy_values", "robust_q_ftrl", "tv_robust_expectation",
    "tv_robust_expectation_batch",
]

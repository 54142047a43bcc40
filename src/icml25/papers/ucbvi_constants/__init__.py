"""Constants in UCBVI regret bounds (Drago, Mussi & Metelli, ICML 2025 position; arXiv 2502.17370).

Finite-horizon tabular RL: UCBVI (Azar et al. 2017) with its original Hoeffding (CH) and Bernstein
(BF) bonuses, the refined CH-I / BF-I bonuses (constants must be supplied: they could not be
retrieved here), MVP (Zhang et al. 2024), RiverSwim and random episodic MDPs, and exact regret.
"""

from icml25.papers.ucbvi_constants.agents import (
    AZAR_BF,
    AZAR_CH,
    BF_REFINED_KEYS,
    CH_REFINED_KEYS,
    MVP,
    MVP_CONSTANTS,
    UCBVI,
    Trajectory,
    bonus_bf,
    bonus_bf_refined,
    bonus_ch,
    bonus_ch_refined,
    bonus_mvp,
    greedy_policy,
    log_term,
    optimistic_backward_induction,
    run_regret,
)
from icml25.papers.ucbvi_constants.envs import (
    TabularEpisodicMDP,
    check_episodic_mdp,
    policy_value,
    random_episodic_mdp,
    riverswim,
)

__all__ = [
    "AZAR_BF", "AZAR_CH", "BF_REFINED_KEYS", "CH_REFINED_KEYS", "MVP", "MVP_CONSTANTS", "TabularEpisodicMDP",
    "Trajectory", "UCBVI", "bonus_bf", "bonus_bf_refined", "bonus_ch", "bonus_ch_refined", "bonus_mvp",
    "check_episodic_mdp", "greedy_policy", "log_term", "optimistic_backward_induction", "policy_value",
    "random_episodic_mdp", "riverswim", "run_regret",
]

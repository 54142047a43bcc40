"""Constants in UCBVI regret bounds (Drago, Mussi & Metelli, ICML 2025 position; arXiv 2502.17370).

Finite-horizon tabular RL: UCBVI (Azar et al. 2017) with its original Hoeffding (CH) and Bernstein
(BF) bonuses, the refined CH-I / BF-I bonuses (constants from the authors' code,
marcomussi/position_constants), MVP (Zhang et al. 2024), the authors' RiverSwim and illustrative
random MDPs, and realised (or exact expected) regret.
"""

from icml25.papers.ucbvi_constants.agents import (
    AZAR_BF,
    AZAR_CH,
    BF_REFINED_KEYS,
    CH_REFINED_KEYS,
    MVP,
    MVP_CONSTANTS,
    REFINED_BF,
    REFINED_CH,
    UCBVI,
    AgentConfig,
    AgentSpec,
    Trajectory,
    bonus_bf,
    bonus_bf_refined,
    bonus_ch,
    bonus_ch_refined,
    bonus_mvp,
    greedy_policy,
    log_term,
    mvp_iota,
    optimistic_backward_induction,
    run_regret,
)
from icml25.papers.ucbvi_constants.envs import (
    TabularEpisodicMDP,
    check_episodic_mdp,
    illustrative_mdp,
    policy_value,
    random_episodic_mdp,
    riverswim,
)

__all__ = [
    "AZAR_BF", "AZAR_CH", "BF_REFINED_KEYS", "CH_REFINED_KEYS", "MVP", "MVP_CONSTANTS", "REFINED_BF", "REFINED_CH",
    "AgentConfig", "AgentSpec", "TabularEpisodicMDP",
    "Trajectory", "UCBVI", "bonus_bf", "bonus_bf_refined", "bonus_ch", "bonus_ch_refined", "bonus_mvp",
    "check_episodic_mdp", "greedy_policy", "illustrative_mdp", "log_term", "mvp_iota", "optimistic_backward_induction",
    "policy_value",
    "random_episodic_mdp", "riverswim", "run_regret",
]

"""VALT-SAC (Nakanishi, Kubo, Yasui & Ishii, ICML 2025, arXiv 2506.16753).

Off-policy robustness to adversarial observations: SAC trained against a virtual, soft-constrained
observation adversary whose critic is the agent's critic with the sign flipped (symmetric policy
evaluation), so no adversary critic and no extra environment steps are needed.
"""

from icml25.papers.valt_sac.envs import PointMassReach, make_env
from icml25.papers.valt_sac.tabular import (
    adversary_soft_optimal_value,
    agent_soft_worst_case_value,
    gibbs_adversary,
    random_sa_mdp,
)
from icml25.papers.valt_sac.valt_sac import (
    ATTACKS,
    Actor,
    PerturbationModel,
    PerturbedObservation,
    TrainLog,
    TwinCritic,
    ValtSAC,
    ValtSACConfig,
    env_factory,
    evaluate_under_attack,
    mad_attack,
    make_attack,
    pgd_q_attack,
    policy_kl,
    random_attack,
    sac_train,
    valt_sac_train,
)

__all__ = [
    "ATTACKS", "Actor", "PerturbationModel", "PerturbedObservation", "PointMassReach", "TrainLog", "TwinCritic",
    "ValtSAC", "ValtSACConfig", "adversary_soft_optimal_value", "agent_soft_worst_case_value", "env_factory",
    "evaluate_under_attack", "gibbs_adversary", "mad_attack", "make_attack", "make_env", "pgd_q_attack", "policy_kl",
    "random_attack", "random_sa_mdp", "sac_train", "valt_sac_train",
]

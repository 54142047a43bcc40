"""Rejecting Hallucinated State Targets during Planning (Zhao et al., ICML 2025, arXiv 2410.07096).

A target evaluator ``h(s, a, g)`` (a histogram over distances trained by off-policy TD, the official scalar rule
or our distributional one, with episode / generate / pertask hindsight relabeling, plus a terminal-state
classifier) lets a target-directed agent reject infeasible targets hallucinated by its generator (official rule:
estimated distance above 8). Includes the SSM-lite gridworld, its multi-task set, and BFS ground truth.
"""

from icml25.papers.infeasible_targets.env import SSMTaskSet, SwordShieldMonster
from icml25.papers.infeasible_targets.evaluator import (
    STRATEGIES,
    TD_RULES,
    EvaluatorConfig,
    ReplayBuffer,
    TargetEvaluator,
    distributional_td_target,
    relabel,
    scalar_td_target,
    train_evaluator,
    two_hot,
)
from icml25.papers.infeasible_targets.planning import (
    REJECTION_RULES,
    HallucinatingGenerator,
    RejectingPlanner,
    RejectionConfig,
    TabularHERAgent,
    run_episode,
)

__all__ = [
    "REJECTION_RULES", "STRATEGIES", "TD_RULES", "EvaluatorConfig", "HallucinatingGenerator", "RejectingPlanner",
    "RejectionConfig", "ReplayBuffer", "SSMTaskSet", "SwordShieldMonster", "TabularHERAgent", "TargetEvaluator",
    "distributional_td_target", "relabel", "run_episode", "scalar_td_target", "train_evaluator", "two_hot",
]

"""Rejecting Hallucinated State Targets during Planning (Zhao et al., ICML 2025, arXiv 2410.07096).

A target evaluator ``h(s, a, g)`` (distance distribution with an "unreachable" bin, trained by off-policy
distributional TD with episode / generate / pertask hindsight relabeling) lets a target-directed agent reject
infeasible targets hallucinated by its generator. Includes the SSM-lite gridworld with BFS ground truth.
"""

from icml25.papers.infeasible_targets.env import SwordShieldMonster
from icml25.papers.infeasible_targets.evaluator import (
    STRATEGIES,
    ReplayBuffer,
    TargetEvaluator,
    distributional_td_target,
    relabel,
    train_evaluator,
)
from icml25.papers.infeasible_targets.planning import (
    HallucinatingGenerator,
    RejectingPlanner,
    TabularHERAgent,
    run_episode,
)

__all__ = [
    "STRATEGIES", "HallucinatingGenerator", "RejectingPlanner", "ReplayBuffer", "SwordShieldMonster",
    "TabularHERAgent", "TargetEvaluator", "distributional_td_target", "relabel", "run_episode", "train_evaluator",
]

"""R1-VI: Rank-One Modified Value Iteration (Kolarijani et al., ICML 2025, arXiv 2505.01828).

Value iteration plus a policy-iteration-style correction in which the greedy
transition matrix is replaced by the rank-one matrix ``1 d^T`` (``d`` its approximate
stationary distribution, from a warm-started power method): the same per-iteration
cost as VI, and for learning the same cost as Q-learning. Baselines and the MDP
toolkit live in :mod:`icml25.common.mdp`.
"""

from icml25.papers.r1vi.r1vi import (
    R1QLConfig,
    R1VIConfig,
    power_step,
    r1_q_learning,
    r1_q_value_iteration,
    r1_value_iteration,
)

__all__ = ["R1QLConfig", "R1VIConfig", "power_step", "r1_q_learning", "r1_q_value_iteration", "r1_value_iteration"]

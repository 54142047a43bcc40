"""OMDPD: Optimistic Mirror Descent Primal-Dual for online CMDPs with anytime adversarial constraints
(Zhu, Yu, Lee, Liu & Wei, ICML 2025, arXiv 2505.21841).

Episodic CMDP, unknown transitions and rewards, constraints g_k chosen by an adversary and revealed
after each episode. Targets: strong regret against the best fixed policy feasible for every g_k, and
strong violation sum_k [V_{g_k}^{pi_k}]_+, both O~(sqrt K) without Slater's condition. ``OMDPD`` follows the
paper's algorithm as described by second-hand summaries (Euclidean optimistic OMD on occupancy measures,
exponential potential); the paper's Algorithm 1 itself could not be read; see docs/papers/omdpd.md.
"""

from icml25.papers.omdpd.cmdp import (
    PAPER_COST_VALUES,
    AdversarialInstance,
    EpisodicCMDP,
    IIDCostSchedule,
    OccupancyLPResult,
    ReactiveSchedule,
    SwitchingSchedule,
    Trajectory,
    adversarial_instance,
    flow_residual,
    min_max_constraint_value,
    occupancy_from_policy,
    occupancy_lp,
    paper_instance,
    policy_from_occupancy,
    policy_value,
    random_cmdp,
)
from icml25.papers.omdpd.omdpd import (
    OMDPD,
    KLPolicyOMDPD,
    KLPolicyOMDPDConfig,
    OMDPDConfig,
    OnlineRun,
    OptimismConfig,
    OptimisticModel,
    OptPrimalDualCMDP,
    OptPrimalDualConfig,
    UnconstrainedUCBVI,
    evaluate_policy,
    mirror_descent_step,
    project_occupancy,
    run_online,
)

__all__ = [
    "AdversarialInstance", "adversarial_instance", "EpisodicCMDP", "IIDCostSchedule", "KLPolicyOMDPD",
    "KLPolicyOMDPDConfig", "OMDPD", "OMDPDConfig", "OccupancyLPResult", "OnlineRun", "OptimismConfig",
    "PAPER_COST_VALUES", "OptPrimalDualCMDP", "OptPrimalDualConfig", "OptimisticModel",
    "ReactiveSchedule", "SwitchingSchedule", "Trajectory", "UnconstrainedUCBVI", "evaluate_policy", "flow_residual",
    "min_max_constraint_value", "mirror_descent_step", "occupancy_from_policy", "occupancy_lp", "paper_instance",
    "policy_from_occupancy", "policy_value", "project_occupancy", "random_cmdp", "run_online",
]

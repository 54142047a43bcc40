"""generative_bilevel: a first-order generative bilevel optimisation framework for diffusion models
(Xiao, Yuan, Saif, Liu, Kompella, Wang, Chen; ICML 2025; arXiv 2502.08808).

Two bilevel problems with a lower level over distributions / score networks, both solved by the first-order
penalty (value-function) method: entropy-strength tuning of reward fine-tuning (closed-form tilted lower level,
sampled by reward-guided diffusion) and noise-schedule learning while training a diffusion model.
"""

from icml25.papers.generative_bilevel.data import MNISTFormatError, load_mnist, read_idx
from icml25.papers.generative_bilevel.entropy_tuning import (
    BilevelEntropyTuner,
    EntropyTunerConfig,
    ReverseSDEConfig,
    VPSchedule,
    lambda_grad_est1,
    lambda_grad_est2,
    penalty_hypergrad,
    penalty_objective,
    tilted_guided_sampler,
)
from icml25.papers.generative_bilevel.noise_schedule import (
    ZO_KINDS,
    BilevelScheduleConfig,
    EpsMLP,
    LearnableNoiseSchedule,
    ScheduleTrainResult,
    bilevel_schedule_train,
    ddim_sample,
    dsm_loss,
    rbf_mmd2,
    train_with_schedule,
    zo_gradient,
)
from icml25.papers.generative_bilevel.search import bayes_opt_search, expected_improvement, grid_search, random_search
from icml25.papers.generative_bilevel.toy import GaussianMixture, ring_mixture, tilted_upper_value

__all__ = [
    "BilevelEntropyTuner", "BilevelScheduleConfig", "EntropyTunerConfig", "EpsMLP", "GaussianMixture",
    "LearnableNoiseSchedule", "MNISTFormatError", "ReverseSDEConfig", "ScheduleTrainResult", "VPSchedule", "ZO_KINDS",
    "bayes_opt_search", "bilevel_schedule_train", "ddim_sample", "dsm_loss", "expected_improvement", "grid_search",
    "lambda_grad_est1", "lambda_grad_est2", "load_mnist", "penalty_hypergrad", "penalty_objective", "random_search",
    "rbf_mmd2", "read_idx", "ring_mixture", "tilted_guided_sampler", "tilted_upper_value", "train_with_schedule",
    "zo_gradient",
]

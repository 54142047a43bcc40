"""NAIAD (Qin, Wessels, Fernandez-Granda & Hao, ICML 2025, arXiv 2411.12010).

Active learning for the discovery of optimal combinatorial perturbations: a network that
adds an over-parameterised function of the two single-gene effects to a gene-embedding
term whose size adapts to the amount of training data, and an ensemble loop that measures
the pairs with the maximum predicted effect (MPE) next.
"""

from icml25.papers.naiad.active_learning import (
    ACQUISITIONS,
    TPR_N_VALUES,
    ActiveLearner,
    ActiveLearnerConfig,
    ActiveLearningHistory,
    acquisition_scores,
    top_n_recall,
    top_n_tpr,
)
from icml25.papers.naiad.data import CombinatorialScreen, load_screen_csv, make_synthetic_screen, screen_from_arrays
from icml25.papers.naiad.model import (
    EMBED_DIM_TABLE,
    NAIADConfig,
    NAIADNet,
    NAIADRegressor,
    SingleEffectLinearRegressor,
    adaptive_embed_dim,
    warmup_linear_lr_factor,
)

__all__ = [
    "ACQUISITIONS", "ActiveLearner", "ActiveLearnerConfig", "ActiveLearningHistory", "CombinatorialScreen",
    "EMBED_DIM_TABLE", "NAIADConfig", "NAIADNet", "NAIADRegressor", "SingleEffectLinearRegressor", "acquisition_scores",
    "adaptive_embed_dim", "load_screen_csv",
    "make_synthetic_screen", "screen_from_arrays", "top_n_recall", "top_n_tpr", "TPR_N_VALUES",
    "warmup_linear_lr_factor",
]

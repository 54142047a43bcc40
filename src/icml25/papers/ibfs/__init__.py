"""IBFS: information-bottleneck-driven few-shot neural architecture search (ICML 2025, OpenReview fNixzmprun).

A training-free score for choosing a network for a new few-shot task: the
expressivity of the network at initialisation measured by kernel (HSIC/CKA)
information-bottleneck terms on the new task's support set. The exact score is a
reconstruction from the abstract (the paper text was not retrievable).
"""

from icml25.papers.ibfs.data import EpisodeSampler, GlyphClasses, glyph_few_shot
from icml25.papers.ibfs.search import (
    OPS,
    WIDTHS,
    IBFSSearch,
    SearchSpace,
    StageNet,
    cka,
    first_order_step,
    fomaml_evaluate,
    fomaml_train,
    gaussian_kernel,
    grad_norm_score,
    ib_expressivity,
    linear_kernel,
    naswot_score,
    param_count,
    synflow_score,
)

__all__ = [
    "OPS", "WIDTHS", "EpisodeSampler", "GlyphClasses", "IBFSSearch", "SearchSpace", "StageNet", "cka",
    "first_order_step", "fomaml_evaluate", "fomaml_train", "gaussian_kernel", "glyph_few_shot", "grad_norm_score",
    "ib_expressivity", "linear_kernel", "naswot_score", "param_count", "synflow_score",
]

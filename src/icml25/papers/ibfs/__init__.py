"""IBFS (Kang, ICML 2025, "Revisiting Neural Networks for Few-Shot Learning: A Zero-Cost NAS Perspective").

A training-free score for choosing a network for a new few-shot task: the Shannon
entropy of the normalised eigenvalues of J J^T, J the per-sample output-sum Jacobian
w.r.t. the parameters at initialisation on an unlabelled batch
(:func:`jacobian_entropy_score`, read from second-hand notes of Eqs. 9-10). Our earlier
kernel (HSIC/CKA) information-bottleneck reconstruction stays as the baseline
``score="kernel_ib"`` (:func:`ib_expressivity`).
"""

from icml25.papers.ibfs.data import (
    PAPER_DATASETS,
    EpisodeSampler,
    GlyphClasses,
    ImageClasses,
    ImageEpisodeSampler,
    glyph_few_shot,
    load_paper_dataset,
    paper_files,
    read_paper_split,
)
from icml25.papers.ibfs.search import (
    OPS,
    SCORES,
    WIDTHS,
    IBFSConfig,
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
    jacobian_entropy_score,
    linear_kernel,
    naswot_score,
    param_count,
    rfs_evaluate,
    rfs_train,
    sample_output_jacobian,
    spectral_entropy,
    synflow_score,
)

__all__ = [
    "OPS", "PAPER_DATASETS", "SCORES", "WIDTHS", "EpisodeSampler", "GlyphClasses", "IBFSConfig", "IBFSSearch",
    "ImageClasses", "ImageEpisodeSampler", "SearchSpace", "StageNet", "cka", "first_order_step", "fomaml_evaluate",
    "fomaml_train", "gaussian_kernel", "glyph_few_shot", "grad_norm_score", "ib_expressivity",
    "jacobian_entropy_score", "linear_kernel", "load_paper_dataset", "naswot_score", "paper_files",
    "param_count", "read_paper_split", "rfs_evaluate", "rfs_train", "sample_output_jacobian", "spectral_entropy",
    "synflow_score",
]

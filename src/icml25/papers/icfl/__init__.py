"""ICFL: Iterative Codebook Feature Learning with control PCA whitening (Donhauser et al., ICML 2025,
arXiv 2412.16247).

Sparse dictionary learning for scientific foundation-model features: whiten tokens with the PCA of
control samples, encode with batched orthogonal matching pursuit (no learned encoder), learn only the
decoder. Includes the TopK SAE baseline and selectivity / dictionary-recovery measures.
"""

from icml25.papers.icfl.data import PerturbationScreen, perturbation_screen
from icml25.papers.icfl.dictionary import (
    ICFL,
    ControlWhitener,
    ICFLConfig,
    TopKSAE,
    batched_omp,
    dictionary_recovery,
    reconstruction_cosine,
    reset_duplicate_columns,
    selectivity,
)

__all__ = [
    "ICFL", "ControlWhitener", "ICFLConfig", "PerturbationScreen", "TopKSAE", "batched_omp", "dictionary_recovery",
    "perturbation_screen", "reconstruction_cosine", "reset_duplicate_columns", "selectivity",
]

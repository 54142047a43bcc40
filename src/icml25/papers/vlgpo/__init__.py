"""VLGPO: A Variational Perspective on Generative Protein Fitness Optimization
(Bogensperger, Narnhofer, Allam, Schindler & Krauthammer, ICML 2025, arXiv 2501.19200).

Posterior sampling in a VAE latent space: a flow-matching prior over latents, a likelihood from a fitness
predictor, and manifold-constrained gradient steps interleaved with the prior's Euler steps.
"""

from icml25.papers.vlgpo.landscape import (
    AMINO_ACIDS,
    LandscapeTask,
    PottsOracle,
    decode_tokens,
    diversity,
    encode_sequences,
    evaluate,
    levenshtein_matrix,
    make_landscape_task,
    novelty,
)
from icml25.papers.vlgpo.models import FitnessCNN, LatentFlowPrior, SeqVAE
from icml25.papers.vlgpo.sampling import adalead_sample, latent_ascent_sample, select_top_k, vlgpo_sample

__all__ = [
    "AMINO_ACIDS", "FitnessCNN", "LandscapeTask", "LatentFlowPrior", "PottsOracle", "SeqVAE", "adalead_sample",
    "decode_tokens", "diversity", "encode_sequences", "evaluate", "latent_ascent_sample", "levenshtein_matrix",
    "make_landscape_task", "novelty", "select_top_k", "vlgpo_sample",
]

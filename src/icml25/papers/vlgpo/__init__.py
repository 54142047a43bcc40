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
from icml25.papers.vlgpo.models import FitnessCNN, LatentFlowPrior, SeqVAE, VLGPOConfig, train_vlgpo
from icml25.papers.vlgpo.official import (
    GGS_SPLITS,
    OFFICIAL_ALPHABET,
    OFFICIAL_FITNESS_RANGE,
    OFFICIAL_LATENT_DIM,
    OFFICIAL_SEEDS,
    OFFICIAL_STEP_SETTINGS,
    OFFICIAL_VAE_LENGTH,
    RELEASE_TASKS,
    ConvSeqVAE,
    load_ggs_cnn,
    load_ggs_split,
    load_official_vae,
    load_vlgpo_release,
    official_step_settings,
    release_files,
)
from icml25.papers.vlgpo.sampling import adalead_sample, latent_ascent_sample, select_top_k, vlgpo_sample

__all__ = [
    "AMINO_ACIDS", "ConvSeqVAE", "FitnessCNN", "GGS_SPLITS", "LandscapeTask", "LatentFlowPrior", "OFFICIAL_ALPHABET",
    "OFFICIAL_FITNESS_RANGE", "OFFICIAL_LATENT_DIM", "OFFICIAL_SEEDS", "OFFICIAL_STEP_SETTINGS", "OFFICIAL_VAE_LENGTH",
    "PottsOracle", "RELEASE_TASKS",
    "SeqVAE", "VLGPOConfig", "adalead_sample", "decode_tokens", "diversity", "encode_sequences", "evaluate",
    "latent_ascent_sample", "levenshtein_matrix", "load_ggs_cnn", "load_ggs_split", "load_official_vae",
    "load_vlgpo_release", "make_landscape_task", "novelty", "official_step_settings", "release_files", "select_top_k",
    "train_vlgpo", "vlgpo_sample",
]

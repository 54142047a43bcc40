"""MATS: an audio language model trained with text only (Wang et al., ICML 2025, arXiv 2502.13433).

A frozen CLAP's text embeddings, with Gaussian noise injected, condition an LM through a transformer
mapper; at test time the CLAP audio embedding is fused with nearby noised training-text embeddings (Santa).
"""

from icml25.papers.mats.data import TinyCLAP, TinyLM, make_scenes, train_clap
from icml25.papers.mats.model import (
           MATS,
           ContrastiveEncoderPair,
           MATSConfig,
           SantaMemory,
           TransformerMapper,
           kmeans,
           noise_injection,
           train_mats,
)
from icml25.papers.mats.paper_data import embed_dataset, load_audiocaps, load_clotho, load_embeddings, read_wav

__all__ = ["MATS", "ContrastiveEncoderPair", "MATSConfig", "SantaMemory", "TinyCLAP", "TinyLM", "TransformerMapper",
           "embed_dataset", "kmeans", "load_audiocaps", "load_clotho", "load_embeddings", "make_scenes",
           "noise_injection", "read_wav", "train_clap", "train_mats"]

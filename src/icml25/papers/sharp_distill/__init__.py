"""SHARP-Distill (Forouzandeh, Moradi & Jalili, ICML 2025, OpenReview 3hYrORJndz).

A teacher built from dual hypergraph neural networks, review-text embeddings and LightGCN is
distilled into CompactGCN, a one-layer linear GCN that ranks items by dot products: soft labels
with an annealed temperature, training-time embedding interpolation, and contrastive transfer
of embeddings and hypergraph positional encodings.
"""

from icml25.papers.sharp_distill.data import (
    REVIEW_KINDS,
    DebertaEncoder,
    TextEncoder,
    TfidfSVDEncoder,
    interaction_graph,
    load_review_dataset,
    read_reviews,
    review_text_features,
    synthetic_reviews,
)
from icml25.papers.sharp_distill.model import (
    CompactGCN,
    HGNNConv,
    LightGCNRecommender,
    MatrixFactorization,
    SharpDistillConfig,
    Teacher,
    bpr_loss,
    build_hypergraphs,
    distill,
    distillation_kl,
    evaluate_topk,
    hypergraph_operator,
    hypergraph_positional_encoding,
    hypergraph_propagation,
    normalized_adjacency,
    pointwise_mse_loss,
    prediction_loss,
    prepare_graph,
    score_loss,
    temperature,
    time_inference,
    train_bpr,
    train_recommender,
    train_teacher,
)

__all__ = [
    "CompactGCN", "DebertaEncoder", "HGNNConv", "LightGCNRecommender", "MatrixFactorization", "REVIEW_KINDS",
    "SharpDistillConfig", "Teacher", "TextEncoder", "TfidfSVDEncoder", "bpr_loss", "build_hypergraphs", "distill",
    "distillation_kl", "evaluate_topk", "hypergraph_operator", "hypergraph_positional_encoding",
    "hypergraph_propagation", "interaction_graph", "load_review_dataset", "normalized_adjacency",
    "pointwise_mse_loss", "prediction_loss", "prepare_graph", "read_reviews", "review_text_features", "score_loss",
    "synthetic_reviews", "temperature", "time_inference", "train_bpr", "train_recommender", "train_teacher",
]

"""Quiver mutation classes with GNNs (He, Jenne, Chau, Brown, Raugas, Billey & Kvinge, ICML 2025, arXiv 2411.07467).

Exchange matrices and their mutation, seed quivers of Dynkin types A, D, E and affine types A~, D~, E~,
mutation classes enumerated up to isomorphism, the Buan-Vatne type-A criterion, and DirGINE, a
direction-aware GIN that classifies quivers by mutation type, with baselines and explainability helpers.
"""

from icml25.papers.quiver_mutation.models import (
    DirGINE,
    DirGINELayer,
    UndirectedGINE,
    cluster_hidden,
    count_features,
    explain,
    graph_embeddings,
    predict,
    quiver_to_data,
    spectrum_features,
    train_classifier,
)
from icml25.papers.quiver_mutation.quivers import (
    QUIVER_TYPES,
    are_isomorphic,
    atilde_splits,
    canonical_form,
    check_exchange_matrix,
    from_canonical,
    is_mutation_type_A,
    make_dataset,
    mutate,
    mutation_class,
    seed_quiver,
    type_class_certificates,
)

__all__ = [
    "DirGINE", "DirGINELayer", "QUIVER_TYPES", "UndirectedGINE", "are_isomorphic", "atilde_splits", "canonical_form",
    "check_exchange_matrix", "cluster_hidden", "count_features", "explain", "from_canonical", "graph_embeddings",
    "is_mutation_type_A", "make_dataset", "mutate", "mutation_class", "predict", "quiver_to_data", "seed_quiver",
    "spectrum_features", "train_classifier", "type_class_certificates",
]

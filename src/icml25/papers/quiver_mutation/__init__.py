"""Quiver mutation classes with GNNs (He, Jenne, Chau, Brown, Raugas, Billey & Kvinge, ICML 2025, arXiv 2411.07467).

Exchange matrices and their mutation, seed quivers of Dynkin types A, D, E and affine types A~, D~, E~,
mutation classes enumerated up to isomorphism, the Buan-Vatne type-A criterion, and DirGINE, a
direction-aware GIN that classifies quivers by mutation type, with baselines and explainability helpers:
Vatne's four families of type-D quivers (a labeller checked against BFS) and explainer motifs.
"""

from icml25.papers.quiver_mutation.explainability import connected_motif, identify_mutation_type

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
from icml25.papers.quiver_mutation.vatne import (
    VATNE_TYPES,
    check_vatne_partition,
    is_connecting_vertex,
    vatne_family_sets,
    vatne_type,
    vatne_type_table,
)

__all__ = [
    "DirGINE", "DirGINELayer", "QUIVER_TYPES", "UndirectedGINE", "VATNE_TYPES", "are_isomorphic", "atilde_splits",
    "canonical_form", "check_exchange_matrix", "check_vatne_partition", "cluster_hidden", "connected_motif",
    "count_features", "explain", "from_canonical", "graph_embeddings", "identify_mutation_type",
    "is_connecting_vertex", "is_mutation_type_A", "make_dataset", "mutate", "mutation_class", "predict",
    "quiver_to_data", "seed_quiver", "spectrum_features", "train_classifier", "type_class_certificates",
    "vatne_family_sets", "vatne_type", "vatne_type_table",
]

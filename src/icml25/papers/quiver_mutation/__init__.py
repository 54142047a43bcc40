"""Quiver mutation classes with GNNs (He, Jenne, Chau, Brown, Raugas, Billey & Kvinge, ICML 2025, arXiv 2411.07467).

Exchange matrices and their mutation, seed quivers of Dynkin types A, D, E and affine types A~, D~, E~,
mutation classes enumerated up to isomorphism, the Buan-Vatne type-A criterion, and DirGINE, a
direction-aware GIN that classifies quivers by mutation type, with baselines and explainability helpers:
PGExplainer and GNNExplainer edge masks (PyG), pooled states of one layer, arrow removal for the masking study,
Vatne's four families of type-D quivers (a labeller checked against BFS) and explainer motifs; larger classes
are sampled by random mutation walks (:func:`sample_mutation_class`).

The quiver algebra (``quivers``, ``vatne``, ``explainability``) needs NumPy only; the GNN names
(``DirGINE``, ``train_classifier``, ...) live in ``models`` and are imported on first use, so
``from icml25.papers.quiver_mutation import mutate`` works without PyTorch or PyTorch Geometric.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from icml25.papers.quiver_mutation.explainability import connected_motif, identify_mutation_type, remove_arrows
from icml25.papers.quiver_mutation.features import count_features, spectrum_features
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
    sample_mutation_class,
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
    "DirGINE", "DirGINEConfig", "DirGINELayer", "QUIVER_TYPES", "UndirectedGINE", "VATNE_TYPES", "are_isomorphic",
    "atilde_splits",
    "canonical_form", "check_exchange_matrix", "check_vatne_partition", "cluster_hidden", "connected_motif",
    "count_features", "explain", "explain_pgexplainer", "from_canonical", "graph_embeddings", "identify_mutation_type",
    "is_connecting_vertex", "is_mutation_type_A", "make_dataset", "mutate", "mutation_class", "predict",
    "quiver_to_data", "remove_arrows", "sample_mutation_class", "seed_quiver", "spectrum_features", "train_classifier",
    "type_class_certificates", "vatne_family_sets", "vatne_type", "vatne_type_table",
]

_MODEL_NAMES = ("DirGINE", "DirGINEConfig", "DirGINELayer", "UndirectedGINE", "cluster_hidden", "explain",
                "explain_pgexplainer", "graph_embeddings", "predict", "quiver_to_data", "train_classifier")
"""Public names of :mod:`.models` (torch and torch_geometric), resolved lazily by :func:`__getattr__`."""

if TYPE_CHECKING:  # static analysers see the lazy names
    from icml25.papers.quiver_mutation.models import (  # noqa: F401
        DirGINE,
        DirGINEConfig,
        DirGINELayer,
        UndirectedGINE,
        cluster_hidden,
        explain,
        explain_pgexplainer,
        graph_embeddings,
        predict,
        quiver_to_data,
        train_classifier,
    )


def __getattr__(name: str) -> Any:
    """Import the GNN module on first access to one of its names (PEP 562)."""
    if name in _MODEL_NAMES:
        value = getattr(importlib.import_module("icml25.papers.quiver_mutation.models"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_MODEL_NAMES))

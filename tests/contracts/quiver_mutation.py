"""Contract cases of quiver_mutation: DirGINE / DirGINELayer / UndirectedGINE and bad input."""

from __future__ import annotations

import numpy as np
import torch

from icml25.papers.quiver_mutation import (
    DirGINE,
    DirGINELayer,
    UndirectedGINE,
    canonical_form,
    connected_motif,
    count_features,
    explain_pgexplainer,
    graph_embeddings,
    is_mutation_type_A,
    make_dataset,
    mutate,
    mutation_class,
    predict,
    quiver_to_data,
    remove_arrows,
    sample_mutation_class,
    seed_quiver,
    spectrum_features,
    train_classifier,
    vatne_type,
)

ESTIMATORS: list = []  # no scikit-learn estimators: the classifiers are nn.Modules, the rest plain functions


def _quiver_batch():
    from torch_geometric.data import Batch

    return Batch.from_data_list([quiver_to_data(seed_quiver("D", 5), 1), quiver_to_data(seed_quiver("A", 4), 0)])


def _single_quiver():
    d = quiver_to_data(seed_quiver("Atilde", 5))
    return d.x, d.edge_index, d.edge_attr


def _layer():
    d = quiver_to_data(seed_quiver("D", 5))
    return DirGINELayer(8), (torch.randn(d.num_nodes, 8), d.edge_index, d.edge_attr)


MODULES = {
    "DirGINE": lambda: (DirGINE(hidden=8, layers=2), _single_quiver()),
    "DirGINELayer": _layer,
    "UndirectedGINE": lambda: (UndirectedGINE(hidden=8, layers=2), (_quiver_batch(),)),
}

A4 = seed_quiver("A", 4)
_D = quiver_to_data(A4)

BAD_INPUTS = [
    ("mutate_nan", lambda: mutate(np.array([[0.0, np.nan], [-1.0, 0.0]]), 0), ValueError),
    ("mutate_inf", lambda: mutate(np.array([[0.0, np.inf], [-np.inf, 0.0]]), 0), ValueError),
    ("mutate_empty", lambda: mutate(np.zeros((0, 0)), 0), ValueError),
    ("mutate_not_square", lambda: mutate(np.zeros((2, 3)), 0), ValueError),
    ("mutate_not_skew", lambda: mutate(np.array([[0, 1], [1, 0]]), 0), ValueError),
    ("mutate_fractional", lambda: mutate(np.array([[0, 0.5], [-0.5, 0]]), 0), ValueError),
    ("mutate_string_dtype", lambda: mutate(np.array([["0", "1"], ["-1", "0"]]), 0), ValueError),
    ("mutate_negative_vertex", lambda: mutate(A4, -1), ValueError),
    ("mutate_vertex_out_of_range", lambda: mutate(A4, 4), ValueError),
    ("mutate_float_vertex", lambda: mutate(A4, 1.5), ValueError),
    ("seed_quiver_unknown_kind", lambda: seed_quiver("B", 4), ValueError),
    ("seed_quiver_nonpositive_n", lambda: seed_quiver("A", 0), ValueError),
    ("seed_quiver_E_bad_size", lambda: seed_quiver("E", 5), ValueError),
    ("mutation_class_zero_max_size", lambda: mutation_class(A4, max_size=0), ValueError),
    ("mutation_class_infinite_unbounded", lambda: mutation_class(np.array([[0, 3, 0], [-3, 0, 3], [0, -3, 0]])),
     ValueError),
    ("canonical_form_large_multiplicity", lambda: canonical_form(np.array([[0, 200], [-200, 0]])), ValueError),
    ("make_dataset_unknown_type", lambda: make_dataset(("Z",), (4,)), ValueError),
    ("make_dataset_nonpositive_size", lambda: make_dataset(("A",), (0,)), ValueError),
    ("oracle_nan", lambda: is_mutation_type_A(np.full((2, 2), np.nan)), ValueError),
    ("vatne_type_not_D", lambda: vatne_type(A4), ValueError),
    ("spectrum_too_long", lambda: spectrum_features(seed_quiver("A", 13), length=12), ValueError),
    ("count_features_negative_max_degree", lambda: count_features(A4, max_degree=-1), ValueError),
    ("connected_motif_nonpositive_k", lambda: connected_motif(A4, 0, rng=np.random.default_rng(0)), ValueError),
    ("dirgine_nonpositive_hidden", lambda: DirGINE(hidden=0), ValueError),
    ("dirgine_edge_out_of_range", lambda: DirGINE(8, 1)(_D.x, torch.tensor([[0], [9]]), torch.ones(1, 1)),
     ValueError),
    ("dirgine_negative_edge", lambda: DirGINE(8, 1)(_D.x, torch.tensor([[0], [-1]]), torch.ones(1, 1)), ValueError),
    ("dirgine_nan_features", lambda: DirGINE(8, 1)(torch.full((4, 1), float("nan")), _D.edge_index, _D.edge_attr),
     ValueError),
    ("dirgine_float_edge_index", lambda: DirGINE(8, 1)(_D.x, _D.edge_index.float(), _D.edge_attr), TypeError),
    ("dirgine_numpy_input", lambda: DirGINE(8, 1)(_D.x.numpy(), _D.edge_index, _D.edge_attr), TypeError),
    ("dirgine_batch_wrong_length", lambda: DirGINE(8, 1)(_D.x, _D.edge_index, _D.edge_attr,
                                                         torch.zeros(2, dtype=torch.long)), ValueError),
    ("dirgine_wrong_edge_attr", lambda: DirGINE(8, 1)(_D.x, _D.edge_index, torch.ones(_D.num_edges, 2)), ValueError),
    ("train_classifier_empty", lambda: train_classifier(DirGINE(8, 1), []), ValueError),
    ("train_classifier_zero_epochs", lambda: train_classifier(DirGINE(8, 1), [quiver_to_data(A4, 0)], epochs=0),
     ValueError),
    ("predict_empty", lambda: predict(DirGINE(8, 1), []), ValueError),
    ("remove_arrows_not_an_arrow", lambda: remove_arrows(A4, [(1, 0)]), ValueError),
    ("sample_mutation_class_zero_count", lambda: sample_mutation_class("A", 5, 0, np.random.default_rng(0)),
     ValueError),
    ("sample_mutation_class_unknown_kind", lambda: sample_mutation_class("B", 5, 3, np.random.default_rng(0)),
     ValueError),
    ("graph_embeddings_layer_out_of_range", lambda: graph_embeddings(DirGINE(8, 2), [A4], layer=3), ValueError),
    ("explain_pgexplainer_zero_epochs", lambda: explain_pgexplainer(DirGINE(8, 1), [A4], epochs=0), ValueError),
    ("explain_pgexplainer_empty", lambda: explain_pgexplainer(DirGINE(8, 1), []), ValueError),
]

CPU_ONLY = {
    "oracle": "checks the Buan-Vatne criterion (NumPy) against BFS enumeration; no tensors at all",
}

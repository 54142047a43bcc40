"""Contract cases of sharp_distill: the recommender modules, the HGNN layer and bad input."""

from __future__ import annotations

import numpy as np
import torch

from icml25.papers.sharp_distill import (
    CompactGCN,
    HGNNConv,
    LightGCNRecommender,
    MatrixFactorization,
    Teacher,
    TfidfSVDEncoder,
    build_hypergraphs,
    distill,
    distillation_kl,
    evaluate_topk,
    hypergraph_operator,
    hypergraph_positional_encoding,
    interaction_graph,
    prediction_loss,
    synthetic_reviews,
    temperature,
    time_inference,
    train_bpr,
    train_recommender,
)

ESTIMATORS: list = []  # no scikit-learn estimators (the text encoders only have fit_transform)

_TRAIN = torch.tensor([[0, 0, 1, 2, 3, 3], [0, 2, 1, 3, 0, 2]])
_TEST = torch.tensor([[0, 1, 2], [1, 0, 2]])


def _graph(text_dim: int = 3):
    g = torch.Generator().manual_seed(0)
    return interaction_graph(_TRAIN, _TEST, 4, 4, torch.randn(4, text_dim, generator=g),
                             torch.randn(4, text_dim, generator=g))


def _hgnn():
    x = torch.randn(4, 5)
    return HGNNConv(5, 3), (x, hypergraph_operator(_TRAIN, 4, 4))


MODULES = {
    "CompactGCN": lambda: (CompactGCN(4, 4, dim=6), (_graph().edge_index, torch.randn(8, 6))),
    "HGNNConv": _hgnn,
    "LightGCNRecommender": lambda: (LightGCNRecommender(4, 4, dim=6, n_layers=2), (_graph().edge_index,)),
    "MatrixFactorization": lambda: (MatrixFactorization(4, 4, dim=6), (torch.tensor([0, 1, 3]),
                                                                      torch.tensor([2, 2, 0]))),
    "Teacher": lambda: (Teacher(4, 4, text_dim=3, dim=6, n_layers=2), (_graph(),)),
}
# torch has no meta-device kernel for sparse x dense products (aten::addmm on SparseCsrMeta, aten::mm on
# SparseMeta); dtype-following of these two is tested in float64 here and in tests/papers/test_sharp_distill.py.
_NO_META = "and torch has no meta-device kernel for sparse x dense products"
META_EXEMPT = {
    "HGNNConv": f"HGNNConv multiplies by its sparse hypergraph operator (B, B^T), {_NO_META}",
    "Teacher": f"the Teacher's HGNN and LightGCN views multiply by sparse normalised graphs, {_NO_META}",
}

_H = build_hypergraphs(_TRAIN)[0]

BAD_INPUTS = [
    ("hypergraphs_negative_index", lambda: build_hypergraphs(torch.tensor([[0, -1], [0, 1]])), ValueError),
    ("hypergraphs_out_of_range", lambda: build_hypergraphs(torch.tensor([[0, 5], [0, 1]]), num_users=3), ValueError),
    ("hypergraphs_empty", lambda: build_hypergraphs(torch.zeros(2, 0, dtype=torch.long)), ValueError),
    ("hypergraphs_wrong_shape", lambda: build_hypergraphs(torch.tensor([0, 1, 2])), ValueError),
    ("hypergraphs_nan", lambda: build_hypergraphs(torch.tensor([[0.0, float("nan")], [0.0, 1.0]])), ValueError),
    ("hypergraphs_fractional", lambda: build_hypergraphs(torch.tensor([[0.0, 0.5], [0.0, 1.0]])), ValueError),
    ("pe_zero_K", lambda: hypergraph_positional_encoding(_H, K=0), ValueError),
    ("pe_one_dimensional", lambda: hypergraph_positional_encoding(torch.ones(4), K=2), ValueError),
    ("pe_nan_incidence", lambda: hypergraph_positional_encoding(torch.full((3, 2), float("nan")), K=2), ValueError),
    ("operator_negative_node", lambda: hypergraph_operator(torch.tensor([[-1, 0], [0, 1]]), 3), ValueError),
    ("operator_float_index", lambda: hypergraph_operator(torch.tensor([[0.0, 1.0], [0.0, 1.0]]), 3), TypeError),
    ("operator_nonpositive_nodes", lambda: hypergraph_operator(_TRAIN, 0), ValueError),
    ("hgnn_wrong_width", lambda: HGNNConv(4)(torch.randn(5, 3), torch.tensor([[0, 1], [0, 0]])), ValueError),
    ("hgnn_no_nodes", lambda: HGNNConv(4)(torch.randn(0, 4), torch.tensor([[0], [0]])), ValueError),
    ("hgnn_nonpositive_dim", lambda: HGNNConv(0), ValueError),
    ("compactgcn_nonpositive_dim", lambda: CompactGCN(3, 3, dim=0), ValueError),
    ("compactgcn_edge_out_of_range", lambda: CompactGCN(3, 2, dim=4)(torch.tensor([[0, 7], [7, 0]])), ValueError),
    ("compactgcn_float_edge_index", lambda: CompactGCN(3, 2, dim=4)(torch.tensor([[0.0, 1.0], [1.0, 0.0]])),
     TypeError),
    ("lightgcn_nonpositive_layers", lambda: LightGCNRecommender(3, 3, dim=4, n_layers=-1), ValueError),
    ("mf_nonpositive_users", lambda: MatrixFactorization(0, 3), ValueError),
    ("mf_item_out_of_range", lambda: MatrixFactorization(3, 3, 4)(torch.tensor([0]), torch.tensor([3])), ValueError),
    ("teacher_negative_text_dim", lambda: Teacher(3, 3, text_dim=-1), ValueError),
    ("teacher_wrong_text_width", lambda: Teacher(4, 4, text_dim=5, dim=4).embeddings(_graph(3)), ValueError),
    ("evaluate_nan_scores", lambda: evaluate_topk(torch.full((4, 4), float("nan")), _TRAIN, _TEST, k=2), ValueError),
    ("evaluate_k_too_large", lambda: evaluate_topk(torch.randn(4, 4), _TRAIN, _TEST, k=5), ValueError),
    ("evaluate_test_out_of_range", lambda: evaluate_topk(torch.randn(4, 4), _TRAIN, torch.tensor([[0], [4]]), k=2),
     ValueError),
    ("evaluate_1d_scores", lambda: evaluate_topk(np.zeros(4), _TRAIN, _TEST, k=2), ValueError),
    ("temperature_zero_E", lambda: temperature(0, E=0), ValueError),
    ("temperature_nan_epoch", lambda: temperature(float("nan")), ValueError),
    ("kl_nonpositive_T", lambda: distillation_kl(torch.randn(2, 3), torch.randn(2, 3), T=0.0), ValueError),
    ("kl_shape_mismatch", lambda: distillation_kl(torch.randn(2, 3), torch.randn(2, 4), T=1.0), ValueError),
    ("time_inference_zero_repeats", lambda: time_inference(lambda: None, n_repeats=0), ValueError),
    ("train_bpr_zero_batch", lambda: train_bpr(MatrixFactorization(4, 4, 4), _graph(), 1, batch_size=0), ValueError),
    ("train_bpr_negative_epochs", lambda: train_bpr(MatrixFactorization(4, 4, 4), _graph(), -1), ValueError),
    ("train_unknown_loss", lambda: train_recommender(MatrixFactorization(4, 4, 4), _graph(), 1, loss="hinge"),
     ValueError),
    ("prediction_loss_unknown", lambda: prediction_loss(torch.ones(2, 3), torch.ones(2, 3), torch.ones(2, 3),
                                                        loss="l1"), ValueError),
    ("distill_bad_gamma", lambda: distill(MatrixFactorization(4, 4, 4), CompactGCN(4, 4, 4), _graph(), 1,
                                          gamma=2.0), ValueError),
    ("synthetic_per_user_too_large", lambda: synthetic_reviews(n_users=5, n_items=4, per_user=4), ValueError),
    ("interaction_graph_out_of_range", lambda: interaction_graph(torch.tensor([[0], [9]]), _TEST, 4, 4), ValueError),
    ("tfidf_empty", lambda: TfidfSVDEncoder(4).fit_transform([]), ValueError),
]

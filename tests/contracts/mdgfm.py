"""Contract cases of mdgfm: the two prototype classifiers, the layers, MDGFM and its ablation, bad input."""

from __future__ import annotations

import numpy as np
import torch
from torch_geometric.data import Data

from icml25.papers.mdgfm import (
    MDGFM,
    Attentive,
    GCNEncoder,
    GCNProto,
    GraphLearner,
    MLPProto,
    PretrainNoRefine,
    TargetPrompt,
    bag_of_words_domain,
    check_graph,
    few_shot_tasks,
    info_nce_bound,
    inject_random_edges,
    unify_features,
)
from icml25.papers.mdgfm.data import DomainSpec

# cheap instances: PCA to 2 columns (the checks use 1-5 features), a few Adam steps, fixed seed
ESTIMATORS = [
    GCNProto(unify_dim=2, hidden=16, steps=40, random_state=0),
    MLPProto(unify_dim=2, hidden=16, steps=40, random_state=0),
]
_PCA_PER_GRAPH = ("predict reduces the rows it is given by their own PCA (the paper's per-dataset PCA), so it "
                  "needs at least unify_dim rows and a prediction depends on the other rows given with it")
EXPECTED_FAILED = {
    "GCNProto": {"check_methods_subset_invariance": _PCA_PER_GRAPH},
    "MLPProto": {"check_methods_subset_invariance": _PCA_PER_GRAPH},
}

_EDGES = torch.tensor([[0, 1, 1, 2, 2, 3, 3, 4, 4, 5], [1, 0, 2, 1, 3, 2, 4, 3, 5, 4]])


def _weighted_edges():
    from icml25.papers.mdgfm import normalized_adjacency

    return normalized_adjacency(_EDGES, 6)


MODULES = {
    "Attentive": lambda: (Attentive(4), (torch.randn(6, 4),)),
    "GraphLearner": lambda: (GraphLearner(4, n_layers=1, k=2), (torch.randn(6, 4),)),
    "GCNEncoder": lambda: (GCNEncoder(4, hidden=8, n_layers=2), (torch.randn(6, 4), *_weighted_edges())),
    "TargetPrompt": lambda: (TargetPrompt(3, 4, k=2, learner_layers=0, dropedge=0.0),
                             (torch.randn(6, 4), torch.randn(3, 4), torch.randn(4))),
    "MDGFM": lambda: (MDGFM(unify_dim=4, hidden=8, n_layers=2, n_sources=2, learner_layers=1),
                      (Data(x=torch.randn(6, 4), edge_index=_EDGES),)),
    "PretrainNoRefine": lambda: (PretrainNoRefine(unify_dim=4, hidden=8, n_layers=2, n_sources=2),
                                 (torch.randn(6, 4), _EDGES)),
}
# The kNN graph learner returns an edge list whose length depends on the data (the union of the kNN
# picks, found with nonzero); MDGFM and PretrainNoRefine normalise A^ with PyG's gcn_norm, which drops
# existing self-loops by a boolean mask (nonzero). Neither size can be known on the meta device.
META_EXEMPT = {
    "GraphLearner": "the refined graph's edge list has a data-dependent length (union of kNN picks, nonzero)",
    "MDGFM": "its refined target graph comes from the kNN graph learner (data-dependent edge count, nonzero)",
    "PretrainNoRefine": "A^ = D^-1/2 (A + I) D^-1/2 via PyG gcn_norm, whose self-loop removal is a boolean mask",
}

_X = np.random.default_rng(0).random((30, 25))
_NAN = _X.copy()
_NAN[0, 0] = np.nan
_E = torch.tensor([[0, 1, 2], [1, 2, 3]])


def _domain():
    return bag_of_words_domain(DomainSpec("d", 60, 3, 0.5, 30), seed=0)


def _pretrained() -> MDGFM:
    d = _domain()
    # the older call form: pretrain sizes the tokens
    return MDGFM(unify_dim=5, hidden=8, n_layers=2).pretrain([(d.x, d.edge_index)], epochs=1, k=[3])


BAD_INPUTS = [
    ("check_graph_nan", lambda: check_graph(_NAN, _E), ValueError),
    ("check_graph_empty", lambda: check_graph(np.zeros((0, 3)), torch.zeros(2, 0, dtype=torch.long)), ValueError),
    ("check_graph_edge_out_of_range", lambda: check_graph(_X, _E + 30), ValueError),
    ("check_graph_negative_edge", lambda: check_graph(_X, _E - 1), ValueError),
    ("check_graph_float_edges", lambda: check_graph(_X, _E.float() + 0.5), TypeError),
    ("check_graph_edges_wrong_shape", lambda: check_graph(_X, torch.tensor([0, 1, 2])), ValueError),
    ("check_graph_string_features", lambda: check_graph(np.array([["a", "b"]]), _E[:, :0]), TypeError),
    ("unify_too_few_features", lambda: unify_features(np.ones((30, 10)), dim=20), ValueError),
    ("unify_nonpositive_dim", lambda: unify_features(_X, dim=0), ValueError),
    ("unify_inf", lambda: unify_features(np.full((30, 25), np.inf), dim=5), ValueError),
    ("learner_wrong_width", lambda: GraphLearner(10)(torch.zeros(5, 7)), ValueError),
    ("learner_zero_k", lambda: GraphLearner(10, k=0), ValueError),
    ("learner_bad_dropedge", lambda: GraphLearner(10, dropedge=1.0), ValueError),
    ("attentive_wrong_width", lambda: Attentive(4)(torch.zeros(3, 5)), ValueError),
    ("encoder_wrong_width", lambda: GCNEncoder(20, 8)(torch.zeros(5, 7), torch.zeros(2, 0, dtype=torch.long)),
     ValueError),
    ("encoder_integer_features", lambda: GCNEncoder(4, 8)(torch.zeros(5, 4, dtype=torch.long), _E), TypeError),
    ("encoder_bad_dropout", lambda: GCNEncoder(4, 8, dropout=1.5), ValueError),
    ("prompt_wrong_tokens", lambda: TargetPrompt(3, 4, 2, 0, 0.0)(torch.zeros(5, 4), torch.zeros(2, 4),
                                                                 torch.zeros(4)), ValueError),
    ("info_nce_shapes", lambda: info_nce_bound(torch.zeros(3, 2), torch.zeros(4, 2), torch.eye(3)), ValueError),
    ("info_nce_zero_tau", lambda: info_nce_bound(torch.ones(3, 2), torch.ones(3, 2), torch.eye(3), tau=0.0),
     ValueError),
    ("mdgfm_no_sources", lambda: MDGFM().pretrain([]), ValueError),
    ("mdgfm_source_count", lambda: MDGFM(n_sources=2).pretrain([(_X, _E)]), ValueError),
    ("mdgfm_zero_epochs", lambda: MDGFM(unify_dim=5).pretrain([(_X, _E)], epochs=0), ValueError),
    ("mdgfm_k_per_source", lambda: MDGFM(unify_dim=5).pretrain([(_X, _E)], k=[3, 3]), ValueError),
    ("mdgfm_prompt_before_pretrain", lambda: MDGFM().prompt_tune(_X, _E, [0], [0]), ValueError),
    ("mdgfm_predict_before_prompt", lambda: _pretrained().predict(_X, _E), ValueError),
    ("mdgfm_support_skips_class", lambda: _pretrained().prompt_tune(_X, _E, [0, 1], [0, 2]), ValueError),
    ("mdgfm_support_out_of_range", lambda: _pretrained().prompt_tune(_X, _E, [0, 99], [0, 1]), ValueError),
    ("mdgfm_support_length_mismatch", lambda: _pretrained().prompt_tune(_X, _E, [0, 1, 2], [0, 1]), ValueError),
    ("mdgfm_float_support", lambda: _pretrained().prompt_tune(_X, _E, [0.5, 1.5], [0, 1]), TypeError),
    ("mdgfm_zero_k_down", lambda: _pretrained().prompt_tune(_X, _E, [0, 1], [0, 1], k_down=0), ValueError),
    ("mdgfm_forward_wrong_width", lambda: MDGFM(unify_dim=5, n_sources=1)(torch.zeros(6, 4), _EDGES), ValueError),
    ("norefine_prompt_before_pretrain", lambda: PretrainNoRefine().prompt_tune(_X, _E, [0], [0]), ValueError),
    ("gcnproto_predict_unfitted", lambda: GCNProto().predict(_X), __import__("sklearn").exceptions.NotFittedError),
    ("gcnproto_nan", lambda: GCNProto(unify_dim=5).fit(_NAN, np.arange(30) % 2), ValueError),
    ("gcnproto_support_out_of_range", lambda: GCNProto(unify_dim=5).fit(_X, _E, [0, 10_000], [0, 1]), ValueError),
    ("gcnproto_only_support_idx", lambda: GCNProto(unify_dim=5).fit(_X, _E, [0, 1]), ValueError),
    ("gcnproto_negative_steps", lambda: GCNProto(unify_dim=5, steps=-1).fit(_X, np.arange(30) % 2), ValueError),
    ("gcnproto_continuous_target", lambda: MLPProto(unify_dim=5).fit(_X, np.linspace(0, 1, 30)), ValueError),
    ("gcnproto_wrong_width_predict", lambda: MLPProto(unify_dim=5, steps=1).fit(_X, np.arange(30) % 2).predict(
        _X[:, :20]), ValueError),
    ("few_shot_more_shots_than_nodes", lambda: few_shot_tasks(torch.tensor([0, 0, 1]), shots=2, n_tasks=1),
     ValueError),
    ("inject_negative_fraction", lambda: inject_random_edges(_E, 4, -0.5), ValueError),
]

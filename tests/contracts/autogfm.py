"""Contract cases of autogfm: the super-network layers, the encoder and predictors, the four models, bad input."""

from __future__ import annotations

import numpy as np
import torch
from torch_geometric.data import Batch, Data

from icml25.papers.autogfm import (
    ArchitecturePredictor,
    AutoGFM,
    DisentangledEncoder,
    EnvironmentPredictor,
    FixedOpGNN,
    GNNEncoder,
    MixedOpLayer,
    MultiTaskGFM,
    SharedDARTS,
    SuperNet,
    TaskSpec,
    curriculum_loss,
    curriculum_weight,
    dataset_partners,
    disentangled_contrastive_loss,
    fit_gfm,
    invariance_loss,
    make_op,
    mean_architecture,
    noi_subgraph,
    roc_auc,
    unify_features,
)

ESTIMATORS: list = []  # no scikit-learn estimators: the models are nn.Modules trained by fit_gfm

# PyG's GCNConv and GATConv add self-loops with add_remaining_self_loops, a boolean mask (nonzero) whose
# size depends on the data, so they cannot run on the meta device; the module probes use the other three
# ops (the mixing code is the same for any op set; tests/papers/test_autogfm.py runs all five).
META_OPS = ("gin", "sage", "graphconv")
_EDGES = torch.tensor([[0, 1, 1, 2, 2, 3, 3, 4], [1, 0, 2, 1, 3, 2, 4, 3]])
_TASKS = [TaskSpec("n", "node", 3), TaskSpec("l", "link", 1), TaskSpec("g", "graph", 2)]


def _data(dim: int = 4, n: int = 5, seed: int = 0, **extra) -> Data:
    g = torch.Generator().manual_seed(seed)
    return Data(x=torch.randn(n, dim, generator=g), edge_index=_EDGES, **extra)


def _batch(level: str = "graph") -> Batch:
    graphs = []
    for s in range(3):
        extra = {"y": torch.tensor([s % 2])}
        if level == "node":
            extra["center_index"] = torch.tensor([s])
        elif level == "link":
            extra["center_index"] = torch.tensor([s, s + 1])
        graphs.append(_data(seed=s, **extra))
    return Batch.from_data_list(graphs)


MODULES = {
    "MixedOpLayer": lambda: (MixedOpLayer(4, ops=META_OPS), (torch.randn(5, 4), _EDGES, torch.softmax(
        torch.randn(3), 0))),
    "SuperNet": lambda: (SuperNet(4, 6, n_layers=2, ops=META_OPS), (torch.randn(5, 4), _EDGES, torch.softmax(
        torch.randn(2, 3), -1))),
    "DisentangledEncoder": lambda: (DisentangledEncoder(4, 6), (_batch(),)),
    "GNNEncoder": lambda: (GNNEncoder(4, 6), (_batch(),)),
    "ArchitecturePredictor": lambda: (ArchitecturePredictor(6, n_layers=2, n_ops=3), (torch.randn(3, 6),)),
    "EnvironmentPredictor": lambda: (EnvironmentPredictor(6), (torch.randn(3, 6), torch.randn(2, 6))),
    "MultiTaskGFM": lambda: (MultiTaskGFM(4, 6, _TASKS, ops=META_OPS), (_batch("graph"), "g")),
    "FixedOpGNN": lambda: (FixedOpGNN("sage", 4, 6, _TASKS), (_batch("node"), "n")),
    "SharedDARTS": lambda: (SharedDARTS(4, 6, _TASKS, ops=META_OPS), (_batch("link"), "l")),
    "AutoGFM": lambda: (AutoGFM(4, 6, _TASKS, ops=META_OPS), (_batch("node"), "n")),
}

_X = torch.randn(5, 4)
_ALPHA = torch.full((5,), 0.2)
_NAN = torch.full((5, 4), float("nan"))


def _auto() -> AutoGFM:
    return AutoGFM(4, 6, _TASKS)


BAD_INPUTS = [
    ("layer_nonpositive_dim", lambda: MixedOpLayer(0), ValueError),
    ("layer_no_ops", lambda: MixedOpLayer(4, ops=()), ValueError),
    ("layer_unknown_op", lambda: make_op("transformer", 4), ValueError),
    ("layer_nan_features", lambda: MixedOpLayer(4)(_NAN, _EDGES, _ALPHA), ValueError),
    ("layer_edge_out_of_range", lambda: MixedOpLayer(4)(_X, _EDGES + 5, _ALPHA), ValueError),
    ("layer_negative_edge", lambda: MixedOpLayer(4)(_X, _EDGES - 1, _ALPHA), ValueError),
    ("layer_float_edge_index", lambda: MixedOpLayer(4)(_X, _EDGES.float(), _ALPHA), TypeError),
    ("layer_wrong_alpha_length", lambda: MixedOpLayer(4)(_X, _EDGES, torch.full((3,), 1 / 3)), ValueError),
    ("layer_alpha_rows_short", lambda: MixedOpLayer(4)(_X, _EDGES, torch.full((1, 5), 0.2),
                                                       torch.tensor([0, 0, 1, 1, 1])), ValueError),
    ("layer_numpy_input", lambda: MixedOpLayer(4)(_X.numpy(), _EDGES, _ALPHA), TypeError),
    ("supernet_zero_layers", lambda: SuperNet(4, 6, n_layers=0), ValueError),
    ("supernet_alphas_wrong_layers", lambda: SuperNet(4, 6, 2)(_X, _EDGES, torch.full((3, 5), 0.2)), ValueError),
    ("encoder_wrong_width", lambda: DisentangledEncoder(4, 6)(torch.randn(5, 3), _EDGES), ValueError),
    ("encoder_empty_graph", lambda: DisentangledEncoder(4, 6)(torch.zeros(0, 4), _EDGES[:, :0]), ValueError),
    ("encoder_unsorted_batch", lambda: DisentangledEncoder(4, 6)(_X, _EDGES, torch.tensor([1, 1, 0, 0, 0])),
     ValueError),
    ("predictor_zero_temperature", lambda: ArchitecturePredictor(6, 2, 5, temperature=0.0), ValueError),
    ("predictor_wrong_width", lambda: ArchitecturePredictor(6, 2, 5)(torch.randn(3, 4)), ValueError),
    ("env_predictor_wrong_width", lambda: EnvironmentPredictor(6)(torch.randn(3, 6), torch.randn(3, 5)), ValueError),
    ("task_spec_unknown_level", lambda: TaskSpec("t", "edge", 2), ValueError),
    ("task_spec_zero_classes", lambda: TaskSpec("t", "graph", 0), ValueError),
    ("gfm_no_tasks", lambda: MultiTaskGFM(4, 6, []), ValueError),
    ("gfm_unknown_task", lambda: _auto()(_batch("graph"), "missing"), ValueError),
    ("gfm_node_task_without_centers", lambda: _auto()(_batch("graph"), "n"), ValueError),
    ("gfm_not_a_graph", lambda: _auto()(torch.randn(5, 4), "g"), TypeError),
    ("autogfm_negative_lam", lambda: AutoGFM(4, 6, _TASKS, lam=-1.0), ValueError),
    ("autogfm_zero_tau", lambda: AutoGFM(4, 6, _TASKS, tau=0.0), ValueError),
    ("autogfm_unknown_loss_form", lambda: AutoGFM(4, 6, _TASKS, loss_form="mean"), ValueError),
    ("dis_loss_unknown_negatives", lambda: disentangled_contrastive_loss(
        torch.randn(4, 3), torch.randn(4, 3), torch.randn(2, 3), torch.tensor([0, 0, 1, 1]), negatives="some"),
     ValueError),
    ("inv_loss_unknown_reduction", lambda: invariance_loss(torch.rand(3, 2, 5), torch.rand(3, 2, 2, 5), "max"),
     ValueError),
    ("env_paired_wrong_partners", lambda: EnvironmentPredictor(6).paired(torch.randn(3, 6), torch.randn(2, 4, 6),
                                                                         ArchitecturePredictor(6, 2, 5)), ValueError),
    ("dataset_partners_empty", lambda: dataset_partners(torch.zeros(0, dtype=torch.long)), ValueError),
    ("plain_encoder_wrong_width", lambda: GNNEncoder(4, 6)(torch.randn(5, 3), _EDGES), ValueError),
    ("noi_node_out_of_range", lambda: noi_subgraph(_data(), [5]), ValueError),
    ("noi_negative_node", lambda: noi_subgraph(_data(), [-1]), ValueError),
    ("noi_float_nodes", lambda: noi_subgraph(_data(), [0.5]), TypeError),
    ("noi_negative_hops", lambda: noi_subgraph(_data(), [0], hops=-1), ValueError),
    ("noi_no_nodes", lambda: noi_subgraph(_data(), []), ValueError),
    ("dis_loss_zero_tau", lambda: disentangled_contrastive_loss(torch.randn(4, 3), torch.randn(4, 3),
                                                                torch.randn(2, 3), torch.tensor([0, 0, 1, 1]), 0.0),
     ValueError),
    ("dis_loss_wrong_prototypes", lambda: disentangled_contrastive_loss(
        torch.randn(4, 3), torch.randn(4, 3), torch.randn(3, 3), torch.tensor([0, 0, 1, 1])), ValueError),
    ("inv_loss_shapes", lambda: invariance_loss(torch.rand(3, 2, 5), torch.rand(2, 3, 2, 5)), ValueError),
    ("curriculum_negative_t", lambda: curriculum_weight(-1.0, 3.0), ValueError),
    ("curriculum_loss_wrong_domains", lambda: curriculum_loss(torch.rand(4, 2, 5), torch.tensor([0, 1]), 1.0),
     ValueError),
    ("unify_nan", lambda: unify_features(_NAN, 3), ValueError),
    ("unify_nonpositive_dim", lambda: unify_features(_X, 0), ValueError),
    ("unify_numpy_input", lambda: unify_features(_X.numpy(), 3), TypeError),
    ("roc_auc_one_class", lambda: roc_auc(np.array([0.1, 0.2]), np.array([1, 1])), ValueError),
    ("roc_auc_nan_scores", lambda: roc_auc(np.array([np.nan, 0.2]), np.array([0, 1])), ValueError),
    ("roc_auc_length_mismatch", lambda: roc_auc(np.array([0.1, 0.2, 0.3]), np.array([0, 1])), ValueError),
    ("fit_gfm_zero_epochs", lambda: fit_gfm(_auto(), [], epochs=0), ValueError),
    ("mean_architecture_2d", lambda: mean_architecture(np.ones((3, 5))), ValueError),
]

"""Contract cases of primphormer: the attention, the GPS block, both models, and bad input."""

from __future__ import annotations

import torch

from icml25.papers.primphormer import (
    GPSBaseline,
    PrimalGraphAttention,
    Primphormer,
    PrimphormerLayer,
    check_graph_input,
    ksvd_loss,
    ksvd_objective,
    mpnn_conv,
)

ESTIMATORS: list = []  # no scikit-learn estimators: the models are nn.Modules

_EDGES = torch.tensor([[0, 1, 2, 3, 4, 1], [1, 2, 3, 4, 0, 3]])


def _graph(dim: int, n: int = 5):
    from torch_geometric.data import Data

    g = torch.Generator().manual_seed(0)
    return Data(x=torch.randn(n, dim, generator=g), edge_index=_EDGES, pe=torch.randn(n, 2, generator=g))


class _CallWithEdgeAttr(torch.nn.Module):
    """Calls a GPS-style layer as ``layer(x, edge_index, edge_attr=edge_attr)`` (its conv's keyword, as GPSConv)."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x, edge_index, edge_attr):
        return self.layer(x, edge_index, edge_attr=edge_attr)


def _randn(*shape: int) -> torch.Tensor:
    """Seeded inputs: each call draws the same numbers on every machine."""
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0))


# One graph per call (batch=None): with a batch vector the per-graph padding sizes (number of graphs,
# largest graph) are read from the data, which the meta device cannot do; tests/papers covers batches.
MODULES = {
    "PrimalGraphAttention": lambda: (PrimalGraphAttention(8, heads=2, rank=3), (_randn(5, 8),)),
    "PrimphormerLayer": lambda: (_CallWithEdgeAttr(PrimphormerLayer(8, mpnn_conv("gine", 8), heads=2, rank=3)),
                                 (_randn(5, 8), _EDGES, _randn(6, 8))),
    "Primphormer": lambda: (Primphormer(3, 8, 2, 2, task="node", pe_dim=2, heads=2, rank=3), (_graph(3),)),
    "GPSBaseline": lambda: (GPSBaseline(3, 8, 1, 2, task="node", pe_dim=2, heads=2), (_graph(3),)),
}

_X = _randn(5, 8)


BAD_INPUTS = [
    ("attention_dim_not_divisible", lambda: PrimalGraphAttention(10, heads=4), ValueError),
    ("attention_nonpositive_rank", lambda: PrimalGraphAttention(8, heads=2, rank=0), ValueError),
    ("attention_unknown_feature_map", lambda: PrimalGraphAttention(8, 2, 2, feature_map="relu"), ValueError),
    ("attention_zero_n_s", lambda: PrimalGraphAttention(8, 2, 2, n_s=0), ValueError),
    ("attention_fractional_n_s", lambda: PrimalGraphAttention(8, 2, 2, n_s=2.5), ValueError),
    ("attention_empty_graph", lambda: PrimalGraphAttention(8, 2, 2)(_randn(0, 8)), ValueError),
    ("attention_wrong_width", lambda: PrimalGraphAttention(8, 2, 2)(_randn(5, 6)), ValueError),
    ("attention_numpy_input", lambda: PrimalGraphAttention(8, 2, 2)(_X.numpy()), TypeError),
    ("attention_numpy_batch", lambda: PrimalGraphAttention(8, 2, 2)(_X, _X[:, 0].numpy()), ValueError),
    ("attention_batch_wrong_length", lambda: PrimalGraphAttention(8, 2, 2)(_X, torch.zeros(3, dtype=torch.long)),
     ValueError),
    ("layer_wrong_width", lambda: PrimphormerLayer(8, None, heads=2, rank=2)(_randn(5, 6), _EDGES), ValueError),
    ("layer_numpy_input", lambda: PrimphormerLayer(8, None, heads=2, rank=2)(_X.numpy(), _EDGES), TypeError),
    ("layer_bad_dropout", lambda: PrimphormerLayer(8, None, heads=2, rank=2, dropout=1.5), ValueError),
    ("mpnn_conv_unknown_kind", lambda: mpnn_conv("gat", 8), ValueError),
    ("model_edge_out_of_range", lambda: Primphormer(3, 8, 1, 2, heads=2, rank=2)(
        _randn(5, 3), torch.tensor([[0], [7]])), ValueError),
    ("model_negative_edge", lambda: Primphormer(3, 8, 1, 2, heads=2, rank=2)(
        _randn(5, 3), torch.tensor([[0], [-1]])), ValueError),
    ("model_float_edge_index", lambda: Primphormer(3, 8, 1, 2, heads=2, rank=2)(_randn(5, 3), _EDGES.float()),
     TypeError),
    ("model_unsorted_batch", lambda: Primphormer(3, 8, 1, 2, heads=2, rank=2)(
        _randn(5, 3), _EDGES, torch.tensor([1, 1, 0, 0, 0])), ValueError),
    ("model_float_batch", lambda: Primphormer(3, 8, 1, 2, heads=2, rank=2)(_randn(5, 3), _EDGES, torch.zeros(5)),
     TypeError),
    ("model_nan_features", lambda: Primphormer(3, 8, 1, 2, heads=2, rank=2)(
        torch.full((5, 3), float("nan")), _EDGES), ValueError),
    ("model_unknown_task", lambda: Primphormer(3, 8, 1, 2, task="edge"), ValueError),
    ("model_nonpositive_layers", lambda: Primphormer(3, 8, 0, 2), ValueError),
    ("model_wrong_pe_shape", lambda: Primphormer(3, 8, 1, 2, pe_dim=2, heads=2, rank=2)(
        _randn(5, 3), _EDGES, pe=_randn(5, 3)), ValueError),
    ("model_missing_edge_attr", lambda: Primphormer(3, 8, 1, 2, edge_dim=2, heads=2, rank=2)(
        _randn(5, 3), _EDGES), ValueError),
    ("gps_unknown_attention", lambda: GPSBaseline(3, 8, 1, 2, attn="linear"), ValueError),
    ("gps_nan_features", lambda: GPSBaseline(3, 8, 1, 2, heads=2)(torch.full((5, 3), float("nan")), _EDGES),
     ValueError),
    ("ksvd_loss_empty", lambda: ksvd_loss([]), ValueError),
    ("ksvd_objective_missing_key", lambda: ksvd_objective({"e": torch.ones(2, 1, 1)}), ValueError),
    ("check_graph_input_bad_edge_shape", lambda: check_graph_input(_X, torch.tensor([0, 1]), None, 8), ValueError),
]

META_EXEMPT = {
    "GPSBaseline": "PyG's GPSConv gathers the real nodes back from its padded dense batch with a boolean mask "
                   "(h[mask], a nonzero with a data-dependent size)",
}

CPU_ONLY = {
    "scaling": "measures peak host memory as the process's resident set size; ScalingConfig.validate rejects "
               "any device other than cpu",
}

"""Primphormer: efficient graph transformers with primal representations (He et al., ICML 2025).

Graph self-attention in the primal space of an asymmetric kernel SVD (the paper's Figure 1(c)): learned
primal weights scaled by a data-dependent virtual node, linear in the number of nodes, trained with the
KSVD objective as a regulariser. PyG batching (``x, edge_index, batch``); the GPS layer takes an injected
local MPNN as PyG's ``GPSConv`` does. :func:`load_paper_dataset` reads the real PATTERN / CLUSTER benchmarks from
a user's folder (torch_geometric's raw layout; nothing is downloaded).
"""

from icml25.papers.primphormer.data import PAPER_DATASETS, load_paper_dataset
from icml25.papers.primphormer.model import (
    N_S_PER_RANK,
    GPSBaseline,
    PrimalGraphAttention,
    Primphormer,
    PrimphormerConfig,
    PrimphormerLayer,
    check_graph_input,
    ksvd_loss,
    ksvd_objective,
    mpnn_conv,
    predict_nodes,
    train_node_classifier,
)

__all__ = ["N_S_PER_RANK", "PAPER_DATASETS", "GPSBaseline", "PrimalGraphAttention", "Primphormer",
           "PrimphormerConfig", "PrimphormerLayer", "check_graph_input", "ksvd_loss", "ksvd_objective",
           "load_paper_dataset", "mpnn_conv", "predict_nodes", "train_node_classifier"]

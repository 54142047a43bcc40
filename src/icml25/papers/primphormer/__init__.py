"""Primphormer: efficient graph transformers with primal representations (He et al., ICML 2025).

Graph self-attention computed in the primal space of an asymmetric kernel SVD: linear in the
number of nodes, trained with a KSVD regulariser. PyG batching (``x, edge_index, batch``).
"""

from icml25.papers.primphormer.model import (
    GPSBaseline,
    PrimalGraphAttention,
    Primphormer,
    PrimphormerLayer,
    check_graph_input,
    ksvd_loss,
    ksvd_objective,
)

__all__ = ["GPSBaseline", "PrimalGraphAttention", "Primphormer", "PrimphormerLayer", "check_graph_input",
           "ksvd_loss", "ksvd_objective"]

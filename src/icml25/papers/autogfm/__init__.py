"""AutoGFM: Automated Graph Foundation Model with Adaptive Architecture Customization (Chen et al., ICML 2025).

A weight-sharing GNN super-network (GCN/GAT/GIN/SAGE/GraphConv mixtures) whose architecture is
predicted per node-of-interest graph from the invariant channel of a disentangled contrastive
encoder, with an invariance loss and a curriculum against one dataset dominating the search.
"""

from icml25.papers.autogfm.data import (
    PAPER_DATASETS,
    encode_texts,
    load_paper_graph,
    load_paper_suite,
    write_processed_graph,
)
from icml25.papers.autogfm.model import (
    OPS,
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
    check_graph_input,
    coefficient_of_variation,
    curriculum_loss,
    curriculum_weight,
    dataset_partners,
    disentangled_contrastive_loss,
    invariance_loss,
    make_op,
    noi_subgraph,
)
from icml25.papers.autogfm.suite import NOIDataset, make_suite, tree_cycle_graphs, unify_features
from icml25.papers.autogfm.train import AutoGFMConfig, evaluate, fit_autogfm, fit_gfm, mean_architecture, roc_auc

__all__ = [
    "OPS", "PAPER_DATASETS", "ArchitecturePredictor", "AutoGFM", "AutoGFMConfig", "DisentangledEncoder",
    "EnvironmentPredictor", "FixedOpGNN",
    "GNNEncoder", "MixedOpLayer", "MultiTaskGFM", "NOIDataset", "SharedDARTS", "SuperNet", "TaskSpec",
    "check_graph_input", "coefficient_of_variation", "curriculum_loss", "curriculum_weight", "dataset_partners",
    "disentangled_contrastive_loss",
    "encode_texts", "evaluate", "fit_autogfm", "fit_gfm", "invariance_loss", "load_paper_graph", "load_paper_suite",
    "make_op", "make_suite", "mean_architecture", "noi_subgraph", "roc_auc", "tree_cycle_graphs", "unify_features",
    "write_processed_graph",
]

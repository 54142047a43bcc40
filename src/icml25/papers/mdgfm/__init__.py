"""MDGFM: multi-domain graph foundation model with topology alignment (Wang et al., ICML 2025, arXiv 2502.02017).

Pre-trains domain/shared/balance tokens, a kNN graph learner and a GCN encoder on several source graphs
(contrasting each graph against its refined version), then adapts to an unseen graph by prompt tuning
with a cosine-prototype classifier. Layers take PyG ``x, edge_index(, edge_weight)``.
"""

from icml25.papers.mdgfm.baselines import GCNProto, MLPProto, PretrainNoRefine
from icml25.papers.mdgfm.data import (
    OFFICIAL_TARGET_SETTINGS,
    PAPER_GRAPHS,
    PAPER_TARGET_SETTINGS,
    SIX_DOMAINS,
    DomainSpec,
    TargetSettings,
    bag_of_words_domain,
    few_shot_tasks,
    inject_random_edges,
    load_paper_graphs,
    make_domains,
    target_settings,
)
from icml25.papers.mdgfm.model import (
    MDGFM,
    Attentive,
    GCNEncoder,
    GraphLearner,
    MDGFMConfig,
    TargetPrompt,
    check_graph,
    info_nce_bound,
    normalized_adjacency,
    unify_features,
)

__all__ = ["MDGFM", "OFFICIAL_TARGET_SETTINGS", "PAPER_GRAPHS", "PAPER_TARGET_SETTINGS", "SIX_DOMAINS", "Attentive",
           "DomainSpec", "GCNEncoder", "GCNProto", "GraphLearner", "MDGFMConfig", "MLPProto", "PretrainNoRefine",
           "TargetPrompt", "TargetSettings", "bag_of_words_domain", "check_graph", "few_shot_tasks", "info_nce_bound",
           "inject_random_edges", "load_paper_graphs", "make_domains", "normalized_adjacency", "target_settings",
           "unify_features"]

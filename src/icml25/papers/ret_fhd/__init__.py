"""ReT-FHD: Rethinking the Temperature for Federated Heterogeneous Distillation (Qi et al., ICML 2025).

Heterogeneous clients exchange only class-mean logits; distillation temperatures are set per class
(category-aware) and per exit (multi-level elastic); a Z-score guard rejects poisoned uploads and a
hash chain records the accepted ones. The paper's equations 3, 4 and 6 are reconstructions here
(``INFERRED = True``); see docs/papers/ret_fhd.md.
"""

from icml25.papers.ret_fhd.data import (
    HETEROGENEOUS_ARCHS,
    PAPER_DATASETS,
    PaperDataError,
    dirichlet_split,
    load_dataset,
    load_paper_dataset,
    make_clients,
)
from icml25.papers.ret_fhd.federated import (
    Client,
    FDFixedT,
    FedAvg,
    HashChainLedger,
    History,
    LocalOnly,
    MultiExitMLP,
    ReTFHD,
    ReTFHDConfig,
    category_temperature,
    class_mean_logits,
    distillation_loss,
    elastic_temperature,
    n_parameters,
    zscore_guard,
)

INFERRED = True
"""The temperature equations and the guard are reconstructions, not the paper's verified formulas."""

__all__ = [
    "HETEROGENEOUS_ARCHS", "INFERRED", "PAPER_DATASETS", "Client", "FDFixedT", "FedAvg", "HashChainLedger", "History",
    "LocalOnly", "MultiExitMLP", "PaperDataError", "ReTFHD", "ReTFHDConfig", "category_temperature",
    "class_mean_logits", "dirichlet_split", "distillation_loss", "elastic_temperature", "load_dataset",
    "load_paper_dataset", "make_clients", "n_parameters", "zscore_guard",
]

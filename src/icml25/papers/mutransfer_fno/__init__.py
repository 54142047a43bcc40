"""muTransfer-FNO: maximal update parametrization over the Fourier mode count (Li, Yoo & Yang, ICML 2025,
arXiv 2506.19396).

The spectral weights R of an FNO with K modes per dimension get init std and Adam LR scaled by
sqrt(log k_base / log K), so that the hyperparameters tuned on a small-K proxy transfer zero-shot
to a large-K model.
"""

from icml25.papers.mutransfer_fno.data import (
    PAPER_DATASETS,
    burgers_dataset,
    burgers_solve,
    grf_1d,
    load_paper_dataset,
    read_mat,
)
from icml25.papers.mutransfer_fno.fno import (
    FNO,
    SpectralConvNd,
    clip_grad_elementwise_,
    init_std,
    lr_multiplier,
    mup_param_groups,
    mup_scale,
    neuralop_n_modes,
    relative_l2,
    transfer_hyperparameters,
)
from icml25.papers.mutransfer_fno.transfer import (
    TrainSettings,
    lr_sweep,
    optimum_index,
    train_fno,
    train_fno_lr_grid,
    transfer_regret,
)

__all__ = [
    "FNO", "PAPER_DATASETS", "SpectralConvNd", "TrainSettings", "burgers_dataset", "burgers_solve",
    "clip_grad_elementwise_", "grf_1d", "init_std", "load_paper_dataset", "lr_multiplier", "lr_sweep",
    "mup_param_groups", "mup_scale", "neuralop_n_modes", "optimum_index", "read_mat", "relative_l2", "train_fno",
    "train_fno_lr_grid", "transfer_hyperparameters", "transfer_regret",
]

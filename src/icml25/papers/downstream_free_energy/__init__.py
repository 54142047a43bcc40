"""Downstream free energy (Munn & Wei, ICML 2025, arXiv 2410.05612): select pretraining checkpoints by
their localised pretraining free energy, estimated with SGLD (localised WBIC / local learning coefficient).
:func:`load_paper_dataset` reads the paper's CIFAR-FS / mini-ImageNet from a user's folder (nothing is downloaded)."""

from icml25.papers.downstream_free_energy.data import CIFAR_FS_SPLIT, PAPER_DATASETS, load_paper_dataset
from icml25.papers.downstream_free_energy.free_energy import (
    SGLD,
    SGLDConfig,
    default_nbeta,
    full_loss,
    hessian_trace,
    llc_estimate,
    pretraining_free_energy,
    select_parameters,
    sgld_sample,
)
from icml25.papers.downstream_free_energy.transfer import (
    MLP,
    Checkpoint,
    FineTuner,
    TransferData,
    checkpoint_zoo,
    digits_transfer,
    pretrain,
    pretrain_grid,
    selection_study,
    teacher_transfer,
)

__all__ = [
    "CIFAR_FS_SPLIT", "PAPER_DATASETS", "MLP", "SGLD", "SGLDConfig", "Checkpoint", "FineTuner", "TransferData",
    "checkpoint_zoo", "default_nbeta", "digits_transfer", "full_loss", "hessian_trace", "llc_estimate",
    "load_paper_dataset", "pretrain", "pretrain_grid",
    "pretraining_free_energy", "select_parameters", "selection_study", "sgld_sample", "teacher_transfer",
]

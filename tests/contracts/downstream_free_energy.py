"""Contract cases of the downstream_free_energy row (see README.md here): its module and its bad inputs."""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from icml25.papers.downstream_free_energy import (
    MLP,
    SGLD,
    Checkpoint,
    FineTuner,
    checkpoint_zoo,
    default_nbeta,
    digits_transfer,
    full_loss,
    hessian_trace,
    pretrain,
    select_parameters,
    selection_study,
    sgld_sample,
    teacher_transfer,
)

MODULES = {
    "MLP": lambda: (MLP((6, 8, 5), n_classes=3), (torch.randn(4, 6),)),
}


def _data(n: int = 20) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(n, 6), torch.randint(0, 3, (n,))


def _nan_data() -> tuple[torch.Tensor, torch.Tensor]:
    X, y = _data()
    X[0, 0] = math.nan
    return X, y


def _sgld(**kw):
    args = dict(n_chains=1, n_burnin=0, n_draws=2, batch_size=5)
    args.update(kw)
    data = args.pop("data", _data())
    return sgld_sample(MLP((6, 8, 5), 3), F.cross_entropy, data, **args)


_ZOO = [Checkpoint({}, MLP((6, 4), 3), {"free_energy": 1.0, "downstream_error": 0.5}) for _ in range(3)]

BAD_INPUTS = [
    ("mlp_only_input_width", lambda: MLP((6,)), ValueError),
    ("mlp_zero_width", lambda: MLP((6, 0)), ValueError),
    ("mlp_zero_classes", lambda: MLP((6, 8), n_classes=0), ValueError),
    ("sgld_zero_step", lambda: SGLD(MLP((6, 8), 3).parameters(), eps=0.0, nbeta=1.0, gamma=1.0), ValueError),
    ("sgld_nan_nbeta", lambda: SGLD(MLP((6, 8), 3).parameters(), eps=1e-4, nbeta=math.nan, gamma=1.0), ValueError),
    ("sgld_negative_gamma", lambda: SGLD(MLP((6, 8), 3).parameters(), eps=1e-4, nbeta=1.0, gamma=-1.0), ValueError),
    ("select_backbone_without_head", lambda: select_parameters(nn.Linear(3, 2), "backbone"), ValueError),
    ("select_unknown_name", lambda: select_parameters(MLP((6, 8), 3), ["head.kernel"]), ValueError),
    ("select_unknown_mode", lambda: select_parameters(MLP((6, 8), 3), "encoder"), ValueError),
    ("sample_zero_chains", lambda: _sgld(n_chains=0), ValueError),
    ("sample_fractional_draws", lambda: _sgld(n_draws=2.5), ValueError),
    ("sample_empty_data", lambda: _sgld(data=(torch.zeros(0, 6), torch.zeros(0, dtype=torch.long))), ValueError),
    ("sample_length_mismatch", lambda: _sgld(data=(torch.zeros(5, 6), torch.zeros(4, dtype=torch.long))), ValueError),
    ("sample_nan_inputs", lambda: _sgld(data=_nan_data()), ValueError),
    ("sample_not_a_loader", lambda: _sgld(data=[1, 2, 3]), ValueError),
    ("nbeta_one_sample", lambda: default_nbeta(1), ValueError),
    ("full_loss_length_mismatch", lambda: full_loss(MLP((6, 8), 3), F.cross_entropy,
                                                    (torch.zeros(5, 6), torch.zeros(4, dtype=torch.long))), ValueError),
    ("hessian_zero_probes", lambda: hessian_trace(MLP((6, 8), 3), F.cross_entropy, _data(), n_probes=0), ValueError),
    ("hessian_nan_inputs", lambda: hessian_trace(MLP((6, 8), 3), F.cross_entropy, _nan_data()), ValueError),
    ("teacher_noise_above_one", lambda: teacher_transfer(label_noise=1.5), ValueError),
    ("teacher_zero_samples", lambda: teacher_transfer(n_pre=0), ValueError),
    ("digits_overlapping_classes", lambda: digits_transfer((0, 1, 2), (2, 3)), ValueError),
    ("digits_class_out_of_range", lambda: digits_transfer((0, 1), (10, 11)), ValueError),
    ("pretrain_zero_lr", lambda: pretrain(teacher_transfer(30, 30), (32, 8), 0.0, 8, 0.0, 1), ValueError),
    ("pretrain_momentum_one", lambda: pretrain(teacher_transfer(30, 30), (32, 8), 0.1, 8, 1.0, 1), ValueError),
    ("finetune_zero_shot", lambda: FineTuner(n_shot=0), ValueError),
    ("finetune_too_few_examples", lambda: FineTuner(n_shot=5, steps=1, n_episodes=1).error(
        MLP((6, 8), 3), torch.randn(4, 6), torch.tensor([0, 0, 1, 1])), ValueError),
    ("finetune_negative_labels", lambda: FineTuner(n_shot=1, steps=1, n_episodes=1).error(
        MLP((6, 8), 3), torch.randn(4, 6), torch.tensor([0, -1, 1, 1])), ValueError),
    ("zoo_empty_grid", lambda: checkpoint_zoo([], teacher_transfer(30, 30), 0), ValueError),
    ("study_two_checkpoints", lambda: selection_study(_ZOO[:2], ("free_energy",)), ValueError),
    ("study_missing_metric", lambda: selection_study(_ZOO, ("llc",)), ValueError),
]

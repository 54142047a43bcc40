"""Multi-task training and evaluation of the super-network models on NOI datasets.

One optimisation step draws ``batch_size`` training NOI graphs from every dataset and minimises
the model's ``loss`` (AutoGFM: L_task + lam L_dis + beta L_inv + L_cur). One epoch is
``ceil(largest training split / batch_size)`` steps; the curriculum clock ``t`` is in epochs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from scipy.stats import rankdata

from icml25.common.checks import check_fields
from icml25.papers.autogfm.model import OPS, AutoGFM, MultiTaskGFM
from icml25.papers.autogfm.suite import NOIDataset

__all__ = ["AutoGFMConfig", "roc_auc", "fit_gfm", "evaluate", "mean_architecture", "fit_autogfm"]


@dataclass(frozen=True)
class AutoGFMConfig:
    """AutoGFM's settings in an experiment: the super-network's size, the objective's constants (Eq. 19,
    ``L_task + lam L_dis + beta L_inv + L_cur``; :class:`AutoGFM`) and the training recipe (:func:`fit_gfm`).

    The baselines an experiment compares with it (fixed-op GNNs, shared-alpha DARTS) are built with the same
    ``hid`` and ``n_layers`` and trained with the same ``epochs``, ``batch_size`` and ``lr``; ``lam``, ``beta``,
    ``t_e``, ``tau``, ``arch_temperature`` and ``loss_form`` are AutoGFM's only (:meth:`model_kwargs`).
    """

    hid: int = 32
    """Hidden width of super-network and encoder, in [1, 10^4]."""
    n_layers: int = 2
    """Super-network layers, in [1, 10^3] (the paper uses 2)."""
    epochs: float = 8.0
    """Training epochs, > 0 (one epoch = largest train split / batch_size steps)."""
    batch_size: int = 32
    """NOI graphs per dataset per step, in [2, 10^5]."""
    lr: float = 0.01
    """Adam learning rate (all methods), > 0."""
    lam: float = 0.1
    """Weight of L_dis (Eq. 10) in Eq. 19, >= 0 (the paper's grid 1e-4..1e-1, second-hand)."""
    beta: float = 0.01
    """Weight of L_inv (Eq. 14) in Eq. 19, >= 0 (the paper's grid 1e-4..1e-1, second-hand)."""
    t_e: float = 3.0
    """Curriculum end in epochs (gamma = 1 - t / t_e, Eq. 18), >= 0; 0 switches the curriculum off."""
    tau: float = 0.5
    """Temperature of the cosine similarities in L_dis (Eqs. 8-9; phi is unspecified in the paper), > 0."""
    arch_temperature: float = 1.0
    """Temperature of psi_I's prototype softmax, > 0 (1 = Eq. 12, which has none)."""
    loss_form: str = "paper"
    """'paper': Eq. 9 with one candidate per data set, Eqs. 10/14 summed over the data sets; 'batch_mean': our
    earlier form (all other-data-set graphs as negatives, all batch pairs in L_inv, both averaged)."""

    def __post_init__(self) -> None:
        check_fields(self, integer=("hid", "n_layers", "batch_size"),
                     finite=("epochs", "lr", "lam", "beta", "t_e", "tau", "arch_temperature"),
                     positive=("hid", "n_layers", "epochs", "lr", "tau", "arch_temperature"),
                     nonnegative=("lam", "beta", "t_e"),
                     choices={"loss_form": ("paper", "batch_mean")},
                     at_least={"batch_size": 2},  # fit_gfm's batch (pairs within a data set)
                     # bounds: a job beyond these would need > ~100 GB or days
                     at_most={"hid": 10**4, "n_layers": 10**3, "batch_size": 10**5})

    def model_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of :class:`AutoGFM` that this config sets (beyond the widths)."""
        return dict(lam=self.lam, beta=self.beta, t_e=self.t_e, tau=self.tau, arch_temperature=self.arch_temperature,
                    loss_form=self.loss_form)


def roc_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Area under the ROC curve by the rank-sum (Mann-Whitney) formula, ties averaged.

    Raises:
        ValueError: scores and labels of different lengths or not 1-D, NaN / inf scores, labels
            other than 0/1, or only one class present.
    """
    scores, labels = np.asarray(scores, dtype=float), np.asarray(labels)
    if scores.ndim != 1 or scores.shape != labels.shape:
        raise ValueError(f"scores and labels must be 1-D of equal length, got {scores.shape} and {labels.shape}")
    if not np.isfinite(scores).all():
        raise ValueError("scores contain NaN or inf")
    if not np.isin(labels, (0, 1)).all():
        raise ValueError("labels must be 0/1 (or booleans)")
    labels = labels.astype(bool)
    n_pos, n_neg = int(labels.sum()), int((~labels).sum())
    if n_pos == 0 or n_neg == 0:
        raise ValueError("roc_auc needs both positive and negative labels")
    ranks = rankdata(scores)
    return float((ranks[labels].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def fit_gfm(model: MultiTaskGFM, datasets: Sequence[NOIDataset], epochs: float, batch_size: int = 32,
            lr: float = 0.01, weight_decay: float = 5e-4, seed: int = 0) -> MultiTaskGFM:
    """Train ``model`` on all datasets jointly with Adam; returns the model (in eval mode).

    Batches are moved to the model's device (that of its first parameter).
    """
    if not (epochs > 0 and batch_size >= 2) or not math.isfinite(epochs):
        raise ValueError(f"need finite epochs > 0 and batch_size >= 2, got {epochs}, {batch_size}")
    if not lr > 0:
        raise ValueError(f"lr must be > 0, got {lr}")
    if not datasets:
        raise ValueError("datasets must not be empty")
    names = [d.spec.name for d in datasets]
    if set(names) - set(model.tasks):
        raise ValueError(f"the model has no head for {sorted(set(names) - set(model.tasks))}")
    rng = np.random.default_rng([seed, 5])
    steps_per_epoch = math.ceil(max(d.splits["train"].size for d in datasets) / batch_size)
    steps = int(round(epochs * steps_per_epoch))
    device = next(model.parameters()).device
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    model.train()
    for step in range(steps):
        batches = {d.spec.name: d.sample(batch_size, rng).to(device) for d in datasets}
        loss, _ = model.loss(batches, step / steps_per_epoch)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval()


@torch.no_grad()
def evaluate(model: MultiTaskGFM, data: NOIDataset, split: str = "test", chunk: int = 256) -> tuple[float, np.ndarray]:
    """Accuracy (node/graph) or ROC-AUC (link) on ``split``, and the architectures used ``(n, L, O)``."""
    if split not in data.splits:
        raise ValueError(f"unknown split {split!r}; valid: {', '.join(data.splits)}")
    if chunk < 1:
        raise ValueError(f"chunk must be >= 1, got {chunk}")
    model.eval()
    device = next(model.parameters()).device
    idx = data.splits[split]
    logits, alphas, ys = [], [], []
    for start in range(0, idx.size, chunk):
        b = data.batch(idx[start:start + chunk]).to(device)
        out = model(b, data.spec.name)
        a = out[1]
        logits.append(out[0]), ys.append(b.y)
        alphas.append(a if a.dim() == 3 else a.unsqueeze(0).expand(b.num_graphs, *a.shape))
    logit, y = torch.cat(logits).cpu(), torch.cat(ys).cpu()
    if data.spec.level == "link":
        score = roc_auc(logit.squeeze(-1).numpy(), y.numpy())
    else:
        score = float((logit.argmax(-1) == y).float().mean())
    return score, torch.cat(alphas).cpu().numpy()


def mean_architecture(alphas: np.ndarray) -> np.ndarray:
    """Mean op probabilities over graphs and layers, ``(n_ops,)``, from ``alphas (n_graphs, L, O)``."""
    alphas = np.asarray(alphas)
    if alphas.ndim != 3 or alphas.shape[0] == 0:
        raise ValueError(f"alphas must be a non-empty (n_graphs, n_layers, n_ops) array, got {alphas.shape}")
    return alphas.mean(axis=(0, 1))


def fit_autogfm(datasets: Sequence[NOIDataset], epochs: float = 8, t_e: float = 3, lam: float = 0.1,
                beta: float = 0.01, hid: int = 32, n_layers: int = 2, ops: Sequence[str] = OPS,
                batch_size: int = 32, lr: float = 0.01, seed: int = 0, **model_kwargs) -> AutoGFM:
    """Build and train AutoGFM on ``datasets`` (all must share one feature width).

    ``model_kwargs`` go to :class:`AutoGFM` (``tau``, ``arch_temperature``, ``disentangled``, ``loss_form``).
    """
    if not datasets:
        raise ValueError("datasets must not be empty")
    dims = {d.graphs[0].x.size(1) for d in datasets}
    if len(dims) != 1:
        raise ValueError(f"datasets must share one feature width (unify them first), got {sorted(dims)}")
    torch.manual_seed(seed)
    model = AutoGFM(dims.pop(), hid, [d.spec for d in datasets], n_layers, ops, lam=lam, beta=beta, t_e=t_e,
                    **model_kwargs)
    return fit_gfm(model, datasets, epochs, batch_size, lr, seed=seed)

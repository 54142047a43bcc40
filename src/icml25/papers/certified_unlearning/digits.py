"""The digits set-up of the reproduction, as a public API: data split, batches, the small MLP and the scores.

Standardised scikit-learn digits with a random forget set (:func:`digits_split`), re-iterable shuffled minibatches
(:class:`TensorBatches`), the 64 -> hidden -> 10 MLP (:func:`mlp`), test accuracy (:func:`accuracy`) and the
loss-threshold membership-inference AUC (:func:`mia_auc`). The experiments in ``repro.py`` use these.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from sklearn.metrics import roc_auc_score
from torch import nn


class TensorBatches:
    """Re-iterable minibatches of (X, y), reshuffled every pass with its own generator."""

    def __init__(self, X: torch.Tensor, y: torch.Tensor, batch_size: int, seed: int):
        if X.shape[0] != y.shape[0] or X.shape[0] == 0:
            raise ValueError("X and y must be non-empty with the same number of rows")
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        if not torch.isfinite(X).all():
            raise ValueError("X contains NaN or inf")
        self.X, self.y, self.batch_size = X, y, batch_size
        self.gen = torch.Generator().manual_seed(seed)

    def __len__(self) -> int:
        return math.ceil(self.X.shape[0] / self.batch_size)

    def __iter__(self):
        order = torch.randperm(self.X.shape[0], generator=self.gen).to(self.X.device)  # CPU draws, any device
        for i in range(0, len(order), self.batch_size):
            idx = order[i:i + self.batch_size]
            yield self.X[idx], self.y[idx]


def mlp(n_in: int = 64, hidden: int = 20, n_out: int = 10) -> nn.Module:
    """The tiny MLP of the quick reproduction (the official MNIST 'tiny_net' is 784 -> 5 -> 10)."""
    for name, v in (("n_in", n_in), ("hidden", hidden), ("n_out", n_out)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    return nn.Sequential(nn.Linear(n_in, hidden), nn.ReLU(), nn.Linear(hidden, n_out))


def digits_split(seed: int, test_fraction: float = 0.3, forget_fraction: float = 0.1) -> dict[str, torch.Tensor]:
    """Standardised digits: train/test split, then a random forget set inside train; the rest is retain."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    for name, f in (("test_fraction", test_fraction), ("forget_fraction", forget_fraction)):
        if not 0 < f < 1:
            raise ValueError(f"{name} must be in (0, 1), got {f!r}")
    X, y = load_digits(return_X_y=True)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=test_fraction, random_state=seed, stratify=y)
    mean, std = X_tr.mean(axis=0), X_tr.std(axis=0)
    std[std == 0] = 1.0
    X_tr, X_te = (X_tr - mean) / std, (X_te - mean) / std
    rng = np.random.default_rng([seed, 3])
    forget = np.zeros(len(y_tr), dtype=bool)
    forget[rng.choice(len(y_tr), size=int(round(forget_fraction * len(y_tr))), replace=False)] = True
    t = lambda a, dt=torch.float32: torch.as_tensor(a, dtype=dt)  # noqa: E731
    return {"X_train": t(X_tr), "y_train": t(y_tr, torch.long), "X_test": t(X_te), "y_test": t(y_te, torch.long),
            "X_retain": t(X_tr[~forget]), "y_retain": t(y_tr[~forget], torch.long),
            "X_forget": t(X_tr[forget]), "y_forget": t(y_tr[forget], torch.long)}


@torch.no_grad()
def accuracy(model: nn.Module, X: torch.Tensor, y: torch.Tensor) -> float:
    """Share of rows of ``X`` whose argmax logit is the label ``y`` (same number of rows)."""
    if X.shape[0] != y.shape[0] or X.shape[0] == 0:
        raise ValueError(f"X and y must be non-empty with the same number of rows, got {X.shape[0]} and {y.shape[0]}")
    return float((model(X).argmax(dim=1) == y).float().mean())


@torch.no_grad()
def mia_auc(model: nn.Module, X_member, y_member, X_non, y_non) -> float:
    """Loss-threshold membership inference: AUC of -loss separating members (forget set) from test images."""
    for name, (a, b) in (("member", (X_member, y_member)), ("non-member", (X_non, y_non))):
        if len(a) == 0 or len(a) != len(b):
            raise ValueError(f"the {name} set must be non-empty with as many labels as rows, got {len(a)} and {len(b)}")
    loss = nn.functional.cross_entropy
    s_in = -loss(model(X_member), y_member, reduction="none")
    s_out = -loss(model(X_non), y_non, reduction="none")
    labels = np.r_[np.ones(len(s_in)), np.zeros(len(s_out))]
    return float(roc_auc_score(labels, np.r_[s_in.cpu().numpy(), s_out.cpu().numpy()]))

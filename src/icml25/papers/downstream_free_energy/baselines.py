"""The two checkpoint-selection criteria the paper compares the free energy with (Table 1).

* **Geometric complexity** (Dherin et al., 2022): the mean squared Frobenius norm of the network's input Jacobian,
  ``GC = (1/n) sum_i ||d f(x_i) / d x_i||_F^2``, with ``f`` the logits, over the pretraining inputs.
* **Neural collapse** (Galanti et al., 2022, the transfer-learning form): the class-distance normalised variance of the
  backbone's features, averaged over pairs of pretraining classes,
  ``NC = mean_{c != c'} (V_c + V_c') / (2 ||mu_c - mu_c'||^2)`` with ``mu_c`` the class mean feature and
  ``V_c = mean_{i in c} ||h(x_i) - mu_c||^2``. Smaller means more collapsed.

Both are measured on the pretraining data, as the free energy is; the paper reports the Pearson correlation of each with
the fine-tuning accuracy over its checkpoints.
"""

from __future__ import annotations

import itertools

import torch
from torch import nn


def geometric_complexity(model: nn.Module, x: torch.Tensor, batch_size: int = 1024) -> float:
    """``(1/n) sum_i ||J_f(x_i)||_F^2``: the mean squared Frobenius norm of the logits' Jacobian in the input.

    Rows are independent (no batch statistics), so the gradient of ``sum_i f_c(x_i)`` gives every row's
    ``d f_c / d x_i`` at once; one backward pass per output ``c``.
    """
    if x.ndim != 2 or x.shape[0] == 0:
        raise ValueError(f"x must be a non-empty (n, d) matrix, got shape {tuple(x.shape)}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    was_training = model.training
    model.eval()
    total = 0.0
    for chunk in x.split(batch_size):
        xi = chunk.detach().clone().requires_grad_(True)
        out = model(xi)
        for c in range(out.shape[1]):
            (g,) = torch.autograd.grad(out[:, c].sum(), xi, retain_graph=c < out.shape[1] - 1)
            total += float(g.pow(2).sum())
    model.train(was_training)
    return total / x.shape[0]


def neural_collapse(features: torch.Tensor, y: torch.Tensor) -> float:
    """Class-distance normalised variance ``mean_{c != c'} (V_c + V_c') / (2 ||mu_c - mu_c'||^2)`` of ``features``.

    Args:
        features: (n, k) features (the backbone's output).
        y: (n,) integer class labels; at least two classes.
    """
    if features.ndim != 2 or y.shape != (features.shape[0],):
        raise ValueError(f"features must be (n, k) and y (n,), got {tuple(features.shape)} and {tuple(y.shape)}")
    classes = torch.unique(y)
    if classes.numel() < 2:
        raise ValueError("neural collapse needs at least two classes")
    h = features.detach().double()
    means = torch.stack([h[y == c].mean(0) for c in classes])
    var = torch.stack([(h[y == c] - means[k]).pow(2).sum(1).mean() for k, c in enumerate(classes)])
    pairs = [(var[a] + var[b]) / (2 * (means[a] - means[b]).pow(2).sum())
             for a, b in itertools.combinations(range(classes.numel()), 2)]
    return float(torch.stack(pairs).mean())


def backbone_neural_collapse(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """:func:`neural_collapse` of ``model.backbone(x)`` (the features that fine-tuning starts from)."""
    with torch.no_grad():
        return neural_collapse(model.backbone(x), y)

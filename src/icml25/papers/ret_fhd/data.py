"""Data for the ReT-FHD reproduction: bundled digits, a 20-class Gaussian mixture, Dirichlet label skew."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from icml25.papers.ret_fhd.federated import Client, MultiExitMLP

HETEROGENEOUS_ARCHS: tuple[tuple[int, ...], ...] = ((32,), (64, 32), (128, 64, 32), (64,), (128, 64))
"""Hidden widths of the heterogeneous clients (client k gets ``archs[k % 5]``): 1-3 layers, widths 32-128."""


def load_dataset(name: str, seed: int = 0, test_fraction: float = 0.3):
    """Standardised train/test tensors of ``"digits"`` (sklearn, 1,797 x 64, 10 classes) or ``"gmm20"``.

    ``gmm20`` is a 20-class mixture in 50 dimensions: each class has two Gaussian components with
    means ``N(0, 0.6^2 I)`` and unit covariance, 150 points per class (3,000 points).

    Returns:
        ``(X_train, y_train, X_test, y_test, n_classes)``.
    """
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    rng = np.random.default_rng([seed, 3])
    if name == "digits":
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
        C = 10
    elif name == "gmm20":
        C, d, per = 20, 50, 150
        means = rng.normal(0, 0.6, size=(C, 2, d))
        y = np.repeat(np.arange(C), per)
        comp = rng.integers(0, 2, size=y.size)
        X = means[y, comp] + rng.normal(size=(y.size, d))
    else:
        raise ValueError(f"unknown dataset {name!r}; valid: 'digits', 'gmm20'")
    perm = rng.permutation(len(y))
    n_test = int(round(test_fraction * len(y)))
    te, tr = perm[:n_test], perm[n_test:]
    mu, sd = X[tr].mean(0), X[tr].std(0) + 1e-8
    f = lambda a: torch.tensor((a - mu) / sd, dtype=torch.float32)  # noqa: E731
    return f(X[tr]), torch.tensor(y[tr]), f(X[te]), torch.tensor(y[te]), C


def dirichlet_split(y: np.ndarray | torch.Tensor, n_clients: int, alpha: float, seed: int = 0,
                    min_size: int = 10) -> list[np.ndarray]:
    """Label-skewed partition: class c's points are split by proportions ``~ Dir(alpha 1_K)``.

    Redraws until every client has at least ``min_size`` points.

    Returns:
        A list of ``n_clients`` index arrays.
    """
    y = np.asarray(y)
    if n_clients < 1 or alpha <= 0 or n_clients * min_size > len(y):
        raise ValueError(f"need n_clients >= 1, alpha > 0 and n_clients*min_size <= n; got {n_clients}, {alpha}, "
                         f"{min_size}, n={len(y)}")
    rng = np.random.default_rng([seed, 5])
    for _ in range(1000):
        parts = [[] for _ in range(n_clients)]
        for c in np.unique(y):
            idx = rng.permutation(np.flatnonzero(y == c))
            cuts = (np.cumsum(rng.dirichlet(alpha * np.ones(n_clients))) * len(idx)).astype(int)[:-1]
            for k, chunk in enumerate(np.split(idx, cuts)):
                parts[k].extend(chunk.tolist())
        if min(len(p) for p in parts) >= min_size:
            return [np.sort(np.array(p)) for p in parts]
    raise ValueError(f"could not draw a split with {min_size} points per client; raise alpha or lower min_size")


def make_clients(X: torch.Tensor, y: torch.Tensor, parts: Sequence[np.ndarray], n_classes: int,
                 archs: Sequence[Sequence[int]] = HETEROGENEOUS_ARCHS, seed: int = 0,
                 attackers: dict[int, str] | None = None, device: str | torch.device | None = None) -> list[Client]:
    """Build one :class:`Client` per partition with architecture ``archs[k % len(archs)]``.

    Model initialisation depends only on ``seed`` (weights are drawn on the CPU, then moved to
    ``device``, default: the device of ``X``), so every method of a comparison starts from the same
    weights on any device. ``attackers`` maps client ids to an attack name.
    """
    attackers = attackers or {}
    parts = [np.asarray(p) for p in parts]
    for k, p in enumerate(parts):
        if p.ndim != 1 or (p.size and not np.issubdtype(p.dtype, np.integer)):
            raise TypeError(f"parts[{k}] must be a 1-D integer index array, got dtype {p.dtype}, shape {p.shape}")
        if p.size and (p.min() < 0 or p.max() >= len(X)):
            raise ValueError(f"parts[{k}] indexes rows outside [0, {len(X)}): range [{p.min()}, {p.max()}]")
    device = X.device if device is None else torch.device(device)
    X, y = X.to(device), y.to(device)
    torch.manual_seed(seed)
    return [Client(MultiExitMLP(X.shape[1], archs[k % len(archs)], n_classes).to(device), X[p], y[p],
                   attackers.get(k))
            for k, p in enumerate(parts)]

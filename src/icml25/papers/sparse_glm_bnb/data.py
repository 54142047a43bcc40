"""Data for the reproduction: the paper's synthetic sparse regression design and breast cancer.

Synthetic (the card's setting): rows of X are N(0, Sigma) with ``Sigma_ij = rho^|i-j|``
(an AR(1) chain across features), ``beta*`` has ``k`` equal nonzeros (1.0) at evenly
spaced positions, and the noise variance is ``Var(X beta*) / snr``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SparseRegressionData:
    """A synthetic instance: ``X`` (n, p), ``y`` (n,), the true ``beta`` (p,) and its ``support``."""

    X: np.ndarray
    y: np.ndarray
    beta: np.ndarray
    support: np.ndarray


def correlated_design(n: int, p: int, rho: float, rng: np.random.Generator) -> np.ndarray:
    """Rows N(0, Sigma) with ``Sigma_ij = rho^|i-j|``, built as an AR(1) recursion over columns."""
    e = rng.standard_normal((n, p))
    X = np.empty((n, p))
    X[:, 0] = e[:, 0]
    scale = np.sqrt(1.0 - rho * rho)
    for j in range(1, p):
        X[:, j] = rho * X[:, j - 1] + scale * e[:, j]
    return X


def synthetic_sparse_regression(n: int, p: int, k: int, rho: float = 0.5, snr: float = 5.0,
                                seed: int | list[int] | None = 0) -> SparseRegressionData:
    """The card's synthetic regression: AR(1) design, ``k`` equal nonzeros, given SNR.

    Raises:
        ValueError: unless ``n >= 1``, ``1 <= k <= p``, ``-1 < rho < 1`` and ``snr > 0``.
    """
    for name, value in (("n", n), ("p", p), ("k", k)):
        if isinstance(value, bool) or not float(value).is_integer() or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if k > p:
        raise ValueError(f"k must be <= p = {p}, got k={k}")
    if not -1 < rho < 1:
        raise ValueError(f"rho must be in (-1, 1) (an AR(1) correlation), got {rho!r}")
    if not 0 < snr < np.inf:
        raise ValueError(f"snr must be a finite positive ratio, got {snr!r}")
    rng = np.random.default_rng(seed)
    X = correlated_design(n, p, rho, rng)
    support = np.unique(np.linspace(0, p - 1, k).round().astype(int))
    beta = np.zeros(p)
    beta[support] = 1.0
    signal = X @ beta
    sigma = np.sqrt(np.var(signal) / snr)
    y = signal + sigma * rng.standard_normal(n)
    return SparseRegressionData(X, y, beta, support)


def ridge_coefficients(X: np.ndarray, y: np.ndarray, lam2: float) -> np.ndarray:
    """``argmin ||y - X b||^2 + lam2 ||b||^2``, via the n x n system when p > n.

    Raises:
        ValueError: unless ``X`` is 2-D, ``y`` has one entry (or row) per row of ``X`` and ``lam2`` is finite
            and >= 0.
    """
    X, y = np.asarray(X), np.asarray(y)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array (n_samples, n_features), got shape {X.shape}")
    if y.ndim not in (1, 2) or y.shape[0] != X.shape[0]:
        raise ValueError(f"y must have {X.shape[0]} entries (one per row of X), got shape {y.shape}")
    if not np.isfinite(lam2) or lam2 < 0:
        raise ValueError(f"lam2 must be a finite ridge weight >= 0, got lam2={lam2!r}")
    n, p = X.shape
    if p > n:
        return X.T @ np.linalg.solve(X @ X.T + lam2 * np.eye(n), y)
    return np.linalg.solve(X.T @ X + lam2 * np.eye(p), X.T @ y)


def breast_cancer_logistic(fraction: float = 1.0, seed: int | None = 0) -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's breast-cancer data (569 x 30, bundled), standardised, labels in {-1, +1}.

    With ``fraction < 1`` a random subsample of the rows (seeded) is returned, so that
    seeds give different instances. Columns are standardised on the rows returned.

    Raises:
        ValueError: unless ``0 < fraction <= 1`` and the subsample keeps at least 2 rows.
    """
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction!r}")
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer()
    X, y = data.data.astype(float), np.where(data.target == 1, 1.0, -1.0)
    if fraction < 1.0:
        size = int(round(fraction * X.shape[0]))
        if size < 2:
            raise ValueError(f"fraction={fraction!r} keeps {size} of {X.shape[0]} rows; at least 2 are needed")
        rng = np.random.default_rng(seed)
        rows = np.sort(rng.choice(X.shape[0], size=size, replace=False))
        X, y = X[rows], y[rows]
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X, y

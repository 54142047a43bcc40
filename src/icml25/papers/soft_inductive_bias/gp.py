"""Benign overfitting with a Gaussian process: the GP stand-in for Zhang et al.'s random-label experiment.

Wilson (2025, arXiv 2503.02113, Fig. 1d): a GP with an RBF kernel fits training labels at any level of label
noise, yet its marginal likelihood and test accuracy fall as the noise grows, and a PAC-Bayes bound
separates true from random labels. We regress centred one-hot targets (one independent GP per class).

Bound. The prior P is the GP prior restricted to the n training inputs, f_c ~ N(0, K) for each class c;
the posterior Q is the GP posterior under a *bound* noise variance s^2, f_c ~ N(K A y_c, s^2 K A) with
A = (K + s^2 I)^{-1}. The full-process KL equals the KL of these finite marginals. With K = U diag(lam) U^T:

    KL(Q || P) = sum_c 0.5 sum_i [ s^2/(lam_i + s^2) - 1 + log(1 + lam_i/s^2) + lam_i (u_i^T y_c)^2/(lam_i + s^2)^2 ].

The bounded classifier is the Gibbs classifier (draw f ~ Q, predict argmax_c f_c(x)); its empirical 0-1 risk
is computed exactly per point by 1-D Gauss-Hermite quadrature (all classes share the posterior variance).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.spatial.distance import pdist
from scipy.special import ndtr

from icml25.common.checks import check_fields
from icml25.papers.soft_inductive_bias.bounds import pac_bayes_kl_bound


@dataclass(frozen=True)
class GPStudyConfig:
    """Settings of the GP and its PAC-Bayes bound in :func:`gp_label_noise_study` (Fig. 1d's GP; the bound of
    Sec. 3, second-hand). ``gp_label_noise_study(..., **vars(cfg))`` runs the study with them."""

    noise: float = 1e-3
    """Observation-noise variance of the fitted (near-interpolating) GP, > 0."""
    bound_noises: tuple[float, ...] = (1e-3, 1e-2, 1e-1, 1.0, 10.0)
    """Posterior noise variances s^2 of the PAC-Bayes Gibbs posterior, each > 0 (a union-bounded grid)."""
    delta: float = 0.05
    """Confidence of the PAC-Bayes bound, in (0, 1) (split evenly over ``bound_noises``)."""

    def __post_init__(self) -> None:
        check_fields(self, finite=("noise", "bound_noises", "delta"), positive=("noise", "bound_noises"),
                     open_fraction=("delta",), nonempty=("bound_noises",))


def median_heuristic_lengthscale(X: np.ndarray, max_points: int = 1000, seed: int = 0) -> float:
    """Median pairwise Euclidean distance of the rows of X (on at most ``max_points`` random rows)."""
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape[0] < 2:
        raise ValueError(f"X must be a 2-D array with at least 2 rows, got shape {X.shape}")
    if X.shape[0] > max_points:
        X = X[np.random.default_rng(seed).choice(X.shape[0], max_points, replace=False)]
    return float(np.median(pdist(X)))


def rbf_kernel(A: np.ndarray, B: np.ndarray, lengthscale: float, variance: float = 1.0) -> np.ndarray:
    """k(a, b) = variance * exp(-||a - b||^2 / (2 lengthscale^2)), shape (len(A), len(B))."""
    if not (math.isfinite(lengthscale) and math.isfinite(variance) and lengthscale > 0 and variance > 0):
        raise ValueError(f"lengthscale and variance must be finite and > 0, got {lengthscale}, {variance}")
    A, B = np.asarray(A, dtype=float), np.asarray(B, dtype=float)
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[1]:
        raise ValueError(f"A and B must be 2-D with the same number of columns, got {A.shape} and {B.shape}")
    sq = np.sum(A**2, 1)[:, None] + np.sum(B**2, 1)[None, :] - 2 * A @ B.T
    return variance * np.exp(-np.maximum(sq, 0) / (2 * lengthscale**2))


def centred_one_hot(y: np.ndarray, n_classes: int) -> np.ndarray:
    """One-hot targets minus 1/n_classes, shape (n, n_classes); labels are integers in [0, n_classes)."""
    y = np.asarray(y)
    if isinstance(n_classes, bool) or not isinstance(n_classes, (int, np.integer)) or n_classes < 1:
        raise ValueError(f"n_classes must be a positive integer, got {n_classes!r}")
    if y.ndim != 1 or not np.issubdtype(y.dtype, np.integer):
        raise ValueError(f"y must be a 1-D array of integer labels, got shape {y.shape} and dtype {y.dtype}")
    if y.size and (y.min() < 0 or y.max() >= n_classes):
        raise ValueError(f"labels must lie in [0, {n_classes}), got min {y.min()} and max {y.max()}")
    return np.eye(n_classes)[y] - 1.0 / n_classes


def gp_log_marginal_likelihood(lam: np.ndarray, uty: np.ndarray, noise: float) -> float:
    """Sum over target columns of log N(y_c | 0, K + noise I), from K = U diag(lam) U^T and uty = U^T Y."""
    d = lam + noise
    n, k = uty.shape
    return float(-0.5 * np.sum(uty**2 / d[:, None]) - 0.5 * k * np.sum(np.log(d)) - 0.5 * n * k * math.log(2 * math.pi))


def gp_posterior_kl(lam: np.ndarray, uty: np.ndarray, noise: float) -> float:
    """KL(GP posterior with noise s^2 || GP prior) at the training inputs, summed over target columns."""
    lam = np.maximum(lam, 0.0)
    per_col = 0.5 * np.sum(noise / (lam + noise) - 1 + np.log1p(lam / noise))
    fit = 0.5 * np.sum((lam / (lam + noise) ** 2)[:, None] * uty**2)
    return float(uty.shape[1] * per_col + fit)


def gibbs_error(mean: np.ndarray, var: np.ndarray, labels: np.ndarray, nodes: int = 64) -> np.ndarray:
    """P(argmax_c f_c != label) per point for independent f_c ~ N(mean[i, c], var[i]).

    P(correct) = E_z[ prod_{c != y} Phi((mean_y - mean_c)/sd + z) ], z ~ N(0, 1), by Gauss-Hermite quadrature.
    Args: mean (n, C), var (n,), labels (n,). Returns: (n,) error probabilities.
    """
    z, w = np.polynomial.hermite_e.hermegauss(nodes)
    w = w / w.sum()
    sd = np.sqrt(np.maximum(var, 1e-300))
    idx = np.arange(len(labels))
    gap = (mean[idx, labels][:, None] - mean) / sd[:, None]  # (n, C)
    gap[idx, labels] = np.inf
    prob = ndtr(gap[:, :, None] + z[None, None, :]).prod(axis=1)  # (n, nodes)
    return 1.0 - prob @ w


def corrupt_labels(y: np.ndarray, frac: float, n_classes: int, rng: np.random.Generator,
                   order: np.ndarray | None = None, random_labels: np.ndarray | None = None) -> np.ndarray:
    """Replace the first round(frac * n) labels of ``order`` (a permutation) by uniform random labels.

    Passing the same ``order`` and ``random_labels`` for several fractions nests the corrupted sets.
    """
    if not 0 <= frac <= 1:
        raise ValueError(f"noise fraction must be a probability in [0, 1], got {frac}")
    n = len(y)
    order = rng.permutation(n) if order is None else order
    random_labels = rng.integers(n_classes, size=n) if random_labels is None else random_labels
    out = y.copy()
    m = int(round(frac * n))
    out[order[:m]] = random_labels[order[:m]]
    return out


def gp_label_noise_study(X: np.ndarray, y: np.ndarray, X_test: np.ndarray, y_test: np.ndarray,
                         noise_fracs=(0.0, 0.25, 0.5, 0.75, 1.0), lengthscale: float | None = None,
                         noise: float = 1e-3, bound_noises=(1e-3, 1e-2, 1e-1, 1.0, 10.0), delta: float = 0.05,
                         seed: int = 0) -> dict[str, np.ndarray]:
    """GP regression on centred one-hot labels with a fraction of training labels randomised.

    Args:
        X, y: training inputs (n, d) and integer labels (n,) in 0..C-1.
        X_test, y_test: held-out inputs and labels.
        noise_fracs: fractions p of training labels replaced by uniform random labels (nested sets).
        lengthscale: RBF lengthscale; None uses the median heuristic on ``X_test`` (inputs only, so the
            PAC-Bayes prior does not depend on the training sample).
        noise: observation-noise variance of the fitted (near-interpolating) GP.
        bound_noises: grid of posterior noise variances s^2 for the PAC-Bayes bound; the bound is the
            minimum over the grid with delta split evenly (union bound).
        delta: confidence of the bound.
        seed: seed of the label corruption.

    Returns:
        dict of arrays indexed like ``noise_fracs``: train_acc, test_acc, lml (log marginal likelihood
        per training point), bound (Gibbs-classifier PAC-Bayes-kl bound), gibbs_train_err and kl of the
        best grid point, best_bound_noise.
    """
    X, X_test = np.asarray(X, float), np.asarray(X_test, float)
    y, y_test = np.asarray(y), np.asarray(y_test)
    if X.ndim != 2 or X_test.ndim != 2 or X.shape[1] != X_test.shape[1]:
        raise ValueError(f"X and X_test must be 2-D with the same number of columns, got {X.shape}, {X_test.shape}")
    if len(y) != len(X) or len(y_test) != len(X_test):
        raise ValueError("y and y_test must have one label per row of X and X_test")
    if noise <= 0 or any(s <= 0 for s in bound_noises):
        raise ValueError("noise variances must be > 0")
    n_classes = int(max(y.max(), y_test.max())) + 1
    rng = np.random.default_rng(seed)
    order, random_labels = rng.permutation(len(y)), rng.integers(n_classes, size=len(y))
    ell = median_heuristic_lengthscale(X_test, seed=seed) if lengthscale is None else float(lengthscale)
    K = rbf_kernel(X, X, ell)
    lam, U = np.linalg.eigh(K)
    lam = np.maximum(lam, 0.0)
    K_star_U = rbf_kernel(X_test, X, ell) @ U
    n = len(y)
    keys = ("train_acc", "test_acc", "lml", "bound", "gibbs_train_err", "kl", "best_bound_noise")
    out: dict[str, list[float]] = {k: [] for k in keys}
    for frac in noise_fracs:
        y_noisy = corrupt_labels(y, frac, n_classes, rng, order, random_labels)
        uty = U.T @ centred_one_hot(y_noisy, n_classes)
        coef = uty / (lam + noise)[:, None]  # U^T (K + noise I)^{-1} Y
        out["train_acc"].append(np.mean(np.argmax(U @ (lam[:, None] * coef), 1) == y_noisy))
        out["test_acc"].append(np.mean(np.argmax(K_star_U @ coef, 1) == y_test))
        out["lml"].append(gp_log_marginal_likelihood(lam, uty, noise) / n)
        best = (np.inf, np.nan, np.nan, np.nan)
        for s2 in bound_noises:
            mean = U @ ((lam / (lam + s2))[:, None] * uty)
            var = (U**2) @ (lam * s2 / (lam + s2))
            err = float(np.mean(gibbs_error(mean, var, y_noisy)))
            kl = gp_posterior_kl(lam, uty, s2)
            b = pac_bayes_kl_bound(min(max(err, 0.0), 1.0), kl, n, delta / len(bound_noises))
            if b < best[0]:
                best = (b, err, kl, s2)
        for key, value in zip(("bound", "gibbs_train_err", "kl", "best_bound_noise"), best):
            out[key].append(value)
    result = {k: np.asarray(v, dtype=float) for k, v in out.items()}
    result["lengthscale"] = np.asarray(ell)
    return result

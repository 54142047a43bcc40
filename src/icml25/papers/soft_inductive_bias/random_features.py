"""Double descent in a linear model: minimum-norm least squares on p ReLU random features.

Wilson (2025, arXiv 2503.02113, Fig. 1g): test error peaks where the number of features p reaches the
number of training points n (the interpolation threshold) and descends again for p >> n, because among all
interpolants the minimum-norm one is preferred (a soft inductive bias). Features are
phi(x) = relu(W^T x) / sqrt(p), W_jk ~ N(0, 1/d); as p -> infinity, phi(x)^T phi(x') tends to the
first-order arc-cosine kernel and the min-norm fit to ridgeless kernel regression with that kernel.

Effective dimensionality (MacKay; Maddox et al. 2020): N_eff(H, alpha) = sum_i lam_i / (lam_i + alpha)
= tr(H (H + alpha I)^{-1}) with H = Phi^T Phi / n the Hessian of the mean squared loss (up to a factor 2).
"""

from __future__ import annotations

import numpy as np


def draw_feature_weights(d: int, p: int, rng: np.random.Generator) -> np.ndarray:
    """W of shape (d, p) with i.i.d. N(0, 1/d) entries."""
    for name, v in (("d", d), ("p", p)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    return rng.normal(0.0, 1.0 / np.sqrt(d), size=(d, p))


def relu_random_features(X: np.ndarray, W: np.ndarray) -> np.ndarray:
    """phi(X) = relu(X W) / sqrt(p), shape (n, p)."""
    return np.maximum(X @ W, 0.0) / np.sqrt(W.shape[1])


def arccos_kernel(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Limit of relu random-feature inner products with N(0, 1/d) weights (arc-cosine kernel, order 1).

    k(a, b) = |a| |b| (sin t + (pi - t) cos t) / (2 pi d), t the angle between a and b.
    """
    d = A.shape[1]
    na, nb = np.linalg.norm(A, axis=1), np.linalg.norm(B, axis=1)
    cos = np.clip((A @ B.T) / np.maximum(np.outer(na, nb), 1e-300), -1.0, 1.0)
    t = np.arccos(cos)
    return np.outer(na, nb) * (np.sin(t) + (np.pi - t) * cos) / (2 * np.pi * d)


def min_norm_least_squares(Phi: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """argmin ||w|| among minimisers of ||Y - Phi w||: w = Phi^+ Y (SVD with numpy's default cutoff)."""
    Phi, Y = np.asarray(Phi, dtype=float), np.asarray(Y, dtype=float)
    if Phi.ndim != 2 or Y.ndim not in (1, 2) or Y.shape[0] != Phi.shape[0]:
        raise ValueError(f"Phi must be (n, p) and Y (n,) or (n, k) with the same n, got {Phi.shape} and {Y.shape}")
    if not (np.all(np.isfinite(Phi)) and np.all(np.isfinite(Y))):
        raise ValueError("Phi and Y must be finite (no NaN or inf)")
    return np.linalg.lstsq(Phi, Y, rcond=None)[0]


_NEG_TOL = 1e-8  # relative negative round-off of a PSD matrix's eigenvalues clipped to 0, not rejected


def effective_dimensionality(eigvals: np.ndarray, alpha: float) -> float:
    """N_eff = sum_i lam_i / (lam_i + alpha) for the eigenvalues of a PSD matrix; alpha > 0.

    ``eigvals`` must be finite and >= 0; round-off negatives of a PSD matrix's eigenvalues (down to
    ``-1e-8 * max |eigvals|``) are clipped to 0.
    """
    lam = np.asarray(eigvals, float)
    if not np.all(np.isfinite(lam)):
        raise ValueError(f"eigvals must be finite, got {lam[~np.isfinite(lam)][0]}")
    if lam.size and lam.min() < -_NEG_TOL * np.abs(lam).max():
        raise ValueError(f"eigvals must be >= 0 (eigenvalues of a PSD matrix), got {lam.min()}")
    if not (np.isfinite(alpha) and alpha > 0):
        raise ValueError(f"alpha must be finite and > 0, got {alpha}")
    lam = np.maximum(lam, 0.0)
    return float(np.sum(lam / (lam + alpha)))


def random_features_double_descent(X: np.ndarray, Y: np.ndarray, X_test: np.ndarray, Y_test: np.ndarray,
                                   p_grid, seed: int = 0, neff_alpha_rel: float = 1e-3) -> dict[str, np.ndarray]:
    """Test error of min-norm least squares on the first p of max(p_grid) nested random features, per p.

    For p <= n the fit is ``lstsq`` on Phi; for p > n it is the equivalent kernel form
    w = Phi^T (Phi Phi^T)^+ Y, with the Gram matrices accumulated over the nested feature blocks (one pass
    over the features for the whole grid). Both give Phi^+ Y.

    Args:
        X, Y: training inputs (n, d) and targets (n, k) (e.g. centred one-hot).
        X_test, Y_test: held-out inputs and targets.
        p_grid: strictly increasing feature counts.
        seed: seed of the feature weights.
        neff_alpha_rel: N_eff uses alpha = neff_alpha_rel * tr(H) / min(n, p), H = Phi^T Phi / n.
    Returns:
        dict of arrays over p_grid: test_mse (mean over test points of the squared error summed over
        targets), test_err (argmax classification error), train_mse, weight_norm, n_eff.
    """
    X, X_test = np.asarray(X, float), np.asarray(X_test, float)
    Y, Y_test = np.asarray(Y, float).reshape(len(X), -1), np.asarray(Y_test, float).reshape(len(X_test), -1)
    p_grid = [int(p) for p in p_grid]
    if any(p < 1 for p in p_grid) or any(b <= a for a, b in zip(p_grid, p_grid[1:])):
        raise ValueError(f"p_grid must be strictly increasing feature counts >= 1, got {p_grid}")
    n = X.shape[0]
    W = draw_feature_weights(X.shape[1], p_grid[-1], np.random.default_rng(seed))
    R, R_test = np.maximum(X @ W, 0.0), np.maximum(X_test @ W, 0.0)  # unscaled features
    gram, cross, done = np.zeros((n, n)), np.zeros((len(X_test), n)), 0
    keys = ("test_mse", "test_err", "train_mse", "weight_norm", "n_eff")
    out: dict[str, list[float]] = {k: [] for k in keys}
    for p in p_grid:
        gram += R[:, done:p] @ R[:, done:p].T  # sum over the new feature block
        cross += R_test[:, done:p] @ R[:, done:p].T
        done = p
        if p <= n:  # SVD path; at p = n the Gram matrix is too ill-conditioned to invert accurately
            Phi = R[:, :p] / np.sqrt(p)
            w = min_norm_least_squares(Phi, Y)
            fit, pred, norm2 = Phi @ w, (R_test[:, :p] / np.sqrt(p)) @ w, float(np.sum(w**2))
            lam = np.linalg.eigvalsh(Phi.T @ Phi / n)
        else:
            e, V = np.linalg.eigh(gram / p)  # Phi Phi^T = V diag(e) V^T
            keep = e > e.max() * max(n, p) * np.finfo(float).eps
            dual = V[:, keep] @ ((V[:, keep].T @ Y) / e[keep, None])  # (Phi Phi^T)^+ Y
            fit, pred = (gram / p) @ dual, (cross / p) @ dual
            norm2 = float(np.sum(dual * fit))
            lam = np.maximum(e, 0.0) / n
        out["test_mse"].append(np.mean(np.sum((pred - Y_test) ** 2, 1)))
        out["test_err"].append(np.mean(np.argmax(pred, 1) != np.argmax(Y_test, 1)))
        out["train_mse"].append(np.mean(np.sum((fit - Y) ** 2, 1)))
        out["weight_norm"].append(np.sqrt(max(norm2, 0.0)))
        out["n_eff"].append(effective_dimensionality(lam, neff_alpha_rel * lam.sum() / min(n, p)))
    return {k: np.asarray(v) for k, v in out.items()}

"""Order-dependent polynomial regression: a flexible hypothesis space with a soft preference for low orders.

Wilson (2025, arXiv 2503.02113, Fig. 1a-c): f(x) = sum_{j=0}^{J} w_j phi_j(x) with a high order J, fitted by

    minimise  sum_i (y_i - f(x_i))^2 + alpha * sum_j gamma^j w_j^2,        gamma > 1,

whose solution is w = (Phi^T Phi + alpha Gamma)^{-1} Phi^T y with Gamma = diag(gamma^j). Special cases:
``gamma = 1`` is ordinary ridge regression on the basis; ``alpha -> 0`` with n <= J + 1 distinct points is
the interpolant of minimum sum_j gamma^j w_j^2 (``alpha = 0`` computes it directly).
"""

from __future__ import annotations

import numpy as np
from numpy.polynomial import chebyshev, legendre, polynomial
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

BASES = {"legendre": legendre.legvander, "chebyshev": chebyshev.chebvander, "monomial": polynomial.polyvander}


def polynomial_features(x: np.ndarray, degree: int, basis: str = "legendre",
                        domain: tuple[float, float] = (-1.0, 1.0)) -> np.ndarray:
    """Design matrix Phi[i, j] = phi_j(t_i), j = 0..degree, with t the affine map of ``domain`` onto [-1, 1].

    Args:
        x: inputs, shape (n,).
        degree: highest order J >= 0.
        basis: ``legendre`` (default; well conditioned on [-1, 1]), ``chebyshev`` or ``monomial``.
        domain: the interval mapped onto [-1, 1].
    Returns:
        array of shape (n, degree + 1).
    """
    if int(degree) != degree or degree < 0:
        raise ValueError(f"degree must be an integer >= 0, got {degree}")
    if basis not in BASES:
        raise ValueError(f"basis must be one of {sorted(BASES)}, got {basis!r}")
    lo, hi = domain
    if not hi > lo:
        raise ValueError(f"domain must be (low, high) with high > low, got {domain}")
    t = (2 * np.asarray(x, dtype=float) - (lo + hi)) / (hi - lo)
    return BASES[basis](t, int(degree))


def order_dependent_ridge_weights(phi: np.ndarray, y: np.ndarray, alpha: float, gamma: float) -> np.ndarray:
    """Closed form w = (Phi^T Phi + alpha Gamma)^{-1} Phi^T y, Gamma = diag(gamma^j), computed stably.

    With v = Gamma^{1/2} w and Psi = Phi Gamma^{-1/2} the problem is ordinary ridge in v; with the SVD
    Psi = U S V^T, v = V diag(s / (s^2 + alpha)) U^T y. ``alpha = 0`` gives the minimum-Gamma-norm least
    squares solution (pseudo-inverse). ``y`` may be (n,) or (n, k).
    """
    orders = np.arange(phi.shape[1])
    scale = gamma ** (-orders / 2.0)  # Gamma^{-1/2}
    u, s, vt = np.linalg.svd(phi * scale, full_matrices=False)
    if alpha > 0:
        filt = s / (s**2 + alpha)
    else:  # pseudo-inverse with numpy's default cutoff
        keep = s > s.max() * max(phi.shape) * np.finfo(float).eps
        filt = np.where(keep, 1.0 / np.where(keep, s, 1.0), 0.0)
    coef_v = vt.T @ (filt[:, None] * (u.T @ y.reshape(len(y), -1)))
    w = scale[:, None] * coef_v
    return w.reshape((phi.shape[1],) + y.shape[1:])


class OrderDependentPolyRegressor(RegressorMixin, BaseEstimator):
    """Polynomial regression of order ``degree`` with penalty ``alpha * sum_j gamma^j w_j^2`` (scikit-learn API).

    Args:
        degree: highest polynomial order J (default 150).
        gamma: order-dependence of the penalty, >= 1; 1 gives ordinary ridge (default 1.5).
        alpha: penalty strength, >= 0; 0 gives the minimum-penalty least-squares fit, which interpolates
            when n <= degree + 1 (default 1e-8).
        basis: ``legendre`` (default), ``chebyshev`` or ``monomial`` (ill-conditioned at high order).
        domain: input interval mapped onto [-1, 1] (default (-1, 1)).

    Attributes (after ``fit``):
        coef_: weights w_j, shape (degree + 1,) or (degree + 1, n_targets).
        n_features_in_: always 1.
        penalty_: sum_j gamma^j w_j^2 of the fitted weights (per target).
    """

    def __init__(self, degree: int = 150, gamma: float = 1.5, alpha: float = 1e-8, basis: str = "legendre",
                 domain: tuple[float, float] = (-1.0, 1.0)):
        self.degree = degree
        self.gamma = gamma
        self.alpha = alpha
        self.basis = basis
        self.domain = domain

    def _check_params(self) -> None:
        if isinstance(self.degree, bool) or int(self.degree) != self.degree or self.degree < 0:
            raise ValueError(f"degree must be an integer >= 0, got {self.degree!r}")
        if not np.isfinite(self.gamma) or self.gamma < 1:
            raise ValueError(f"gamma must be >= 1 (gamma = 1 is ordinary ridge), got {self.gamma!r}")
        if not np.isfinite(self.alpha) or self.alpha < 0:
            raise ValueError(f"alpha must be finite and >= 0, got {self.alpha!r}")
        if self.basis not in BASES:
            raise ValueError(f"basis must be one of {sorted(BASES)}, got {self.basis!r}")

    def _design(self, X: np.ndarray) -> np.ndarray:
        return polynomial_features(X[:, 0], self.degree, self.basis, tuple(self.domain))

    def fit(self, X, y):
        """Fit on X of shape (n, 1) and y of shape (n,) or (n, k); returns self."""
        self._check_params()
        X, y = validate_data(self, X, y, multi_output=True, y_numeric=True, dtype=float)
        if X.shape[1] != 1:
            raise ValueError(f"X must have exactly one feature (a scalar input), got {X.shape[1]}")
        self.coef_ = order_dependent_ridge_weights(self._design(X), y, float(self.alpha), float(self.gamma))
        weights = self.gamma ** np.arange(self.degree + 1, dtype=float)
        self.penalty_ = np.tensordot(weights, self.coef_**2, axes=(0, 0))
        return self

    def predict(self, X) -> np.ndarray:
        """Predictions f(x), shape (n,) or (n, k)."""
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, reset=False, dtype=float)
        return self._design(X) @ self.coef_

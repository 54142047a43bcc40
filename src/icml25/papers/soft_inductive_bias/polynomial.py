"""Order-dependent polynomial regression: a flexible hypothesis space with a soft preference for low orders.

Wilson (2025, arXiv 2503.02113, Fig. 1a-c): f(x) = sum_{j=0}^{J} w_j phi_j(x) with a high order J, fitted by

    minimise  sum_i (y_i - f(x_i))^2 + alpha * sum_j gamma^j w_j^2,        gamma > 1,

whose solution is w = (Phi^T Phi + alpha Gamma)^{-1} Phi^T y with Gamma = diag(gamma^j). Special cases:
``gamma = 1`` is ordinary ridge regression on the basis; ``alpha -> 0`` with n <= J + 1 distinct points is
the interpolant of minimum sum_j gamma^j w_j^2 (``alpha = 0`` computes it directly).

The paper's inputs are scalars. For X with p > 1 columns the estimator fits the additive model
f(x) = w_0 + sum_{f=1}^{p} sum_{j=1}^{J} w_{f,j} phi_j(x_f) with the same order-dependent penalty
gamma^j on every order-j term (w_0 has order 0); with p = 1 it is exactly the model above.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
from numpy.polynomial import chebyshev, legendre, polynomial
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from icml25.common.checks import check_fields

BASES = {"legendre": legendre.legvander, "chebyshev": chebyshev.chebvander, "monomial": polynomial.polyvander}


@dataclass(frozen=True)
class SoftPolyConfig:
    """Settings of the soft-bias polynomial of Fig. 1a-c (the :class:`OrderDependentPolyRegressor` the demo fits).

    The defaults are the demonstration's (the paper's gamma and alpha were not found); the estimator's own
    defaults differ (``gamma=1.5``). ``OrderDependentPolyRegressor(**vars(cfg))`` builds the model.
    """

    degree: int = 150
    """Order J of the polynomial (the paper's "150th-order polynomial", Fig. 1a-c); at most 10^4 (dense
    n x (J + 1) designs)."""
    gamma: float = 1.05
    """Order dependence of the penalty alpha sum_j gamma^j w_j^2, >= 1 (1 is ordinary ridge); the largest of
    {1.5, 1.2, 1.1, 1.05} able to interpolate n = 100 grid points."""
    alpha: float = 1e-8
    """Penalty strength, >= 0 (near-interpolating; alpha = 2 sigma^2 is the paper's Gaussian-likelihood form)."""

    def __post_init__(self) -> None:
        check_fields(self, integer=("degree",), finite=("gamma", "alpha"), nonnegative=("degree", "alpha"),
                     at_least={"gamma": 1.0}, at_most={"degree": 10**4})


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
    if isinstance(degree, bool) or not isinstance(degree, numbers.Real) or not np.isfinite(degree) \
            or int(degree) != degree or degree < 0:
        raise ValueError(f"degree must be an integer >= 0, got {degree!r}")
    if basis not in BASES:
        raise ValueError(f"basis must be one of {sorted(BASES)}, got {basis!r}")
    lo, hi = _check_domain(domain)
    x = np.asarray(x, dtype=float)
    if x.ndim != 1:
        raise ValueError(f"x must be 1-D (n,), got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("x contains NaN or infinite values")
    t = (2 * x - (lo + hi)) / (hi - lo)
    return BASES[basis](t, int(degree))


def _check_domain(domain) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in domain)
    except (TypeError, ValueError):
        raise ValueError(f"domain must be a pair (low, high) of numbers, got {domain!r}") from None
    if not (np.isfinite(lo) and np.isfinite(hi) and hi > lo):
        raise ValueError(f"domain must be (low, high) with finite high > low, got {domain!r}")
    return lo, hi


def order_dependent_ridge_weights(phi: np.ndarray, y: np.ndarray, alpha: float, gamma: float,
                                  orders: np.ndarray | None = None) -> np.ndarray:
    """Closed form w = (Phi^T Phi + alpha Gamma)^{-1} Phi^T y, Gamma = diag(gamma^j), computed stably.

    With v = Gamma^{1/2} w and Psi = Phi Gamma^{-1/2} the problem is ordinary ridge in v; with the SVD
    Psi = U S V^T, v = V diag(s / (s^2 + alpha)) U^T y. ``alpha = 0`` gives the minimum-Gamma-norm least
    squares solution (pseudo-inverse). ``y`` may be (n,) or (n, k). ``orders`` gives the order j of each
    column of ``phi`` (default 0, 1, ..., the columns of :func:`polynomial_features`).
    """
    phi, y = np.asarray(phi, dtype=float), np.asarray(y, dtype=float)
    if phi.ndim != 2 or y.ndim not in (1, 2) or y.shape[0] != phi.shape[0]:
        raise ValueError(f"phi must be (n, m) and y (n,) or (n, k), got {phi.shape} and {y.shape}")
    if not (np.all(np.isfinite(phi)) and np.all(np.isfinite(y))):
        raise ValueError("phi and y must be finite (no NaN or inf)")
    if not (np.isfinite(alpha) and alpha >= 0 and np.isfinite(gamma) and gamma > 0):
        raise ValueError(f"alpha must be finite and >= 0 and gamma finite and > 0, got {alpha!r}, {gamma!r}")
    orders = np.arange(phi.shape[1]) if orders is None else np.asarray(orders, dtype=float)
    if orders.shape != (phi.shape[1],):
        raise ValueError(f"orders must give one order per column of phi ({phi.shape[1]}), got shape {orders.shape}")
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

    ``X`` is (n, 1) for the paper's scalar inputs; with p > 1 columns the model is additive over the
    columns (see the module docstring), so ``coef_`` holds ``w_0`` followed by the orders 1..J of each
    column in turn.

    Args:
        degree: highest polynomial order J (default 150).
        gamma: order-dependence of the penalty, >= 1; 1 gives ordinary ridge (default 1.5).
        alpha: penalty strength, >= 0; 0 gives the minimum-penalty least-squares fit, which interpolates
            when n <= degree + 1 (default 1e-8).
        basis: ``legendre`` (default), ``chebyshev`` or ``monomial`` (ill-conditioned at high order).
        domain: input interval mapped onto [-1, 1] (default (-1, 1)).

    Attributes (after ``fit``):
        coef_: weights w_j, shape (1 + p * degree,) or (1 + p * degree, n_targets) (``degree + 1`` rows for p = 1).
        orders_: the order j of each row of ``coef_``.
        n_features_in_: p, the number of input columns (1 in the paper).
        penalty_: sum_j gamma^j w_j^2 of the fitted weights (per target).
    """

    def __init__(self, degree: int = 150, gamma: float = 1.5, alpha: float = 1e-8, basis: str = "legendre",
                 domain: tuple[float, float] = (-1.0, 1.0)):
        self.degree = degree
        self.gamma = gamma
        self.alpha = alpha
        self.basis = basis
        self.domain = domain

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    def _check_params(self) -> None:
        def number(v) -> bool:
            return not isinstance(v, bool) and isinstance(v, numbers.Real) and bool(np.isfinite(v))

        if not number(self.degree) or int(self.degree) != self.degree or self.degree < 0:
            raise ValueError(f"degree must be an integer >= 0, got {self.degree!r}")
        if not number(self.gamma) or self.gamma < 1:
            raise ValueError(f"gamma must be >= 1 (gamma = 1 is ordinary ridge), got {self.gamma!r}")
        if not number(self.alpha) or self.alpha < 0:
            raise ValueError(f"alpha must be finite and >= 0, got {self.alpha!r}")
        if self.basis not in BASES:
            raise ValueError(f"basis must be one of {sorted(BASES)}, got {self.basis!r}")
        _check_domain(self.domain)

    def _design(self, X: np.ndarray) -> np.ndarray:
        """[phi_0..J(x_1), phi_1..J(x_2), ..., phi_1..J(x_p)]: one shared order-0 column."""
        blocks = [polynomial_features(X[:, f], int(self.degree), self.basis, tuple(self.domain))
                  for f in range(X.shape[1])]
        return np.hstack([blocks[0]] + [b[:, 1:] for b in blocks[1:]]) if len(blocks) > 1 else blocks[0]

    def _orders(self, p: int) -> np.ndarray:
        J = int(self.degree)
        return np.concatenate([np.arange(J + 1, dtype=float)] + [np.arange(1, J + 1, dtype=float)] * (p - 1))

    def fit(self, X, y):
        """Fit on X of shape (n, p) (p = 1 in the paper) and y of shape (n,) or (n, k); returns self."""
        self._check_params()
        X, y = validate_data(self, X, y, multi_output=True, y_numeric=True, dtype=float)
        self.orders_ = self._orders(X.shape[1])
        self.coef_ = order_dependent_ridge_weights(self._design(X), y, float(self.alpha), float(self.gamma),
                                                   self.orders_)
        weights = self.gamma ** self.orders_
        self.penalty_ = np.tensordot(weights, self.coef_**2, axes=(0, 0))
        return self

    def predict(self, X) -> np.ndarray:
        """Predictions f(x), shape (n,) or (n, k)."""
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, reset=False, dtype=float)
        return self._design(X) @ self.coef_

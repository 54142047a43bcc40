"""Sphere samplers, the two-layer ReLU NTK, RKHS targets, the critical radius and kernel GD.

Yang (ICML 2025, OpenReview fPOkujQBVb; arXiv 2411.02904 with Ping Li) compares an
over-parameterised two-layer ReLU network trained by early-stopped gradient descent
with early-stopped kernel gradient descent (Raskutti, Wainwright & Yu, JMLR 2014)
using the network's Neural Tangent Kernel. Everything here is float64 NumPy.

* :func:`sample_sphere` draws covariates on S^{d-1}: uniform, a von Mises-Fisher
  mixture or a spherical cap (the non-uniform distributions stress the paper's
  "distribution-free" claim).
* :func:`ntk_relu` is the closed-form NTK of ``f(W,x) = m^{-1/2} sum_r a_r ReLU(w_r.x)``
  with only W trained: ``K(x,x') = u (pi - arccos u) / (2 pi)``, ``u = x.x'``.
* :func:`make_rkhs_target` builds ``f* = sum_k alpha_k K(., z_k)`` with a given RKHS norm.
* :func:`critical_radius` solves ``R_K(eps) <= eps^2 / (const * sigma)`` with the
  kernel complexity ``R_K(eps) = sqrt(1/n sum_j min(lambda_j, eps^2))``.
* :func:`data_dependent_stopping_time` is the paper's stopping rule (its Eq. 8).
* :class:`KernelGD` is kernel GD ``c <- c - (eta/n)(K_n c - y)`` in closed spectral form.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

SPHERE_TOL = 1e-6
"""Largest allowed | ||x|| - 1 | for a point to count as lying on the unit sphere."""

DISTRIBUTIONS = ("uniform", "vmf_mixture", "cap")


def _rng(rng: np.random.Generator | int | None) -> np.random.Generator:
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


def check_sphere(X: np.ndarray, name: str = "X", d: int | None = None) -> np.ndarray:
    """Return ``X`` as a float64 (n, d) array, raising ValueError unless every row has unit norm."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] < 2:
        raise ValueError(f"{name} must be a non-empty 2-D array of shape (n, d) with d >= 2, got shape {X.shape} "
                         f"(n_features = {X.shape[-1] if X.ndim else 0})")
    if d is not None and X.shape[1] != d:
        raise ValueError(f"{name} has {X.shape[1]} features but {d} were expected")
    if not np.all(np.isfinite(X)):
        raise ValueError(f"{name} contains NaN or infinite values")
    dev = np.abs(np.linalg.norm(X, axis=1) - 1.0)
    if dev.max() > SPHERE_TOL:
        i = int(dev.argmax())
        raise ValueError(f"{name} must lie on the unit sphere: row {i} has norm {np.linalg.norm(X[i]):.6g} "
                         f"(normalise with X / np.linalg.norm(X, axis=1, keepdims=True))")
    return X


def project_to_sphere(X: np.ndarray, name: str = "X") -> np.ndarray:
    """Each row divided by its Euclidean norm, ``x / ||x||``; a zero row raises ``ValueError``."""
    X = np.asarray(X, dtype=np.float64)
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    if np.any(norms == 0):
        i = int(np.flatnonzero(norms[:, 0] == 0)[0])
        raise ValueError(f"{name} row {i} is zero and has no direction on the sphere")
    return X / norms


_NO_Y = object()


def sphere_input(estimator: BaseEstimator, X, y=_NO_Y):
    """``validate_data`` for the sphere estimators (``fit`` passes y, ``predict`` does not),
    then the optional projection and the sphere check."""
    if y is _NO_Y:
        X = validate_data(estimator, X, dtype=np.float64, reset=False)
    else:
        X, y = validate_data(estimator, X, y, dtype=np.float64, y_numeric=True)
    if X.shape[1] < 2:
        raise ValueError(f"X must have d >= 2 columns (points on S^(d-1)), got n_features = {X.shape[1]}")
    if estimator.project_to_sphere:
        X = project_to_sphere(X)
    X = check_sphere(X, "X")
    return X if y is _NO_Y else (X, y)


def default_vmf_centers(d: int) -> np.ndarray:
    """Three fixed unit mean directions: e1, e2, e3 (d >= 3), or angles 0, 2pi/3, 4pi/3 (d = 2)."""
    if d == 2:
        ang = np.array([0.0, 2 * np.pi / 3, 4 * np.pi / 3])
        return np.stack([np.cos(ang), np.sin(ang)], axis=1)
    return np.eye(d)[:3]


def _orthogonal_unit(mu: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k uniform unit vectors orthogonal to the unit vector ``mu`` (shape (k, d))."""
    v = rng.standard_normal((k, mu.size))
    v -= np.outer(v @ mu, mu)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def sample_vmf(n: int, mu: np.ndarray, kappa: float, rng: np.random.Generator) -> np.ndarray:
    """n draws from von Mises-Fisher(mu, kappa) on S^{d-1} (Wood 1994 rejection sampler for t = x.mu)."""
    d = mu.size
    b = (d - 1) / (2 * kappa + math.sqrt(4 * kappa**2 + (d - 1) ** 2))
    x0 = (1 - b) / (1 + b)
    c = kappa * x0 + (d - 1) * math.log(1 - x0**2)
    t = np.empty(n)
    filled = 0
    while filled < n:
        k = 2 * (n - filled) + 8
        z = rng.beta((d - 1) / 2, (d - 1) / 2, size=k)
        w = (1 - (1 + b) * z) / (1 - (1 - b) * z)
        u = rng.uniform(size=k)
        ok = kappa * w + (d - 1) * np.log(1 - x0 * w) - c >= np.log(u)
        take = w[ok][: n - filled]
        t[filled:filled + take.size] = take
        filled += take.size
    v = _orthogonal_unit(mu, n, rng)
    return t[:, None] * mu[None, :] + np.sqrt(np.clip(1 - t**2, 0, None))[:, None] * v


def sample_cap(n: int, mu: np.ndarray, angle: float, rng: np.random.Generator) -> np.ndarray:
    """n uniform draws from the cap {x : angle(x, mu) <= angle}; the polar angle has density ~ sin^{d-2}."""
    d = mu.size
    top = math.sin(min(angle, math.pi / 2))
    phi = np.empty(n)
    filled = 0
    while filled < n:
        k = 2 * (n - filled) + 8
        p = rng.uniform(0, angle, size=k)
        ok = rng.uniform(size=k) <= (np.sin(p) / top) ** (d - 2) if d > 2 else np.ones(k, bool)
        take = p[ok][: n - filled]
        phi[filled:filled + take.size] = take
        filled += take.size
    v = _orthogonal_unit(mu, n, rng)  # on the circle (d = 2) this is a random side of mu
    return np.cos(phi)[:, None] * mu[None, :] + np.sin(phi)[:, None] * v


def sample_sphere(n: int, d: int, dist: str = "uniform", rng: np.random.Generator | int | None = None, *,
                  kappa: float = 5.0, centers: np.ndarray | None = None,
                  cap_angle_deg: float = 60.0) -> np.ndarray:
    """Draw n points on the unit sphere S^{d-1} in R^d.

    Args:
        n: number of points (>= 1).
        d: ambient dimension (>= 2).
        dist: ``"uniform"``; ``"vmf_mixture"`` (equal-weight mixture of von Mises-Fisher
            components with concentration ``kappa`` around ``centers``, by default
            :func:`default_vmf_centers`); or ``"cap"`` (uniform on the spherical cap of
            half-angle ``cap_angle_deg`` around ``centers[0]``, by default e_d).
        rng: a Generator or a seed.

    Returns:
        Array of shape (n, d), rows of unit norm. The distribution depends only on the
        arguments other than ``rng``, so train and test sets drawn with different
        generators come from the same P.
    """
    if int(n) != n or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    if int(d) != d or d < 2:
        raise ValueError(f"d must be an integer >= 2, got {d!r}")
    n, d = int(n), int(d)
    g = _rng(rng)
    if dist == "uniform":
        X = g.standard_normal((n, d))
        return X / np.linalg.norm(X, axis=1, keepdims=True)
    if dist == "vmf_mixture":
        if not kappa > 0:
            raise ValueError(f"kappa must be > 0, got {kappa!r}")
        mus = default_vmf_centers(d) if centers is None else check_sphere(centers, "centers", d)
        comp = g.integers(len(mus), size=n)
        X = np.empty((n, d))
        for k, mu in enumerate(mus):
            idx = np.flatnonzero(comp == k)
            if idx.size:
                X[idx] = sample_vmf(idx.size, mu, kappa, g)
        return X / np.linalg.norm(X, axis=1, keepdims=True)
    if dist == "cap":
        if not 0 < cap_angle_deg <= 180:
            raise ValueError(f"cap_angle_deg must be in (0, 180], got {cap_angle_deg!r}")
        mu = np.eye(d)[-1] if centers is None else check_sphere(centers, "centers", d)[0]
        X = sample_cap(n, mu, math.radians(cap_angle_deg), g)
        return X / np.linalg.norm(X, axis=1, keepdims=True)
    raise ValueError(f"dist must be one of {DISTRIBUTIONS}, got {dist!r}")


def ntk_relu(X: np.ndarray, Z: np.ndarray | None = None) -> np.ndarray:
    """Closed-form NTK of the two-layer ReLU net (first layer trained) on the sphere.

    ``K(x, z) = E_w[(x.z) 1{w.x > 0} 1{w.z > 0}] = u (pi - arccos u) / (2 pi)`` with
    ``u = x.z`` and w ~ N(0, kappa^2 I) (independent of kappa).

    Args:
        X: (n, d) points on the unit sphere.
        Z: (k, d) points on the unit sphere; ``None`` means ``Z = X``.

    Returns:
        Kernel matrix of shape (n, k); ``K(x, x) = 1/2``.
    """
    X = check_sphere(X, "X")
    Z = X if Z is None else check_sphere(Z, "Z", X.shape[1])
    u = np.clip(X @ Z.T, -1.0, 1.0)
    return u * (np.pi - np.arccos(u)) / (2 * np.pi)


def make_rkhs_target(d: int, n_centers: int = 20, rkhs_norm: float = 1.0,
                     rng: np.random.Generator | int | None = None) -> Callable[[np.ndarray], np.ndarray]:
    """A target ``f* = sum_k alpha_k K(., z_k)`` in the NTK's RKHS with ``||f*||_H = rkhs_norm``.

    Centres z_k are uniform on S^{d-1}; alpha ~ N(0, I) is rescaled so that
    ``alpha^T K_z alpha = rkhs_norm^2``. The returned callable maps (n, d) -> (n,) and
    carries ``centers``, ``alpha`` and ``rkhs_norm`` as attributes.
    """
    if int(n_centers) != n_centers or n_centers < 1:
        raise ValueError(f"n_centers must be a positive integer, got {n_centers!r}")
    if not rkhs_norm >= 0:
        raise ValueError(f"rkhs_norm must be >= 0, got {rkhs_norm!r}")
    g = _rng(rng)
    Z = sample_sphere(int(n_centers), d, "uniform", g)
    alpha = g.standard_normal(int(n_centers))
    alpha *= rkhs_norm / math.sqrt(float(alpha @ ntk_relu(Z) @ alpha))

    def f_star(X: np.ndarray) -> np.ndarray:
        return ntk_relu(X, Z) @ alpha

    f_star.centers, f_star.alpha, f_star.rkhs_norm = Z, alpha, float(rkhs_norm)  # type: ignore[attr-defined]
    return f_star


def kernel_complexity(eps: float | np.ndarray, eigvals: np.ndarray, n: int) -> np.ndarray:
    """``R_K(eps) = sqrt(1/n sum_j min(lambda_j, eps^2))`` (vectorised over eps)."""
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    lam = np.clip(np.asarray(eigvals, dtype=np.float64), 0, None)
    e2 = np.asarray(eps, dtype=np.float64)[..., None] ** 2
    return np.sqrt(np.minimum(lam, e2).sum(axis=-1) / n)


def critical_radius(eigvals: np.ndarray, n: int, sigma: float, const: float = 1.0, tol: float = 1e-12) -> float:
    """Critical radius: the smallest eps > 0 with ``R_K(eps) <= eps^2 / (const * sigma)``.

    ``R_K(eps) / eps^2`` is strictly decreasing, so the set of feasible eps is a half-line
    and bisection finds its left end. The ICML paper defines the critical radius with
    ``const = 1`` (the default); Raskutti, Wainwright & Yu (2014) use ``const = 2e``.

    Args:
        eigvals: eigenvalues of the kernel integral operator; the empirical version uses
            the eigenvalues of ``K_n / n`` (negative round-off is clipped to 0).
        n: sample size.
        sigma: noise level (> 0).
        const: the constant in the fixed-point inequality (> 0).

    Returns:
        eps_n (a float > 0).
    """
    if int(n) != n or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    if not (sigma > 0 and const > 0):
        raise ValueError(f"sigma and const must be > 0, got sigma={sigma!r}, const={const!r}")
    lam = np.asarray(eigvals, dtype=np.float64)
    if lam.ndim != 1 or lam.size == 0 or not np.all(np.isfinite(lam)):
        raise ValueError("eigvals must be a non-empty 1-D array of finite values")

    def feasible(e: float) -> bool:
        return float(kernel_complexity(e, lam, n)) <= e**2 / (const * sigma)

    lo, hi = 0.0, 1.0
    while not feasible(hi):
        lo, hi = hi, 2 * hi
    while hi - lo > tol * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if feasible(mid) else (mid, hi)
    return hi


def theory_stopping_time(eps: float, eta: float, stop_const: float = 1.0) -> int:
    """``T_hat = ceil(stop_const / (eta * eps^2))`` (at least 1); eps, eta and stop_const must be > 0."""
    for name, value in (("eps", eps), ("eta", eta), ("stop_const", stop_const)):
        if not 0 < value < np.inf:
            raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    return max(1, int(math.ceil(stop_const / (eta * eps**2))))


def data_dependent_stopping_time(eigvals: np.ndarray, n: int, sigma: float, eta: float,
                                 max_steps: int = 10**9) -> int:
    """The paper's data-dependent stopping time (its Eq. 8, after Raskutti, Wainwright & Yu 2014).

    With ``eta_t = eta * t``: ``T_hat = min{t >= 1 : R_K(1 / sqrt(eta_t)) > 1 / (sigma * eta_t)} - 1``, where
    ``R_K`` is :func:`kernel_complexity` of the empirical eigenvalues. ``sigma * eta_t * R_K(1/sqrt(eta_t))``
    increases with t, so the first crossing is found by doubling and bisection. Equivalently (up to ties)
    ``T_hat = floor(1 / (eta * eps_hat^2))`` with ``eps_hat = critical_radius(eigvals, n, sigma, const=1)``.

    Args:
        eigvals: eigenvalues of ``K_n / n`` (the Gram matrix divided by n).
        n: sample size.
        sigma: noise level (> 0).
        eta: constant step size (> 0).
        max_steps: raise if no crossing happens up to this t.

    Returns:
        T_hat (an int >= 0; 0 when the rule already stops at t = 1).
    """
    for name, value in (("sigma", sigma), ("eta", eta)):
        if not 0 < value < np.inf:
            raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    lam = np.asarray(eigvals, dtype=np.float64)
    if lam.ndim != 1 or lam.size == 0 or not np.all(np.isfinite(lam)):
        raise ValueError("eigvals must be a non-empty 1-D array of finite values")

    def crossed(t: int) -> bool:
        eta_t = eta * t
        return float(kernel_complexity(1.0 / math.sqrt(eta_t), lam, n)) > 1.0 / (sigma * eta_t)

    if crossed(1):
        return 0
    lo, hi = 1, 2
    while not crossed(hi):
        if hi > max_steps:
            raise ValueError(f"the stopping rule did not cross by t = {max_steps}")
        lo, hi = hi, 2 * hi
    while hi - lo > 1:  # invariant: crossed(hi), not crossed(lo)
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if crossed(mid) else (mid, hi)
    return hi - 1


def _spectral_filter(lam: np.ndarray, eta: float, n: int, t: np.ndarray) -> np.ndarray:
    """``g_t(lam) = (1 - (1 - eta lam/n)^t) / lam`` (-> eta t / n as lam -> 0); shape (len(t), len(lam))."""
    lam = np.clip(lam, 0, None)
    t = np.asarray(t, dtype=np.float64)[:, None]
    q = eta * lam / n
    num = -np.expm1(t * np.log1p(-q))  # 1 - (1-q)^t, stable for small q
    small = lam < 1e-14
    safe = np.where(small, 1.0, lam)
    return np.where(small, eta * t / n, num / safe)


class KernelGD(RegressorMixin, BaseEstimator):
    """Early-stopped kernel gradient descent with the two-layer ReLU NTK, in closed spectral form.

    Iteration (Raskutti, Wainwright & Yu 2014): ``f_t = sum_i c_i(t) K(., x_i)``,
    ``c(t+1) = c(t) - (eta/n) (K_n c(t) - y)``, c(0) = 0. With ``K_n = V Lambda V^T``,
    ``c(t) = V diag(g_t(lambda)) V^T y`` with ``g_t(l) = (1 - (1 - eta l/n)^t) / l``, so
    fitted values are ``V [I - (I - eta Lambda/n)^t] V^T y``.

    Args:
        eta: step size (stable for eta < 2 / lambda_max(K_n/n); lambda_max <= 1/2 here).
        n_steps: default t used by :meth:`predict`; ``None`` means the theory stopping
            time ``stop_const / (eta eps_hat^2)``.
        sigma: noise level used by the critical radius.
        radius_const: ``const`` of :func:`critical_radius`.
        stop_const: constant c in ``T_hat = c / (eta eps_hat^2)``.
        kernel: kernel function ``k(X, Z) -> (n, k)``; default :func:`ntk_relu`.
        project_to_sphere: divide every row of X by its norm before use (the method and its
            theory assume covariates on the unit sphere; without it, rows off the sphere raise).

    Attributes (after fit): ``X_fit_``, ``eigvals_`` (of K_n, descending), ``eigvecs_``,
    ``Vty_``, ``epsilon_hat_`` (critical radius from the eigenvalues of K_n/n),
    ``stopping_time_``, ``n_features_in_``.
    """

    def __init__(self, eta: float = 1.0, n_steps: int | None = None, sigma: float = 1.0,
                 radius_const: float = 1.0, stop_const: float = 1.0, kernel: Callable | None = None,
                 project_to_sphere: bool = False):
        self.eta = eta
        self.n_steps = n_steps
        self.sigma = sigma
        self.radius_const = radius_const
        self.stop_const = stop_const
        self.kernel = kernel
        self.project_to_sphere = project_to_sphere

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # the theory's targets live in the NTK's RKHS on the sphere, not the checks' linear ones
        tags.regressor_tags.poor_score = True
        return tags

    def _k(self, X: np.ndarray, Z: np.ndarray) -> np.ndarray:
        return (self.kernel or ntk_relu)(X, Z)

    def fit(self, X: np.ndarray, y: np.ndarray) -> "KernelGD":
        if not self.eta > 0:
            raise ValueError(f"eta must be > 0, got {self.eta!r}")
        if self.n_steps is not None and (int(self.n_steps) != self.n_steps or self.n_steps < 0):
            raise ValueError(f"n_steps must be a non-negative integer or None, got {self.n_steps!r}")
        X, y = sphere_input(self, X, y)
        lam, V = np.linalg.eigh(self._k(X, X))
        order = np.argsort(lam)[::-1]
        self.X_fit_, self.eigvals_, self.eigvecs_ = X, lam[order], V[:, order]
        self.Vty_ = self.eigvecs_.T @ y
        n = X.shape[0]
        self.epsilon_hat_ = critical_radius(self.eigvals_ / n, n, self.sigma, self.radius_const)
        self.stopping_time_ = theory_stopping_time(self.epsilon_hat_, self.eta, self.stop_const)
        return self

    def coef_path(self, ts) -> np.ndarray:
        """Coefficients c(t) for each t in ``ts``: shape (len(ts), n)."""
        check_is_fitted(self, "eigvals_")
        ts = np.atleast_1d(np.asarray(ts))
        if not np.all(np.isfinite(ts)) or np.any(ts < 0):
            raise ValueError("times must be finite and >= 0")
        g = _spectral_filter(self.eigvals_, self.eta, self.X_fit_.shape[0], ts)
        return (g * self.Vty_[None, :]) @ self.eigvecs_.T

    def predict_path(self, X: np.ndarray, ts) -> np.ndarray:
        """Predictions ``f_t(X)`` for each t in ``ts``: shape (len(ts), len(X))."""
        check_is_fitted(self, "eigvals_")
        X = sphere_input(self, X)
        return self.coef_path(ts) @ self._k(self.X_fit_, X)

    def predict(self, X: np.ndarray, t: int | None = None) -> np.ndarray:
        """``f_t(X)``; t defaults to ``n_steps``, else the theory stopping time."""
        check_is_fitted(self, "eigvals_")
        if t is None:
            t = self.stopping_time_ if self.n_steps is None else self.n_steps
        return self.predict_path(X, [t])[0]

    def risk_path(self, X_test: np.ndarray, f_test: np.ndarray, ts) -> np.ndarray:
        """Test risk ``mean_x (f_t(x) - f*(x))^2`` for each t in ``ts`` (an L2(P) estimate)."""
        f_test = np.asarray(f_test, dtype=np.float64)
        return np.mean((self.predict_path(X_test, ts) - f_test[None, :]) ** 2, axis=1)


def kernel_gd_iterative(K: np.ndarray, y: np.ndarray, eta: float, n_steps: int) -> np.ndarray:
    """Reference loop ``c <- c - (eta/n)(K c - y)`` run ``n_steps`` times from c = 0 (for tests)."""
    n = len(y)
    c = np.zeros(n)
    for _ in range(int(n_steps)):
        c -= (eta / n) * (K @ c - y)
    return c

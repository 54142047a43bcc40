"""The perspective relaxation solved by FISTA with the exact prox, and its Fenchel dual bound.

Problem (P) (the paper's Eq. 3): ``min_beta sum_i f(x_i^T beta, y_i) + lam2 ||beta||_2^2``
s.t. ``||beta||_0 <= k``, ``||beta||_inf <= M`` (no intercept), with
``f(t, y) = (y - t)^2`` (``loss="squared"``) or ``log(1 + exp(-y t))``, ``y in {-1, +1}``
(``loss="logistic"``).

Its perspective relaxation is the composite problem ``min_beta F(beta) + G(beta)``,
``F(beta) = sum_i f(x_i^T beta, y_i)`` smooth with ``L_F = 2 sigma_max(X)^2`` (squared) or
``sigma_max(X)^2 / 4`` (logistic), and G the implicit perspective regulariser of
:mod:`.perspective`. FISTA (step ``1/L_F``) with the exact prox solves it; with
``restart=True`` the momentum is reset whenever the objective goes up (function-value
restart, O'Donoghue & Candes 2015; the paper's exact restart rule was not retrieved).

Every iteration also gives a valid lower bound by Fenchel duality: with
``w = grad_t sum_i f(t_i, y_i)`` at the extrapolated point ``t = X y_t``,

    LB_t = - sum_i f*(w_i; y_i) - G*(-X^T w)  <=  relaxation optimum  <=  optimum of (P),

``f*(w; y) = w y + w^2/4`` (squared) and ``q log q + (1-q) log(1-q)``, ``q = -w y in [0, 1]``
(logistic). A branch-and-bound node can stop as soon as ``LB_t`` passes the incumbent.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit, xlogy

from icml25.common.checks import check_ranges
from icml25.papers.sparse_glm_bnb.perspective import (
    check_perspective_args,
    conjugate_kernel,
    coordinate_masks,
    perspective_z,
    prox_kernel,
    value_kernel,
)

LOSSES = ("squared", "logistic")


@dataclass
class FISTAConfig:
    """The relaxation solver's settings (:func:`solve_perspective_relaxation`), defaults its own.

    An experiment nests it as ``solver`` (``--set solver.tol=1e-8``); pass it on with
    ``solve_perspective_relaxation(X, y, k, lam2, M, **dataclasses.asdict(cfg))``. Whether FISTA restarts is
    not a setting here: the relaxation experiment runs both variants.
    """

    tol: float = 1e-6
    """Relative duality gap at which FISTA stops: ``primal - lower_bound <= tol * |primal|``."""
    max_iter: int = 20000
    """FISTA iteration cap."""

    def __post_init__(self) -> None:
        # named as the settings are typed (``--set solver.tol=...``); beyond 1e7 iterations a solve takes days
        check_ranges("solver", vars(self), finite=("tol",), positive=("tol", "max_iter"), integer=("max_iter",),
                     at_most={"max_iter": 10**7})


def validate_problem(X, y, k, lam2, M, loss: str = "squared") -> tuple[np.ndarray, np.ndarray]:
    """Check the data and hyperparameters of (P); return float arrays ``X`` (n, p) and ``y`` (n,).

    Raises:
        ValueError: with a message naming the argument, for a bad ``loss``, non-finite or
            mis-shaped ``X``/``y``, ``k`` not an integer in ``1..p``, ``M <= 0``,
            ``lam2 < 0``, or logistic labels outside {-1, +1}.
    """
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array (n_samples, n_features), got shape {X.shape}")
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(f"y must be a 1-D array with {X.shape[0]} entries (one per row of X), got shape {y.shape}")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"X must have at least one sample and one feature, got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("X contains NaN or infinite entries")
    if not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or infinite entries")
    p = X.shape[1]
    if isinstance(k, bool) or not float(k).is_integer():
        raise ValueError(f"k must be an integer, got {k!r}")
    if not 1 <= k <= p:
        raise ValueError(f"k must satisfy 1 <= k <= p, the number of features (n_features = {p}), got k={k}")
    if not np.isfinite(M) or M <= 0:
        raise ValueError(f"M must be a positive finite bound on |beta_j|, got M={M!r}")
    if not np.isfinite(lam2) or lam2 < 0:
        raise ValueError(f"lam2 must be a non-negative finite ridge weight, got lam2={lam2!r}")
    if loss == "logistic" and not np.all(np.isin(y, (-1.0, 1.0))):
        bad = np.unique(y[~np.isin(y, (-1.0, 1.0))])[:5]
        raise ValueError(f"loss='logistic' needs labels y in {{-1, +1}}; found {bad.tolist()}")
    return X, y


def check_solver_args(p: int, max_iter, tol, beta0=None, time_limit=None) -> None:
    """Raise ``ValueError`` unless ``max_iter`` is a positive integer, ``tol >= 0`` (finite),
    ``beta0`` is ``None`` or a finite array of shape (p,), and ``time_limit`` is ``None`` or >= 0."""
    if isinstance(max_iter, bool) or not float(max_iter).is_integer() or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}")
    if not (0 <= tol < np.inf):
        raise ValueError(f"tol must be a finite relative gap >= 0, got {tol!r}")
    if beta0 is not None:
        b = np.asarray(beta0, dtype=float)
        if b.shape != (p,) or not np.all(np.isfinite(b)):
            raise ValueError(f"beta0 must be a finite array of shape ({p},), got shape {b.shape}")
    if time_limit is not None and not time_limit >= 0:
        raise ValueError(f"time_limit must be >= 0 seconds or None, got {time_limit!r}")


def loss_value(t: np.ndarray, y: np.ndarray, loss: str) -> float:
    """``sum_i f(t_i, y_i)``."""
    if loss == "squared":
        return float(np.sum((y - t) ** 2))
    return float(np.sum(np.logaddexp(0.0, -y * t)))


def loss_gradient(t: np.ndarray, y: np.ndarray, loss: str) -> np.ndarray:
    """``w_i = d f(t_i, y_i) / d t_i``."""
    if loss == "squared":
        return 2.0 * (t - y)
    return -y * expit(-y * t)


def loss_conjugate(w: np.ndarray, y: np.ndarray, loss: str) -> float:
    """``sum_i f*(w_i; y_i)`` (``inf`` outside the domain)."""
    if loss == "squared":
        return float(np.sum(w * y + 0.25 * w * w))
    q = -w * y
    if np.any(q < -1e-12) or np.any(q > 1 + 1e-12):
        return np.inf
    q = np.clip(q, 0.0, 1.0)
    return float(np.sum(xlogy(q, q) + xlogy(1 - q, 1 - q)))


def lipschitz_constant(X: np.ndarray, loss: str) -> float:
    """``L_F``: ``2 sigma_max(X)^2`` for squared loss, ``sigma_max(X)^2/4`` for logistic (plus 1e-6 slack)."""
    if X.size == 0:
        sigma2 = 0.0
    else:
        from scipy.linalg import eigvalsh

        gram = X.T @ X if X.shape[1] <= X.shape[0] else X @ X.T  # the smaller Gram matrix
        m = gram.shape[0]
        sigma2 = float(eigvalsh(gram, subset_by_index=[m - 1, m - 1])[0])
    factor = 2.0 if loss == "squared" else 0.25
    return max(factor * sigma2 * (1 + 1e-6), 1e-12)


@dataclass
class RelaxationResult:
    """Output of :func:`solve_perspective_relaxation`.

    Attributes:
        beta: best primal point found, shape (p,) (zero on ``fixed_zero``).
        lower_bound: the largest Fenchel dual bound seen (valid at every iteration).
        primal_value: ``F(beta) + G(beta)``, an upper bound on the relaxation optimum.
        history: per-iteration arrays ``primal``, ``lower_bound`` (``LB_t``, not the running
            maximum), ``time`` (seconds since start) and the list ``restarts`` of iterations
            where the momentum was reset.
        z: water-filling z of ``beta`` (the relaxed indicator variables), shape (p,).
        n_iter: iterations run.
        converged: ``primal_value - lower_bound <= tol * |primal_value|``.
        stopped_by_cutoff: the lower bound passed ``cutoff`` (node can be pruned).
    """

    beta: np.ndarray
    lower_bound: float
    primal_value: float
    history: dict = field(repr=False)
    z: np.ndarray = field(repr=False)
    n_iter: int = 0
    converged: bool = False
    stopped_by_cutoff: bool = False

    @property
    def gap(self) -> float:
        """Relative duality gap ``(primal - lower) / max(|primal|, 1e-12)``."""
        return (self.primal_value - self.lower_bound) / max(abs(self.primal_value), 1e-12)


def solve_perspective_relaxation(X, y, k, lam2, M, loss: str = "squared", fixed_zero: Iterable[int] = (),
                                 fixed_one: Iterable[int] = (), restart: bool = True, max_iter: int = 20000,
                                 tol: float = 1e-6, *, beta0: np.ndarray | None = None, cutoff: float | None = None,
                                 lipschitz: float | None = None, time_limit: float | None = None,
                                 early_branch: bool = False, validate: bool = True) -> RelaxationResult:
    """Solve the perspective relaxation of (P) at a BnB node with (restarted) FISTA.

    Args:
        X: design, shape (n, p). y: responses (n,), in {-1, +1} for ``loss="logistic"``.
        k, lam2, M: sparsity budget, ridge weight, box bound of (P).
        loss: ``"squared"`` or ``"logistic"``.
        fixed_zero, fixed_one: indices with z_j fixed to 0 / 1 (a BnB node).
        restart: reset the momentum when the objective increases; ``False`` is plain FISTA.
        max_iter: iteration cap.
        tol: stop when ``primal - lower_bound <= tol * |primal|`` (relative duality gap).
        beta0: warm start, shape (p,).
        cutoff: stop as soon as the lower bound reaches it (node pruning).
        lipschitz: ``L_F`` if known (a BnB reuses the root's; sub-matrices have smaller L).
        time_limit: seconds.
        early_branch: with ``cutoff``, also stop once the primal value is below ``cutoff``
            and the relative gap is below ``100 tol``: the node cannot be pruned, so a BnB
            branches at once.
        validate: check the inputs (the BnB skips it on its own nodes).

    Returns:
        :class:`RelaxationResult`.
    """
    if validate:
        X, y = validate_problem(X, y, k, lam2, M, loss)
        check_solver_args(X.shape[1], max_iter, tol, beta0, time_limit)
    else:
        check_perspective_args(k, M, lam2)
    n, p = X.shape
    zero, one = coordinate_masks(p, fixed_zero, fixed_one)
    if one.sum() > k:
        raise ValueError(f"fixed_one has {int(one.sum())} coordinates, more than k={k}")
    active = np.flatnonzero(~zero)
    Xa = X[:, active]
    one_a = one[active]
    k_free = k - int(one.sum())
    L = lipschitz if lipschitz is not None else lipschitz_constant(Xa, loss)
    step = 1.0 / L

    beta = np.zeros(active.size) if beta0 is None else np.asarray(beta0, dtype=float)[active].copy()
    Xb = Xa @ beta
    yv, Xy, t = beta.copy(), Xb.copy(), 1.0
    best_primal, best_beta, best_lb = np.inf, beta.copy(), -np.inf
    prev_primal = np.inf
    hist_primal, hist_lb, hist_time, restarts = [], [], [], []
    start = time.perf_counter()
    converged = by_cutoff = False
    it = 0
    for it in range(1, max_iter + 1):
        w = loss_gradient(Xy, y, loss)
        g = Xa.T @ w
        # Fenchel dual bound at w: -sum f*(w) - G*(-X^T w)
        lb = -loss_conjugate(w, y, loss) - conjugate_kernel(-g, one_a, k_free, M, lam2)
        best_lb = max(best_lb, lb)
        beta_new = prox_kernel(yv - step * g, step, one_a, k_free, M, lam2)
        Xb_new = Xa @ beta_new
        primal = loss_value(Xb_new, y, loss) + value_kernel(np.abs(beta_new), one_a, k_free, M, lam2)
        if primal < best_primal:
            best_primal, best_beta = primal, beta_new
        hist_primal.append(primal)
        hist_lb.append(lb)
        hist_time.append(time.perf_counter() - start)
        if best_primal - best_lb <= tol * max(abs(best_primal), 1e-12):
            converged = True
            break
        if cutoff is not None and best_lb >= cutoff:
            by_cutoff = True
            break
        if early_branch and cutoff is not None and best_primal < cutoff and \
                best_primal - best_lb <= 100 * tol * max(abs(best_primal), 1e-12):
            break
        if time_limit is not None and hist_time[-1] > time_limit:
            break
        if restart and primal > prev_primal:
            # function-value restart: drop the momentum
            restarts.append(it)
            t, yv, Xy = 1.0, beta_new, Xb_new
        else:
            t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
            mom = (t - 1.0) / t_new
            yv = beta_new + mom * (beta_new - beta)
            Xy = Xb_new + mom * (Xb_new - Xb)
            t = t_new
        beta, Xb, prev_primal = beta_new, Xb_new, primal

    full = np.zeros(p)
    full[active] = best_beta
    z = np.zeros(p)
    z[active] = perspective_z(best_beta, k, M, fixed_one=np.flatnonzero(one_a))
    history = {"primal": np.array(hist_primal), "lower_bound": np.array(hist_lb), "time": np.array(hist_time),
               "restarts": restarts}
    return RelaxationResult(full, float(best_lb), float(best_primal), history, z, it, converged, by_cutoff)


def fenchel_lower_bound(X, y, beta, k, lam2, M, loss: str = "squared", fixed_zero: Iterable[int] = (),
                        fixed_one: Iterable[int] = ()) -> float:
    """The Fenchel dual bound ``-sum_i f*(w_i) - G*(-X^T w)`` at ``w = grad F(beta)``.

    Valid for any ``beta``: a lower bound on the node's relaxation optimum, tight when
    ``beta`` solves it. A BnB leaf (all features decided) uses it at the exact refit.
    """
    zero, one = coordinate_masks(X.shape[1], fixed_zero, fixed_one)
    w = loss_gradient(X @ beta, y, loss)
    keep = ~zero
    return -loss_conjugate(w, y, loss) - conjugate_kernel(-(X[:, keep].T @ w), one[keep], k - int(one.sum()), M,
                                                           lam2)


def problem_objective(X: np.ndarray, y: np.ndarray, beta: np.ndarray, lam2: float, loss: str) -> float:
    """Objective of (P) at ``beta``: ``sum_i f(x_i^T beta, y_i) + lam2 ||beta||^2`` (constraints not checked)."""
    return loss_value(X @ beta, y, loss) + lam2 * float(beta @ beta)

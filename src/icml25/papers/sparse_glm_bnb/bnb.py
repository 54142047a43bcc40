"""Branch-and-bound certification of optimal k-sparse GLMs, and brute-force enumeration.

A node fixes some z_j to 0 (feature out) or 1 (feature in); its dual bound is the
Fenchel bound of the perspective relaxation solved by restarted FISTA
(:func:`solve_perspective_relaxation`), which stops as soon as the bound passes the
incumbent (node pruned). Nodes are explored best-first (lowest bound). The incumbent
comes from the relaxed solution: keep the fixed-in features plus the largest free
|beta_j|, then refit (P) exactly on that support. Branching is on the most fractional
free z_j. The solve is certified when ``(UB - LB) / UB <= gap_tol``.
"""

from __future__ import annotations

import heapq
import itertools
import time
from dataclasses import dataclass

import numpy as np
from scipy.optimize import lsq_linear, minimize
from scipy.special import expit
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.metrics import accuracy_score
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from icml25.common.checks import check_ranges
from icml25.papers.sparse_glm_bnb.relaxation import (
    fenchel_lower_bound,
    lipschitz_constant,
    loss_gradient,
    loss_value,
    problem_objective,
    solve_perspective_relaxation,
    validate_problem,
)

PROGRESS_AFTER_S = 3.0
"""Show the live gap display once a solve has run this long (or from the start when verbose)."""


@dataclass
class BnBConfig:
    """The branch-and-bound's solver settings (those of :class:`SparseGLMBnB` that do not define problem (P)).

    The problem itself (``k``, ``lam2``, ``M``, ``loss``) belongs to the instance and is passed to
    :meth:`estimator`. An experiment nests it as ``bnb`` (``--set bnb.gap_tol=1e-5``). The defaults are the
    estimator's, except ``time_limit``: a finite budget (the estimator's default is no limit).
    """

    gap_tol: float = 1e-4
    """Certify when ``(upper_bound - lower_bound) / upper_bound <= gap_tol`` (node relaxations are solved to
    ``gap_tol / 10``)."""
    time_limit: float = 120.0
    """Seconds per solve; past it the fit stops uncertified with valid bounds."""
    max_iter: int = 5000
    """FISTA iterations per node."""

    def __post_init__(self) -> None:
        # named as the settings are typed (``--set bnb.gap_tol=...``); beyond 1e7 iterations a node takes days
        check_ranges("bnb", vars(self), finite=("gap_tol", "time_limit"),
                     positive=("gap_tol", "time_limit", "max_iter"), integer=("max_iter",),
                     at_most={"max_iter": 10**7})

    def estimator(self, k: int | None, lam2: float, M: float, loss: str = "squared") -> SparseGLMBnB:
        """A :class:`SparseGLMBnB` for problem (P) with ``k``, ``lam2``, ``M``, ``loss`` and these settings."""
        return SparseGLMBnB(k, lam2, M, loss, gap_tol=self.gap_tol, time_limit=self.time_limit,
                            max_iter=self.max_iter)


def fit_on_support(X: np.ndarray, y: np.ndarray, support, lam2: float, M: float,
                   loss: str = "squared") -> tuple[float, np.ndarray]:
    """Solve (P) restricted to ``support``: a small box-constrained convex problem.

    Squared loss: closed-form ridge, or bounded least squares (BVLS) on the stacked
    system ``[X_S; sqrt(lam2) I] b ~ [y; 0]`` when the box binds. Logistic: L-BFGS-B with
    the box as bounds, from zero, to a tight gradient tolerance.

    Returns:
        ``(objective, beta)`` with ``beta`` of shape (p,).
    """
    S = np.asarray(sorted(support), dtype=int)
    beta = np.zeros(X.shape[1])
    if S.size == 0:
        return problem_objective(X, y, beta, lam2, loss), beta
    XS = X[:, S]
    if loss == "squared":
        b = np.linalg.solve(XS.T @ XS + lam2 * np.eye(S.size), XS.T @ y)
        if np.max(np.abs(b)) > M:
            A = np.vstack([XS, np.sqrt(lam2) * np.eye(S.size)])
            rhs = np.concatenate([y, np.zeros(S.size)])
            b = lsq_linear(A, rhs, bounds=(-M, M), method="bvls", tol=1e-12).x
    else:
        b, _ = logistic_ridge_newton(XS[None], y, lam2)
        b = b[0]
        if np.max(np.abs(b)) > M:
            b = _logistic_box_lbfgsb(XS, y, lam2, M, np.clip(b, -M, M))
    beta[S] = b
    return problem_objective(X, y, beta, lam2, loss), beta


def logistic_ridge_newton(XS: np.ndarray, y: np.ndarray, lam2: float, max_iter: int = 50,
                          tol: float = 1e-10) -> tuple[np.ndarray, np.ndarray]:
    """Batched damped Newton for ``min_b sum_i log(1 + exp(-y_i x_i^T b)) + lam2 ||b||^2`` (no box).

    Args:
        XS: stacked designs, shape (N, n, s) (one small problem per support).
        y: labels in {-1, +1}, shape (n,).

    Returns:
        ``(coef, objective)`` of shapes (N, s) and (N,).
    """
    N, n, s = XS.shape
    b = np.zeros((N, s))
    eye = np.eye(s)

    def objective(b):
        return np.logaddexp(0.0, -y * np.einsum("bns,bs->bn", XS, b)).sum(axis=1) + lam2 * (b * b).sum(axis=1)

    obj = objective(b)
    for _ in range(max_iter):
        t = np.einsum("bns,bs->bn", XS, b)
        sig = expit(-y * t)
        grad = np.einsum("bns,bn->bs", XS, -y * sig) + 2 * lam2 * b
        hess = np.einsum("bns,bn,bnr->bsr", XS, sig * (1 - sig), XS) + 2 * lam2 * eye
        step = np.linalg.solve(hess + 1e-12 * eye, grad[..., None])[..., 0]
        if np.max(np.abs(grad)) <= tol * max(1.0, float(np.max(np.abs(obj)))):
            break
        scale = np.ones(N)
        for _ in range(30):  # backtracking, per problem
            trial = b - scale[:, None] * step
            new = objective(trial)
            bad = new > obj + 1e-14 * np.abs(obj)
            if not bad.any():
                break
            scale = np.where(bad, 0.5 * scale, scale)
        b, obj = trial, np.minimum(new, obj)
    return b, objective(b)


def _logistic_box_lbfgsb(XS: np.ndarray, y: np.ndarray, lam2: float, M: float, b0: np.ndarray) -> np.ndarray:
    def fun(b):
        t = XS @ b
        return loss_value(t, y, "logistic") + lam2 * b @ b, XS.T @ loss_gradient(t, y, "logistic") + 2 * lam2 * b

    return minimize(fun, b0, jac=True, method="L-BFGS-B", bounds=[(-M, M)] * b0.size,
                    options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 5000}).x


def brute_force_best_subset(X, y, k, lam2, M, loss: str = "squared") -> tuple[float, np.ndarray]:
    """Solve (P) by enumerating all C(p, k) supports of size k (an exact oracle for small p).

    Every support of size <= k is contained in one of size k, and adding features never
    raises the restricted optimum, so size-k supports suffice. For the squared loss the
    unconstrained ridge fits are batched; supports whose fit leaves the box are re-solved.

    Returns:
        ``(optimal objective, beta)``.
    """
    X, y = validate_problem(X, y, k, lam2, M, loss)
    p = X.shape[1]
    supports = np.array(list(itertools.combinations(range(p), k)), dtype=int)
    if loss == "squared":
        gram, xty, yty = X.T @ X, X.T @ y, float(y @ y)
        A = gram[supports[:, :, None], supports[:, None, :]] + lam2 * np.eye(k)
        b = xty[supports]
        coef = np.linalg.solve(A, b[..., None])[..., 0]
        values = yty - np.einsum("ij,ij->i", b, coef)  # ||y - X b||^2 + lam2 ||b||^2 at the ridge optimum
        inside = np.max(np.abs(coef), axis=1) <= M
        values = np.where(inside, values, np.inf)
        for i in np.flatnonzero(~inside):
            values[i] = fit_on_support(X, y, supports[i], lam2, M, loss)[0]
    else:
        values = np.empty(len(supports))
        for lo in range(0, len(supports), 512):  # batches of supports through batched Newton
            chunk = supports[lo:lo + 512]
            coef, values[lo:lo + 512] = logistic_ridge_newton(np.moveaxis(X[:, chunk], 1, 0), y, lam2)
            for i in np.flatnonzero(np.max(np.abs(coef), axis=1) > M):
                values[lo + i] = fit_on_support(X, y, chunk[i], lam2, M, loss)[0]
    best = int(np.argmin(values))
    return fit_on_support(X, y, supports[best], lam2, M, loss)


class SparseGLMBnB(RegressorMixin, BaseEstimator):
    """Certifiably optimal k-sparse GLM by branch-and-bound on the perspective relaxation.

    Solves ``min sum_i f(x_i^T beta, y_i) + lam2 ||beta||^2`` s.t. ``||beta||_0 <= k``,
    ``||beta||_inf <= M`` (problem (P), the paper's Eq. 3; no intercept: centre or add a constant column
    yourself). :meth:`BnBConfig.estimator` builds one from the solver settings of a :class:`BnBConfig`.
    A scikit-learn regressor: ``fit(X, y)``, ``predict(X)``, ``score(X, y)`` (R^2 for the
    squared loss, accuracy of the {-1, +1} labels for the logistic loss).

    Args:
        k: maximum number of nonzero coefficients (1 <= k <= p); ``None`` takes
            ``max(1, p // 10)``, the default of scikit-learn's ``OrthogonalMatchingPursuit``.
        lam2: ridge weight (>= 0).
        M: box bound on every coefficient (> 0); choose it above the largest coefficient
            you expect (the paper's experiments use twice the largest ridge coefficient).
        loss: ``"squared"`` (regression) or ``"logistic"`` (labels in {-1, +1}).
        gap_tol: stop when ``(upper_bound - lower_bound) / upper_bound <= gap_tol``.
        time_limit: seconds; ``None`` for no limit (then ``certified_`` may be False).
        verbose: show the live gap display from the start (otherwise only after a few seconds).
        max_iter: FISTA iterations per node.

    Attributes (after ``fit``):
        k_: the sparsity budget used.
        coef_: best k-sparse coefficients found, shape (p,).
        support_: sorted indices of the nonzero coefficients.
        upper_bound_: objective of ``coef_``.
        lower_bound_: certified lower bound on the optimum.
        gap_: ``(upper_bound_ - lower_bound_) / max(upper_bound_, 1e-12)``.
        n_nodes_: relaxations solved.
        n_iter_: the most FISTA iterations one node used (each node is capped at ``max_iter``;
            a leaf, solved exactly by a refit, counts as one).
        certified_: ``gap_ <= gap_tol``.
        solve_time_: seconds.
    """

    def __init__(self, k: int | None = None, lam2: float = 1.0, M: float = 10.0, loss: str = "squared",
                 gap_tol: float = 1e-4, time_limit: float | None = None, verbose: bool = False,
                 max_iter: int = 5000):
        self.k = k
        self.lam2 = lam2
        self.M = M
        self.loss = loss
        self.gap_tol = gap_tol
        self.time_limit = time_limit
        self.verbose = verbose
        self.max_iter = max_iter

    def fit(self, X, y) -> "SparseGLMBnB":
        """Solve (P) on ``X`` (n, p) and ``y`` (n,) (labels in {-1, +1} for the logistic loss)."""
        if not 0 < self.gap_tol < np.inf:
            raise ValueError(f"gap_tol must be positive, got {self.gap_tol!r}")
        if self.time_limit is not None and not self.time_limit >= 0:
            raise ValueError(f"time_limit must be >= 0 seconds or None, got {self.time_limit!r}")
        if isinstance(self.max_iter, bool) or not float(self.max_iter).is_integer() or self.max_iter < 1:
            raise ValueError(f"max_iter must be a positive integer, got {self.max_iter!r}")
        # validate_problem checks finiteness (and everything else of (P)) with its own messages
        X, y = validate_data(self, X, y, validate_separately=(
            {"dtype": np.float64, "ensure_all_finite": False},
            {"dtype": np.float64, "ensure_2d": False, "ensure_all_finite": False}))
        y = column_or_1d(y, warn=True)
        k = max(1, X.shape[1] // 10) if self.k is None else self.k
        X, y = validate_problem(X, y, k, self.lam2, self.M, self.loss)
        k = int(k)
        lam2, M, loss = float(self.lam2), float(self.M), self.loss
        p = X.shape[1]
        start = time.perf_counter()
        lipschitz = lipschitz_constant(X, loss)
        node_tol = self.gap_tol / 10  # relaxations solved 10x tighter than the certificate
        refits: dict[frozenset, tuple[float, np.ndarray]] = {}
        best = {"ub": np.inf, "beta": np.zeros(p)}

        def try_support(support: frozenset) -> None:
            if support in refits:
                return
            value, beta = fit_on_support(X, y, support, lam2, M, loss)
            refits[support] = (value, beta)
            if value < best["ub"]:
                best["ub"], best["beta"] = value, beta

        def prune_level() -> float:
            return best["ub"] - self.gap_tol * max(abs(best["ub"]), 1e-12)

        counter = itertools.count()
        heap = [(-np.inf, next(counter), frozenset(), frozenset(), None)]
        closed_lb = np.inf  # min bound over leaves that were closed (pruned, exact, or integral)
        n_nodes = 0
        most_iter = 1  # a leaf's exact refit counts as one iteration
        display = _GapDisplay(self.verbose)
        try:
            while heap:
                parent_lb, _, zero, one, beta0 = heapq.heappop(heap)
                if parent_lb >= prune_level():
                    closed_lb = min(closed_lb, parent_lb)
                    break  # best-first: every open node is pruned too
                if self.time_limit is not None and time.perf_counter() - start > self.time_limit:
                    heapq.heappush(heap, (parent_lb, next(counter), zero, one, beta0))
                    break
                free = np.array([j for j in range(p) if j not in zero and j not in one], dtype=int)
                k_free = k - len(one)
                if k_free == 0 or free.size <= k_free:
                    # leaf: the relaxation is the restricted convex problem; bound it at its exact refit
                    support = frozenset(one) | frozenset(free.tolist() if free.size <= k_free else ())
                    try_support(support)
                    lb = max(parent_lb, fenchel_lower_bound(X, y, refits[support][1], k, lam2, M, loss,
                                                            sorted(zero), sorted(one)))
                    n_nodes += 1
                    closed_lb = min(closed_lb, lb)
                    continue
                cutoff = prune_level() if np.isfinite(best["ub"]) else None
                res = solve_perspective_relaxation(X, y, k, lam2, M, loss, fixed_zero=sorted(zero),
                                                   fixed_one=sorted(one), tol=node_tol, max_iter=self.max_iter,
                                                   beta0=beta0, cutoff=cutoff, lipschitz=lipschitz,
                                                   early_branch=True, validate=False)
                n_nodes += 1
                most_iter = max(most_iter, res.n_iter)
                lb = max(res.lower_bound, parent_lb)  # a child's feasible set lies in its parent's
                order = free[np.argsort(-np.abs(res.beta[free]), kind="stable")]
                try_support(frozenset(one) | frozenset(order[:k_free].tolist()))
                display.update(n_nodes, best["ub"], min(lb, closed_lb, min((h[0] for h in heap), default=np.inf)),
                               time.perf_counter() - start)
                if lb >= prune_level():
                    closed_lb = min(closed_lb, lb)  # pruned
                    continue
                frac = np.minimum(res.z[free], 1.0 - res.z[free])
                if res.converged and frac.max() <= 1e-9:  # integral relaxed solution: its support was refitted
                    closed_lb = min(closed_lb, lb)
                    continue
                j = int(free[np.argmax(frac)])
                beta_out = res.beta.copy()
                beta_out[j] = 0.0
                heapq.heappush(heap, (lb, next(counter), zero | {j}, one, beta_out))
                heapq.heappush(heap, (lb, next(counter), zero, one | {j}, res.beta))
        finally:
            display.close()
        open_lb = min((h[0] for h in heap), default=np.inf)
        self.coef_ = best["beta"]
        self.support_ = np.flatnonzero(self.coef_)
        self.upper_bound_ = float(problem_objective(X, y, self.coef_, lam2, loss))
        self.lower_bound_ = float(min(closed_lb, open_lb, self.upper_bound_))
        self.gap_ = (self.upper_bound_ - self.lower_bound_) / max(abs(self.upper_bound_), 1e-12)
        self.k_ = k
        self.n_nodes_ = n_nodes
        self.n_iter_ = most_iter
        self.certified_ = bool(self.gap_ <= self.gap_tol)
        self.solve_time_ = time.perf_counter() - start
        if self.verbose:
            display.console_print(f"SparseGLMBnB: {n_nodes} nodes, UB {self.upper_bound_:.6g}, "
                                  f"LB {self.lower_bound_:.6g}, gap {self.gap_:.2e}, "
                                  f"{'certified' if self.certified_ else 'NOT certified'} in {self.solve_time_:.1f}s")
        return self

    def linear_predictor(self, X) -> np.ndarray:
        """Linear predictor ``X @ coef_``, shape (n,)."""
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return X @ self.coef_

    @available_if(lambda self: self.loss == "logistic")
    def decision_function(self, X) -> np.ndarray:
        """Logistic loss only: the margin ``X @ coef_`` whose sign is the predicted label, shape (n,)."""
        return self.linear_predictor(X)

    def predict(self, X) -> np.ndarray:
        """``X @ coef_`` for the squared loss; labels ``sign(X @ coef_)`` in {-1, +1} for the logistic loss."""
        t = self.linear_predictor(X)
        return t if self.loss == "squared" else np.where(t >= 0, 1.0, -1.0)

    def score(self, X, y, sample_weight=None) -> float:
        """R^2 of ``predict(X)`` for the squared loss; accuracy of the labels for the logistic loss."""
        if self.loss == "logistic":
            return float(accuracy_score(y, self.predict(X), sample_weight=sample_weight))
        return super().score(X, y, sample_weight=sample_weight)


class _GapDisplay:
    """A rich live line (nodes, bounds, gap), started when verbose or once the solve runs long."""

    def __init__(self, verbose: bool):
        self.verbose = verbose
        self.progress = None
        self.task = None
        self.last = -np.inf

    def update(self, n_nodes: int, ub: float, lb: float, elapsed: float) -> None:
        if self.progress is None:
            if not (self.verbose or elapsed > PROGRESS_AFTER_S):
                return
            from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            self.progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                                     transient=not self.verbose)
            self.progress.start()
            self.task = self.progress.add_task("BnB")
        if elapsed - self.last < 0.2:
            return
        self.last = elapsed
        gap = (ub - lb) / max(abs(ub), 1e-12) if np.isfinite(ub) and np.isfinite(lb) else np.inf
        self.progress.update(self.task, description=f"BnB nodes {n_nodes}  UB {ub:.6g}  LB {lb:.6g}  gap {gap:.2e}")

    def console_print(self, text: str) -> None:
        from rich.console import Console

        Console(stderr=True).print(text)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()

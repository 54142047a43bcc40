"""Baselines: the perspective relaxation (and its prox) as an explicit SOCP through cvxpy.

This is how the relaxation is usually solved (the paper compares with MOSEK/Gurobi; we
use the open-source Clarabel). ``beta_j^2 <= t_j z_j`` is the rotated cone
``||(2 beta_j, t_j - z_j)||_2 <= t_j + z_j``. The other baseline of the paper, FISTA
without restart, is ``solve_perspective_relaxation(..., restart=False)``.

cvxpy is an optional dependency (``pip install cvxpy clarabel``); it is imported lazily.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np


def _import_cvxpy():
    try:
        import cvxpy as cp
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError("the SOCP baseline needs cvxpy and clarabel: pip install cvxpy clarabel") from exc
    return cp


def _perspective_constraints(cp, beta, k, M, fixed_zero, fixed_one):
    p = beta.shape[0]
    z = cp.Variable(p)
    t = cp.Variable(p)
    cons = [cp.SOC(t + z, cp.vstack([2 * beta, t - z]), axis=0), cp.sum(z) <= k, z >= 0, z <= 1,
            cp.abs(beta) <= M * z]
    fz, fo = list(fixed_zero), list(fixed_one)
    if fz:
        cons.append(z[fz] == 0)
    if fo:
        cons.append(z[fo] == 1)
    return z, t, cons


@dataclass
class SOCPResult:
    """Output of :func:`cvxpy_perspective_relaxation`.

    Attributes:
        value: optimal value reported by the solver.
        beta, z: optimal variables, shape (p,).
        wall_time: seconds for the whole cvxpy call (model building, compilation, solve).
        solver_time: seconds inside the conic solver, as it reports them.
        status: cvxpy status string.
    """

    value: float
    beta: np.ndarray
    z: np.ndarray
    wall_time: float
    solver_time: float
    status: str


def cvxpy_perspective_relaxation(X, y, k, lam2, M, loss: str = "squared", fixed_zero: Iterable[int] = (),
                                 fixed_one: Iterable[int] = (), solver: str = "CLARABEL",
                                 **solver_kwargs) -> SOCPResult:
    """Solve the perspective relaxation as an SOCP (exponential cones too for the logistic loss).

    ``min sum_i f(x_i^T beta, y_i) + lam2 sum_j t_j`` s.t. ``beta_j^2 <= t_j z_j``,
    ``sum z <= k``, ``0 <= z <= 1``, ``|beta_j| <= M z_j`` (and z fixed on the node's sets).
    """
    cp = _import_cvxpy()
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    start = time.perf_counter()
    beta = cp.Variable(X.shape[1])
    z, t, cons = _perspective_constraints(cp, beta, k, M, fixed_zero, fixed_one)
    if loss == "squared":
        data_fit = cp.sum_squares(y - X @ beta)
    elif loss == "logistic":
        data_fit = cp.sum(cp.logistic(-cp.multiply(y, X @ beta)))
    else:
        raise ValueError(f"loss must be 'squared' or 'logistic', got {loss!r}")
    prob = cp.Problem(cp.Minimize(data_fit + lam2 * cp.sum(t)), cons)
    prob.solve(solver=solver, **solver_kwargs)
    wall = time.perf_counter() - start
    stats = prob.solver_stats
    solver_time = float(stats.solve_time) if stats is not None and stats.solve_time is not None else np.nan
    return SOCPResult(float(prob.value), np.asarray(beta.value).ravel(), np.asarray(z.value).ravel(), wall,
                      solver_time, prob.status)


def cvxpy_perspective_prox(v, rho, k, M, lam2, fixed_zero: Iterable[int] = (), fixed_one: Iterable[int] = (),
                           solver: str = "CLARABEL", **solver_kwargs) -> np.ndarray:
    """``argmin_beta 0.5 ||beta - v||^2 + rho G(beta)`` with G written as the explicit SOCP (a test oracle)."""
    cp = _import_cvxpy()
    v = np.asarray(v, dtype=float)
    beta = cp.Variable(v.size)
    _, t, cons = _perspective_constraints(cp, beta, k, M, fixed_zero, fixed_one)
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(beta - v) + rho * lam2 * cp.sum(t)), cons)
    prob.solve(solver=solver, **solver_kwargs)
    return np.asarray(beta.value).ravel()

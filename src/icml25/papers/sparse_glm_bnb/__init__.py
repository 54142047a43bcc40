"""Certifying optimal k-sparse GLMs (Liu, Shafiee & Lodi, ICML 2025, arXiv 2502.09502).

``min_beta sum_i f(x_i^T beta, y_i) + lam2 ||beta||^2`` s.t. ``||beta||_0 <= k``,
``||beta||_inf <= M``: the perspective relaxation is solved by FISTA with an exact
O(p log p) prox of the implicit perspective regulariser and function-value restarts;
its Fenchel dual bound drives a branch-and-bound that certifies optimality.
"""

from icml25.papers.sparse_glm_bnb.baselines import SOCPResult, cvxpy_perspective_prox, cvxpy_perspective_relaxation
from icml25.papers.sparse_glm_bnb.bnb import (
    BnBConfig,
    SparseGLMBnB,
    brute_force_best_subset,
    fit_on_support,
    logistic_ridge_newton,
)
from icml25.papers.sparse_glm_bnb.data import (
    SparseRegressionData,
    breast_cancer_logistic,
    correlated_design,
    ridge_coefficients,
    synthetic_sparse_regression,
)
from icml25.papers.sparse_glm_bnb.perspective import (
    huber_conjugate_term,
    perspective_conjugate,
    perspective_prox,
    perspective_value,
    perspective_z,
)
from icml25.papers.sparse_glm_bnb.relaxation import (
    FISTAConfig,
    RelaxationResult,
    fenchel_lower_bound,
    lipschitz_constant,
    loss_conjugate,
    loss_gradient,
    loss_value,
    problem_objective,
    solve_perspective_relaxation,
    validate_problem,
)

__all__ = [
    "BnBConfig", "FISTAConfig", "RelaxationResult", "SOCPResult", "SparseGLMBnB", "SparseRegressionData",
    "breast_cancer_logistic", "brute_force_best_subset", "correlated_design", "cvxpy_perspective_prox",
    "cvxpy_perspective_relaxation", "fenchel_lower_bound", "fit_on_support", "huber_conjugate_term",
    "lipschitz_constant", "logistic_ridge_newton", "loss_conjugate", "loss_gradient", "loss_value",
    "perspective_conjugate", "perspective_prox", "perspective_value", "perspective_z", "problem_objective",
    "ridge_coefficients", "solve_perspective_relaxation", "synthetic_sparse_regression", "validate_problem",
]

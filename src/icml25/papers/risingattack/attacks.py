"""RisingAttacK: ordered top-K white-box attacks from the adversarial Jacobian's right singular vectors.

Paniagua, Savadikar & Wu, ICML 2025. The ordering constraints g(x) = D z(x) >= m of the task
(:mod:`icml25.papers.risingattack.ordering`) are condensed to K + M rows (the target chain, M top competitors and
one aggregate row). Their Jacobian A = D dz/dx (rows x n, rows << n) is the *adversarial Jacobian*
(:func:`adversarial_jacobian`). RisingAttacK is a sequential QP: at each step it linearises the constraints, and the
minimum-l2 step lies in the row space of A, i.e. it is a linear combination V_r alpha of A's right singular
vectors, with alpha from a QP with r <= rows variables (:func:`min_norm_qp`). The attack is the sum of these steps.

The baselines (QuadAttacK, C&W top-K, top-K PGD) are in :mod:`icml25.papers.risingattack.baselines`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.optimize
import torch
from torch import Tensor

from icml25.common.checks import check_fields
from icml25.papers.risingattack.ordering import (
    AGGREGATES,
    CONSTRAINT_SETS,
    check_attack_args,
    check_call,
    check_images,
    clip_box,
    condensed_constraints,
    ordered_topk_success,
    ordering_margins,
    ordering_matrices,
)

QP_SOLVERS = ("nnls", "osqp")


# ----------------------------------------------------------------------------- Jacobian
def adversarial_jacobian(model: Callable[[Tensor], Tensor], x: Tensor, D: Tensor, chunk_size: int = 32) -> Tensor:
    """A = D dz/dx for every image of a batch (rows of D contracted with the logits' Jacobian).

    Computed as M vector-Jacobian products per image with ``torch.func`` (``vmap(jacrev)``),
    in chunks of ``chunk_size`` images.

    Args:
        model: maps (B, *shape) to logits (B, C); should be in eval mode.
        x: (B, *shape) images.
        D: (M, C) shared by all images, or (B, M, C).

    Returns:
        (B, M, n) with n = prod(shape), detached from the autograd graph.
    """
    from torch.func import jacrev, vmap

    if x.dim() < 2:
        raise ValueError(f"x must be a batch (B, ...), got shape {tuple(x.shape)}")
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer)) or chunk_size < 1:
        raise ValueError(f"chunk_size must be an integer >= 1, got {chunk_size!r}")
    B = x.shape[0]
    D = D.to(x)
    if D.dim() == 2:
        D = D.unsqueeze(0).expand(B, -1, -1)
    if D.dim() != 3 or D.shape[0] != B:
        raise ValueError(f"D must have shape (M, C) or (B={B}, M, C), got {tuple(D.shape)}")

    def g(xi: Tensor, Di: Tensor) -> Tensor:
        return Di @ model(xi.unsqueeze(0)).squeeze(0)

    jac = vmap(jacrev(g), in_dims=(0, 0))
    out = [jac(x[i:i + chunk_size], D[i:i + chunk_size]) for i in range(0, B, chunk_size)]
    return torch.cat(out).reshape(B, D.shape[1], -1).detach()


# ----------------------------------------------------------------------------- the small QP
def min_norm_qp(B: np.ndarray, c: np.ndarray, solver: str = "nnls", ridge: float = 1e-10) -> np.ndarray:
    """Solve  min ||alpha||_2^2  s.t.  B alpha >= c  (B: M x p, c: M).

    ``nnls``: the Wolfe dual  min_{lam >= 0} 1/2 lam^T (B B^T + eps I) lam - c^T lam  written as a
    non-negative least-squares problem through a Cholesky factor and solved exactly by the
    Lawson-Hanson active-set method; alpha = B^T lam. ``eps = ridge * ||B||_F^2`` keeps the factor
    defined when B is rank deficient (the constraints then hold up to eps * lam).
    ``osqp``: the primal with the OSQP package (iterative, tolerance 1e-9).

    Returns:
        alpha, shape (p,).
    """
    B = np.asarray(B, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    if B.ndim != 2 or c.shape != (B.shape[0],):
        raise ValueError(f"B must be (M, p) and c (M,), got {B.shape} and {c.shape}")
    if solver not in QP_SOLVERS:
        raise ValueError(f"qp_solver must be one of {QP_SOLVERS}, got {solver!r}")
    if not (np.all(np.isfinite(B)) and np.all(np.isfinite(c))):
        raise ValueError("B and c must be finite")
    if np.all(c <= 0):  # alpha = 0 is feasible
        return np.zeros(B.shape[1])
    if solver == "osqp":
        import osqp
        import scipy.sparse as sp

        p = B.shape[1]
        prob = osqp.OSQP()
        prob.setup(P=sp.csc_matrix(2.0 * np.eye(p)), q=np.zeros(p), A=sp.csc_matrix(B), l=c,
                   u=np.full_like(c, np.inf), verbose=False, eps_abs=1e-10, eps_rel=1e-10, max_iter=200000)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = prob.solve()
        if res.x is None or not np.all(np.isfinite(res.x)):
            raise RuntimeError("OSQP failed on the RisingAttack subproblem")
        return np.asarray(res.x)
    G = B @ B.T
    eps = ridge * max(float(np.trace(G)), 1e-300)
    L = scipy.linalg.cholesky(G + eps * np.eye(G.shape[0]), lower=True)
    # 1/2 lam^T L L^T lam - c^T lam = 1/2 ||L^T lam - L^{-1} c||^2 + const
    lam, _ = scipy.optimize.nnls(L.T, scipy.linalg.solve_triangular(L, c, lower=True), maxiter=50 * G.shape[0])
    return B.T @ lam


# ----------------------------------------------------------------------------- RisingAttacK
class RisingAttack:
    """RisingAttacK: SQP in image space on the right singular vectors of the adversarial Jacobian.

    Step s (for every image not yet attacked successfully):

    1. constraints at the anchor x_s: by default the condensed set of d - 1 = K + M rows
       (:func:`condensed_constraints`: target chain, M top competitors, one aggregate of the rest);
       ``constraints="all"`` uses all C - 1 rows of :func:`ordering_matrix`. g_s are their values and
       A_s = D J(x_s) their Jacobian (:func:`adversarial_jacobian`);
    2. thin SVD A_s = U S V^T, keep the r singular values > ``rank_tol`` * S_max (r = d - 1 when A_s
       has full row rank);
    3. alpha_s = argmin ||alpha||^2  s.t.  g_s + U_r S_r alpha >= m    (:func:`min_norm_qp`);
       since V_r has orthonormal columns, V_r alpha_s is the minimum-l2 solution of the
       linearised constraints A_s delta >= m - g_s (the null-space part of delta is zero);
    4. x_{s+1} = clip(x_s + step * V_r alpha_s).

    It stops for an image once its ordered top-K holds, or after ``max_iter`` steps. With a
    linear model, ``constraints="all"`` and ``step=1`` (no clipping) one step is the exact
    minimum-l2 attack.

    Args:
        model: maps (B, *shape) to logits (B, C); put it in eval mode first.
        K: number of ordered targets.
        margin: m, in logits (0.2, QuadAttacK's released value; RisingAttacK's own is not known).
        max_iter: maximum SQP steps S.
        step: step length along the QP solution (1 = full Newton-like step).
        rank_tol: relative threshold on singular values.
        qp_solver: ``nnls`` (exact active-set on the dual; default) or ``osqp``.
        reduced: with ``constraints="all"``, keep only this many most competitive non-target rows per
            step (``None``: all C - K).
        clip: valid pixel range, or ``None`` for no clipping.
        chunk_size: images per ``vmap`` Jacobian call.
        constraints: ``"condensed"`` (K + M rows, default) or ``"all"`` (C - 1 rows).
        n_competitors: M of the condensed set; ``None`` uses M = K.
        aggregate: the condensed set's last row, ``"max"`` or ``"logsumexp"`` of the remaining logits.
    """

    def __init__(self, model: Callable[[Tensor], Tensor], K: int, margin: float = 0.2, max_iter: int = 50,
                 step: float = 1.0, rank_tol: float = 1e-6, qp_solver: str = "nnls", reduced: int | None = None,
                 clip: tuple[float, float] | None = (0.0, 1.0), chunk_size: int = 32,
                 constraints: str = "condensed", n_competitors: int | None = None, aggregate: str = "max") -> None:
        check_attack_args(K, margin, max_iter)
        if not (isinstance(step, (int, float)) and 0 < step and math.isfinite(step)):
            raise ValueError(f"step must be a positive number, got {step!r}")
        if not (0 <= rank_tol < 1):
            raise ValueError(f"rank_tol must be in [0, 1), got {rank_tol!r}")
        if qp_solver not in QP_SOLVERS:
            raise ValueError(f"qp_solver must be one of {QP_SOLVERS}, got {qp_solver!r}")
        if clip is not None and not clip[0] < clip[1]:
            raise ValueError(f"clip must be (low, high) with low < high, got {clip!r}")
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer)) or chunk_size < 1:
            raise ValueError(f"chunk_size must be an integer >= 1, got {chunk_size!r}")
        if reduced is not None and (isinstance(reduced, bool) or not isinstance(reduced, (int, np.integer))
                                    or reduced < 1):
            raise ValueError(f"reduced must be None or an integer >= 1, got {reduced!r}")
        if constraints not in CONSTRAINT_SETS:
            raise ValueError(f"constraints must be one of {CONSTRAINT_SETS}, got {constraints!r}")
        if reduced is not None and constraints != "all":
            raise ValueError("reduced applies to constraints='all'; the condensed set takes n_competitors")
        if n_competitors is not None and (isinstance(n_competitors, bool) or not isinstance(
                n_competitors, (int, np.integer)) or n_competitors < 0):
            raise ValueError(f"n_competitors must be None or an integer >= 0, got {n_competitors!r}")
        if aggregate not in AGGREGATES:
            raise ValueError(f"aggregate must be one of {AGGREGATES}, got {aggregate!r}")
        self.model, self.K, self.margin, self.max_iter, self.step = model, int(K), float(margin), int(max_iter), step
        self.rank_tol, self.qp_solver, self.reduced, self.clip, self.chunk_size = (
            rank_tol, qp_solver, reduced, clip, chunk_size)
        self.constraints, self.n_competitors, self.aggregate = constraints, n_competitors, aggregate

    def step_direction(self, x: Tensor, targets: Tensor) -> tuple[Tensor, Tensor]:
        """One SQP direction V_r alpha for each image (no step length, no clipping).

        Returns:
            delta (B, *shape) and the ranks r (B,).
        """
        with torch.no_grad():
            z = self.model(x)
        if self.constraints == "condensed":
            D, g = condensed_constraints(targets.cpu(), z.cpu(), self.n_competitors, self.aggregate)
            D, g = D.to(x), g.to(x)
        else:
            D = ordering_matrices(targets.cpu(), z.shape[1], self.reduced, z if self.reduced else None).to(x)
            g = torch.einsum("bmc,bc->bm", D, z)
        A = adversarial_jacobian(self.model, x, D, self.chunk_size)
        U, S, Vh = torch.linalg.svd(A.double(), full_matrices=False)
        keep = S > self.rank_tol * S[:, :1]                        # numerical rank r per image
        c = (self.margin - g).double().cpu().numpy()
        Us, Ss, Vs, kp = U.cpu().numpy(), S.cpu().numpy(), Vh.cpu().numpy(), keep.cpu().numpy()
        delta = np.zeros((x.shape[0], Vs.shape[2]))
        for b in range(x.shape[0]):  # small r-variable QPs; the Jacobian above is the batched hot path
            r = kp[b]
            alpha = min_norm_qp(Us[b][:, r] * Ss[b][r], c[b], self.qp_solver)
            delta[b] = alpha @ Vs[b][r]                            # delta = V_r alpha
        return torch.from_numpy(delta).to(x).reshape(x.shape), keep.sum(1)

    def __call__(self, x: Tensor, targets: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        """Attack a batch.

        Args:
            x: (B, *shape) clean images.
            targets: (B, K) ordered targets.

        Returns:
            x_adv (B, *shape) and info with ``success`` (B,) bool, ``iterations`` (B,), ``margins``
            (B, C - 1) final g = D z, and ``rank`` (B,) the last step's r.
        """
        check_images(x)
        x = x.detach()
        with torch.no_grad():
            n_classes = self.model(x[:1]).shape[1]
        t = check_call(x, targets, self.K, n_classes)
        x_adv = x.clone()
        iters = torch.zeros(x.shape[0], dtype=torch.long)
        rank = torch.zeros(x.shape[0], dtype=torch.long)
        for _ in range(self.max_iter):
            with torch.no_grad():
                active = ~ordered_topk_success(self.model(x_adv), t).cpu()
            if not active.any():
                break
            idx = active.nonzero().squeeze(1)
            delta, r = self.step_direction(x_adv[idx], t[idx])
            x_adv[idx] = clip_box(x_adv[idx] + self.step * delta, self.clip)
            iters[idx] += 1
            rank[idx] = r.cpu()
        with torch.no_grad():
            z = self.model(x_adv)
        return x_adv, {"success": ordered_topk_success(z, t).cpu(), "iterations": iters,
                       "margins": ordering_margins(z, t).cpu(), "rank": rank}


@dataclass(frozen=True)
class RisingAttackConfig:
    """RisingAttacK's settings in an experiment (the arguments of :class:`RisingAttack` it sets; :meth:`make`).

    The defaults are the reproduction's (30 SQP steps, QuadAttacK's released margin 0.2, the condensed K + M
    constraint set with M = K). In a comparison, ``margin`` and ``max_iter`` are every method's: the baselines
    take the same logit margin and the same iteration budget.
    """

    max_iter: int = 30
    """Maximum SQP steps S, in [1, 10^5] (the baselines' iteration budget too)."""
    margin: float = 0.2
    """Logit margin m of the ordering constraints, >= 0 (QuadAttacK's released 0.2; the baselines' too)."""
    step: float = 1.0
    """Step length along the QP solution, > 0 (1 = full Newton-like step)."""
    constraints: str = "condensed"
    """Constraint set: ``condensed`` (K + M rows) or ``all`` (C - 1 rows)."""
    n_competitors: int | None = None
    """M, the top non-target competitors of the condensed set, in [0, 10^4] (``None``: M = K)."""

    def __post_init__(self) -> None:
        check_fields(self, integer=("max_iter", "n_competitors"), finite=("margin", "step"),
                     positive=("max_iter", "step"), nonnegative=("margin", "n_competitors"),
                     choices={"constraints": CONSTRAINT_SETS},
                     # bounds: a job beyond these would need > ~100 GB or days
                     at_most={"max_iter": 10**5, "n_competitors": 10**4})

    def make(self, model: Callable[[Tensor], Tensor], K: int) -> RisingAttack:
        """The :class:`RisingAttack` on ``model`` for ``K`` ordered targets with these settings."""
        return RisingAttack(model, K, margin=self.margin, max_iter=self.max_iter, step=self.step,
                            constraints=self.constraints, n_competitors=self.n_competitors)

"""RisingAttacK and its baselines: ordered top-K white-box attacks.

Task (Paniagua, Savadikar & Wu, ICML 2025): given an image x, a classifier with logits
z(x) in R^C and an ordered target list T = (t_1, ..., t_K), find a small delta such that
the top-K predictions of x + delta are exactly t_1 > t_2 > ... > t_K.

The K - 1 + C - K ordering constraints are linear in the logits, g(x) = D z(x) >= m, with a
fixed 0/+1/-1 matrix D (:func:`ordering_matrix`); RisingAttacK condenses them to K + M rows
(:func:`condensed_constraints`: the target chain, M top competitors and one aggregate row).
Their Jacobian A = D dz/dx (rows x n, rows << n) is the *adversarial Jacobian*. RisingAttacK
is a sequential QP: at each step it linearises the constraints, and the minimum-l2 step lies
in the row space of A, i.e. it is a linear combination V_r alpha of A's right singular
vectors, with alpha from a QP with r <= rows variables. The attack is the sum of these steps.

Baselines: :class:`QuadAttack` (QP in the penultimate feature space, then AdamW steps
to reach the QP's features; the released settings of thomaspaniagua/quadattack),
:class:`CWTopK` (C&W-style ordered hinge + l2 penalty, Adam) and :class:`TopKPGD`
(l2-ball PGD on the same hinge).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.optimize
import torch
from torch import Tensor, nn

from icml25.common.checks import check_fields

QP_SOLVERS = ("nnls", "osqp")


# ----------------------------------------------------------------------------- constraints
def _check_targets(targets: Tensor | Sequence, n_classes: int) -> Tensor:
    """Validate targets and return them as a LongTensor of shape (B, K)."""
    if isinstance(n_classes, bool) or not isinstance(n_classes, (int, np.integer)) or n_classes < 2:
        raise ValueError(f"n_classes must be an int >= 2, got {n_classes!r}")
    t = torch.as_tensor(targets)
    if t.dtype.is_floating_point or t.dtype == torch.bool:
        raise ValueError(f"targets must be integer class indices, got dtype {t.dtype}")
    t = t.long()
    if t.dim() == 1:
        t = t.unsqueeze(0)
    if t.dim() != 2 or t.shape[1] < 1:
        raise ValueError(f"targets must have shape (K,) or (B, K) with K >= 1, got {tuple(t.shape)}")
    if t.shape[1] > n_classes:
        raise ValueError(f"K = {t.shape[1]} targets exceed n_classes = {n_classes}")
    if t.numel() and (t.min() < 0 or t.max() >= n_classes):
        raise ValueError(f"targets must lie in [0, {n_classes - 1}], got range [{int(t.min())}, {int(t.max())}]")
    srt = t.sort(dim=1).values
    if (srt[:, 1:] == srt[:, :-1]).any():
        raise ValueError("targets must be distinct within each row")
    return t


def ordering_matrices(targets: Tensor, n_classes: int, reduced: int | None = None,
                      logits: Tensor | None = None) -> Tensor:
    """Batched :func:`ordering_matrix`: one D per row of ``targets``.

    Args:
        targets: (B, K) class indices, distinct per row.
        n_classes: C.
        reduced: keep only the ``reduced`` non-target classes with the largest ``logits``
            (the most competitive ones); ``None`` keeps all C - K.
        logits: (B, C), needed only with ``reduced``.

    Returns:
        (B, M, C) float tensor, M = K - 1 + (C - K or ``reduced``). Rows 0..K-2 are
        e_{t_i} - e_{t_{i+1}}; the remaining rows are e_{t_K} - e_j for non-targets j, in
        increasing class order (or by decreasing logit when ``reduced``).
    """
    t = _check_targets(targets, n_classes)
    B, K = t.shape
    nontarget = torch.ones(B, n_classes, dtype=torch.bool).scatter_(1, t, False)
    if reduced is None:
        R = n_classes - K
        # stable sort puts the non-targets (key 0) first, in increasing class order
        nt = torch.argsort((~nontarget).to(torch.int8), dim=1, stable=True)[:, :R]
    else:
        if not (isinstance(reduced, (int, np.integer)) and 1 <= reduced <= n_classes - K):
            raise ValueError(f"reduced must be an int in [1, C - K = {n_classes - K}], got {reduced!r}")
        if logits is None or tuple(logits.shape) != (B, n_classes):
            raise ValueError(f"reduced needs logits of shape {(B, n_classes)}, got "
                             f"{None if logits is None else tuple(logits.shape)}")
        R = int(reduced)
        nt = logits.detach().cpu().masked_fill(~nontarget, -math.inf).topk(R, dim=1).indices
    D = torch.zeros(B, K - 1 + R, n_classes)
    rows_b = torch.arange(B)[:, None]
    chain = torch.arange(K - 1)[None, :]
    D[rows_b, chain, t[:, :-1]] = 1.0
    D[rows_b, chain, t[:, 1:]] = -1.0
    rest = K - 1 + torch.arange(R)[None, :]
    D[rows_b, rest, t[:, -1:].expand(B, R)] = 1.0
    D[rows_b, rest, nt] = -1.0
    return D


def ordering_matrix(targets: Sequence[int] | Tensor, n_classes: int, reduced: int | None = None,
                    logits: Tensor | None = None) -> Tensor:
    """The 0/+1/-1 matrix D with D z >= m  <=>  z_{t_1} > ... > z_{t_K} > z_j (j not in T), with margin m.

    Args:
        targets: the ordered target list (t_1, ..., t_K), distinct.
        n_classes: C.
        reduced: keep only the ``reduced`` most competitive non-target rows (needs ``logits``, shape (C,)).
        logits: (C,) logits used to rank the non-targets when ``reduced`` is set.

    Returns:
        (M, C) tensor with M = K - 1 + C - K (= C - 1) rows, or K - 1 + ``reduced``.
    """
    lg = None if logits is None else torch.as_tensor(logits).reshape(1, -1)
    return ordering_matrices(torch.as_tensor(targets).reshape(1, -1), n_classes, reduced, lg)[0]


CONSTRAINT_SETS = ("condensed", "all")
AGGREGATES = ("max", "logsumexp")


def condensed_constraints(targets: Tensor, logits: Tensor, n_competitors: int | None = None,
                          aggregate: str = "max") -> tuple[Tensor, Tensor]:
    """The condensed constraint set: d - 1 = K + M rows instead of C - 1 (RisingAttacK's d = K + M + 1).

    The C logits are mapped to d = K + M + 1 values l = (z_{t_1}, ..., z_{t_K}, z_{j_1}, ..., z_{j_M}, a):
    the K targets, the M non-target classes with the largest logits at the anchor (the competitors) and
    one aggregate a of the remaining C - K - M non-targets. The rows are the K - 1 target-chain
    constraints l_i - l_{i+1} >= m, the M constraints z_{t_K} - z_{j} >= m and one z_{t_K} - a >= m.
    With ``aggregate="max"`` (a = max over the rest) the condensed set holds exactly when all C - 1
    constraints hold; ``"logsumexp"`` (a smooth upper bound of the max) is sufficient, not necessary.

    Args:
        targets: (B, K) ordered targets.
        logits: (B, C) logits at the anchor (they pick the competitors and linearise the aggregate).
        n_competitors: M; ``None`` uses M = K. Capped at C - K - 1 so one class stays in the aggregate
            (then the set equals the full one).
        aggregate: ``"max"`` or ``"logsumexp"``.

    Returns:
        D (B, K + M, C), the rows whose contraction with dz/dx is the constraints' Jacobian (for the
        ``logsumexp`` row the softmax weights of the rest), and g (B, K + M), the constraint values.
    """
    if logits.dim() != 2:
        raise ValueError(f"logits must have shape (B, C), got {tuple(logits.shape)}")
    C = logits.shape[1]
    t = _check_targets(targets, C)
    if t.shape[0] != logits.shape[0]:
        raise ValueError(f"targets have {t.shape[0]} rows but logits have {logits.shape[0]}")
    if aggregate not in AGGREGATES:
        raise ValueError(f"aggregate must be one of {AGGREGATES}, got {aggregate!r}")
    B, K = t.shape
    if n_competitors is None:
        n_competitors = K
    if isinstance(n_competitors, bool) or not isinstance(n_competitors, (int, np.integer)) or n_competitors < 0:
        raise ValueError(f"n_competitors must be None or an integer >= 0, got {n_competitors!r}")
    M = min(int(n_competitors), C - K - 1)
    z = logits.detach().cpu().double()
    nontarget = torch.ones(B, C, dtype=torch.bool).scatter_(1, t, False)
    order = z.masked_fill(~nontarget, -math.inf).argsort(dim=1, descending=True)
    comp, rest = order[:, :M], order[:, M:C - K]           # competitors; the rest of the non-targets
    rows_b = torch.arange(B)[:, None]
    D = torch.zeros(B, K + M, C, dtype=torch.float64)
    chain = torch.arange(K - 1)[None, :]
    D[rows_b, chain, t[:, :-1]] = 1.0
    D[rows_b, chain, t[:, 1:]] = -1.0
    crow = K - 1 + torch.arange(M)[None, :]
    D[rows_b, crow, t[:, -1:].expand(B, M)] = 1.0
    D[rows_b, crow, comp] = -1.0
    D[:, K + M - 1, :].scatter_(1, t[:, -1:], 1.0)
    zr = z.gather(1, rest)
    if aggregate == "max":
        w = torch.zeros_like(zr).scatter_(1, zr.argmax(1, keepdim=True), 1.0)
    else:
        w = torch.softmax(zr, dim=1)                       # d logsumexp / dz_rest
    D[:, K + M - 1, :].scatter_add_(1, rest, -w)
    g = torch.einsum("bmc,bc->bm", D, z)
    if aggregate == "logsumexp":
        g[:, -1] = z.gather(1, t[:, -1:]).squeeze(1) - torch.logsumexp(zr, dim=1)
    return D.to(logits.dtype), g.to(logits.dtype)


def ordered_topk_success(logits: Tensor, targets: Tensor) -> Tensor:
    """Whether the top-K of each row of ``logits`` is exactly ``targets``, in that order.

    Args:
        logits: (B, C).
        targets: (B, K).

    Returns:
        (B,) bool: z_{t_1} > ... > z_{t_K} > max_{j not in T} z_j (strict; ties fail).
    """
    if logits.dim() != 2:
        raise ValueError(f"logits must have shape (B, C), got {tuple(logits.shape)}")
    t = _check_targets(targets, logits.shape[1]).to(logits.device)
    if t.shape[0] != logits.shape[0]:
        raise ValueError(f"targets have {t.shape[0]} rows but logits have {logits.shape[0]}")
    zt = logits.gather(1, t)
    chain = (zt[:, :-1] > zt[:, 1:]).all(dim=1)
    others = logits.scatter(1, t, -math.inf).max(dim=1).values
    return chain & (zt[:, -1] > others)


def ordering_margins(logits: Tensor, targets: Tensor) -> Tensor:
    """g = D z for every row: (B, M) margins of the ordering constraints (all > 0 iff success)."""
    if logits.dim() != 2:
        raise ValueError(f"logits must have shape (B, C), got {tuple(logits.shape)}")
    t = torch.as_tensor(targets).cpu()
    if t.dim() != 2 or t.shape[0] != logits.shape[0]:
        raise ValueError(f"targets must have shape (B={logits.shape[0]}, K), got {tuple(t.shape)}")
    D = ordering_matrices(t, logits.shape[1]).to(logits)
    return torch.einsum("bmc,bc->bm", D, logits)


def topk_hinge_loss(logits: Tensor, targets: Tensor, margin: float = 0.05) -> Tensor:
    """C&W-style ordered top-K hinge, per row:
    sum_i [m - (z_{t_i} - z_{t_{i+1}})]_+ + [m - (z_{t_K} - max_{j not in T} z_j)]_+.

    Zero exactly when the ordered top-K holds with margin ``margin``. Returns (B,).
    """
    if logits.dim() != 2:
        raise ValueError(f"logits must have shape (B, C), got {tuple(logits.shape)}")
    if not (isinstance(margin, (int, float)) and math.isfinite(margin)):
        raise ValueError(f"margin must be a finite number, got {margin!r}")
    t = _check_targets(targets, logits.shape[1]).to(logits.device)
    zt = logits.gather(1, t)
    chain = torch.relu(margin - (zt[:, :-1] - zt[:, 1:])).sum(dim=1)
    others = logits.scatter(1, t, -math.inf).max(dim=1).values
    return chain + torch.relu(margin - (zt[:, -1] - others))


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


# ----------------------------------------------------------------------------- helpers
def perturbation_norms(delta: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Per-image l1, l2 and linf norms of a (B, ...) perturbation."""
    if delta.dim() < 1:
        raise ValueError(f"delta must be a batch (B, ...), got a scalar of shape {tuple(delta.shape)}")
    d = delta.reshape(delta.shape[0], -1)
    return d.abs().sum(1), d.norm(dim=1), d.abs().amax(1)


def figure_of_merit(asr: float, norms: Sequence[float], ref_norms: Sequence[float]) -> float:
    """PROVISIONAL figure of merit (the paper's formula was not retrieved).

    FoM = ASR * mean_p (ref_p / norm_p) over p in (l1, l2, linf): the ASR, scaled up when the
    mean norms of successful attacks are smaller than a reference method's. Equals ASR for the
    reference itself. Always report raw ASR and norms next to it.
    """
    n, r = np.asarray(norms, float), np.asarray(ref_norms, float)
    if n.shape != (3,) or r.shape != (3,):
        raise ValueError(f"norms and ref_norms must be (l1, l2, linf) triples, got {n.shape} and {r.shape}")
    if not 0 <= asr <= 1:
        raise ValueError(f"asr must be in [0, 1], got {asr}")
    if np.any(n <= 0) or np.any(r <= 0):
        raise ValueError("norms must be positive")
    return float(asr * np.mean(r / n))


def _check_attack_args(K: int, margin: float, max_iter: int) -> None:
    if isinstance(K, bool) or not isinstance(K, (int, np.integer)) or K < 1:
        raise ValueError(f"K must be an int >= 1, got {K!r}")
    if not (isinstance(margin, (int, float)) and math.isfinite(margin) and margin >= 0):
        raise ValueError(f"margin must be a finite number >= 0, got {margin!r}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise ValueError(f"max_iter must be an int >= 1, got {max_iter!r}")


def _check_images(x: Tensor) -> None:
    if not torch.is_tensor(x) or not x.is_floating_point() or x.dim() < 2:
        raise ValueError(f"x must be a float tensor of shape (B, ...), got {getattr(x, 'dtype', type(x))} "
                         f"of shape {tuple(getattr(x, 'shape', ()))}")
    if not torch.isfinite(x).all():
        raise ValueError("x contains NaN or inf")


def _check_call(x: Tensor, targets: Tensor, K: int, n_classes: int) -> Tensor:
    _check_images(x)
    t = _check_targets(targets, n_classes)
    if t.shape != (x.shape[0], K):
        raise ValueError(f"targets must have shape (B={x.shape[0]}, K={K}), got {tuple(t.shape)}")
    return t.to(x.device)


def _clip(x: Tensor, clip: tuple[float, float] | None) -> Tensor:
    return x if clip is None else x.clamp(clip[0], clip[1])


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
        _check_attack_args(K, margin, max_iter)
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
        _check_images(x)
        x = x.detach()
        with torch.no_grad():
            n_classes = self.model(x[:1]).shape[1]
        t = _check_call(x, targets, self.K, n_classes)
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
            x_adv[idx] = _clip(x_adv[idx] + self.step * delta, self.clip)
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


# ----------------------------------------------------------------------------- baselines
class _BestTracker:
    """Keeps, per image, the successful iterate of smallest l2 perturbation."""

    def __init__(self, x: Tensor) -> None:
        self.x = x
        self.best = x.clone()
        self.best_l2 = torch.full((x.shape[0],), math.inf, dtype=x.dtype, device=x.device)
        self.success = torch.zeros(x.shape[0], dtype=torch.bool, device=x.device)

    def update(self, x_adv: Tensor, succ: Tensor) -> Tensor:
        l2 = (x_adv - self.x).reshape(x_adv.shape[0], -1).norm(dim=1)
        better = succ & (l2 < self.best_l2)
        self.best[better] = x_adv[better].detach()
        self.best_l2[better] = l2[better]
        self.success |= succ
        return better

    def result(self, x_last: Tensor) -> Tensor:
        out = x_last.detach().clone()
        out[self.success] = self.best[self.success]
        return out


class _GradientAttack:
    """Shared loop of the gradient baselines: Adam/PGD on delta, best successful iterate kept."""

    def __init__(self, model: Callable[[Tensor], Tensor], K: int, margin: float, max_iter: int,
                 clip: tuple[float, float] | None) -> None:
        _check_attack_args(K, margin, max_iter)
        if clip is not None and not clip[0] < clip[1]:
            raise ValueError(f"clip must be (low, high) with low < high, got {clip!r}")
        self.model, self.K, self.margin, self.max_iter, self.clip = model, int(K), float(margin), int(max_iter), clip

    def _n_classes(self, x: Tensor) -> int:
        _check_images(x)
        with torch.no_grad():
            return int(self.model(x[:1]).shape[1])

    def _finish(self, tracker: _BestTracker, x_last: Tensor, t: Tensor, iters: int) -> tuple[Tensor, dict]:
        x_adv = tracker.result(x_last)
        with torch.no_grad():
            z = self.model(x_adv)
        return x_adv, {"success": ordered_topk_success(z, t).cpu(), "iterations": torch.full((x_adv.shape[0],), iters),
                       "margins": ordering_margins(z, t).cpu()}


class QuadAttack(_GradientAttack):
    """QuadAttacK baseline (Paniagua, Grainger & Wu, NeurIPS 2023) at its released settings.

    Needs a model z = W phi(x) + b with a linear head. delta starts at N(0, ``init_std``^2). Each
    iteration, at the current iterate x + delta:

    1. record success (ordered top-K) and keep the smallest-l2 successful perturbation;
    2. solve the QP in feature space, anchored at the current features f = phi(x + delta):
       f* = f + argmin ||df||^2  s.t.  D (W (f + df) + b) >= m   (all C - 1 rows; :func:`min_norm_qp`);
    3. one AdamW step on  sum_b coef_b ||phi(x_b + delta_b) - f*_b||^2 + ``norm_weight`` ||delta||_2^2;
    4. coef_b *= ``coef_decay`` for images whose attack improved in step 1; clamp x + delta to ``clip``.

    The optimiser is re-created (its moments reset) after ``warmup_iters`` iterations. The gradient
    treats f* as a constant: by Danskin's theorem it equals the gradient through the QP's solution
    (the released code differentiates through qpth), since ||f - f*(f)||^2 is the squared distance
    of f to a convex set.

    Args:
        model: the classifier; ``feature_fn`` and ``head`` default to ``model.features`` and ``model.head``.
        K, margin, max_iter, clip: as in :class:`RisingAttack` (released: margin 0.2, 30 iterations).
        lr: AdamW learning rate on delta (released: 0.0022).
        norm_weight: weight of ||delta||_2^2 (released: 1).
        coef: initial weight of the feature loss (released: 10, the midpoint of one binary-search step
            over [0, 20]).
        coef_decay: factor on coef after each improving success (released: 0.75).
        warmup_iters: iteration at which the optimiser is reset (released: 5; 0 never resets).
        init_std: std of the random initial delta (released: 2e-3).
        weight_decay: AdamW's decoupled weight decay on delta (PyTorch's default 0.01, as released).
    """

    def __init__(self, model: nn.Module, K: int, margin: float = 0.2, max_iter: int = 30, lr: float = 0.0022,
                 norm_weight: float = 1.0, feature_fn: Callable[[Tensor], Tensor] | None = None,
                 head: nn.Linear | None = None, clip: tuple[float, float] | None = (0.0, 1.0), coef: float = 10.0,
                 coef_decay: float = 0.75, warmup_iters: int = 5, init_std: float = 2e-3,
                 weight_decay: float = 0.01) -> None:
        super().__init__(model, K, margin, max_iter, clip)
        self.feature_fn = feature_fn if feature_fn is not None else getattr(model, "features", None)
        self.head = head if head is not None else getattr(model, "head", None)
        if not callable(self.feature_fn) or not isinstance(self.head, nn.Linear):
            raise ValueError("QuadAttack needs feature_fn and a linear head (nn.Linear), or a model with "
                             "attributes .features and .head")
        if not (lr > 0 and norm_weight >= 0):
            raise ValueError(f"lr must be > 0 and norm_weight >= 0, got {lr!r}, {norm_weight!r}")
        if not (coef > 0 and 0 < coef_decay <= 1):
            raise ValueError(f"coef must be > 0 and coef_decay in (0, 1], got {coef!r}, {coef_decay!r}")
        if isinstance(warmup_iters, bool) or not isinstance(warmup_iters, (int, np.integer)) or warmup_iters < 0:
            raise ValueError(f"warmup_iters must be an integer >= 0, got {warmup_iters!r}")
        if not (init_std >= 0 and weight_decay >= 0):
            raise ValueError(f"init_std and weight_decay must be >= 0, got {init_std!r}, {weight_decay!r}")
        self.lr, self.norm_weight, self.coef, self.coef_decay = lr, norm_weight, float(coef), float(coef_decay)
        self.warmup_iters, self.init_std, self.weight_decay = int(warmup_iters), float(init_std), float(weight_decay)

    def feature_targets(self, feats: Tensor, targets: Tensor) -> Tensor:
        """The QP step in feature space: f* = f + argmin ||df||^2 s.t. D(W(f + df) + b) >= m, per row."""
        W = self.head.weight.detach().double()
        z = self.head(feats).detach().double()
        D = ordering_matrices(targets.cpu(), W.shape[0]).double().to(W.device)
        A = (D @ W).cpu().numpy()                           # (B, M, d)
        c = (self.margin - torch.einsum("bmc,bc->bm", D, z)).cpu().numpy()
        df = np.stack([min_norm_qp(A[b], c[b]) for b in range(A.shape[0])])
        return feats.detach() + torch.from_numpy(df).to(feats)

    def _optimizer(self, delta: Tensor) -> torch.optim.Optimizer:
        return torch.optim.AdamW([delta], lr=self.lr, weight_decay=self.weight_decay)

    def __call__(self, x: Tensor, targets: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        """Attack a batch; returns x_adv and info (``success``, ``iterations``, ``margins``)."""
        x = x.detach()
        t = _check_call(x, targets, self.K, self._n_classes(x))
        noise = torch.randn(x.shape, dtype=x.dtype).to(x.device) * self.init_std     # global RNG, as released
        delta = (_clip(x + noise, self.clip) - x).requires_grad_(True)
        coef = torch.full((x.shape[0],), self.coef, dtype=x.dtype, device=x.device)
        opt = self._optimizer(delta)
        tracker = _BestTracker(x)
        for i in range(self.max_iter):
            if i == self.warmup_iters and i > 0:
                opt = self._optimizer(delta)                 # reset the moments after the warm-up
            x_adv = x + delta
            f = self.feature_fn(x_adv)
            improved = tracker.update(x_adv.detach(), ordered_topk_success(self.head(f).detach(), t))
            f_star = self.feature_targets(f, t)
            loss = (coef * ((f - f_star) ** 2).flatten(1).sum(1)).sum() + self.norm_weight * (delta ** 2).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            coef[improved] *= self.coef_decay
            with torch.no_grad():
                delta.copy_(_clip(x + delta, self.clip) - x)
        x_last = x + delta.detach()
        with torch.no_grad():
            tracker.update(x_last, ordered_topk_success(self.model(x_last), t))
        return self._finish(tracker, x_last, t, self.max_iter)


class CWTopK(_GradientAttack):
    """C&W-style ordered top-K attack: Adam on delta for  hinge(z(x + delta)) + c ||delta||_2^2.

    The hinge is :func:`topk_hinge_loss`; the smallest successful perturbation is returned
    (a single fixed ``c``, no binary search).
    """

    def __init__(self, model: Callable[[Tensor], Tensor], K: int, margin: float = 0.05, max_iter: int = 50,
                 lr: float = 0.01, c: float = 0.05, clip: tuple[float, float] | None = (0.0, 1.0)) -> None:
        super().__init__(model, K, margin, max_iter, clip)
        if not (lr > 0 and c >= 0):
            raise ValueError(f"lr must be > 0 and c >= 0, got {lr!r}, {c!r}")
        self.lr, self.c = lr, c

    def __call__(self, x: Tensor, targets: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        """Attack a batch; returns x_adv and info (``success``, ``iterations``, ``margins``)."""
        x = x.detach()
        t = _check_call(x, targets, self.K, self._n_classes(x))
        delta = torch.zeros_like(x, requires_grad=True)
        opt = torch.optim.Adam([delta], lr=self.lr)
        tracker = _BestTracker(x)
        for _ in range(self.max_iter):
            x_adv = _clip(x + delta, self.clip)
            z = self.model(x_adv)
            tracker.update(x_adv.detach(), ordered_topk_success(z.detach(), t))
            loss = topk_hinge_loss(z, t, self.margin).sum() + self.c * (delta ** 2).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        x_last = _clip(x + delta.detach(), self.clip)
        with torch.no_grad():
            tracker.update(x_last, ordered_topk_success(self.model(x_last), t))
        return self._finish(tracker, x_last, t, self.max_iter)


class TopKPGD(_GradientAttack):
    """l2 PGD on :func:`topk_hinge_loss` inside the ball ||delta||_2 <= eps (step 2.5 eps / max_iter).

    Returns the smallest successful iterate seen.
    """

    def __init__(self, model: Callable[[Tensor], Tensor], K: int, margin: float = 0.05, max_iter: int = 50,
                 eps: float = 2.0, clip: tuple[float, float] | None = (0.0, 1.0)) -> None:
        super().__init__(model, K, margin, max_iter, clip)
        if not eps > 0:
            raise ValueError(f"eps must be > 0, got {eps!r}")
        self.eps = eps

    def __call__(self, x: Tensor, targets: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        """Attack a batch; returns x_adv and info (``success``, ``iterations``, ``margins``)."""
        x = x.detach()
        t = _check_call(x, targets, self.K, self._n_classes(x))
        alpha = 2.5 * self.eps / self.max_iter
        x_adv = x.clone()
        tracker = _BestTracker(x)
        shape = (-1,) + (1,) * (x.dim() - 1)
        for _ in range(self.max_iter):
            x_adv.requires_grad_(True)
            z = self.model(x_adv)
            tracker.update(x_adv.detach(), ordered_topk_success(z.detach(), t))
            (grad,) = torch.autograd.grad(topk_hinge_loss(z, t, self.margin).sum(), x_adv)
            gnorm = grad.reshape(grad.shape[0], -1).norm(dim=1).clamp_min(1e-12).reshape(shape)
            d = x_adv.detach() - alpha * grad / gnorm - x
            dn = d.reshape(d.shape[0], -1).norm(dim=1).reshape(shape)
            d = d * torch.clamp(self.eps / dn.clamp_min(1e-12), max=1.0)       # project on the l2 ball
            x_adv = _clip(x + d, self.clip).detach()
        with torch.no_grad():
            tracker.update(x_adv, ordered_topk_success(self.model(x_adv), t))
        return self._finish(tracker, x_adv, t, self.max_iter)

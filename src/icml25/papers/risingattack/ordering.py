"""The ordered top-K task shared by RisingAttacK and its baselines: constraints, success, margins, norms.

Given an image x, a classifier with logits z(x) in R^C and an ordered target list T = (t_1, ..., t_K), an ordered
top-K attack looks for a small delta such that the top-K predictions of x + delta are exactly t_1 > ... > t_K. The
K - 1 + C - K ordering constraints are linear in the logits, g(x) = D z(x) >= m, with a fixed 0/+1/-1 matrix D
(:func:`ordering_matrix`); RisingAttacK condenses them to K + M rows (:func:`condensed_constraints`). This module also
holds the success and margin measures, the hinge loss of the gradient baselines, the perturbation norms and the
paper's figure of merit, and the input checks every attack applies (``check_*``, ``clip_box``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor


# ----------------------------------------------------------------------------- constraints
def check_targets(targets: Tensor | Sequence, n_classes: int) -> Tensor:
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
    t = check_targets(targets, n_classes)
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
    t = check_targets(targets, C)
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
    t = check_targets(targets, logits.shape[1]).to(logits.device)
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
    t = check_targets(targets, logits.shape[1]).to(logits.device)
    zt = logits.gather(1, t)
    chain = torch.relu(margin - (zt[:, :-1] - zt[:, 1:])).sum(dim=1)
    others = logits.scatter(1, t, -math.inf).max(dim=1).values
    return chain + torch.relu(margin - (zt[:, -1] - others))



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


def check_attack_args(K: int, margin: float, max_iter: int) -> None:
    if isinstance(K, bool) or not isinstance(K, (int, np.integer)) or K < 1:
        raise ValueError(f"K must be an int >= 1, got {K!r}")
    if not (isinstance(margin, (int, float)) and math.isfinite(margin) and margin >= 0):
        raise ValueError(f"margin must be a finite number >= 0, got {margin!r}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise ValueError(f"max_iter must be an int >= 1, got {max_iter!r}")


def check_images(x: Tensor) -> None:
    if not torch.is_tensor(x) or not x.is_floating_point() or x.dim() < 2:
        raise ValueError(f"x must be a float tensor of shape (B, ...), got {getattr(x, 'dtype', type(x))} "
                         f"of shape {tuple(getattr(x, 'shape', ()))}")
    if not torch.isfinite(x).all():
        raise ValueError("x contains NaN or inf")


def check_call(x: Tensor, targets: Tensor, K: int, n_classes: int) -> Tensor:
    check_images(x)
    t = check_targets(targets, n_classes)
    if t.shape != (x.shape[0], K):
        raise ValueError(f"targets must have shape (B={x.shape[0]}, K={K}), got {tuple(t.shape)}")
    return t.to(x.device)


def clip_box(x: Tensor, clip: tuple[float, float] | None) -> Tensor:
    return x if clip is None else x.clamp(clip[0], clip[1])

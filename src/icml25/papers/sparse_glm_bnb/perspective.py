"""The implicit perspective regulariser G, its conjugate and its exact prox.

Liu, Shafiee & Lodi, "Scalable First-order Method for Certifying Optimal k-Sparse
GLMs", ICML 2025 (arXiv 2502.09502).

The perspective relaxation of ``||beta||_0 <= k, ||beta||_inf <= M`` with ridge
``lam2 ||beta||^2`` replaces the ridge term by

    G(beta) = min_z  lam2 * sum_j beta_j^2 / z_j
              s.t.   sum_j z_j <= k,  0 <= z <= 1,  |beta_j| <= M z_j      (beta_j^2/0 := 0 iff beta_j = 0)

Branch-and-bound nodes fix some z_j to 0 (``fixed_zero``: beta_j = 0) or to 1
(``fixed_one``: plain ridge ``lam2 beta_j^2`` with ``|beta_j| <= M``); the free
coordinates share the budget ``k_free = k - |fixed_one|``.

Closed forms used here (derivations in docs/papers/sparse_glm_bnb.md):

* value: water-filling ``z_j = min(1, |beta_j| / s)`` with ``s <= M`` set by
  ``sum z_j = k_free``, so ``G = lam2 (sum_{saturated} beta_j^2 + s^2 (k_free - r))``;
  finite iff ``||beta||_inf <= M`` and ``||beta_free||_1 <= k_free M``.
* conjugate: ``G*(alpha) = sum_{fixed one} h(alpha_j) + top-k_free sum of h(alpha_free)``
  with the Huber-like ``h(a) = a^2/(4 lam2)`` for ``|a| <= 2 lam2 M`` and
  ``M|a| - lam2 M^2`` beyond.
* prox: ``prox_{rho G}(v)_j = sign(v_j) * min(min(|v_j|/(1+2 rho lam2), M), (|v_j| - nu)_+)``,
  a ridge-shrink-and-clip capped by a soft threshold ``nu >= 0``; ``nu`` is the root of
  a monotone piecewise function with O(p) breakpoints, found exactly after a sort:
  O(p log p) in all.

Special cases: ``k >= p`` (no binding budget) gives ``G = lam2 ||beta||^2`` on the box,
whose prox is ``clip(v / (1 + 2 rho lam2), -M, M)``; ``lam2 = 0`` gives the indicator of
``{||beta||_inf <= M, ||beta||_1 <= k M}``.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

FEASIBILITY_TOL = 1e-9
"""Relative slack allowed on ``||beta||_inf <= M`` and ``||beta||_1 <= k M`` when evaluating G."""


def check_perspective_args(k: float, M: float, lam2: float) -> None:
    """Raise ``ValueError`` unless ``k >= 0``, ``M > 0`` (finite) and ``lam2 >= 0`` (finite)."""
    if not np.isfinite(k) or k < 0:
        raise ValueError(f"k must be a non-negative number, got {k!r}")
    if not np.isfinite(M) or M <= 0:
        raise ValueError(f"M must be a positive finite bound on |beta_j|, got {M!r}")
    if not np.isfinite(lam2) or lam2 < 0:
        raise ValueError(f"lam2 must be a non-negative finite ridge weight, got {lam2!r}")


def _finite_vector(name: str, value) -> np.ndarray:
    """``value`` as a finite 1-D float array, else ``ValueError`` naming it."""
    a = np.asarray(value, dtype=float)
    if a.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains NaN or infinite entries")
    return a


def coordinate_masks(p: int, fixed_zero: Iterable[int] = (),
                     fixed_one: Iterable[int] = ()) -> tuple[np.ndarray, np.ndarray]:
    """Boolean masks ``(zero, one)`` of shape (p,) from index lists; they must be disjoint."""
    zero = np.zeros(p, dtype=bool)
    one = np.zeros(p, dtype=bool)
    fz = np.asarray(list(fixed_zero), dtype=int)
    fo = np.asarray(list(fixed_one), dtype=int)
    for name, idx in (("fixed_zero", fz), ("fixed_one", fo)):
        if idx.size and (idx.min() < 0 or idx.max() >= p):
            raise ValueError(f"{name} has an index outside 0..{p - 1}")
    zero[fz] = True
    one[fo] = True
    if np.any(zero & one):
        raise ValueError("fixed_zero and fixed_one must be disjoint")
    return zero, one


def _budget(k: float, one: np.ndarray) -> float:
    k_free = k - int(one.sum())
    if k_free < 0:
        raise ValueError(f"fixed_one has {int(one.sum())} coordinates, more than k={k}")
    return k_free


def huber_conjugate_term(alpha: np.ndarray, M: float, lam2: float) -> np.ndarray:
    """``h(a) = a^2/(4 lam2)`` if ``|a| <= 2 lam2 M`` else ``M|a| - lam2 M^2`` (elementwise)."""
    a = np.abs(alpha)
    if lam2 == 0:
        return M * a
    return np.where(a <= 2 * lam2 * M, a * a / (4 * lam2), M * a - lam2 * M * M)


def _topk_sum(values: np.ndarray, k: float) -> float:
    """Sum of the ``floor(k)`` largest values plus ``frac(k)`` times the next one (all values >= 0)."""
    n = values.size
    kk = int(np.floor(k))
    frac = k - kk
    if kk >= n:
        return float(values.sum())
    if kk == 0 and frac == 0:
        return 0.0
    part = np.partition(values, n - kk - 1) if kk < n else values
    top = part[n - kk:].sum() if kk > 0 else 0.0
    nxt = part[n - kk - 1]
    return float(top + frac * nxt)


def _water_level(a_sorted_desc: np.ndarray, k_free: float) -> tuple[float, int]:
    """Water level ``s`` and count ``r`` of saturated coordinates with ``sum_j min(1, a_j/s) = k_free``.

    ``a_sorted_desc`` are the positive |beta_j| in decreasing order, with more than
    ``k_free`` entries. Saturated: the ``r`` largest, ``a_j >= s``.
    """
    m = a_sorted_desc.size
    tail = np.cumsum(a_sorted_desc[::-1])[::-1]  # tail[r] = sum_{j >= r} a_j
    r = np.arange(m)
    ok = r < k_free
    s = np.full(m, np.inf)
    s[ok] = tail[ok] / (k_free - r[ok])
    # first r with a_{r} < s (no coordinate beyond r saturated) and a_{r-1} >= s
    valid = ok & (a_sorted_desc <= s * (1 + 1e-12)) & ((r == 0) | (np.concatenate(([np.inf], a_sorted_desc[:-1])) >= s))
    i = int(np.argmax(valid)) if valid.any() else int(np.argmin(np.where(ok, s, np.inf)))
    return float(s[i]), i


def perspective_value(beta: np.ndarray, k: float, M: float, lam2: float, *, fixed_zero: Iterable[int] = (),
                      fixed_one: Iterable[int] = ()) -> float:
    """Evaluate the implicit perspective regulariser G(beta) (``inf`` outside its domain).

    Args:
        beta: coefficients, shape (p,).
        k: sparsity budget (may exceed p: then the budget does not bind).
        M: box bound, ``M > 0``.
        lam2: ridge weight, ``lam2 >= 0``.
        fixed_zero, fixed_one: indices whose z_j is fixed to 0 / 1 (a BnB node).

    Returns:
        ``min_z lam2 sum_j beta_j^2/z_j`` over feasible z, or ``inf``.
    """
    check_perspective_args(k, M, lam2)
    beta = _finite_vector("beta", beta)
    zero, one = coordinate_masks(beta.size, fixed_zero, fixed_one)
    k_free = _budget(k, one)
    if np.any(beta[zero] != 0):
        return np.inf
    free = ~zero & ~one
    return value_kernel(np.abs(beta[free | one]), one[free | one], k_free, M, lam2)


def value_kernel(a: np.ndarray, one: np.ndarray, k_free: float, M: float, lam2: float) -> float:
    """G on |beta| = ``a`` without fixed-zero coordinates; ``one`` masks the fixed-one ones."""
    slack = FEASIBILITY_TOL * max(M, 1.0)
    if a.size and a.max() > M + slack:
        return np.inf
    value = lam2 * float(np.sum(a[one] ** 2)) if one.any() else 0.0
    free = a[~one] if one.any() else a
    free = free[free > 0]
    if free.size <= k_free:
        return value + lam2 * float(np.sum(free**2))
    if free.sum() > k_free * M * (1 + FEASIBILITY_TOL) + slack:
        return np.inf
    free = np.sort(free)[::-1]
    s, r = _water_level(free, k_free)
    # saturated z_j = 1 contribute beta_j^2; the others z_j = |beta_j|/s contribute s |beta_j|
    return value + lam2 * float(np.sum(free[:r] ** 2) + s * np.sum(free[r:]))


def perspective_z(beta: np.ndarray, k: float, M: float, *, fixed_zero: Iterable[int] = (),
                  fixed_one: Iterable[int] = ()) -> np.ndarray:
    """The minimising z of :func:`perspective_value` (water-filling), shape (p,)."""
    beta = np.asarray(beta, dtype=float)
    zero, one = coordinate_masks(beta.size, fixed_zero, fixed_one)
    k_free = _budget(k, one)
    a = np.abs(beta)
    z = np.zeros_like(a)
    z[one] = 1.0
    free = ~zero & ~one
    af = a[free]
    pos = np.sort(af[af > 0])[::-1]
    if pos.size <= k_free:
        z[free] = (af > 0).astype(float)
        return z
    s, _ = _water_level(pos, k_free)
    s = min(s, M)
    z[free] = np.minimum(1.0, af / s)
    return z


def perspective_conjugate(alpha: np.ndarray, k: float, M: float, lam2: float, *, fixed_zero: Iterable[int] = (),
                          fixed_one: Iterable[int] = ()) -> float:
    """Fenchel conjugate ``G*(alpha) = sup_beta alpha^T beta - G(beta)``.

    Equal to ``sum_{fixed one} h(alpha_j) + (sum of the k_free largest h(alpha_j) over free j)``
    with :func:`huber_conjugate_term` h; fixed-zero coordinates contribute nothing.
    """
    check_perspective_args(k, M, lam2)
    alpha = _finite_vector("alpha", alpha)
    zero, one = coordinate_masks(alpha.size, fixed_zero, fixed_one)
    k_free = _budget(k, one)
    keep = ~zero
    return conjugate_kernel(alpha[keep], one[keep], k_free, M, lam2)


def conjugate_kernel(alpha: np.ndarray, one: np.ndarray, k_free: float, M: float, lam2: float) -> float:
    """G* without fixed-zero coordinates; ``one`` masks the fixed-one ones."""
    h = huber_conjugate_term(alpha, M, lam2)
    if one.any():
        return float(h[one].sum()) + _topk_sum(h[~one], k_free)
    return _topk_sum(h, k_free)


def _soft_threshold_level(a: np.ndarray, k_free: float, c: float, M: float) -> float:
    """Root ``nu >= 0`` of ``psi(nu) = sum_j clip((a_j - nu) / s(nu), 0, 1) = k_free``.

    ``a`` are the |v_j| of the free coordinates (more than ``k_free`` of them positive),
    ``c = 2 rho lam2`` and ``s(nu) = min(nu / c, M)`` (``= M`` when ``c = 0``). ``psi`` is
    continuous and non-increasing, piecewise of the form ``A + B/nu`` (``nu <= c M``) or
    ``A + B nu`` (``nu >= c M``) between the breakpoints ``a_j`` (z_j leaves 0) and
    ``nu_j^1`` (z_j reaches 1). A binary search over the sorted breakpoints locates the
    piece; the equation is then solved in closed form.
    """
    def s_of(nu: float) -> float:
        return M if c == 0 else min(nu / c, M)

    def psi(nu: float) -> float:
        return float(np.clip((a - nu) / s_of(nu), 0.0, 1.0).sum())

    # z_j = 1 breakpoint: a_j - nu = s(nu)
    one_bp = np.where(a <= M * (1 + c), a * c / (1 + c), a - M) if c > 0 else a - M
    bps = np.concatenate((a, one_bp, [c * M]))
    bps = np.unique(bps[bps > 0])
    lo_i, hi_i = -1, bps.size - 1  # psi(bps[hi_i]) = 0 <= k_free; psi(0+) = #positive > k_free
    while hi_i - lo_i > 1:
        mid = (lo_i + hi_i) // 2
        if psi(bps[mid]) <= k_free:
            hi_i = mid
        else:
            lo_i = mid
    lo = 0.0 if lo_i < 0 else float(bps[lo_i])
    hi = float(bps[hi_i])
    nu_m = 0.5 * (lo + hi)
    theta = (a - nu_m) / s_of(nu_m)
    full = theta >= 1
    mid_set = (theta > 0) & ~full
    n_one, n_mid, s_mid = float(full.sum()), float(mid_set.sum()), float(a[mid_set].sum())
    if n_mid == 0:
        return hi
    if c > 0 and nu_m <= c * M:
        # n_one + c (S_mid - nu n_mid)/nu = k_free
        nu = c * s_mid / (k_free - n_one + c * n_mid)
    else:
        # n_one + (S_mid - nu n_mid)/M = k_free
        nu = (s_mid - M * (k_free - n_one)) / n_mid
    return float(min(max(nu, lo), hi))


def perspective_prox(v: np.ndarray, rho: float, k: float, M: float, lam2: float, *, fixed_zero: Iterable[int] = (),
                     fixed_one: Iterable[int] = ()) -> np.ndarray:
    """Exact ``prox_{rho G}(v) = argmin_beta 0.5 ||beta - v||^2 + rho G(beta)`` in O(p log p).

    Args:
        v: point, shape (p,).
        rho: step, ``rho > 0``.
        k, M, lam2, fixed_zero, fixed_one: as in :func:`perspective_value`.

    Returns:
        beta of shape (p,): ``sign(v) min(min(|v|/(1+2 rho lam2), M), (|v| - nu)_+)`` on free
        coordinates, ``clip(v/(1+2 rho lam2), -M, M)`` on fixed-one ones, 0 on fixed-zero ones.
    """
    check_perspective_args(k, M, lam2)
    if not rho > 0:
        raise ValueError(f"rho must be positive, got {rho!r}")
    v = _finite_vector("v", v)
    zero, one = coordinate_masks(v.size, fixed_zero, fixed_one)
    k_free = _budget(k, one)
    out = np.zeros_like(v)
    keep = ~zero
    out[keep] = prox_kernel(v[keep], rho, one[keep], k_free, M, lam2)
    return out


def prox_kernel(v: np.ndarray, rho: float, one: np.ndarray, k_free: float, M: float, lam2: float) -> np.ndarray:
    """prox of rho G without fixed-zero coordinates; ``one`` masks the fixed-one ones."""
    c = 2 * rho * lam2
    a = np.abs(v)
    out = np.minimum(a / (1 + c), M)  # prox of rho (lam2 b^2 + box) on |v|
    has_one = one.any()
    af = a[~one] if has_one else a
    if np.count_nonzero(af) > k_free:
        if k_free <= 0:
            capped = np.zeros_like(af)
        else:
            nu = _soft_threshold_level(af, k_free, c, M)
            capped = np.minimum(out[~one] if has_one else out, np.maximum(af - nu, 0.0))
        if has_one:
            out[~one] = capped
        else:
            out = capped
    return np.sign(v) * out

"""The alpha pool: a linear combination of at most ``capacity`` alphas whose weights
maximise the IC of the combination (AlphaGen's pool, used by AlphaQCM for its reward).

Every alpha is z-scored across stocks on each day (NaN -> 0). With the mutual-IC matrix
``M_ij = mean_t corr_t(a_i, a_j)`` and the single-alpha ICs ``g_i = mean_t corr_t(a_i, y)``,
the weights solve AlphaGen's ``min_w  w'Mw - 2 g'w + 1 + l1_alpha |w|_1`` (the squared error of
the combination against the target; ``l1_alpha = 5e-3`` in AlphaQCM's runs; for ``l1_alpha = 0``
the normal equations ``M w = g``). Over capacity, the alpha with the smallest ``|w|`` is evicted.
"""

from __future__ import annotations

import numpy as np


def normalize_by_day(x: np.ndarray) -> np.ndarray:
    """Cross-sectional z-score of each row (day) of ``x``; NaN and constant rows become 0."""
    x = np.asarray(x, dtype=float)
    if x.ndim != 2:
        raise ValueError(f"expected a (days, stocks) array, got shape {x.shape}")
    finite = np.isfinite(x)
    n = finite.sum(1, keepdims=True)
    xz = np.where(finite, x, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = xz.sum(1, keepdims=True) / n
        d = np.where(finite, x - mean, 0.0)
        std = np.sqrt((d * d).sum(1, keepdims=True) / n)
        z = d / std
    z[~np.isfinite(z)] = 0.0
    return z


def daily_ic(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson correlation of ``a`` and ``b`` across stocks on each day (NaN where undefined).

    Only stocks where both are finite count; a day with fewer than 2 such stocks, or zero
    variance, gives NaN.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 2:
        raise ValueError(f"need two (days, stocks) arrays of equal shape, got {a.shape} and {b.shape}")
    m = np.isfinite(a) & np.isfinite(b)
    n = m.sum(1)
    a0, b0 = np.where(m, a, 0.0), np.where(m, b, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        da = np.where(m, a - (a0.sum(1) / n)[:, None], 0.0)
        db = np.where(m, b - (b0.sum(1) / n)[:, None], 0.0)
        r = (da * db).sum(1) / np.sqrt((da * da).sum(1) * (db * db).sum(1))
    r[(n < 2) | ~np.isfinite(r)] = np.nan
    return r


def daily_rank_ic(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Spearman correlation across stocks on each day (ranks of the finite entries)."""
    from scipy.stats import rankdata

    m = np.isfinite(a) & np.isfinite(b)
    ra = np.where(m, rankdata(np.where(m, a, np.inf), axis=1), np.nan)
    rb = np.where(m, rankdata(np.where(m, b, np.inf), axis=1), np.nan)
    return daily_ic(ra, rb)


def mean_ic(a: np.ndarray, b: np.ndarray) -> float:
    """Average over days of :func:`daily_ic` (days where it is undefined are skipped; 0 if none)."""
    r = daily_ic(a, b)
    return float(np.nanmean(r)) if np.isfinite(r).any() else 0.0


def _row_corr(Z: np.ndarray, z: np.ndarray, days: np.ndarray) -> np.ndarray:
    """Mean over ``days`` of the daily correlation of each ``Z[k]`` with ``z``; all rows are day-centred."""
    num = np.einsum("kds,ds->kd", Z[:, days], z[days])
    den = np.sqrt(np.einsum("kds,kds->kd", Z[:, days], Z[:, days]) * np.einsum("ds,ds->d", z[days], z[days]))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = num / den
    r[~np.isfinite(r)] = np.nan
    return np.array([np.nanmean(x) if np.isfinite(x).any() else 0.0 for x in r])


def lasso_weights(M: np.ndarray, g: np.ndarray, l1_alpha: float = 0.0, iters: int = 200) -> np.ndarray:
    """Minimise ``w'Mw - 2 g'w + l1_alpha |w|_1`` (coordinate descent; exact solve when ``l1_alpha = 0``).

    Coordinate step: ``w_i = soft(g_i - sum_{j != i} M_ij w_j, l1_alpha / 2) / M_ii``.
    """
    M, g = np.asarray(M, float), np.asarray(g, float)
    if g.ndim != 1 or M.shape != (len(g), len(g)):
        raise ValueError(f"need a square M matching g: M {M.shape}, g {g.shape}")
    if not (l1_alpha >= 0 and np.isfinite(l1_alpha)):
        raise ValueError(f"l1_alpha must be a finite number >= 0, got {l1_alpha}")
    if l1_alpha == 0:
        return np.linalg.lstsq(M, g, rcond=None)[0]
    w = np.zeros_like(g)
    for _ in range(iters):
        for i in range(len(g)):
            r = g[i] - M[i] @ w + M[i, i] * w[i]
            w[i] = np.sign(r) * max(abs(r) - l1_alpha / 2, 0.0) / max(M[i, i], 1e-12)
    return w


class AlphaPool:
    """A pool of at most ``capacity`` alphas combined linearly to maximise the IC with ``target``.

    Args:
        capacity: the most alphas kept (the paper uses 10, 20, 50, 100).
        target: ``(days, stocks)`` training-period target (20-day forward return); NaN where unknown.
        l1_alpha: L1 penalty on the weights in AlphaGen's scale (AlphaQCM: 5e-3; 0 gives the plain
            least-squares weights). A lone alpha gets ``w = g`` (its IC), as in AlphaGen.
        max_mutual_ic: a new alpha whose |mutual IC| with a pool member exceeds this is rejected
            (it adds nothing) and the reward is 0, as in AlphaGen's pool (which tests the signed IC).
        tokens: the :class:`TokenSet` the expressions are written in (needed by :meth:`evaluate` on a panel).
        refit_after_eviction: over capacity, refit the weights of the kept alphas. ``False`` (AlphaGen):
            keep the weights of the fit that included the evicted alpha, and if the new alpha is the one
            evicted, keep the previous weights (the pool is then unchanged).
    """

    def __init__(self, capacity: int, target: np.ndarray, l1_alpha: float = 5e-3, max_mutual_ic: float = 0.99,
                 tokens=None, refit_after_eviction: bool = False):
        if int(capacity) != capacity or capacity < 1:
            raise ValueError(f"capacity must be an integer >= 1, got {capacity}")
        if not 0 < max_mutual_ic <= 1:
            raise ValueError(f"max_mutual_ic must be in (0, 1], got {max_mutual_ic}")
        if not (l1_alpha >= 0 and np.isfinite(l1_alpha)):
            raise ValueError(f"l1_alpha must be a finite number >= 0, got {l1_alpha}")
        target = np.asarray(target, dtype=float)
        if target.ndim != 2:
            raise ValueError(f"target must be a (days, stocks) array, got shape {target.shape}")
        self.capacity, self.l1_alpha, self.max_mutual_ic = int(capacity), float(l1_alpha), float(max_mutual_ic)
        self.refit_after_eviction = bool(refit_after_eviction)
        self.target, self.tokens = target, tokens
        self._zt = normalize_by_day(target)  # day-centred target; IC on z-scored rows (missing = day mean)
        self._days = np.isfinite(target).any(1) & np.any(self._zt != 0, 1)
        self.alphas: list[np.ndarray] = []
        self.exprs: list[str] = []
        self.ics = np.zeros(0)
        self.mutual = np.zeros((0, 0))
        self.weights = np.zeros(0)
        self.ic = 0.0
        self.n_evaluated = 0

    def __len__(self) -> int:
        return len(self.alphas)

    def combination(self, alphas: list[np.ndarray] | None = None) -> np.ndarray:
        """The pool's combined alpha ``sum_i w_i z(a_i)`` (on ``alphas`` if given, e.g. test-period values)."""
        alphas = self.alphas if alphas is None else alphas
        if not alphas:
            return np.zeros_like(self.target)
        return np.tensordot(self.weights, np.stack(alphas), axes=1)

    def try_new_expr(self, values: np.ndarray, expr: str = "") -> float:
        """Offer the training-period values of a new alpha; return the pool IC afterwards (the reward).

        ``values`` has the target's shape. An alpha that is all NaN/constant, or a near copy of a
        pool member, is rejected (pool unchanged) and the reward is 0 (AlphaGen's rule).
        """
        values = np.asarray(values, dtype=float)
        if values.shape != self.target.shape:
            raise ValueError(f"values must have shape {self.target.shape}, got {values.shape}")
        self.n_evaluated += 1
        z = normalize_by_day(values)
        if not np.any(z):
            return 0.0
        ic_new = float(_row_corr(z[None], self._zt, self._days)[0])
        mut = _row_corr(np.stack(self.alphas), z, self._days) if self.alphas else np.zeros(0)
        if mut.size and np.nanmax(np.abs(mut)) > self.max_mutual_ic:
            return 0.0
        n = len(self.alphas)
        M = np.eye(n + 1)
        M[:n, :n], M[n, :n], M[:n, n] = self.mutual, mut, mut
        old_weights = self.weights
        self.alphas.append(z)
        self.exprs.append(expr)
        self.ics, self.mutual = np.append(self.ics, ic_new), M
        self.weights = lasso_weights(M, self.ics, self.l1_alpha) if n else self.ics.copy()
        if n + 1 > self.capacity:
            drop = int(np.argmin(np.abs(self.weights)))
            keep = [i for i in range(n + 1) if i != drop]
            self.alphas = [self.alphas[i] for i in keep]
            self.exprs = [self.exprs[i] for i in keep]
            self.ics, self.mutual = self.ics[keep], self.mutual[np.ix_(keep, keep)]
            if self.refit_after_eviction:
                self.weights = lasso_weights(self.mutual, self.ics, self.l1_alpha) if n > 1 else self.ics.copy()
            else:  # AlphaGen: no refit; a new alpha that is evicted at once leaves the old weights
                self.weights = old_weights if drop == n else self.weights[keep]
        self.ic = float(_row_corr(self.combination()[None], self._zt, self._days)[0])
        return self.ic

    def evaluate(self, panel, target: np.ndarray) -> tuple[float, float]:
        """(IC, rank IC) of the pool's combination on another period; the weights stay the fitted ones.

        ``panel`` is either a feature panel (dict name -> ``(days, stocks)``; the members' RPN
        strings are re-evaluated on it with ``self.tokens``) or a list of the members' raw values there.
        """
        if isinstance(panel, dict):
            if self.tokens is None:
                raise ValueError("evaluate on a feature panel needs the pool to be built with tokens=")
            from icml25.papers.alphaqcm.expressions import evaluate_rpn, parse_rpn

            alphas = [evaluate_rpn(parse_rpn(e, self.tokens), self.tokens, panel) for e in self.exprs]
        else:
            alphas = list(panel)
        if len(alphas) != len(self.alphas):
            raise ValueError(f"need {len(self.alphas)} alphas (one per pool member), got {len(alphas)}")
        combo = self.combination([normalize_by_day(a) for a in alphas])
        if not len(self.alphas):
            return 0.0, 0.0
        rk = daily_rank_ic(combo, target)
        return mean_ic(combo, target), float(np.nanmean(rk)) if np.isfinite(rk).any() else 0.0

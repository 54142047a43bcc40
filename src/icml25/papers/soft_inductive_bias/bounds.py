"""Generalisation bounds: countable-hypothesis (Occam) and PAC-Bayes, in Hoeffding and kl-inverse form.

All risks are 0-1 (or any loss in ``[0, loss_range]`` for the Hoeffding forms); logarithms are natural, code
lengths are in bits. References: Langford (2005) "Tutorial on practical prediction theory" for the Occam and
kl forms, Maurer (2004) for the ``log(2 sqrt(n) / delta)`` PAC-Bayes-kl bound, as used by Lotfi et al. (2022)
and cited in Wilson (2025, arXiv 2503.02113).
"""

from __future__ import annotations

import math

import numpy as np


def _check_probability(name: str, value: np.ndarray) -> np.ndarray:
    value = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(value)) or np.any(value < 0) or np.any(value > 1):
        raise ValueError(f"{name} must be a probability in [0, 1], got {value}")
    return value


def _check_delta(delta: float) -> float:
    if not (0 < delta < 1):
        raise ValueError(f"delta must lie in (0, 1), got {delta}")
    return float(delta)


def _check_n(n: int) -> int:
    if int(n) != n or n < 1:
        raise ValueError(f"n must be a positive integer, got {n}")
    return int(n)


def kl_bernoulli(q: np.ndarray | float, p: np.ndarray | float) -> np.ndarray:
    """kl(q || p) = q log(q/p) + (1-q) log((1-q)/(1-p)) between Bernoulli(q) and Bernoulli(p), in nats.

    Uses 0 log 0 = 0; returns inf when p is 0 or 1 and q differs from it.
    """
    q = _check_probability("q", q)
    p = _check_probability("p", p)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(q > 0, q * np.log(q / p), 0.0)
        b = np.where(q < 1, (1 - q) * np.log((1 - q) / (1 - p)), 0.0)
    return a + b


def kl_inverse(q: np.ndarray | float, c: np.ndarray | float, iters: int = 200) -> np.ndarray:
    """Upper kl inverse: the largest p in [q, 1] with kl(q || p) <= c.

    Args:
        q: empirical risk(s) in [0, 1].
        c: budget(s) >= 0 (nats), broadcast against ``q``.
        iters: bisection steps (each halves the bracket; 200 reaches machine precision).

    Returns:
        p with kl(q || p) = c (or 1 when even p -> 1 stays within budget, i.e. q = 1).
    Special cases: c = 0 gives p = q; Pinsker gives p <= q + sqrt(c / 2).
    """
    q = _check_probability("q", q)
    c = np.asarray(c, dtype=float)
    if not np.all(np.isfinite(c)) or np.any(c < 0):
        raise ValueError(f"c must be finite and >= 0, got {c}")
    q, c = np.broadcast_arrays(q, c)
    lo = q.copy()
    # bracket: kl(q||q) = 0 <= c and, by Pinsker, kl(q||q + sqrt(c/2)) >= c (or the bracket ends at 1)
    hi = np.minimum(1.0, q + np.sqrt(c / 2) + 1e-12)
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        inside = kl_bernoulli(q, mid) <= c
        lo = np.where(inside, mid, lo)
        hi = np.where(inside, hi, mid)
    return lo if lo.ndim else lo[()]


def occam_bound(train_err: float, bits: float, n: int, delta: float, loss_range: float = 1.0) -> float:
    """Countable-hypothesis (Occam) bound, Hoeffding form.

    With prior P(h) = 2^{-K(h)} over a prefix-free code, with probability >= 1 - delta for all h:
    ``R(h) <= R_hat(h) + loss_range * sqrt((K(h) log 2 + log(1/delta)) / (2 n))``.
    ``bits = 0`` is Hoeffding's bound for a single fixed hypothesis.
    """
    n, delta = _check_n(n), _check_delta(delta)
    if bits < 0 or not math.isfinite(bits):
        raise ValueError(f"bits must be finite and >= 0, got {bits}")
    if loss_range <= 0:
        raise ValueError(f"loss_range must be > 0, got {loss_range}")
    if not (0 <= train_err <= loss_range):
        raise ValueError(f"train_err must lie in [0, loss_range={loss_range}], got {train_err}")
    return float(train_err + loss_range * math.sqrt((bits * math.log(2) + math.log(1 / delta)) / (2 * n)))


def occam_kl_bound(train_err: float, bits: float, n: int, delta: float) -> float:
    """Countable-hypothesis bound, kl (Chernoff) form, for the 0-1 risk.

    ``kl(R_hat || R) <= (K(h) log 2 + log(1/delta)) / n``, so ``R <= kl_inverse(R_hat, that)``.
    Always at least as tight as :func:`occam_bound` (Pinsker).
    """
    n, delta = _check_n(n), _check_delta(delta)
    if bits < 0 or not math.isfinite(bits):
        raise ValueError(f"bits must be finite and >= 0, got {bits}")
    return float(kl_inverse(train_err, (bits * math.log(2) + math.log(1 / delta)) / n))


def _pac_bayes_budget(kl: float, n: int, delta: float) -> float:
    n, delta = _check_n(n), _check_delta(delta)
    if kl < 0 or not math.isfinite(kl):
        raise ValueError(f"kl must be finite and >= 0, got {kl}")
    return (kl + math.log(2 * math.sqrt(n) / delta)) / n


def pac_bayes_kl_bound(emp_risk: float, kl: float, n: int, delta: float) -> float:
    """PAC-Bayes-kl bound (Maurer 2004) on the Gibbs risk of posterior Q.

    ``kl(R_hat(Q) || R(Q)) <= (KL(Q||P) + log(2 sqrt(n) / delta)) / n``; returns the upper kl inverse.
    """
    return float(kl_inverse(emp_risk, _pac_bayes_budget(kl, n, delta)))


def pac_bayes_sqrt_bound(emp_risk: float, kl: float, n: int, delta: float) -> float:
    """The looser square-root form: ``R_hat(Q) + sqrt((KL(Q||P) + log(2 sqrt(n)/delta)) / (2n))``."""
    _check_probability("emp_risk", emp_risk)
    return float(emp_risk + math.sqrt(_pac_bayes_budget(kl, n, delta) / 2))


def gaussian_kl(mu_q: np.ndarray, cov_q: np.ndarray, mu_p: np.ndarray, cov_p: np.ndarray) -> float:
    """KL(N(mu_q, cov_q) || N(mu_p, cov_p)) in nats, via Cholesky factors.

    ``0.5 [tr(S_p^{-1} S_q) + (mu_p - mu_q)^T S_p^{-1} (mu_p - mu_q) - d + log det S_p - log det S_q]``.
    Both covariances must be symmetric positive definite, shape (d, d); means shape (d,).
    """
    mu_q, mu_p = np.atleast_1d(np.asarray(mu_q, float)), np.atleast_1d(np.asarray(mu_p, float))
    cov_q, cov_p = np.atleast_2d(np.asarray(cov_q, float)), np.atleast_2d(np.asarray(cov_p, float))
    d = mu_q.shape[0]
    if mu_p.shape != (d,) or cov_q.shape != (d, d) or cov_p.shape != (d, d):
        raise ValueError(f"shapes do not match: mu_q {mu_q.shape}, mu_p {mu_p.shape}, cov_q {cov_q.shape}, "
                         f"cov_p {cov_p.shape}")
    try:
        lq, lp = np.linalg.cholesky(cov_q), np.linalg.cholesky(cov_p)
    except np.linalg.LinAlgError:
        raise ValueError("cov_q and cov_p must be positive definite") from None
    from scipy.linalg import solve_triangular

    a = solve_triangular(lp, lq, lower=True)  # L_p^{-1} L_q: tr(S_p^{-1} S_q) = ||a||_F^2
    b = solve_triangular(lp, mu_p - mu_q, lower=True)
    logdet = 2 * (np.sum(np.log(np.diag(lp))) - np.sum(np.log(np.diag(lq))))
    return float(0.5 * (np.sum(a**2) + b @ b - d + logdet))

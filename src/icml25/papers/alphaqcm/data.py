"""A synthetic stock market whose 20-day forward returns load on planted formulaic alphas."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from icml25.papers.alphaqcm.expressions import FEATURES, TokenSet, evaluate_rpn, parse_rpn

DEFAULT_PLANTED = ("close close 10 Mean Div", "close volume 20 Corr")
"""Short-term reversal close/Mean(close,10) (negative loading) and Corr(close, volume, 20) (positive)."""


@dataclass
class SyntheticMarket:
    """OHLCV/vwap panels, the forward-return target and the planted alphas."""

    panel: dict[str, np.ndarray]
    """Feature name -> ``(days, stocks)`` array."""
    target: np.ndarray
    """``Ref(close, -horizon) / close - 1``; NaN in the last ``horizon`` days."""
    planted: tuple[str, ...]
    """RPN strings of the planted alphas."""
    loadings: np.ndarray
    """Loading of the next-day return on each standardised planted alpha."""

    def split(self, start: int, stop: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """The panel and target restricted to days ``[start, stop)``."""
        return {k: v[start:stop] for k, v in self.panel.items()}, self.target[start:stop]


def forward_return(close: np.ndarray, horizon: int = 20) -> np.ndarray:
    """``Ref(close, -horizon) / close - 1`` (NaN for the last ``horizon`` days)."""
    if int(horizon) != horizon or horizon < 1:
        raise ValueError(f"horizon must be a positive integer, got {horizon!r}")
    close = np.asarray(close, dtype=float)
    if close.ndim != 2:
        raise ValueError(f"close must be a (days, stocks) array, got shape {close.shape}")
    out = np.full_like(close, np.nan, dtype=float)
    out[:-horizon] = close[horizon:] / close[:-horizon] - 1
    return out


def synthetic_market(n_stocks: int = 100, n_days: int = 750, planted_alphas: tuple[str, ...] = DEFAULT_PLANTED,
                     noise: float = 1.0, seed: int = 0, loadings: tuple[float, ...] = (-2.0, 1.0),
                     signal_vol: float = 0.004, horizon: int = 20, tokens: TokenSet | None = None) -> SyntheticMarket:
    """Simulate a market day by day in which returns load on planted formulaic signals.

    Each day ``t`` the planted alphas are evaluated on the history up to ``t`` and
    z-scored across stocks (``s_k(t)``); the next daily log-return is
    ``signal_vol * sum_k loading_k s_k(t) + noise * 0.02 * (0.6 e_market + 0.8 e_idio)``.
    Volume follows a log-AR(1) plus a term in ``|return|``; open/high/low/vwap are
    noisy transforms of close, so ratios of prices act as correlated decoys of the
    reversal signal. The 20-day forward return therefore correlates with the planted
    alphas (strength set by ``signal_vol / noise``).

    Args:
        n_stocks, n_days: panel size (``n_days > 60 + horizon``).
        planted_alphas: RPN strings over the features (default: reversal and price-volume correlation).
        noise: scale of the return noise (larger = weaker signal).
        seed: random seed.
        loadings: one loading per planted alpha.
        signal_vol: daily return per unit of standardised signal.
        horizon: forward-return horizon in days (the paper uses 20).
        tokens: token set in which to parse the planted alphas (default: the full paper set).
    """
    if n_stocks < 2:
        raise ValueError(f"n_stocks must be >= 2, got {n_stocks}")
    if n_days <= 60 + horizon:
        raise ValueError(f"n_days must exceed 60 + horizon = {60 + horizon}, got {n_days}")
    if not (noise > 0 and np.isfinite(noise)):
        raise ValueError(f"noise must be a finite number > 0, got {noise}")
    if len(loadings) != len(planted_alphas):
        raise ValueError(f"need one loading per planted alpha: {len(planted_alphas)} alphas, {len(loadings)} loadings")
    tokens = tokens or TokenSet()
    seqs = [parse_rpn(p, tokens) for p in planted_alphas]
    rng = np.random.default_rng(seed)
    warm = 60  # days simulated without signal so rolling windows are defined
    logc = np.zeros((n_days, n_stocks))
    logv = np.zeros((n_days, n_stocks))
    logc[0] = rng.normal(3.0, 0.5, n_stocks)
    v_level = rng.normal(13.0, 0.7, n_stocks)
    logv[0] = v_level
    eps = 0.02 * noise * (0.6 * rng.standard_normal((n_days, 1)) + 0.8 * rng.standard_normal((n_days, n_stocks)))
    vshock = rng.standard_normal((n_days, n_stocks))
    load = np.asarray(loadings, dtype=float)
    lookback = 40  # every planted signal needs at most this much history
    for t in range(1, n_days):
        r = eps[t]
        if t - 1 >= warm:
            lo = t - lookback
            hist = {"close": np.exp(logc[lo:t]), "volume": np.exp(logv[lo:t])}
            hist.update({f: hist["close"] for f in FEATURES if f not in hist})
            s = np.stack([evaluate_rpn(q, tokens, hist)[-1] for q in seqs])
            s = (s - s.mean(1, keepdims=True)) / (s.std(1, keepdims=True) + 1e-12)
            r = r + signal_vol * (load @ np.nan_to_num(s))
        logc[t] = logc[t - 1] + r
        logv[t] = v_level + 0.8 * (logv[t - 1] - v_level) + 0.3 * vshock[t] + 8.0 * np.abs(r)
    close = np.exp(logc)
    prev = np.vstack([close[:1], close[:-1]])
    opn = prev * np.exp(0.005 * rng.standard_normal(close.shape))
    high = np.maximum(opn, close) * np.exp(np.abs(0.008 * rng.standard_normal(close.shape)))
    low = np.minimum(opn, close) * np.exp(-np.abs(0.008 * rng.standard_normal(close.shape)))
    vwap = (high + low + close) / 3 * np.exp(0.002 * rng.standard_normal(close.shape))
    panel = {"open": opn, "close": close, "high": high, "low": low, "volume": np.exp(logv), "vwap": vwap}
    return SyntheticMarket(panel, forward_return(close, horizon), tuple(planted_alphas), load)

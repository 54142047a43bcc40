"""Data for CDVI: a port of the official Gibbs generator with a censor-dependent posterior, and the
survival data sets bundled with scikit-survival (no download)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from icml25.papers.cdvi.model import make_survival_array

CENSOR_LEVELS = {"no_censor": 16.0, "very_low": 16.0, "low": 8.5, "medium": 5.5, "high": 0.0, "all_censor": 16.0}
"""Mean c_level of the censoring time for each level of the official ``datasets/simulate.py``."""
BUNDLED = ("whas500", "gbsg2", "flchain")
"""Real data sets used by the quick reproduction (all ship inside scikit-survival)."""


@dataclass(frozen=True)
class SyntheticSurvival:
    """A draw of the Gibbs generator, with the oracle quantities.

    Attributes:
        X: covariates ``(n, 1)``.
        y: structured array (event, time) with ``time = min(u, c)`` (``u`` itself when no censoring).
        z: latent ``(n, 2)`` drawn from the true posterior p(z | x, y, delta).
        u: uncensored event time ``(n,)``.
        posterior_mean: mean of p(z | x, y, delta) = sign(delta) * 3 / (1 + e^{y + x}) * (1, 1), ``(n, 2)``.
    """

    X: np.ndarray
    y: np.ndarray
    z: np.ndarray
    u: np.ndarray
    posterior_mean: np.ndarray


def true_posterior_mean(x, y, event) -> np.ndarray:
    """Mean of the generator's posterior p(z | x, y, delta): ``(2 delta - 1) * 3 / (1 + exp(y + x))`` in both
    coordinates; shape ``(n, 2)``."""
    x, y = np.asarray(x, float).ravel(), np.asarray(y, float).ravel()
    m = (2.0 * np.asarray(event, float).ravel() - 1.0) * 3.0 / (1.0 + np.exp(np.clip(y + x, -700, 700)))
    return np.stack([m, m], axis=1)


def simulate_censored_gibbs(n: int, level: str = "high", burn_in: int = 25000, noise_log_sigma: float = 1.0,
                            seed: int | None = 0) -> SyntheticSurvival:
    """Gibbs chain of the official generator, whose posterior p(z | x, y, delta) depends on delta.

    One sweep, given the current z in R^2:
    x ~ N(1, 1); u = x z_1 + z_2 + e^{noise_log_sigma} N(0, 1); c = c_level + e^2 N(0, 1);
    delta = 1[c > u] (constant 1 for ``no_censor``, 0 for ``all_censor``); y = u if delta else c;
    then z ~ N(true_posterior_mean(x, y, delta), I_2). The first ``burn_in`` sweeps are dropped.
    (The official run passes ``sigma = 1`` into the log-scale argument, so the noise s.d. is e.)

    Args:
        n: samples kept after burn-in.
        level: one of :data:`CENSOR_LEVELS`.
        burn_in: sweeps discarded (official: 25000).
        noise_log_sigma: log standard deviation of the event-time noise.
        seed: random seed.

    Returns:
        :class:`SyntheticSurvival`.
    """
    if level not in CENSOR_LEVELS:
        raise ValueError(f"level must be one of {tuple(CENSOR_LEVELS)}, got {level!r}")
    if int(n) < 1 or int(burn_in) < 0:
        raise ValueError(f"need n >= 1 and burn_in >= 0, got n={n!r}, burn_in={burn_in!r}")
    rng = np.random.default_rng(seed)
    total = int(n) + int(burn_in)
    # all randomness is drawn up front; the loop only carries the chain's state z (inherently sequential)
    xs = rng.normal(1.0, 1.0, total)
    noise_u = rng.normal(0.0, math.exp(noise_log_sigma), total)
    cs = CENSOR_LEVELS[level] + rng.normal(0.0, math.exp(2.0), total)
    eps = rng.normal(0.0, 1.0, (total, 2))
    fixed = {"no_censor": True, "all_censor": False}.get(level)
    xl, nl, cl, e1, e2 = xs.tolist(), noise_u.tolist(), cs.tolist(), eps[:, 0].tolist(), eps[:, 1].tolist()
    ys, ds, us, zs = np.empty(total), np.empty(total, bool), np.empty(total), np.empty((total, 2))
    z1 = z2 = 0.0
    for i in range(total):
        u = xl[i] * z1 + z2 + nl[i]
        d = (cl[i] > u) if fixed is None else fixed
        y = u if d else cl[i]
        m = (3.0 if d else -3.0) / (1.0 + math.exp(min(y + xl[i], 700.0)))
        z1, z2 = m + e1[i], m + e2[i]
        ys[i], ds[i], us[i], zs[i] = y, d, u, (z1, z2)
    keep = slice(int(burn_in), total)
    X = xs[keep, None]
    y_surv = make_survival_array(ds[keep], ys[keep], allow_negative=True)  # u and c live on the whole real line
    return SyntheticSurvival(X=X, y=y_surv, z=zs[keep], u=us[keep],
                             posterior_mean=true_posterior_mean(X[:, 0], ys[keep], ds[keep]))


def load_bundled(name: str) -> tuple[np.ndarray, np.ndarray]:
    """A survival data set shipped with scikit-survival, one-hot encoded (not yet standardised).

    Missing numeric values get the median plus a missing-indicator column; missing categories become their
    own level. Times are clipped below at 0.5 (flchain has follow-up times of 0 days) so log-time exists.
    flchain's ``chapter`` column (cause of death, present only for subjects who died) is dropped: it leaks the
    event indicator.

    Args:
        name: ``"whas500"``, ``"gbsg2"`` or ``"flchain"``.

    Returns:
        ``(X, y)``: float array ``(n, p)`` and structured array (event, time).
    """
    if name not in BUNDLED:
        raise ValueError(f"name must be one of {BUNDLED}, got {name!r}")
    try:
        import pandas as pd
        from sksurv import datasets
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError("the bundled survival data need scikit-survival: pip install 'icml25[survival]'") from exc
    df, y = getattr(datasets, f"load_{name}")()
    if name == "flchain":  # the cause of death is recorded only for the dead: it leaks the event indicator
        df = df.drop(columns=["chapter"])
    cols = []
    for c in df.columns:
        col = df[c]
        if isinstance(col.dtype, pd.CategoricalDtype) or col.dtype == object:
            col = col.astype(object).where(col.notna(), "missing").astype(str)
            cols.append(pd.get_dummies(col, prefix=c, drop_first=True, dtype=float))
        else:
            col = col.astype(float)
            if col.isna().any():
                cols.append(col.isna().astype(float).rename(f"{c}_missing"))
                col = col.fillna(col.median())
            cols.append(col.to_frame())
    X = pd.concat(cols, axis=1).to_numpy(dtype=float)
    event, time = y[y.dtype.names[0]], y[y.dtype.names[1]]
    return X, make_survival_array(event, np.maximum(time.astype(float), 0.5))


def split_indices(n: int, fractions=(0.7, 0.15, 0.15), seed: int = 0) -> list[np.ndarray]:
    """Row indices of a random train/validation/test split of ``n`` rows (``n`` a positive int)."""
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"n must be a positive int (the number of rows), got {type(n).__name__} {n!r}")
    if n < 1:
        raise ValueError(f"n must be a positive int (the number of rows), got {n!r}")
    if len(fractions) != 3 or not math.isclose(sum(fractions), 1.0) or min(fractions) <= 0:
        raise ValueError(f"fractions must be three positive numbers summing to 1, got {fractions!r}")
    perm = np.random.default_rng(seed).permutation(n)
    a, b = int(round(fractions[0] * n)), int(round((fractions[0] + fractions[1]) * n))
    return [perm[:a], perm[a:b], perm[b:]]


def split_standardise(X: np.ndarray, y: np.ndarray, fractions=(0.7, 0.15, 0.15), seed: int = 0):
    """Random train/validation/test split; columns standardised with the training mean and s.d.

    Returns:
        ``((X_tr, y_tr), (X_va, y_va), (X_te, y_te))``.
    """
    parts = split_indices(X.shape[0], fractions, seed)
    mu, sd = X[parts[0]].mean(0), X[parts[0]].std(0)
    sd = np.where(sd > 0, sd, 1.0)
    return tuple(((X[p] - mu) / sd, y[p]) for p in parts)

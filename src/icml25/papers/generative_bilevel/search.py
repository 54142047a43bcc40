"""Hyper-parameter search baselines over a positive scalar (lambda), on a log scale: grid, random, Bayesian.

Each maximises a noisy black box ``objective(lam) -> float`` with a fixed number of calls and returns the best
observed point. Bayesian optimisation uses scikit-learn's Gaussian process with expected improvement
(botorch is not a dependency).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from icml25.common.checks import ConfigError, check_ranges


def _check_range(where: str, lo: float, hi: float, n_calls: int) -> None:
    """The search interval ``0 < lo < hi < inf`` and a positive number of calls."""
    check_ranges(where, {"lo": lo, "hi": hi, "n_calls": n_calls}, finite=("lo", "hi"), positive=("lo", "n_calls"),
                 integer=("n_calls",), at_least={"hi": lo})
    if hi == lo:
        raise ConfigError(f"{where}.hi must be > lo={lo}, got {hi!r}")


def _best(xs: list[float], ys: list[float]) -> tuple[float, np.ndarray]:
    hist = np.column_stack([xs, ys])
    return float(xs[int(np.argmax(ys))]), hist


def grid_search(objective: Callable[[float], float], lo: float, hi: float, n_calls: int
                ) -> tuple[float, np.ndarray]:
    """Evaluate ``n_calls`` log-spaced points in [lo, hi]; returns (best lambda, (n_calls, 2) history)."""
    _check_range("grid_search", lo, hi, n_calls)
    xs = list(np.geomspace(lo, hi, int(n_calls))) if n_calls > 1 else [float(np.sqrt(lo * hi))]
    return _best(xs, [float(objective(x)) for x in xs])


def random_search(objective: Callable[[float], float], lo: float, hi: float, n_calls: int,
                  rng: np.random.Generator) -> tuple[float, np.ndarray]:
    """Evaluate ``n_calls`` log-uniform draws in [lo, hi]; returns (best lambda, history)."""
    _check_range("random_search", lo, hi, n_calls)
    xs = list(np.exp(rng.uniform(np.log(lo), np.log(hi), int(n_calls))))
    return _best(xs, [float(objective(x)) for x in xs])


def expected_improvement(mu: np.ndarray, sd: np.ndarray, best: float) -> np.ndarray:
    """EI for maximisation: (mu - best) Phi(z) + sd phi(z), z = (mu - best)/sd (0 where sd = 0)."""
    from scipy.stats import norm

    sd = np.maximum(sd, 1e-12)
    z = (mu - best) / sd
    return (mu - best) * norm.cdf(z) + sd * norm.pdf(z)


def bayes_opt_search(objective: Callable[[float], float], lo: float, hi: float, n_calls: int,
                     rng: np.random.Generator, n_init: int = 3, n_candidates: int = 256
                     ) -> tuple[float, np.ndarray]:
    """GP (Matern 5/2 + white noise, on log lambda) with expected improvement over a candidate grid.

    The first ``min(n_init, n_calls)`` points are log-uniform draws. Returns the best *observed* point.
    """
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

    _check_range("bayes_opt_search", lo, hi, n_calls)
    u_lo, u_hi = np.log(lo), np.log(hi)
    us = list(rng.uniform(u_lo, u_hi, min(int(n_init), int(n_calls))))
    ys = [float(objective(np.exp(u))) for u in us]
    cand = np.linspace(u_lo, u_hi, n_candidates)
    while len(us) < n_calls:
        kernel = ConstantKernel(1.0) * Matern(length_scale=1.0, nu=2.5) + WhiteKernel(1e-2)
        gp = GaussianProcessRegressor(kernel, normalize_y=True, random_state=0, n_restarts_optimizer=1)
        with warnings.catch_warnings():  # hyper-parameters at their bounds are expected with few points
            warnings.simplefilter("ignore", ConvergenceWarning)
            gp.fit(np.array(us)[:, None], np.array(ys))
        mu, sd = gp.predict(cand[:, None], return_std=True)
        u = float(cand[int(np.argmax(expected_improvement(mu, sd, max(ys))))])
        us.append(u)
        ys.append(float(objective(np.exp(u))))
    return _best(list(np.exp(us)), ys)

"""1-D viscous Burgers data (the FNO benchmark's operator a = u(., 0) -> u(., T)), generated here.

u_t + (u^2 / 2)_x = nu u_xx on the periodic unit interval. Initial conditions are drawn from the
Gaussian random field N(0, 625 (-Delta + 25 I)^{-2}) of Li et al. (2021). The solver is
pseudo-spectral with 2/3-rule dealiasing and integrating-factor RK4 (diffusion exact, the
nonlinear term by RK4), on a fine grid, subsampled to the requested resolution.
"""

from __future__ import annotations

import math

import numpy as np


def grf_1d(n: int, res: int, seed: int | np.random.Generator, sigma2: float = 625.0, tau2: float = 25.0,
           alpha: float = 2.0) -> np.ndarray:
    """Samples of N(0, sigma2 (-Delta + tau2 I)^{-alpha}) on the periodic unit interval, shape (n, res).

    Karhunen-Loeve expansion in the real Fourier basis {1, sqrt2 cos 2 pi k x, sqrt2 sin 2 pi k x}
    whose -Delta eigenvalues are (2 pi k)^2; modes up to res/2 - 1 (the Nyquist mode is left out).
    """
    if n < 1 or res < 4 or res % 2:
        raise ValueError(f"need n >= 1 and an even res >= 4, got n={n!r}, res={res!r}")
    rng = np.random.default_rng(seed)
    k = np.arange(res // 2 + 1)
    std = np.sqrt(sigma2 * ((2 * np.pi * k) ** 2 + tau2) ** (-alpha))
    std[-1] = 0.0
    xi = rng.standard_normal((n, k.size)) + 1j * rng.standard_normal((n, k.size))
    coef = res * std * xi / math.sqrt(2.0)
    coef[:, 0] = res * std[0] * xi[:, 0].real  # the mean: real, variance sigma2 / tau2^alpha
    return np.fft.irfft(coef, n=res, axis=-1)


def burgers_solve(u0: np.ndarray, nu: float, T: float = 1.0, dt: float | None = None, cfl: float = 0.8) -> np.ndarray:
    """Solve u_t + u u_x = nu u_xx on [0, 1) periodic from u0 (shape (..., n)) up to time T.

    Integrating-factor RK4 in Fourier space with the 2/3 dealiasing rule. ``dt`` defaults to
    ``cfl * dx / max|u0|`` (max|u| does not grow for Burgers), rounded so that T is reached exactly.
    """
    u0 = np.asarray(u0, dtype=float)
    if not (nu > 0 and T > 0):
        raise ValueError(f"nu and T must be positive, got nu={nu!r}, T={T!r}")
    if not np.all(np.isfinite(u0)):
        raise ValueError("u0 contains NaN or inf")
    n = u0.shape[-1]
    if dt is None:
        dt = cfl / n / max(float(np.abs(u0).max()), 1e-8)
    steps = max(1, math.ceil(T / dt))
    dt = T / steps
    k = 2 * np.pi * np.fft.rfftfreq(n, d=1.0 / n)
    dealias = np.arange(k.size) < (2 * n) // 6 + 1
    g = -0.5j * k * dealias * dt  # dt * N(v) = dt * (-(1/2) i k F(u^2))
    e_half = np.exp(-nu * k**2 * dt / 2)
    e_full = e_half**2

    def nonlin(v: np.ndarray) -> np.ndarray:
        return g * np.fft.rfft(np.fft.irfft(v, n=n, axis=-1) ** 2, axis=-1)

    v = np.fft.rfft(u0, axis=-1)
    for _ in range(steps):
        a = nonlin(v)
        b = nonlin(e_half * (v + a / 2))
        c = nonlin(e_half * v + b / 2)
        d = nonlin(e_full * v + e_half * c)
        v = e_full * v + (e_full * a + 2 * e_half * (b + c) + d) / 6
    return np.fft.irfft(v, n=n, axis=-1)


def burgers_dataset(n: int, res: int = 256, nu: float = 0.01, T: float = 1.0, seed: int = 0,
                    solver_res: int = 1024) -> tuple[np.ndarray, np.ndarray]:
    """n pairs (a, u) with a ~ GRF, u = Burgers solution at time T, both subsampled to ``res`` points.

    Returns float32 arrays of shape (n, res). ``solver_res`` must be a multiple of ``res``.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n!r}")
    if res < 4 or solver_res % res:
        raise ValueError(f"solver_res ({solver_res!r}) must be a multiple of res ({res!r}), res >= 4")
    a = grf_1d(n, solver_res, seed)
    u = burgers_solve(a, nu, T)
    step = solver_res // res
    return a[:, ::step].astype(np.float32), u[:, ::step].astype(np.float32)

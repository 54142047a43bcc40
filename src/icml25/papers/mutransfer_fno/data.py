"""1-D viscous Burgers data (the FNO benchmark's operator a = u(., 0) -> u(., T)), generated here.

u_t + (u^2 / 2)_x = nu u_xx on the periodic unit interval. Initial conditions are drawn from the
Gaussian random field N(0, 625 (-Delta + 25 I)^{-2}) of Li et al. (2021). The solver is
pseudo-spectral with 2/3-rule dealiasing and integrating-factor RK4 (diffusion exact, the
nonlinear term by RK4), on a fine grid, subsampled to the requested resolution.

:func:`load_paper_dataset` reads the FNO benchmark files of Li et al. (2021) instead (Burgers, Darcy,
Navier-Stokes) from a user's folder; nothing is downloaded.
"""

from __future__ import annotations

import math
from pathlib import Path

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


# --- the FNO benchmark files of Li et al. (2021), read from a user's folder (nothing is downloaded) ---

PAPER_DATASETS = ("burgers", "darcy", "navier_stokes")
"""Data sets :func:`load_paper_dataset` reads (the FNO benchmark files of Li et al. 2021)."""
PAPER_FILES = {"burgers": ("burgers_data_R10.mat",),
               "darcy": ("piececonst_r421_N1024_smooth1.mat", "piececonst_r421_N1024_smooth2.mat"),
               "navier_stokes": ("ns_V1e-3_N5000_T50.mat",)}
"""File names of each data set, as Li et al.'s data release names them (Darcy: training file, then test file)."""
PAPER_VARIABLES = {"burgers": ("a", "u"), "darcy": ("coeff", "sol"), "navier_stokes": ("a", "u")}
"""MATLAB variables read from each file (input, target; the Navier-Stokes file's ``t`` = 1..50 is not needed)."""
DEFAULT_STRIDES = {"burgers": 8, "darcy": 5, "navier_stokes": 1}
"""Grid stride of Li et al.'s scripts: Burgers 8192 -> 1024 (``fourier_1d.py``, sub = 2^3), Darcy 421 -> 85
(``fourier_2d.py``, r = 5; r = 10 gives 43), Navier-Stokes 64 -> 64."""


def _layout(name: str) -> str:
    files = ", ".join(f"<root>/{f}" for f in PAPER_FILES[name])
    return (f"the {name} data set needs {files} (Li et al.'s FNO benchmark files, unchanged, as linked from the "
            f"README of github.com/zongyi-li/fourier_neural_operator)")


def read_mat(path: str | Path, variables: tuple[str, ...], last_index: dict[str, int] | None = None,
             ) -> dict[str, np.ndarray]:
    """Variables of a MATLAB file in MATLAB's axis order, as the FNO code's ``MatReader`` reads them.

    Version 4-7.2 files are read with ``scipy.io.loadmat``; version 7.3 files (HDF5, e.g. the Navier-Stokes file)
    with h5py, whose arrays come in reversed axis order and are transposed back. ``last_index`` takes one index of
    a variable's last MATLAB axis before anything else is read (one time step of a (N, s, s, T) trajectory: from
    an HDF5 file only that slice is read). Raises FileNotFoundError for a missing file and ValueError for a
    missing variable or an out-of-range index.
    """
    import scipy.io

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found")
    last_index = last_index or {}
    major, _ = scipy.io.matlab.matfile_version(str(path))
    out: dict[str, np.ndarray] = {}
    if major < 2:  # MATLAB v4 (0) and v5-v7.2 (1)
        data = scipy.io.loadmat(str(path), variable_names=list(variables))
        for v in variables:
            if v not in data:
                raise ValueError(f"{path} has no variable {v!r} (expected {', '.join(variables)})")
            x = data[v]
            if v in last_index:
                x = _take_last(x, last_index[v], path, v)
            out[v] = x
        return out
    try:
        import h5py
    except ImportError as exc:  # pragma: no cover - h5py is in the [data] extra
        raise ImportError(f"{path} is a MATLAB v7.3 (HDF5) file: pip install h5py (or 'icml25[data]')") from exc
    with h5py.File(path, "r") as f:
        for v in variables:
            if v not in f:
                raise ValueError(f"{path} has no variable {v!r} (expected {', '.join(variables)})")
            ds = f[v]
            if v in last_index:  # MATLAB's last axis is the HDF5 dataset's first
                i = last_index[v]
                if not -ds.shape[0] <= i < ds.shape[0]:
                    raise ValueError(f"{path}: index {i} of {v!r}'s last axis is out of range (size {ds.shape[0]})")
                out[v] = np.asarray(ds[i]).transpose()
            else:
                out[v] = np.asarray(ds[()]).transpose()
    return out


def _take_last(x: np.ndarray, i: int, path: Path, name: str) -> np.ndarray:
    if not -x.shape[-1] <= i < x.shape[-1]:
        raise ValueError(f"{path}: index {i} of {name!r}'s last axis is out of range (size {x.shape[-1]})")
    return x[..., i]


def load_paper_dataset(name: str, root: str | Path, n_train: int, n_test: int, stride: int = 0,
                       time_index: int = 9) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(a_train, u_train, a_test, u_test)`` of one FNO benchmark data set read from ``root`` (float32).

    The files are Li et al.'s (2021) FNO benchmark data, unchanged, as linked from the README of
    github.com/zongyi-li/fourier_neural_operator (the muTransfer-FNO paper's own data release,
    LDA1020/muTransfer-FNO-data, could not be read here, so its layout is not supported):

    * ``burgers``: ``<root>/burgers_data_R10.mat`` (MATLAB v5; ``a`` initial conditions and ``u`` solutions at
      T = 1, each (2048, 8192)). Train = the first ``n_train`` rows, test = the last ``n_test`` (``fourier_1d.py``).
      Arrays (n, s).
    * ``darcy``: ``<root>/piececonst_r421_N1024_smooth1.mat`` (training) and ``..._smooth2.mat`` (test), MATLAB
      v5, ``coeff`` (permeability) and ``sol`` (pressure), each (1024, 421, 421). Train = the first ``n_train``
      of smooth1, test = the first ``n_test`` of smooth2 (``fourier_2d.py``). Arrays (n, s, s).
    * ``navier_stokes``: ``<root>/ns_V1e-3_N5000_T50.mat`` (MATLAB v7.3/HDF5, read with h5py; a v5 copy is read
      too), ``a`` the vorticity at t = 0 (5000, 64, 64), ``u`` at t = ``t`` (5000, 64, 64, 50), ``t`` = 1..50.
      The operator is w(., 0) -> w(., t[time_index]) (index 9: t = 10). Train = the first ``n_train``, test = the
      last ``n_test`` (``fourier_3d.py``). Arrays (n, s, s).

    Every grid is subsampled by ``stride`` (0: :data:`DEFAULT_STRIDES`, the FNO scripts' own: 8192 -> 1024,
    421 -> 85, 64 -> 64) along every grid axis (``x[:, ::stride, ::stride]`` in 2-D). Nothing is normalised
    (the FNO scripts' pointwise Gaussian normaliser is not applied). The files are checked before anything is
    read: a missing one raises FileNotFoundError naming it and the expected layout; too few samples or a wrong
    shape raise ValueError.
    """
    if name not in PAPER_DATASETS:
        raise ValueError(f"name must be one of {PAPER_DATASETS}, got {name!r}")
    for key, value in (("n_train", n_train), ("n_test", n_test)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{key} must be a positive integer, got {value!r}")
    if isinstance(stride, bool) or not isinstance(stride, (int, np.integer)) or stride < 0:
        raise ValueError(f"stride must be a non-negative integer (0: the FNO scripts' own), got {stride!r}")
    if isinstance(time_index, bool) or not isinstance(time_index, (int, np.integer)):
        raise ValueError(f"time_index must be an integer, got {time_index!r}")
    stride = int(stride) or DEFAULT_STRIDES[name]
    root = Path(root)
    paths = [root / f for f in PAPER_FILES[name]]
    for p in paths:
        if not p.is_file():
            raise FileNotFoundError(f"{p} not found: {_layout(name)}")
    va, vu = PAPER_VARIABLES[name][:2]
    d = 1 if name == "burgers" else 2
    grid = (slice(None),) + (slice(None, None, stride),) * d

    def pair(data: dict[str, np.ndarray], path: Path) -> tuple[np.ndarray, np.ndarray]:
        a, u = data[va], data[vu]
        if a.ndim != d + 1 or a.shape != u.shape:
            raise ValueError(f"{path}: {va!r} and {vu!r} must be (n, {', '.join(['s'] * d)}) arrays of one shape, "
                             f"got {a.shape} and {u.shape}")
        return a, u

    if name == "darcy":
        train, test = (pair(read_mat(p, (va, vu)), p) for p in paths)
        _need(len(train[0]), n_train, paths[0])
        _need(len(test[0]), n_test, paths[1])
        parts = (train[0][:n_train], train[1][:n_train], test[0][:n_test], test[1][:n_test])
    else:
        path = paths[0]
        if name == "burgers":
            a, u = pair(read_mat(path, (va, vu)), path)
        else:
            a, u = pair(read_mat(path, (va, vu), last_index={vu: time_index}), path)
        _need(len(a), n_train + n_test, path)
        parts = (a[:n_train], u[:n_train], a[-n_test:], u[-n_test:])
    return tuple(np.ascontiguousarray(x[grid], dtype=np.float32) for x in parts)  # type: ignore[return-value]


def _need(have: int, need: int, path: Path) -> None:
    if have < need:
        raise ValueError(f"{path} holds {have} samples, the run needs {need}")

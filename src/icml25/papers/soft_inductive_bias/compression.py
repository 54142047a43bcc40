"""Compression bounds: a small MLP trained in a random subspace, quantised and entropy coded.

After Lotfi et al. (2022), cited by Wilson (2025, arXiv 2503.02113): parameters theta = theta_0 + P z with a
fixed random projection P (d x k, unit-norm columns) and a fixed random initialisation theta_0, both drawn
from a seed chosen before seeing the data (part of the prior). Only z (k numbers) is trained, then quantised
to L levels spread uniformly between its minimum and maximum, and coded with an adaptive (Laplace) arithmetic
code. The code length K(h) in bits enters the countable-hypothesis bound in kl form,

    R(h) <= kl^{-1}( R_hat(h), (K(h) log 2 + log(|grid| / delta)) / n ),

where the union bound over the (k, L) hyperparameter grid is added to log(1/delta). A model that fits true
labels with few bits gets a non-vacuous bound; one asked to fit random labels cannot.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import gammaln, log_softmax
from threadpoolctl import threadpool_limits

from icml25.common.checks import check_fields
from icml25.papers.soft_inductive_bias.bounds import occam_kl_bound

FLOAT_BITS = 32
"""Bits to store each end of the quantisation range (float32)."""


@dataclass(frozen=True)
class CompressionBoundConfig:
    """Settings of :func:`subspace_compression_bound`: the (k x L) grid, the MLP, its training and the bound's
    confidence (after Lotfi et al. 2022; the countable-hypothesis bound of Sec. 3, second-hand).
    ``subspace_compression_bound(X, y, **vars(cfg))`` computes the bound with them."""

    dims: tuple[int, ...] = (8, 16, 32, 64)
    """Random-subspace dimensions k, each in [1, 10^5] (a dense n_params x k basis per k)."""
    levels: tuple[int, ...] = (16,)
    """Quantisation level counts L, each in [2, 10^6]."""
    n_hidden: int = 32
    """Hidden units of the tanh MLP, in [1, 10^5]."""
    steps: int = 500
    """Full-batch Adam steps on the subspace coordinates z, in [1, 10^7]."""
    lr: float = 0.05
    """Adam step size, > 0."""
    delta: float = 0.05
    """Confidence of the bound, in (0, 1) (split evenly over the k x L grid)."""

    def __post_init__(self) -> None:
        check_fields(self, integer=("dims", "levels", "n_hidden", "steps"), finite=("lr", "delta"),
                     positive=("dims", "n_hidden", "steps", "lr"), at_least={"levels": 2}, open_fraction=("delta",),
                     nonempty=("dims", "levels"),
                     at_most={"dims": 10**5, "levels": 10**6, "n_hidden": 10**5, "steps": 10**7})


class SubspaceMLP:
    """Two-layer tanh MLP whose flat parameter vector is theta_0 + P z (NumPy, full-batch gradients)."""

    def __init__(self, n_in: int, n_hidden: int, n_out: int, k: int, seed: int):
        rng = np.random.default_rng(seed)
        self.shapes = [(n_in, n_hidden), (n_hidden,), (n_hidden, n_out), (n_out,)]
        self.sizes = [int(np.prod(s)) for s in self.shapes]
        d = sum(self.sizes)
        theta0 = [rng.normal(0, 1 / math.sqrt(n_in), (n_in, n_hidden)), np.zeros(n_hidden),
                  rng.normal(0, 1 / math.sqrt(n_hidden), (n_hidden, n_out)), np.zeros(n_out)]
        self.theta0 = np.concatenate([t.ravel() for t in theta0])
        P = rng.normal(size=(d, k))
        self.P = P / np.linalg.norm(P, axis=0)
        self.k, self.d = k, d

    def _unpack(self, theta: np.ndarray) -> list[np.ndarray]:
        parts = np.split(theta, np.cumsum(self.sizes)[:-1])
        return [p.reshape(s) for p, s in zip(parts, self.shapes)]

    def logits(self, z: np.ndarray, X: np.ndarray) -> np.ndarray:
        W1, b1, W2, b2 = self._unpack(self.theta0 + self.P @ z)
        return np.tanh(X @ W1 + b1) @ W2 + b2

    def loss_and_grad(self, z: np.ndarray, X: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
        """Mean cross-entropy and its gradient with respect to z (chain rule through P)."""
        W1, b1, W2, b2 = self._unpack(self.theta0 + self.P @ z)
        h = np.tanh(X @ W1 + b1)
        logp = log_softmax(h @ W2 + b2, axis=1)
        n = len(y)
        loss = -float(np.mean(logp[np.arange(n), y]))
        g_out = np.exp(logp)
        g_out[np.arange(n), y] -= 1.0
        g_out /= n
        g_h = (g_out @ W2.T) * (1 - h**2)
        grad_theta = np.concatenate([(X.T @ g_h).ravel(), g_h.sum(0), (h.T @ g_out).ravel(), g_out.sum(0)])
        return loss, self.P.T @ grad_theta


def train_subspace(model: SubspaceMLP, X: np.ndarray, y: np.ndarray, steps: int, lr: float) -> np.ndarray:
    """Full-batch Adam (beta = 0.9, 0.999) on z from z = 0; returns z.

    The matrices are small, so BLAS runs single-threaded here (multi-threading them is 10x slower on a
    busy machine).
    """
    z, m, v = np.zeros(model.k), np.zeros(model.k), np.zeros(model.k)
    with threadpool_limits(limits=1):
        for t in range(1, steps + 1):
            _, g = model.loss_and_grad(z, X, y)
            m = 0.9 * m + 0.1 * g
            v = 0.999 * v + 0.001 * g**2
            z -= lr * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
    return z


def quantise_uniform(z: np.ndarray, levels: int) -> tuple[np.ndarray, np.ndarray]:
    """Nearest of ``levels`` equally spaced values between float32(min z) and float32(max z).

    Returns (symbols in 0..levels-1, quantised z).
    """
    if levels < 2:
        raise ValueError(f"levels must be >= 2, got {levels}")
    z = np.asarray(z, dtype=float)
    if z.ndim != 1 or z.size == 0 or not np.all(np.isfinite(z)):
        raise ValueError(f"z must be a non-empty, finite 1-D array, got shape {z.shape}")
    lo, hi = float(np.float32(z.min())), float(np.float32(z.max()))
    grid = np.linspace(lo, hi, levels)
    symbols = np.abs(z[:, None] - grid[None, :]).argmin(1)
    return symbols, grid[symbols]


def adaptive_arithmetic_code_bits(symbols: np.ndarray, levels: int) -> float:
    """Length in bits of an adaptive-Laplace arithmetic code of the sequence (ideal length + 2 bits).

    The Laplace model codes the t-th symbol with probability (count so far + 1) / (t + levels), so the ideal
    length is log2[(k + L - 1)! / (L - 1)!] - sum_s log2(n_s!), independent of the order of the symbols.
    """
    symbols = np.asarray(symbols)
    if symbols.ndim != 1 or not np.issubdtype(symbols.dtype, np.integer):
        raise ValueError(f"symbols must be a 1-D array of integers, got shape {symbols.shape}, dtype {symbols.dtype}")
    if symbols.size and (symbols.min() < 0 or symbols.max() >= levels):
        raise ValueError(f"symbols must lie in [0, levels={levels}), got min {symbols.min()} and max {symbols.max()}")
    counts = np.bincount(symbols, minlength=levels)
    k = len(symbols)
    nats = gammaln(k + levels) - gammaln(levels) - np.sum(gammaln(counts + 1))
    return float(nats / math.log(2) + 2.0)


def subspace_compression_bound(X: np.ndarray, y: np.ndarray, dims=(8, 16, 32, 64), levels=(16,),
                               n_hidden: int = 32, steps: int = 500, lr: float = 0.05, delta: float = 0.05,
                               seed: int = 0, X_test: np.ndarray | None = None,
                               y_test: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Compression bound for subspace-trained, quantised MLPs over a (dims x levels) grid.

    Args:
        X, y: training inputs (n, d_in) and integer labels (n,).
        dims: subspace dimensions k; levels: quantisation level counts L (grid = all pairs).
        n_hidden, steps, lr: MLP width, Adam steps and step size.
        delta: confidence; each grid point gets delta / |grid| (union bound).
        seed: seed of theta_0 and P (fixed before training).
        X_test, y_test: optional held-out data for the test error of each quantised model.
    Returns:
        dict of arrays over the grid (k varies fastest within L): k, levels, bits, train_err (quantised
        model), train_err_float (before quantisation), bound, test_err (nan without test data).
    """
    X, y = np.asarray(X, float), np.asarray(y)
    if X.ndim != 2 or len(y) != len(X):
        raise ValueError(f"X must be (n, d) with one label per row, got {X.shape} and {y.shape}")
    grid = [(int(k), int(L)) for L in levels for k in dims]
    if any(k < 1 for k, _ in grid) or any(L < 2 for _, L in grid):
        raise ValueError(f"dims must be >= 1 and levels >= 2, got {dims}, {levels}")
    n, n_classes = len(y), int(y.max()) + 1
    out: dict[str, list[float]] = {key: [] for key in
                                   ("k", "levels", "bits", "train_err", "train_err_float", "bound", "test_err")}
    trained: dict[int, tuple[SubspaceMLP, np.ndarray]] = {}
    for k, L in grid:
        if k not in trained:
            model = SubspaceMLP(X.shape[1], n_hidden, n_classes, k, seed=seed * 1000 + k)
            trained[k] = (model, train_subspace(model, X, y, steps, lr))
        model, z = trained[k]
        symbols, zq = quantise_uniform(z, L)
        bits = 2 * FLOAT_BITS + adaptive_arithmetic_code_bits(symbols, L)
        err_q = float(np.mean(model.logits(zq, X).argmax(1) != y))
        out["k"].append(k)
        out["levels"].append(L)
        out["bits"].append(bits)
        out["train_err"].append(err_q)
        out["train_err_float"].append(float(np.mean(model.logits(z, X).argmax(1) != y)))
        out["bound"].append(occam_kl_bound(err_q, bits, n, delta / len(grid)))
        out["test_err"].append(float(np.mean(model.logits(zq, X_test).argmax(1) != y_test))
                               if X_test is not None else math.nan)
    return {key: np.asarray(v, dtype=float) for key, v in out.items()}

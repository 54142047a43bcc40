"""The over-parameterised two-layer ReLU network trained by full-batch GD with early stopping.

Model (the paper's Eq. 1; first layer trained, second layer fixed signs):
``f(W, x) = m^{-1/2} sum_r a_r ReLU(w_r . x)``, a_r in {+1, -1} fixed,
w_r(0) ~ N(0, kappa^2 I_d). With the antisymmetric ("symmetric") initialisation the
neurons come in pairs (w_r, a_r), (w_r, -a_r), so f(W(0), .) = 0 exactly.

Training (Algorithm 1): full-batch GD on ``L(W) = 1/(2n) sum_i (f(W, x_i) - y_i)^2`` (Eq. 4) with a
constant step eta (Eqs. 5-6):
``w_r <- w_r - eta/n sum_i (f(W, x_i) - y_i) a_r m^{-1/2} 1{w_r . x_i > 0} x_i``.
In function space ``u <- u - (eta/n) H_n (u - y)`` where H_n -> K_n (the NTK Gram
matrix of :func:`~icml25.papers.ntk_early_stopping.kernels.ntk_relu`) as m grows, so
the network tracks kernel GD (:class:`~icml25.papers.ntk_early_stopping.kernels.KernelGD`).

Stopping: the paper's data-dependent ``T_hat`` (Eq. 8), or the theory time
``T_hat = c / (eta eps_hat^2)`` with eps_hat the critical radius of the empirical NTK eigenvalues
(the paper: ``T_hat = Theta(eps_n^{-2})``). :class:`GDConfig` holds the settings the network and kernel
GD share.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from icml25.common.checks import check_ranges
from icml25.papers.ntk_early_stopping.kernels import (
    KernelGD,
    check_sphere,
    critical_radius,
    data_dependent_stopping_time,
    ntk_relu,
    project_to_sphere,
    sphere_input,
    theory_stopping_time,
)

STOP_RULES = ("eq8", "calibrated")
"""``eq8``: the paper's data-dependent T_hat (Eq. 8); ``calibrated``: ``c / (eta eps_hat^2)`` with a constant c
(ours)."""


@dataclass
class GDConfig:
    """The settings of early-stopped GD that the two-layer network and NTK kernel GD share (Algorithm 1).

    The width m is not here: the experiments vary it (one width per rate run, a sweep in the tracking check).
    An experiment nests it as ``gd`` (``--set gd.eta=1.5``); :meth:`kernel_gd` builds the comparator, whose
    critical radius gives :meth:`stopping_time`, and :func:`network_predictions_at` trains the network with
    ``eta`` and ``kappa``.
    """

    eta: float = 1.0
    """Constant GD step size, for the network and kernel GD (Theorem 5.1 takes eta in [1, 2))."""
    kappa: float = 1.0
    """Init scale of the network: w_r(0) ~ N(0, kappa^2 I) (the paper: 0 < kappa <= 1)."""
    radius_const: float = 1.0
    """Constant of the critical-radius inequality R_K(eps) <= eps^2 / (const sigma) (Eq. 7's radius; the
    paper's: 1)."""
    stop_rule: str = "eq8"
    """When GD stops: ``eq8`` (the paper's data-dependent T_hat, Eq. 8) or ``calibrated`` (``c / (eta
    eps_hat^2)``, c given by the experiment)."""

    def __post_init__(self) -> None:
        # named as the settings are typed (``--set gd.eta=...``)
        check_ranges("gd", vars(self), finite=("eta", "kappa", "radius_const"),
                     positive=("eta", "kappa", "radius_const"), choices={"stop_rule": STOP_RULES})

    def kernel_gd(self, sigma: float) -> KernelGD:
        """Kernel GD with the NTK at step ``eta``, its critical radius at noise level ``sigma``."""
        return KernelGD(self.eta, sigma=sigma, radius_const=self.radius_const)

    def stopping_time(self, kgd: KernelGD, n: int, sigma: float, stop_const: float | None = None) -> int:
        """T_hat (at least 1) from kernel GD fitted on ``n`` points: Eq. 8's rule (:func:`data_dependent_stopping_time`
        on the eigenvalues of K_n / n) or, with ``stop_rule="calibrated"``, ``ceil(stop_const / (eta eps_hat^2))``."""
        if self.stop_rule == "calibrated":
            return theory_stopping_time(kgd.epsilon_hat_, self.eta, stop_const)
        return max(1, data_dependent_stopping_time(kgd.eigvals_ / n, n, sigma, self.eta))


def init_two_layer(width: int, d: int, kappa: float = 1.0, symmetric: bool = True,
                   rng: np.random.Generator | int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Initial first-layer weights W (width, d) and fixed signs a (width,).

    With ``symmetric`` the second half repeats the first half's weights with flipped
    signs: ``W = [W1; W1]``, ``a = [a1; -a1]`` (width must be even).
    """
    if int(width) != width or width < 1:
        raise ValueError(f"width must be a positive integer, got {width!r}")
    if symmetric and width % 2:
        raise ValueError(f"width must be even with symmetric_init=True, got {width}")
    if not kappa > 0:
        raise ValueError(f"kappa must be > 0, got {kappa!r}")
    g = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    width = int(width)
    h = width // 2 if symmetric else width
    W = kappa * g.standard_normal((h, d))
    a = g.choice([-1.0, 1.0], size=h)
    if symmetric:
        return np.concatenate([W, W]), np.concatenate([a, -a])
    return W, a


def _paired_sum(M: np.ndarray, aW: np.ndarray, symmetric: bool) -> np.ndarray:
    """``M @ aW`` summed as (first half) - (second half's negation) under symmetric init.

    Under the symmetric init both halves give bit-identical products, so the network
    output is exactly 0 at t = 0 (a plain ``M @ aW`` would leave round-off).
    """
    if not symmetric:
        return M @ aW
    h = aW.shape[0] // 2
    return M[:, :h] @ aW[:h] - M[:, h:] @ (-aW[h:])


def network_output(X: np.ndarray, W: np.ndarray, a: np.ndarray, symmetric: bool = False) -> np.ndarray:
    """``f(W, x_i) = m^{-1/2} sum_r a_r ReLU(w_r . x_i)`` for each row of X: shape (n,)."""
    pre = X @ W.T
    M = (pre > 0).astype(np.float64)
    # ReLU(w.x) = 1{w.x>0} w.x, so f_i = x_i . sum_r M_ir a_r w_r / sqrt(m)
    aW = (a / np.sqrt(W.shape[0]))[:, None] * W
    return np.einsum("ij,ij->i", _paired_sum(M, aW, symmetric), X)


def loss_gradient(X: np.ndarray, y: np.ndarray, W: np.ndarray, a: np.ndarray,
                  symmetric: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Gradient of ``L(W) = 1/(2n) sum_i (f(W,x_i) - y_i)^2`` in W, and the outputs f(W, X).

    ``dL/dw_r = 1/n sum_i (f_i - y_i) a_r m^{-1/2} 1{w_r . x_i > 0} x_i``.
    """
    n, m = X.shape[0], W.shape[0]
    pre = X @ W.T
    M = (pre > 0).astype(np.float64)
    a_s = a / np.sqrt(m)
    f = np.einsum("ij,ij->i", _paired_sum(M, a_s[:, None] * W, symmetric), X)
    resid = (f - y) / n
    grad = a_s[:, None] * ((resid[:, None] * X).T @ M).T  # (r X)^T M is faster than M^T (r X) in BLAS
    return grad, f


def gradient_descent(X: np.ndarray, y: np.ndarray, W0: np.ndarray, a: np.ndarray, eta: float, n_steps: int,
                     symmetric: bool = False) -> Iterator[tuple[int, np.ndarray]]:
    """Full-batch GD on W with a fixed: yields ``(t, W(t))`` for t = 0, 1, ..., n_steps.

    The yielded array is a fresh copy at each step (safe to keep).
    """
    W = W0.copy()
    yield 0, W.copy()
    for t in range(1, int(n_steps) + 1):
        grad, _ = loss_gradient(X, y, W, a, symmetric)
        W -= eta * grad
        yield t, W.copy()


def empirical_ntk(X: np.ndarray, Z: np.ndarray, W: np.ndarray, a: np.ndarray | None = None) -> np.ndarray:
    """Empirical NTK of the first layer: ``1/m sum_r a_r^2 (x.z) 1{w_r.x>0} 1{w_r.z>0}`` (shape (n, k))."""
    m = W.shape[0]
    a2 = np.ones(m) if a is None else np.asarray(a, dtype=np.float64) ** 2
    MX = (X @ W.T > 0).astype(np.float64)
    MZ = (Z @ W.T > 0).astype(np.float64)
    return (X @ Z.T) * ((MX * a2) @ MZ.T) / m


def eval_predictions(X_eval: np.ndarray, W: np.ndarray, a: np.ndarray, symmetric: bool,
                     chunk: int = 4096) -> np.ndarray:
    """:func:`network_output` in row chunks (bounded memory for large evaluation sets)."""
    return np.concatenate([network_output(X_eval[i:i + chunk], W, a, symmetric)
                           for i in range(0, X_eval.shape[0], chunk)])


class TwoLayerReLUGD(RegressorMixin, BaseEstimator):
    """Over-parameterised two-layer ReLU network trained by GD, with theory-driven early stopping.

    Args:
        width: number of hidden neurons m (even when ``symmetric_init``).
        eta: constant step size (the paper: Theta(1); eta < 4 is stable since lambda_max(K_n/n) <= 1/2).
        max_steps: cap on the number of GD steps (and the horizon of ``stop="oracle"``).
        kappa: init scale, w_r(0) ~ N(0, kappa^2 I).
        symmetric_init: antisymmetric pairs so that f(W(0), .) = 0.
        stop: ``"theory"`` (T_hat = stop_const / (eta eps_hat^2), capped at max_steps; with
            ``stop_const = radius_const = 1`` this is the paper's rule up to one step), ``"eq8"``
            (the paper's Eq. 8, :func:`data_dependent_stopping_time`, capped at max_steps),
            ``"oracle"`` (the recorded step with the smallest risk on ``X_eval``, ``f_eval``;
            needs them), or an int (a fixed number of steps).
        stop_const: c in T_hat.
        sigma: noise level for the critical radius.
        radius_const: ``const`` of the critical-radius inequality ``R_K(eps) <= eps^2/(const sigma)``.
        record_every: record the evaluation risk every this many steps (and at the stop).
        seed: seed of the initialisation.
        project_to_sphere: divide every row of X (and X_eval) by its norm before use (the theory
            assumes covariates on the unit sphere; without it, rows off the sphere raise).

    Attributes (after fit): ``W_`` (trained weights), ``a_`` (fixed signs), ``W_init_``,
    ``epsilon_hat_`` (critical radius of the empirical NTK), ``theory_stopping_time_``,
    ``stopping_time_`` (steps actually used), ``risk_steps_`` and ``risk_path_`` (risk on
    the evaluation set at those steps; empty without one), ``n_features_in_``.
    """

    def __init__(self, width: int = 4096, eta: float = 1.0, max_steps: int = 10_000, kappa: float = 1.0,
                 symmetric_init: bool = True, stop: str | int = "theory", stop_const: float = 1.0,
                 sigma: float = 1.0, radius_const: float = 1.0, record_every: int = 10, seed: int | None = None,
                 project_to_sphere: bool = False):
        self.width = width
        self.eta = eta
        self.max_steps = max_steps
        self.kappa = kappa
        self.symmetric_init = symmetric_init
        self.stop = stop
        self.stop_const = stop_const
        self.sigma = sigma
        self.radius_const = radius_const
        self.record_every = record_every
        self.seed = seed
        self.project_to_sphere = project_to_sphere

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # the theory's targets live in the NTK's RKHS on the sphere, not the checks' linear ones
        tags.regressor_tags.poor_score = True
        return tags

    def _validate(self) -> None:
        if isinstance(self.width, bool) or int(self.width) != self.width or self.width < 1:
            raise ValueError(f"width must be a positive integer, got {self.width!r}")
        if not self.eta > 0:
            raise ValueError(f"eta must be > 0, got {self.eta!r}")
        if int(self.max_steps) != self.max_steps or self.max_steps < 1:
            raise ValueError(f"max_steps must be a positive integer, got {self.max_steps!r}")
        if int(self.record_every) != self.record_every or self.record_every < 1:
            raise ValueError(f"record_every must be a positive integer, got {self.record_every!r}")
        if isinstance(self.stop, str):
            if self.stop not in ("theory", "eq8", "oracle"):
                raise ValueError(f"stop must be 'theory', 'eq8', 'oracle' or a number of steps, got {self.stop!r}")
        elif int(self.stop) != self.stop or self.stop < 0:
            raise ValueError(f"an integer stop must be >= 0, got {self.stop!r}")

    def fit(self, X: np.ndarray, y: np.ndarray, X_eval: np.ndarray | None = None,
            f_eval: np.ndarray | None = None) -> "TwoLayerReLUGD":
        """Train on (X, y); X_eval, f_eval (optional) are points and noiseless targets for the risk path."""
        self._validate()
        X, y = sphere_input(self, X, y)
        n, d = X.shape
        if (X_eval is None) != (f_eval is None):
            raise ValueError("pass X_eval and f_eval together")
        if X_eval is not None:
            if self.project_to_sphere:
                X_eval = project_to_sphere(X_eval, "X_eval")
            X_eval = check_sphere(X_eval, "X_eval", d)
            f_eval = np.asarray(f_eval, dtype=np.float64)
            if f_eval.shape != (X_eval.shape[0],) or not np.all(np.isfinite(f_eval)):
                raise ValueError(f"f_eval must be finite with shape ({X_eval.shape[0]},), got shape {f_eval.shape}")
        if self.stop == "oracle" and X_eval is None:
            raise ValueError("stop='oracle' needs X_eval and f_eval")

        lam = np.linalg.eigvalsh(ntk_relu(X)) / n
        self.epsilon_hat_ = critical_radius(lam, n, self.sigma, self.radius_const)
        self.theory_stopping_time_ = theory_stopping_time(self.epsilon_hat_, self.eta, self.stop_const)
        if self.stop == "theory":
            horizon = min(self.theory_stopping_time_, int(self.max_steps))
        elif self.stop == "eq8":
            horizon = min(data_dependent_stopping_time(lam, n, self.sigma, self.eta), int(self.max_steps))
        elif self.stop == "oracle":
            horizon = int(self.max_steps)
        else:
            horizon = int(self.stop)

        W0, a = init_two_layer(self.width, d, self.kappa, self.symmetric_init, self.seed)
        steps, risks = [], []
        best = (np.inf, 0, W0)
        W = W0
        for t, W in gradient_descent(X, y, W0, a, self.eta, horizon, self.symmetric_init):
            if X_eval is not None and (t % self.record_every == 0 or t == horizon):
                risk = float(np.mean((eval_predictions(X_eval, W, a, self.symmetric_init) - f_eval) ** 2))
                steps.append(t)
                risks.append(risk)
                if risk < best[0]:
                    best = (risk, t, W)
        if self.stop == "oracle":
            _, self.stopping_time_, W = best
        else:
            self.stopping_time_ = horizon
        self.W_, self.a_, self.W_init_ = W, a, W0
        self.risk_steps_, self.risk_path_ = np.array(steps, dtype=int), np.array(risks)
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Network output f(W_, x) for each row of X (points on the unit sphere)."""
        check_is_fitted(self, "W_")
        X = sphere_input(self, X)
        return eval_predictions(X, self.W_, self.a_, self.symmetric_init)


def network_predictions_at(X: np.ndarray, y: np.ndarray, X_eval: np.ndarray, width: int, eta: float,
                           steps: Sequence[int], kappa: float = 1.0, symmetric_init: bool = True,
                           seed: int | None = None) -> dict[int, np.ndarray]:
    """Train once up to ``max(steps)`` and return ``{t: f(W(t), X_eval)}`` for every t in ``steps``.

    ``steps`` must be a non-empty list of integers >= 0; X and X_eval lie on the unit sphere.
    """
    steps = np.asarray(list(steps))
    if steps.size == 0 or steps.ndim != 1 or not np.all(np.isfinite(steps)) or np.any(steps < 0) \
            or np.any(steps != np.round(steps)):
        raise ValueError(f"steps must be a non-empty list of integers >= 0, got {steps.tolist()}")
    X = check_sphere(X, "X")
    X_eval = check_sphere(X_eval, "X_eval", X.shape[1])
    y = np.asarray(y, dtype=np.float64)
    if y.shape != (X.shape[0],) or not np.all(np.isfinite(y)):
        raise ValueError(f"y must be a finite 1-D array of length {X.shape[0]}, got shape {y.shape}")
    W0, a = init_two_layer(width, X.shape[1], kappa, symmetric_init, seed)
    want = set(int(t) for t in steps)
    out = {}
    for t, W in gradient_descent(X, y, W0, a, eta, max(want), symmetric_init):
        if t in want:
            out[t] = eval_predictions(X_eval, W, a, symmetric_init)
    return out

"""Scenario 1 of the paper: choosing the entropy strength lambda of reward fine-tuning by bilevel optimisation.

Lower level (a distribution p):  min_p  g(lambda, p) = -E_p[r2] + lambda KL(p || p_pre),
solved in closed form by the tilted law  p_lambda ∝ p_pre exp(r2 / lambda)  and sampled, without training, by
reward-gradient-guided diffusion with guidance strength 1/lambda.
Upper level:  min_lambda f(lambda, p_lambda) = -E_{p_lambda}[r1]  (r1: the "true" reward that r2 over-optimises).

First-order penalty (value-function) reformulation with penalty gamma (Xiao et al., 2025, Sec. 3):
    min_lambda  L_gamma(lambda) = min_z [f/gamma + g](lambda, z) - min_y g(lambda, y),
whose minimiser z is again a tilt, p ∝ p_pre exp((r1/gamma + r2)/lambda). By the envelope theorem
    d(gamma L_gamma)/dlambda = gamma [ KL(z* || p_pre) - KL(y* || p_pre) ],
and gamma L_gamma(lambda) -> -E_{p_lambda}[r1] as gamma -> infinity. Two estimators of this derivative:
  * est1 (pre-trained samples only): both KLs by self-normalised importance weights on samples of p_pre;
  * est2 (guided samples): each KL as the Girsanov path KL 1/2 ∫ beta(t) ||guidance_t||^2 dt of a guided run.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
import torch

from icml25.common.checks import ConfigError, check_fields, check_ranges

ScoreFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
RewardFn = Callable[[torch.Tensor], torch.Tensor]


ESTIMATORS = ("est1", "est2")
"""Estimators of the lambda-gradient: ``est1`` (pre-trained samples only) and ``est2`` (guided samples)."""
STEPS = ("linear", "log")
"""Updates of lambda: the paper's ``linear`` step, or the same gradient as a step on ``log`` lambda."""


def penalty_hypergrad(grad_f_z, grad_g_z, grad_g_y, gamma: float):
    """First-order penalty hyper-gradient  grad_l f(l, z)/gamma + grad_l g(l, z) - grad_l g(l, y).

    Args:
        grad_f_z: gradient of the upper objective f in the upper variable, at the penalised copy z.
        grad_g_z: gradient of the lower objective g in the upper variable, at z (z minimises f/gamma + g).
        grad_g_y: gradient of g in the upper variable, at y (y minimises g).
        gamma: penalty constant (> 0). With exact minimisers z and y, ``gamma * penalty_hypergrad`` tends to the
            true hyper-gradient grad F(lambda) as gamma -> infinity (an O(1/gamma) bias).

    Arrays, tensors or floats of equal shape; returns the same type. This is the update of the official
    noise-schedule code (``g_upper/gamma + (g_z - g_y)``).
    """
    gamma = float(gamma)
    check_ranges("penalty_hypergrad", {"gamma": gamma}, finite=True, positive=True)
    shapes = {tuple(np.shape(g)) for g in (grad_f_z, grad_g_z, grad_g_y)}
    if len(shapes) != 1:
        raise ValueError(f"gradients must have one shape, got {sorted(shapes)}")
    return grad_f_z / gamma + grad_g_z - grad_g_y


def _tilt_kl(h: torch.Tensor, lam: float) -> torch.Tensor:
    """KL(q || p) of q ∝ p exp(h/lam), estimated from samples of p (self-normalised weights)."""
    a = h / lam
    logz = torch.logsumexp(a, 0) - math.log(a.numel())
    w = torch.softmax(a, 0)
    return (w * a).sum() - logz


def _as_vector(name: str, x) -> torch.Tensor:
    t = torch.as_tensor(x, dtype=torch.float64).reshape(-1)
    if t.numel() < 2:
        raise ValueError(f"{name} needs at least 2 samples, got {t.numel()}")
    if not torch.isfinite(t).all():
        raise ValueError(f"{name} contains NaN or inf")
    return t


def lambda_grad_est1(r1, r2, lam: float, gamma: float, form: str = "derived") -> float:
    """Estimate of d(gamma L_gamma)/dlambda from upper/lower rewards of pre-trained samples only ("est1").

    Args:
        r1: (n,) upper rewards of n samples from the pre-trained model.
        r2: (n,) lower rewards of the same samples.
        lam: current entropy strength lambda > 0.
        gamma: penalty constant > 0.
        form: ``"derived"`` (default): gamma [KL_hat(z) - KL_hat(y)] with self-normalised importance weights
            exp(h/lambda), the exact lambda-derivative of the empirical penalty objective
            ``penalty_objective(r1, r2, lam, gamma)``. ``"code"``: the official script's expression
            -(1/lam) mean r1 - gamma log mean e^{r2/lam} + gamma log mean e^{(r1/gamma+r2)/lam}, kept for
            comparison; it is not the derivative of the penalty objective (see the docs).

    Returns:
        The estimate (float); the update is lambda <- max(lambda - lr * estimate, lambda_min).
    """
    r1, r2 = _as_vector("r1", r1), _as_vector("r2", r2)
    if r1.shape != r2.shape:
        raise ValueError(f"r1 and r2 must have the same length, got {r1.numel()} and {r2.numel()}")
    lam, gamma = float(lam), float(gamma)
    check_ranges("lambda_grad_est1", {"lam": lam, "gamma": gamma}, finite=True, positive=True)
    n = r1.numel()
    if form == "derived":
        return float(gamma * (_tilt_kl(r1 / gamma + r2, lam) - _tilt_kl(r2, lam)))
    if form == "code":
        log_mean = lambda a: torch.logsumexp(a, 0) - math.log(n)  # noqa: E731
        return float(-r1.mean() / lam - gamma * log_mean(r2 / lam) + gamma * log_mean((r1 / gamma + r2) / lam))
    raise ValueError(f"form must be 'derived' or 'code', got {form!r}")


def penalty_objective(r1, r2, lam: float, gamma: float) -> float:
    """Empirical gamma L_gamma(lambda) = gamma [-lam log mean e^{(r1/gamma+r2)/lam} + lam log mean e^{r2/lam}].

    Computed on samples of the pre-trained model; it tends to -E_{p_lambda}[r1] (self-normalised) as
    gamma -> infinity. Its lambda-derivative is ``lambda_grad_est1(..., form="derived")``.
    """
    r1, r2 = _as_vector("r1", r1), _as_vector("r2", r2)
    lam, gamma = float(lam), float(gamma)
    check_ranges("penalty_objective", {"lam": lam, "gamma": gamma}, finite=True, positive=True)
    n = math.log(r1.numel())
    lz = torch.logsumexp((r1 / gamma + r2) / lam, 0) - n
    ly = torch.logsumexp(r2 / lam, 0) - n
    return float(gamma * lam * (ly - lz))


# ----------------------------------------------------------------------------- guided VP-SDE sampler

@dataclass(frozen=True)
class VPSchedule:
    """Linear VP-SDE noise rate beta(t) = beta_min + t (beta_max - beta_min), t in [0, 1]."""

    beta_min: float = 0.1
    """Noise rate at t = 0 (>= 0)."""
    beta_max: float = 20.0
    """Noise rate at t = 1 (> 0, >= beta_min)."""

    def __post_init__(self) -> None:
        check_fields(self, finite=("beta_min", "beta_max"), nonnegative=("beta_min",), positive=("beta_max",))
        if self.beta_max < self.beta_min:
            raise ConfigError(f"VPSchedule.beta_max must be >= beta_min={self.beta_min}, got {self.beta_max!r}")

    def beta(self, t: torch.Tensor) -> torch.Tensor:
        return self.beta_min + t * (self.beta_max - self.beta_min)

    def alpha_bar(self, t: torch.Tensor) -> torch.Tensor:
        """alpha_bar(t) = exp(-∫_0^t beta): x_t = sqrt(alpha_bar) x_0 + sqrt(1 - alpha_bar) eps."""
        return torch.exp(-(self.beta_min * t + 0.5 * t**2 * (self.beta_max - self.beta_min)))


@dataclass(frozen=True)
class ReverseSDEConfig:
    """Euler-Maruyama discretisation of the reverse VP-SDE used by :func:`tilted_guided_sampler`."""

    steps: int = 50
    """Euler-Maruyama steps from t = 1 to t_min."""
    t_min: float = 1e-3
    """Final time (small, in (0, 1))."""
    schedule: VPSchedule = field(default_factory=VPSchedule)
    """The VP noise rate beta(t)."""

    def __post_init__(self) -> None:
        check_fields(self, integer=("steps",), positive=("steps",), open_fraction=("t_min",),
                     at_most={"steps": 10**6})  # steps x samples x score evaluations: beyond 1e6 steps, days


def tilted_guided_sampler(score_pre: ScoreFn, reward: RewardFn | None, lam: float, sde: ReverseSDEConfig | int,
                          n: int = 256, dim: int = 2, seed: int = 0, return_kl: bool = False,
                          device: str | torch.device = "cpu"):
    """Sample p ∝ p_pre exp(reward/lam) by reward-gradient-guided reverse VP-SDE (no training).

    The reverse SDE of the pre-trained model, run with Euler-Maruyama from t=1 to t_min, gets the extra drift
    beta(t) u_t with u_t = grad_x reward(x0_hat(x_t)) / lam, where x0_hat = (x + (1 - abar) score)/sqrt(abar) is
    Tweedie's denoiser (RCGDM-style guidance). For a Gaussian p_pre and a linear reward the guidance is the exact
    h-transform and the samples follow the tilted law exactly (mean shift Sigma a / lam).

    Args:
        score_pre: ``score_pre(x, t) -> (n, dim)`` score of the pre-trained marginal p_t (differentiable torch).
        reward: ``reward(x) -> (n,)`` differentiable reward, or ``None`` for unguided (pre-trained) samples.
        lam: entropy strength lambda > 0 (guidance strength 1/lambda).
        sde: the discretisation (steps, final time t_min, noise rate), or just its number of steps (then
            ``t_min = 1e-3`` and the default :class:`VPSchedule`).
        n, dim: number of samples and their dimension.
        seed: seed of the initial noise and the Brownian increments (same seed = common random numbers).
        return_kl: also return the per-sample Girsanov path KL  1/2 sum_k beta_k ||u_k||^2 dt, which estimates
            KL(p_guided || p_pre) (exactly, for exact guidance).
        device: where the chains live; the noise is drawn on the CPU from ``seed`` and moved there, so every
            device gets the same draws.

    Returns:
        ``x`` of shape (n, dim), or ``(x, kl)`` with ``kl`` of shape (n,) when ``return_kl``.
    """
    lam = float(lam)
    check_ranges("tilted_guided_sampler", {"lam": lam}, finite=True, positive=True)
    check_ranges("tilted_guided_sampler", {"n": n, "dim": dim}, integer=True, positive=True)
    sde = sde if isinstance(sde, ReverseSDEConfig) else ReverseSDEConfig(steps=sde)
    steps, schedule = sde.steps, sde.schedule
    gen = torch.Generator().manual_seed(int(seed))
    like = {"dtype": torch.float64, "device": device}
    x = torch.randn(n, dim, generator=gen, dtype=torch.float64).to(device)
    ts = torch.linspace(1.0, sde.t_min, steps + 1, **like)
    kl = torch.zeros(n, **like)
    for k in range(steps):
        t, dt = ts[k], ts[k] - ts[k + 1]
        beta = schedule.beta(t)
        tt = torch.full((n,), float(t), **like)
        if reward is None:
            with torch.no_grad():
                score = score_pre(x, tt)
            u = torch.zeros_like(x)
        else:
            xg = x.detach().requires_grad_(True)
            score = score_pre(xg, tt)
            abar = schedule.alpha_bar(t)
            x0_hat = (xg + (1 - abar) * score) / torch.sqrt(abar)
            (u,) = torch.autograd.grad(reward(x0_hat).sum(), xg)
            u, score = u / lam, score.detach()
        kl += 0.5 * beta * dt * (u**2).sum(1)
        drift = 0.5 * beta * x + beta * (score + u)
        x = x + drift * dt + torch.sqrt(beta * dt) * torch.randn(n, dim, generator=gen, dtype=torch.float64).to(device)
    x = x.detach()
    return (x, kl) if return_kl else x


def lambda_grad_est2(kl_penalty, kl_lower, gamma: float) -> float:
    """est2: gamma [KL_hat(z) - KL_hat(y)] from per-sample path KLs of the penalty- and lower-guided runs."""
    gamma = float(gamma)
    check_ranges("lambda_grad_est2", {"gamma": gamma}, finite=True, positive=True)
    kl_penalty, kl_lower = torch.as_tensor(kl_penalty), torch.as_tensor(kl_lower)
    if kl_penalty.numel() == 0 or kl_lower.numel() == 0:
        raise ValueError("kl_penalty and kl_lower must be non-empty")
    if not (torch.isfinite(kl_penalty).all() and torch.isfinite(kl_lower).all()):
        raise ValueError("kl_penalty and kl_lower contain NaN or inf")
    return float(gamma * (kl_penalty.mean() - kl_lower.mean()))


@dataclass(frozen=True)
class EntropyTunerConfig:
    """Settings of :class:`BilevelEntropyTuner` (the first-order penalty method on lambda)."""

    gamma: float = 10.0
    """Penalty constant gamma > 0 (an O(1/gamma) bias of the hyper-gradient)."""
    lr: float = 0.1
    """Step size eta of the lambda update."""
    estimator: str = "est1"
    """``est1`` (pre-trained samples only, 1 sampler call per iteration) or ``est2`` (guided samples, 2 calls)."""
    n_samples: int = 64
    """Samples per sampler call (>= 2)."""
    lam_min: float = 1e-2
    """Floor of lambda (the paper clips at 0; a positive floor keeps the guidance finite)."""
    step: str = "linear"
    """``linear``: the paper's lambda <- max(lambda - lr g_hat, lam_min); ``log``: the same gradient as a step on
    log lambda, lambda <- max(lambda exp(-lr lambda g_hat), lam_min) (scale-free; a deviation)."""

    def __post_init__(self) -> None:
        check_fields(self, finite=("gamma", "lr", "lam_min"), positive=("gamma", "lr", "lam_min"),
                     integer=("n_samples",), at_least={"n_samples": 2},
                     at_most={"n_samples": 10**6},  # samples x sampler steps per call: beyond 1e6, ~100 GB
                     choices={"estimator": ESTIMATORS, "step": STEPS})


class BilevelEntropyTuner:
    """First-order bilevel tuning of the entropy strength lambda (paper's reward fine-tuning scenario).

    Args:
        sampler: ``sampler(reward, lam, n, seed) -> (x, kl)``, the guided sampler of the pre-trained model
            (``reward=None``: pre-trained samples); e.g. a ``functools.partial`` of :func:`tilted_guided_sampler`
            with ``return_kl=True``.
        r1: upper reward, ``r1(x) -> (n,)`` (torch, differentiable for est2).
        r2: lower reward, ``r2(x) -> (n,)``.
        cfg: the settings (:class:`EntropyTunerConfig`; default: its defaults).
        **settings: fields of :class:`EntropyTunerConfig` set on top of ``cfg`` (``gamma=10.0, step="log"``: the
            keyword arguments of earlier versions).

    After :meth:`fit`: ``lam_history_`` (iters + 1 values), ``grad_history_``, ``sampler_calls_``.
    """

    def __init__(self, sampler, r1: RewardFn, r2: RewardFn, cfg: EntropyTunerConfig | None = None, **settings):
        self.sampler, self.r1, self.r2 = sampler, r1, r2
        self.cfg = replace(cfg or EntropyTunerConfig(), **settings)

    def fit(self, lam0: float, iters: int, seed: int = 0) -> np.ndarray:
        """Run ``iters`` updates from ``lam0``; returns (and stores as ``lam_history_``) the lambda path."""
        lam = float(lam0)
        check_ranges("BilevelEntropyTuner.fit", {"lam0": lam, "iters": iters}, finite=("lam0",), positive=("lam0",),
                     integer=("iters",), nonnegative=("iters",))
        c = self.cfg
        gamma, lr, lam_min = c.gamma, c.lr, c.lam_min
        hist, grads, calls = [lam], [], 0
        for k in range(iters):
            s = int(seed) * 100003 + k
            if c.estimator == "est1":
                x, _ = self.sampler(None, 1.0, c.n_samples, s)
                calls += 1
                with torch.no_grad():
                    g = lambda_grad_est1(self.r1(x), self.r2(x), lam, gamma)
            else:
                lower = self.r2
                penalty = lambda x: self.r1(x) / gamma + self.r2(x)  # noqa: E731
                _, kl_y = self.sampler(lower, lam, c.n_samples, s)  # same seed: common random numbers
                _, kl_z = self.sampler(penalty, lam, c.n_samples, s)
                calls += 2
                g = lambda_grad_est2(kl_z, kl_y, gamma)
            if not math.isfinite(g):
                raise FloatingPointError(f"non-finite lambda-gradient estimate at iteration {k} (lambda={lam})")
            lam = max(lam - lr * g if c.step == "linear" else lam * math.exp(-lr * lam * g), lam_min)
            hist.append(lam)
            grads.append(g)
        self.lam_history_ = np.array(hist)
        self.grad_history_ = np.array(grads)
        self.sampler_calls_ = calls
        self.lam_ = lam
        return self.lam_history_

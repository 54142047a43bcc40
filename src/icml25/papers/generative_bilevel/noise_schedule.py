"""Scenario 2 of the paper: learning the noise schedule of a diffusion model while it trains (bilevel).

Upper variable: a few schedule parameters beta(phi). Lower level: the denoising (epsilon-prediction) loss
    g(phi, theta) = E_{x0, t, eps} || eps_theta(sqrt(abar_t) x0 + sqrt(1 - abar_t) eps, t) - eps ||^2.
Upper level: a sample-quality metric f (FID in the paper; here any differentiable metric of DDIM samples) with
truncated back-propagation through the last sampling step(s), or a zeroth-order estimate of its gradient.

Per minibatch, ``inner_loop`` times:
  (i) one step of theta_y on g; (ii) sample with theta_z and evaluate f; (iii) one step of theta_z on f/gamma + g;
then the schedule gets the first-order penalty hyper-gradient  grad_phi f/gamma + grad_phi g(theta_z) -
grad_phi g(theta_y)  (:func:`penalty_hypergrad`), an AdamW step, and the parameters are clamped.

Script versions (afmsaif/bilevel_diffusion): the back-propagation path (``zo=False``) follows
``MNISTDiffusion-main/train_mnist_bilevel.py`` at commit 9637eb5 (first uploaded as
``train_mnist_bilevel_cmg_01_04_cleaned_v2.py``, later deleted); ``zo=True`` follows
``noise_schedule/train_mnist_bilevel_ZO.py`` at 88deb4e: two-point ZO estimates of grad f, one Gaussian direction
(delta 0.01), for the schedule *and* for theta_z's upper term. That script has a bug we do not reproduce: it
replaces theta_z by a deep copy of theta_y every minibatch while theta_z's optimiser still holds the first
network's tensors, so its theta_z step updates orphaned weights and theta_z = theta_y throughout.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import torch
from torch import nn

from icml25.common.checks import check_fields, check_ranges
from icml25.papers.generative_bilevel.entropy_tuning import penalty_hypergrad


class LearnableNoiseSchedule(nn.Module):
    """Parametric, differentiable noise schedule beta_1..beta_T.

    ``kind="cosine"`` (parameters start, end, tau, eps; Chen 2023 as in the official code):
        t' = t (end - start) + start for t = 0..T,  f_t = cos(((t'/T + eps)/(1 + eps)) pi/2)^(2 tau),
        beta_t = clip(1 - f_t / f_{t-1}, 0, 0.999).  The defaults (0, 1, 1, 0.008) give the usual cosine schedule.
    ``kind="sigmoid"`` (parameters start, end, tau):  f_t = (sigmoid(end/tau) - sigmoid((t/T (end-start) + start)/tau))
        / (sigmoid(end/tau) - sigmoid(start/tau)) (the decreasing form of Chen 2023; the official script's
        increasing sigmoid gives all-zero betas after clipping).
    ``kind="linear"``: beta_t linear from ``start`` to ``end`` (fixed baseline; parameters still learnable).
    """

    DEFAULTS = {"cosine": (0.0, 1.0, 1.0, 0.008), "sigmoid": (-3.0, 3.0, 1.0), "linear": (None, None)}

    def __init__(self, kind: str = "cosine", T: int = 1000, params: tuple[float, ...] | None = None):
        super().__init__()
        check_ranges("LearnableNoiseSchedule", {"kind": kind, "T": T}, choices={"kind": tuple(self.DEFAULTS)},
                     integer=("T",), at_least={"T": 2})
        self.kind, self.T = kind, int(T)
        if params is None:
            params = self.DEFAULTS[kind] if kind != "linear" else (1e-4 * 1000 / T, 0.02 * 1000 / T)
        names = {"cosine": ("start", "end", "tau", "eps"), "sigmoid": ("start", "end", "tau"),
                 "linear": ("start", "end")}[kind]
        if len(params) != len(names):
            raise ValueError(f"kind {kind!r} takes {len(names)} parameters {names}, got {len(params)}")
        if not all(math.isfinite(float(v)) for v in params):
            raise ValueError(f"schedule parameters must be finite, got {tuple(params)}")
        for name, value in zip(names, params):
            self.register_parameter(name, nn.Parameter(torch.tensor(float(value), dtype=torch.float64)))

    def forward(self) -> torch.Tensor:
        """The (T,) noise rates beta_1..beta_T (the same as :attr:`betas`)."""
        return self._get_betas(*self.parameters())

    @property
    def betas(self) -> torch.Tensor:
        """(T,) noise rates in [0, 0.999], differentiable in the schedule parameters (dtype and device of them)."""
        return self.forward()

    def _get_betas(self, start: torch.Tensor, end: torch.Tensor, *rest: torch.Tensor) -> torch.Tensor:
        T = self.T
        like = {"dtype": start.dtype, "device": start.device}
        steps = torch.arange(T + 1, **like)
        if self.kind == "linear":
            return torch.clamp(start + (end - start) * torch.arange(T, **like) / (T - 1), 0.0, 0.999)
        if self.kind == "cosine":
            tau, eps = rest
            tp = steps * (end - start) + start
            cos = torch.clamp(torch.cos((tp / T + eps) / (1 + eps) * math.pi / 2), 1e-12, 1.0)
            f = cos ** (2 * tau)
        else:
            (tau,) = rest
            lo, hi = torch.sigmoid(start / tau), torch.sigmoid(end / tau)
            f = torch.clamp((hi - torch.sigmoid((steps / T * (end - start) + start) / tau)) / (hi - lo), 1e-12, 1.0)
        return torch.clamp(1 - f[1:] / f[:-1], 0.0, 0.999)

    @property
    def alpha_bar(self) -> torch.Tensor:
        """(T,) cumulative products prod_{s<=t} (1 - beta_s)."""
        return torch.cumprod(1 - self.betas, 0)

    @torch.no_grad()
    def clamp_(self) -> None:
        """Project the parameters onto their valid box (as the official code does after each step)."""
        if self.kind == "cosine":
            # start <= 1 - 1e-6 keeps end > start: the official clamps (start in [0, 1], end >= start + 1e-10,
            # end <= 1) let start = end = 1, a constant f_t, all-zero betas and alpha_bar = 1 exactly
            self.start.clamp_(0.0, 1.0 - 1e-6)
            self.end.clamp_(float(self.start) + 1e-6, 1.0)
            self.tau.clamp_(1e-3, 1e6)
            self.eps.clamp_(1e-4, 1.0)
        elif self.kind == "sigmoid":
            self.end.clamp_(float(self.start) + 1e-3, 1e6)
            self.tau.clamp_(1e-3, 1e6)
        else:
            self.start.clamp_(0.0, 0.999)
            self.end.clamp_(0.0, 0.999)


class EpsMLP(nn.Module):
    """Small epsilon-prediction network eps_theta(x_t, t) for low-dimensional data (sinusoidal time features)."""

    def __init__(self, dim: int = 2, hidden: int = 128, T: int = 200, n_freq: int = 8):
        super().__init__()
        check_ranges("EpsMLP", {"dim": dim, "hidden": hidden, "T": T, "n_freq": n_freq}, integer=True, positive=True)
        self.dim, self.T = dim, T
        self.register_buffer("freq", 2.0 ** torch.arange(n_freq, dtype=torch.float32) * math.pi)
        self.net = nn.Sequential(nn.Linear(dim + 2 * n_freq, hidden), nn.SiLU(), nn.Linear(hidden, hidden),
                                 nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU(), nn.Linear(hidden, dim))

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """eps_theta (n, dim) of noisy points ``x`` (n, dim) at integer steps ``t`` (n,), in the network's dtype."""
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise ValueError(f"x must have shape (n, {self.dim}), got {tuple(x.shape)}")
        if t.shape != (x.shape[0],):
            raise ValueError(f"t must have shape ({x.shape[0]},) (one step per point), got {tuple(t.shape)}")
        dtype = self.freq.dtype
        a = (t.to(dtype)[:, None] / self.T) * self.freq[None]
        return self.net(torch.cat([x.to(dtype), torch.sin(a), torch.cos(a)], 1))


def dsm_loss(model: nn.Module, schedule: LearnableNoiseSchedule, x0: torch.Tensor,
             gen: torch.Generator) -> torch.Tensor:
    """Lower objective g: mean ||eps_theta(x_t, t) - eps||^2, differentiable in theta and the schedule.

    ``x0`` is (n, d) on any device; ``gen`` is a CPU generator (the draws are moved to ``x0``'s device).
    """
    if x0.ndim != 2 or x0.shape[0] < 1:
        raise ValueError(f"x0 must be a non-empty (n, d) batch, got shape {tuple(x0.shape)}")
    n = x0.shape[0]
    t = torch.randint(0, schedule.T, (n,), generator=gen).to(x0.device)
    eps = torch.randn(x0.shape, generator=gen).to(x0.device)
    abar = schedule.alpha_bar[t][:, None]
    # the square roots in the schedule's precision (float64): in float32, 1 - abar rounds to 0 once abar_t is
    # within ~6e-8 of 1 (a nearly noiseless schedule), and d sqrt(u)/du at u = 0 is infinite
    xt = torch.sqrt(abar).to(x0.dtype) * x0 + torch.sqrt(1 - abar).to(x0.dtype) * eps
    return ((model(xt, t) - eps) ** 2).sum(1).mean()


def ddim_sample(model: nn.Module, schedule: LearnableNoiseSchedule, n: int, steps: int, dim: int = 2,
                gen: torch.Generator | None = None, truncation: int | None = None,
                clip_x0: float | None = None) -> torch.Tensor:
    """Deterministic DDIM (eta = 0) sampling on ``steps`` evenly spaced timesteps.

    x_{prev} = sqrt(abar_prev) x0_hat + sqrt(1 - abar_prev) eps_hat,  x0_hat = (x - sqrt(1 - abar) eps_hat)/sqrt(abar),
    with abar_prev = 1 after the last step. ``truncation=k`` keeps the autograd graph only through the last k
    steps (truncated back-propagation, k=1 in the official code); ``None`` keeps all of it. ``clip_x0=c`` clamps
    x0_hat to [-c, c] (the official ``clipped_reverse_diffusion``; needed when abar_T is ~0, as for cosine).
    Samples live on the schedule's device; ``gen`` is a CPU generator (the noise is drawn there and moved).
    """
    check_ranges("ddim_sample", {"steps": steps, "n": n}, integer=True, positive=True, at_most={"steps": schedule.T})
    # official model_bilevel.py: torch.linspace(0, T - 1, steps) cast to integers (truncation), visited backwards
    ts = torch.linspace(0, schedule.T - 1, int(steps), dtype=torch.float64).long().flip(0).tolist()
    abar = schedule.alpha_bar  # square roots in the schedule's precision (see dsm_loss), then float32
    device = abar.device
    root_a, root_1ma = torch.sqrt(abar).float(), torch.sqrt(1 - abar).float()
    one, zero = torch.ones((), device=device), torch.zeros((), device=device)
    x = torch.randn(n, dim, generator=gen).to(device)
    for i, t in enumerate(ts):
        track = truncation is None or i >= len(ts) - int(truncation)
        with torch.set_grad_enabled(track and torch.is_grad_enabled()):
            if not track:
                x = x.detach()
            ra, r1a = root_a[t], root_1ma[t]
            ra_prev, r1a_prev = (root_a[ts[i + 1]], root_1ma[ts[i + 1]]) if i + 1 < len(ts) else (one, zero)
            eps = model(x, torch.full((n,), t, device=device))
            x0 = (x - r1a * eps) / ra
            if clip_x0 is not None:
                x0 = torch.clamp(x0, -clip_x0, clip_x0)
                eps = (x - ra * x0) / r1a.clamp_min(1e-12)
            x = ra_prev * x0 + r1a_prev * eps
    return x


def rbf_mmd2(x: torch.Tensor, y: torch.Tensor, bandwidths: tuple[float, ...] = (0.1, 0.3, 1.0, 3.0)) -> torch.Tensor:
    """Biased (V-statistic) squared MMD with a sum of Gaussian kernels exp(-||a-b||^2 / (2 h^2)); >= 0."""
    if x.ndim != 2 or y.ndim != 2 or x.shape[1] != y.shape[1]:
        raise ValueError(f"x and y must be (n, d) and (m, d), got {tuple(x.shape)} and {tuple(y.shape)}")
    if x.shape[0] == 0 or y.shape[0] == 0:
        raise ValueError(f"x and y must hold at least one point each, got {x.shape[0]} and {y.shape[0]}")
    if not bandwidths or not all(h > 0 for h in bandwidths):
        raise ValueError(f"bandwidths must be a non-empty tuple of positive numbers, got {bandwidths!r}")
    xy = torch.cat([x, y.to(x.dtype)])
    d2 = torch.cdist(xy, xy) ** 2
    k = sum(torch.exp(-d2 / (2 * h**2)) for h in bandwidths)
    n = x.shape[0]
    return k[:n, :n].mean() + k[n:, n:].mean() - 2 * k[:n, n:].mean()


ZO_KINDS = ("two_point", "one_sided")
"""Zeroth-order estimators of :func:`zo_gradient`; ``two_point`` is the official one (``ZO_type='two'``)."""


def zo_gradient(fn: Callable[[torch.Tensor], torch.Tensor], theta: torch.Tensor, mu: float = 1e-2,
                n_dirs: int = 1, gen: torch.Generator | None = None, kind: str = "two_point") -> torch.Tensor:
    """Zeroth-order (Gaussian-smoothing) gradient estimate of ``fn`` at ``theta``, directions u_k ~ N(0, I).

    ``kind="two_point"`` (official ``zeroth_order_gradient`` with ``ZO_type='two'``: one direction, delta = mu):
        mean_k (fn(theta + mu u_k) - fn(theta - mu u_k)) / (2 mu) * u_k;
    ``kind="one_sided"``: mean_k (fn(theta + mu u_k) - fn(theta)) / mu * u_k.
    Both are unbiased for the gradient of the smoothed function E fn(theta + mu u), hence for the gradient itself
    when ``fn`` is quadratic; for a quadratic the central difference is moreover exact per direction,
    (fn(theta + mu u) - fn(theta - mu u)) / (2 mu) = u . grad fn(theta), so each term is (u u^T) grad fn(theta).
    """
    check_ranges("zo_gradient", {"mu": mu, "n_dirs": n_dirs, "kind": kind}, finite=("mu",), positive=("mu", "n_dirs"),
                 integer=("n_dirs",), choices={"kind": ZO_KINDS})
    theta = theta.detach()
    u = torch.randn((int(n_dirs),) + tuple(theta.shape), generator=gen, dtype=theta.dtype).to(theta.device)
    if kind == "two_point":
        diffs = torch.stack([(fn(theta + mu * uk) - fn(theta - mu * uk)) / (2 * mu) for uk in u])
    else:
        f0 = fn(theta)
        diffs = torch.stack([(fn(theta + mu * uk) - f0) / mu for uk in u])
    return (diffs.reshape(-1, *([1] * theta.ndim)) * u).mean(0)


@dataclass
class ScheduleTrainResult:
    """Output of :func:`bilevel_schedule_train` / :func:`train_with_schedule`."""

    schedule: LearnableNoiseSchedule
    model: nn.Module
    """The network used for sampling (theta_z for the bilevel method)."""
    model_lower: nn.Module | None = None
    """theta_y (the pure lower-level copy) for the bilevel method."""
    history: dict[str, list[float]] = field(default_factory=dict)


def _check_data(data) -> torch.Tensor:
    """Training data as a float32 (N, d) tensor with N >= 2 finite rows (a tensor keeps its device)."""
    data = torch.as_tensor(data, dtype=torch.float32)
    if data.ndim != 2 or data.shape[0] < 2:
        raise ValueError(f"data must be (N, d) with N >= 2, got shape {tuple(data.shape)}")
    if not torch.isfinite(data).all():
        raise ValueError("data must be finite (no NaN or inf)")
    return data


def _set_flat(group: list[torch.Tensor], flat: torch.Tensor) -> None:
    """Write a flat vector into the tensors of ``group`` (in order)."""
    with torch.no_grad():
        for p, v in zip(group, torch.split(flat, [p.numel() for p in group])):
            p.copy_(v.reshape(p.shape))


@dataclass(frozen=True)
class BilevelScheduleConfig:
    """Settings of :func:`bilevel_schedule_train` (and of the baseline :func:`train_with_schedule`: ``iters``,
    ``batch_size``, ``lr``); defaults: the official script's where it states them."""

    zo: bool = False
    """Zeroth-order upper gradients (the released ZO script): ``zo_gradient`` estimates of grad_phi f for the
    schedule and of grad_theta f for theta_z's f/gamma + g step, on DDIM samples without a graph. False: truncated
    back-propagation through the last ``truncation`` DDIM steps (the older script, commit 9637eb5)."""
    iters: int = 1000
    """Outer iterations (minibatches)."""
    batch_size: int = 128
    """Minibatch size."""
    inner_loop: int = 1
    """Lower-level steps (of theta_y and theta_z) per minibatch (the official default is 10)."""
    gamma: float = 1.0
    """Penalty constant (official default)."""
    lr: float = 1e-3
    """AdamW rate of theta_y and theta_z (OneCycle annealing, as in the official code)."""
    lr_beta: float = 0.05
    """AdamW rate of the schedule parameters (OneCycle; README value)."""
    n_samples: int = 128
    """DDIM samples per upper-metric evaluation."""
    ddim_steps: int = 20
    """DDIM steps of those samples."""
    truncation: int = 1
    """DDIM steps back-propagated through (``zo=False``; official 1)."""
    zo_mu: float = 1e-2
    """Smoothing radius of the ZO estimate (official delta 0.01)."""
    zo_dirs: int = 1
    """Gaussian directions per ZO estimate (official 1)."""
    zo_kind: str = "two_point"
    """ZO estimator, one of :data:`ZO_KINDS` (official ``two_point``)."""
    clip_x0: float | None = None
    """Clamp of the DDIM x0 prediction (see :func:`ddim_sample`); None: no clamp."""

    def __post_init__(self) -> None:
        ints = ("iters", "batch_size", "inner_loop", "n_samples", "ddim_steps", "truncation", "zo_dirs")
        check_fields(self, integer=ints, finite=("gamma", "lr", "lr_beta", "zo_mu", "clip_x0"),
                     positive=(*ints, "gamma", "lr", "lr_beta", "zo_mu", "clip_x0"), choices={"zo_kind": ZO_KINDS})
        # bounds: a run beyond these would need > ~100 GB or days (back-propagation through DDIM over n_samples)
        check_fields(self, at_most={"iters": 10**7, "batch_size": 10**6, "inner_loop": 10**4, "n_samples": 10**5,
                                    "ddim_steps": 10**6, "truncation": 10**6, "zo_dirs": 10**4})


def _zo_upper_grad(f_of_samples: Callable[[], torch.Tensor], group: list[torch.Tensor], gen: torch.Generator,
                   cfg: BilevelScheduleConfig) -> list[torch.Tensor]:
    """zo_gradient of f over the tensors ``group`` (flattened into one vector, perturbed in place and restored);
    the DDIM noise is the same at every perturbation (common random numbers)."""
    flat0 = torch.cat([p.detach().reshape(-1) for p in group])
    state = gen.get_state()

    def f_at(flat: torch.Tensor) -> torch.Tensor:
        _set_flat(group, flat)
        gen.set_state(state)
        with torch.no_grad():
            return f_of_samples()

    dirs = torch.Generator().manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=gen)))
    g = zo_gradient(f_at, flat0, cfg.zo_mu, cfg.zo_dirs, dirs, cfg.zo_kind)
    _set_flat(group, flat0)
    sizes = [p.numel() for p in group]
    return [gi.reshape(p.shape).to(p.dtype) for gi, p in zip(torch.split(g, sizes), group)]


def _one_cycle(opt: torch.optim.Optimizer, lr: float, steps: int) -> torch.optim.lr_scheduler.OneCycleLR:
    return torch.optim.lr_scheduler.OneCycleLR(opt, lr, total_steps=steps, pct_start=0.25)


def bilevel_schedule_train(data: torch.Tensor, model_fn: Callable[[], nn.Module],
                           upper_metric: Callable[[torch.Tensor], torch.Tensor],
                           cfg: BilevelScheduleConfig | None = None, *,
                           schedule: LearnableNoiseSchedule | None = None, seed: int = 0,
                           **settings) -> ScheduleTrainResult:
    """Train a diffusion model and its noise schedule jointly by the first-order penalty method.

    Args:
        data: (N, d) training data.
        model_fn: builds a fresh epsilon network ``net(x_t, t)``; theta_y and theta_z start from the same weights.
        upper_metric: ``f(samples) -> scalar`` to minimise (differentiable unless ``cfg.zo``), e.g. MMD to held-out
            data.
        cfg: the learner's settings (:class:`BilevelScheduleConfig`; default: its defaults).
        schedule: the learnable schedule (default: cosine with T = 200).
        seed: seeds the initial weights, minibatches, noises and samples (CPU generators, so every device
            sees the same draws).
        **settings: fields of :class:`BilevelScheduleConfig` set on top of ``cfg`` (``zo=True, iters=300``: the
            keyword arguments of earlier versions).

    The networks and the schedule are moved to ``data``'s device.

    Returns:
        :class:`ScheduleTrainResult` with theta_z as ``model`` and theta_y as ``model_lower``; ``history`` holds
        the schedule parameters, f and g per iteration.
    """
    cfg = replace(cfg or BilevelScheduleConfig(), **settings)
    data = _check_data(data)
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    device = data.device
    schedule = (schedule if schedule is not None else LearnableNoiseSchedule("cosine", 200)).to(device)
    theta_z = model_fn().to(device)
    theta_y = model_fn().to(device)
    theta_y.load_state_dict(theta_z.state_dict())
    opt_y = torch.optim.AdamW(theta_y.parameters(), lr=cfg.lr)
    opt_z = torch.optim.AdamW(theta_z.parameters(), lr=cfg.lr)
    opt_b = torch.optim.AdamW(schedule.parameters(), lr=cfg.lr_beta)
    sch_y, sch_z = _one_cycle(opt_y, cfg.lr, cfg.iters * cfg.inner_loop), _one_cycle(opt_z, cfg.lr,
                                                                                        cfg.iters * cfg.inner_loop)
    sch_b = _one_cycle(opt_b, cfg.lr_beta, cfg.iters)
    dim = data.shape[1]
    hist: dict[str, list[float]] = {"upper": [], "lower_y": [], **{n: [] for n, _ in schedule.named_parameters()}}

    def upper_of(model: nn.Module, truncation: int | None) -> torch.Tensor:
        """f of fresh DDIM samples of ``model`` (graph through the last ``truncation`` steps; None: all)."""
        return upper_metric(ddim_sample(model, schedule, cfg.n_samples, cfg.ddim_steps, dim, gen, truncation,
                                        cfg.clip_x0))

    params = list(schedule.parameters())
    for _ in range(cfg.iters):
        x0 = data[torch.randint(0, data.shape[0], (cfg.batch_size,), generator=gen).to(device)]
        for _ in range(cfg.inner_loop):
            # (i) theta_y <- theta_y - lr grad_theta g(phi, theta_y)
            opt_y.zero_grad()
            loss_y = dsm_loss(theta_y, schedule, x0, gen)
            theta_y_grads = torch.autograd.grad(loss_y, list(theta_y.parameters()))
            for p, g in zip(theta_y.parameters(), theta_y_grads):
                p.grad = g
            opt_y.step()
            sch_y.step()
            # (ii)-(iii) theta_z <- theta_z - lr grad_theta [f/gamma + g](phi, theta_z)
            opt_z.zero_grad()
            z_params = list(theta_z.parameters())
            if cfg.zo:  # grad_theta f by a ZO estimate over all of theta_z's weights (official: on its EMA copy)
                g_upper_z = _zo_upper_grad(lambda: upper_of(theta_z, None), z_params, gen, cfg)
                z_grads = torch.autograd.grad(dsm_loss(theta_z, schedule, x0, gen), z_params)
                z_grads = [gl + gu / cfg.gamma for gl, gu in zip(z_grads, g_upper_z)]
            else:
                upper = upper_of(theta_z, cfg.truncation)
                # grad_phi f from the same samples (the official code re-samples; this saves one run)
                g_f = torch.autograd.grad(upper, params, retain_graph=True, allow_unused=True)
                g_f = [torch.zeros_like(p) if g is None else g for p, g in zip(params, g_f)]
                z_grads = torch.autograd.grad(dsm_loss(theta_z, schedule, x0, gen) + upper / cfg.gamma, z_params)
            for p, g in zip(z_params, z_grads):
                p.grad = g
            opt_z.step()
            sch_z.step()
        # schedule: grad_phi f / gamma + grad_phi g(theta_z) - grad_phi g(theta_y)
        g_y = torch.autograd.grad(dsm_loss(theta_y, schedule, x0, gen), params)
        g_z = torch.autograd.grad(dsm_loss(theta_z, schedule, x0, gen), params)
        if cfg.zo:
            g_f = _zo_upper_grad(lambda: upper_of(theta_z, None), params, gen, cfg)
            with torch.no_grad():
                f_val = float(upper_of(theta_z, None))
        else:
            f_val = float(upper.detach())
        if not all(torch.isfinite(g).all() for g in (*g_f, *g_z, *g_y)):
            raise FloatingPointError("non-finite schedule gradient; try clip_x0 or a smaller lr_beta")
        opt_b.zero_grad()
        for p, gf, gz, gy in zip(params, g_f, g_z, g_y):
            p.grad = penalty_hypergrad(gf.detach(), gz.detach(), gy.detach(), cfg.gamma)
        opt_b.step()
        sch_b.step()
        schedule.clamp_()
        hist["upper"].append(f_val)
        hist["lower_y"].append(float(loss_y.detach()))
        for n, p in schedule.named_parameters():
            hist[n].append(float(p.detach()))
    return ScheduleTrainResult(schedule, theta_z, theta_y, hist)


def train_with_schedule(data: torch.Tensor, model_fn: Callable[[], nn.Module], schedule: LearnableNoiseSchedule,
                        cfg: BilevelScheduleConfig | None = None, *, seed: int = 0, **settings) -> ScheduleTrainResult:
    """Baseline: ordinary DSM training with a fixed schedule, theta_y's recipe alone (AdamW + OneCycle).

    Uses ``cfg.iters``, ``cfg.batch_size`` and ``cfg.lr`` of :class:`BilevelScheduleConfig` (``**settings`` set
    fields on top of ``cfg``, e.g. ``iters=300``). The network and the schedule are moved to ``data``'s device.
    """
    cfg = replace(cfg or BilevelScheduleConfig(), **settings)
    data = _check_data(data)
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    device = data.device
    schedule.to(device)
    model = model_fn().to(device)
    for p in schedule.parameters():
        p.requires_grad_(False)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    sch = _one_cycle(opt, cfg.lr, cfg.iters)
    losses = []
    for _ in range(cfg.iters):
        x0 = data[torch.randint(0, data.shape[0], (cfg.batch_size,), generator=gen).to(device)]
        opt.zero_grad()
        loss = dsm_loss(model, schedule, x0, gen)
        loss.backward()
        opt.step()
        sch.step()
        losses.append(float(loss.detach()))
    return ScheduleTrainResult(schedule, model, None, {"lower": losses})

"""VALT-SAC: virtual alternating training of SAC against a soft-constrained observation adversary.

Nakanishi, Kubo, Yasui & Ishii, "Off-Policy Actor-Critic for Adversarial Observation Robustness:
Virtual Alternative Training via Symmetric Policy Evaluation", ICML 2025 (arXiv 2506.16753).

State-adversarial MDP: the true state is ``s``; an adversary ``nu(s~|s)`` shows the agent an
observation ``s~`` in the L-infinity ball ``B_eps(s)`` (raw observation units) and the agent acts
``a ~ pi(.|s~)``. By the symmetric policy evaluation theorem the adversary's critic is the agent's
critic with the sign flipped, ``Q^nu(s, s~) = E_{a~pi(.|s~)}[-Q^pi(s, a)]``, so no adversary critic
and no extra environment steps are needed. One SAC loop, one replay buffer of *clean* transitions:

1. act: with probability ``adv_ratio`` the agent sees ``s~ ~ nu(.|s)``, else ``s``; store (s, a, r, s').
2. critic (soft worst-case Bellman):
   ``y = r + gamma E_{s~'~nu(.|s')} E_{a'~pi(.|s~')} [min_j Qbar_j(s', a') - alpha log pi(a'|s~')]``,
   plus, for VALT-SOFT, the adversary's KL price ``gamma alpha_attk KL(nu(.|s') || p(.|s'))`` (one-sample
   estimate ``log nu(s~'|s') - log p(s~'|s')``), so that the target is the soft worst-case value
   ``min_nu E_nu[G] + alpha_attk KL(nu || p)`` of the soft-constrained objective.
3. actor (improvement under the fixed adversary):
   ``min E_{s, s~~nu(.|s), a~pi(.|s~)} [alpha log pi(a|s~) - min_j Q_j(s, a)]``.
4. temperature ``alpha`` auto-tuned as in SAC.

Adversaries (``variant``):

* ``"eps"`` (VALT-EPS, alpha-divergence with alpha -> 0): with probability ``kappa_worst`` the worst
  perturbation ``argmin_{s~ in B_eps(s)} Q(s, pi(s~))`` found by PGD on the critic, else uniform on B_eps(s).
* ``"soft"`` (VALT-SOFT, KL): a tanh-Gaussian perturbation network ``nu_model`` trained to minimise
  ``KL(nu_model || nu*)`` with ``nu* ∝ p exp(-E_{a~pi(.|s~)}[Q(s,a) - alpha log pi(a|s~)] / alpha_attk)``.
* ``"none"``: plain SAC (same code path, ``s~ = s``).
* ``"sa_reg"``: Robust-SAC / SA-SAC baseline: plain SAC plus ``sa_coef * KL(pi(.|s) || pi(.|s~_MAD))``.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from icml25.common.checks import check_fields
from icml25.papers.valt_sac.envs import EnvSpec, make_env

Variant = Literal["eps", "soft", "none", "sa_reg"]
VARIANTS: tuple[str, ...] = ("eps", "soft", "none", "sa_reg")
LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0


@dataclass
class ValtSACConfig:
    """Hyper-parameters of VALT-SAC (and of plain SAC with ``variant="none"``), steps 1-4 of the module docstring.

    The experiments nest it whole as ``sac`` (``--set sac.eps=0.05 sac.total_steps=1000000``); there ``variant``
    and ``device`` are set per run from the experiment's ``methods`` and ``device``. A value out of range raises
    :class:`~icml25.common.checks.ConfigError` (a ``ValueError``) naming the field.
    """

    variant: Variant = "eps"
    """Adversary: ``eps`` (VALT-EPS), ``soft`` (VALT-SOFT), ``none`` (plain SAC), ``sa_reg`` (Robust-SAC)."""
    total_steps: int = 12_000
    """Environment steps (identical for every variant: the adversary is virtual)."""
    learning_starts: int = 1_000
    """Uniform-random actions and no updates before this step."""
    hidden: int = 64
    """Width of the two hidden layers of actor, critics and nu_model."""
    batch_size: int = 128
    """Replay mini-batch size."""
    buffer_size: int = 100_000
    """Replay buffer capacity."""
    gamma: float = 0.99
    """Discount factor."""
    tau: float = 0.005
    """Polyak rate of the target critics."""
    lr_actor: float = 1e-3
    """Adam learning rate of the actor (and of nu_model)."""
    lr_critic: float = 1e-3
    """Adam learning rate of the twin critics."""
    alpha_init: float = 0.2
    """Initial entropy temperature alpha."""
    autotune_alpha: bool = True
    """Tune alpha towards target entropy -dim(A), as in SAC."""
    eps: float = 0.1
    """L-infinity radius of the observation ball B_eps(s), in raw observation units."""
    kappa_worst: float = 0.5
    """VALT-EPS: probability that nu picks the PGD worst case instead of a uniform sample."""
    adv_ratio: float = 0.5
    """Probability that the behaviour policy acts on a perturbed observation (step 1; the paper's Tables 10-11 set it
    per task, second-hand)."""
    pgd_steps: int = 5
    """Signed-gradient PGD steps of the worst-case search (training)."""
    pgd_lr: float | None = None
    """PGD step size; ``None`` gives ``2.5 * eps / pgd_steps``."""
    alpha_attk: float = 1.0
    """VALT-SOFT: strength of the KL constraint of nu to the uniform prior."""
    soft_critic_kl: bool = True
    """VALT-SOFT: add ``alpha_attk * KL(nu || p)`` to the critic target (False: the adversary's E_nu[G] only)."""
    sa_coef: float = 1.0
    """Robust-SAC (``sa_reg``): weight of the state-adversarial KL regulariser."""
    device: str = "cpu"
    """Where the networks and the replay mini-batches live (``cpu``, ``cuda``, ``cuda:1``...)."""

    def __post_init__(self) -> None:
        # named as the settings are typed (``ValtSACConfig.hidden``; in an experiment ``--set sac.hidden=...``);
        # bounds: a run beyond these would need > ~100 GB or days
        check_fields(self, choices={"variant": VARIANTS},
                     positive=("total_steps", "hidden", "batch_size", "buffer_size", "alpha_init", "lr_actor",
                               "lr_critic", "pgd_lr", "alpha_attk"),
                     nonnegative=("learning_starts", "eps", "pgd_steps", "sa_coef"),
                     finite=("eps", "alpha_init", "lr_actor", "lr_critic", "pgd_lr", "sa_coef", "alpha_attk"),
                     open_fraction=("gamma",), fraction=("kappa_worst", "adv_ratio", "tau"),
                     at_most={"total_steps": 10**7, "learning_starts": 10**7, "hidden": 10**4, "batch_size": 10**6,
                              "buffer_size": 10**8, "pgd_steps": 10**4})


def _check_dims(**dims: int) -> None:
    for name, value in dims.items():
        if int(value) != value or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")


def _mlp(n_in: int, n_out: int, hidden: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(n_in, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, n_out))


class Actor(nn.Module):
    """Tanh-squashed Gaussian policy pi(a|o), rescaled to the action box [low, high].

    ``actor(obs)`` draws a reparameterised action (B, act_dim); ``actor(obs, deterministic=True)`` gives
    :meth:`mean_action`; :meth:`sample` also returns the log-density.
    """

    def __init__(self, obs_dim: int, act_dim: int, hidden: int, low: np.ndarray, high: np.ndarray):
        super().__init__()
        _check_dims(obs_dim=obs_dim, act_dim=act_dim, hidden=hidden)
        lo, hi = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
        if lo.shape != (act_dim,) or hi.shape != (act_dim,):
            raise ValueError(f"low and high must have shape ({act_dim},), got {lo.shape} and {hi.shape}")
        if not (np.isfinite(lo).all() and np.isfinite(hi).all() and np.all(lo < hi)):
            raise ValueError(f"the action box needs finite bounds with low < high, got low={lo}, high={hi}")
        low, high = np.asarray(low), np.asarray(high)  # the scale and bias keep the bounds' own precision
        self.obs_dim = int(obs_dim)
        self.net = _mlp(obs_dim, 2 * act_dim, hidden)
        self.register_buffer("scale", torch.as_tensor((high - low) / 2, dtype=torch.float32))
        self.register_buffer("bias", torch.as_tensor((high + low) / 2, dtype=torch.float32))

    def forward(self, obs: torch.Tensor, deterministic: bool = False) -> torch.Tensor:
        """Action (B, act_dim) for observations (B, obs_dim): a sample of pi(.|o), or tanh(mean) if deterministic."""
        return self.mean_action(obs) if deterministic else self.sample(obs)[0]

    def gaussian(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and log-std (clamped to [-5, 2]) of the pre-tanh Gaussian, each (B, act_dim)."""
        mean, log_std = self.net(obs).chunk(2, dim=-1)
        return mean, log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)

    def sample(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Reparameterised action (B, act_dim) and its log-density log pi(a|o) (B,)."""
        mean, log_std = self.gaussian(obs)
        u = mean + log_std.exp() * torch.randn_like(mean)
        y = torch.tanh(u)
        logp = (-0.5 * ((u - mean) / log_std.exp()) ** 2 - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)
        logp = logp - torch.log(self.scale * (1 - y.pow(2)) + 1e-6).sum(-1)
        return y * self.scale + self.bias, logp

    def mean_action(self, obs: torch.Tensor) -> torch.Tensor:
        """Deterministic action tanh(mean), rescaled (used for evaluation and attacks)."""
        return torch.tanh(self.gaussian(obs)[0]) * self.scale + self.bias


class TwinCritic(nn.Module):
    """Two Q-networks Q_j(s, a) indexed by the *true* state."""

    def __init__(self, obs_dim: int, act_dim: int, hidden: int):
        super().__init__()
        _check_dims(obs_dim=obs_dim, act_dim=act_dim, hidden=hidden)
        self.q1 = _mlp(obs_dim + act_dim, 1, hidden)
        self.q2 = _mlp(obs_dim + act_dim, 1, hidden)

    def forward(self, obs: torch.Tensor, act: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Q_1(s, a) and Q_2(s, a), each (B,)."""
        x = torch.cat([obs, act], -1)
        return self.q1(x).squeeze(-1), self.q2(x).squeeze(-1)

    def min_q(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        """min_j Q_j(s, a), (B,)."""
        return torch.min(*self(obs, act))


class PerturbationModel(nn.Module):
    """VALT-SOFT's nu_model: s~ = s + eps * tanh(u), u ~ N(mu(s), sigma(s)^2), so s~ is always in B_eps(s)."""

    def __init__(self, obs_dim: int, hidden: int, eps: float):
        super().__init__()
        _check_dims(obs_dim=obs_dim, hidden=hidden)
        _check_eps(eps)
        self.net = _mlp(obs_dim, 2 * obs_dim, hidden)
        self.obs_dim, self.eps = int(obs_dim), float(eps)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """A perturbed observation s~ ~ nu_model(.|s), (B, obs_dim), inside B_eps(s)."""
        return self.sample(obs)[0]

    def sample(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Perturbed observation (B, obs_dim) and log nu_model(s~|s) up to the constant -d log eps (B,).

        The log-density is that of the unit-ball offset ``y = (s~ - s) / eps``; ``log nu - log p`` for the
        uniform prior ``p`` on ``B_eps(s)`` is then ``logp + d log 2`` (:meth:`log_ratio_to_prior`).
        """
        mean, log_std = self.net(obs).chunk(2, dim=-1)
        log_std = log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)
        u = mean + log_std.exp() * torch.randn_like(mean)
        y = torch.tanh(u)
        logp = (-0.5 * ((u - mean) / log_std.exp()) ** 2 - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)
        logp = logp - torch.log(1 - y.pow(2) + 1e-6).sum(-1)
        return obs + self.eps * y, logp

    def log_prob(self, obs: torch.Tensor, obs_tilde: torch.Tensor) -> torch.Tensor:
        """log nu_model(s~|s) of given perturbed observations, in the convention of :meth:`sample` (B,)."""
        if obs_tilde.shape != obs.shape:
            raise ValueError(f"obs_tilde must have the shape of obs {tuple(obs.shape)}, got {tuple(obs_tilde.shape)}")
        if self.eps == 0:
            raise ValueError("log_prob needs eps > 0 (at eps = 0 nu_model is a point mass)")
        mean, log_std = self.net(obs).chunk(2, dim=-1)
        log_std = log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)
        y = ((obs_tilde - obs) / self.eps).clamp(-1 + 1e-6, 1 - 1e-6)
        u = torch.atanh(y)
        logp = (-0.5 * ((u - mean) / log_std.exp()) ** 2 - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)
        return logp - torch.log(1 - y.pow(2) + 1e-6).sum(-1)

    def log_ratio_to_prior(self, logp: torch.Tensor) -> torch.Tensor:
        """``log nu(s~|s) - log p(s~|s)`` for the uniform prior on ``B_eps(s)``, from a :meth:`sample` log-density."""
        return logp + self.obs_dim * math.log(2.0)


# ----------------------------------------------------------------------------------------------
# Attacks (all in raw observation units, L-infinity ball of radius eps)
# ----------------------------------------------------------------------------------------------

def _check_eps(eps: float) -> None:
    if not (eps >= 0 and math.isfinite(eps)):
        raise ValueError(f"eps must be a finite number >= 0, got {eps}")


def _check_obs(obs: torch.Tensor, actor: "Actor") -> None:
    """``obs`` is a floating (B, obs_dim) batch of the actor's observations."""
    if not isinstance(obs, torch.Tensor) or not obs.is_floating_point():
        raise TypeError(f"obs must be a floating-point tensor, got {type(obs).__name__} {getattr(obs, 'dtype', '')}")
    if obs.ndim != 2 or obs.shape[1] != actor.obs_dim:
        raise ValueError(f"obs must have shape (B, {actor.obs_dim}), got {tuple(obs.shape)}")


def random_attack(obs: torch.Tensor, eps: float, generator: torch.Generator | None = None) -> torch.Tensor:
    """Uniform sample of B_eps(obs): ``obs + U(-eps, eps)`` per coordinate. Shape of ``obs``.

    The noise is drawn on the ``generator``'s device (the input's without one) and moved to the input's.
    """
    _check_eps(eps)
    if not isinstance(obs, torch.Tensor) or not obs.is_floating_point():
        raise TypeError(f"obs must be a floating-point tensor, got {type(obs).__name__} {getattr(obs, 'dtype', '')}")
    where = obs.device if generator is None else generator.device
    noise = torch.rand(obs.shape, generator=generator, dtype=obs.dtype, device=where).to(obs.device)
    return obs + eps * (2 * noise - 1)


def _pgd(objective: Callable[[torch.Tensor], torch.Tensor], obs: torch.Tensor, eps: float, steps: int,
         lr: float | None) -> torch.Tensor:
    """Minimise a per-sample ``objective(s~) -> (B,)`` over B_eps(obs) by signed-gradient PGD.

    Starts at ``s~ = obs`` and returns, per sample, the best iterate seen (so never worse than obs).
    """
    _check_eps(eps)
    obs = obs.detach()
    if eps == 0 or steps == 0:
        return obs.clone()
    step = 2.5 * eps / steps if lr is None else lr
    best = obs.clone()
    with torch.no_grad():
        best_val = objective(obs)
    best_val = best_val.detach()
    delta = torch.zeros_like(obs)
    for k in range(steps + 1):
        delta.requires_grad_(k < steps)
        val = objective(obs + delta)
        if k > 0:  # keep, per sample, the best iterate seen so far
            with torch.no_grad():
                better = val < best_val
                best[better] = (obs + delta)[better].detach()
                best_val = torch.where(better, val.detach(), best_val)
        if k < steps:
            (grad,) = torch.autograd.grad(val.sum(), delta)
            delta = (delta.detach() - step * grad.sign()).clamp(-eps, eps)
    return best


def pgd_q_attack(actor: Actor, critic: TwinCritic, obs: torch.Tensor, eps: float, steps: int = 10,
                 lr: float | None = None) -> torch.Tensor:
    """PGD min-Q attack: ``argmin_{s~ in B_eps(s)} min_j Q_j(s, mean_action(s~))``. Shape of ``obs``."""
    _check_obs(obs, actor)
    if steps < 0:
        raise ValueError(f"steps must be >= 0, got {steps}")
    obs = obs.detach()
    return _pgd(lambda s_tilde: critic.min_q(obs, actor.mean_action(s_tilde)), obs, eps, steps, lr)


def policy_kl(actor: Actor, obs: torch.Tensor, obs_tilde: torch.Tensor) -> torch.Tensor:
    """KL(pi(.|s) || pi(.|s~)) of the pre-tanh Gaussians (tanh is a bijection, so it is the policy KL). (B,)."""
    _check_obs(obs, actor)
    if obs_tilde.shape != obs.shape:
        raise ValueError(f"obs_tilde must have the shape of obs {tuple(obs.shape)}, got {tuple(obs_tilde.shape)}")
    m1, ls1 = actor.gaussian(obs)
    m2, ls2 = actor.gaussian(obs_tilde)
    return (ls2 - ls1 + (torch.exp(2 * ls1) + (m1 - m2) ** 2) / (2 * torch.exp(2 * ls2)) - 0.5).sum(-1)


def mad_attack(actor: Actor, obs: torch.Tensor, eps: float, steps: int = 10, lr: float | None = None,
               generator: torch.Generator | None = None) -> torch.Tensor:
    """MAD attack: ``argmax_{s~ in B_eps(s)} KL(pi(.|s) || pi(.|s~))`` by PGD from a random start. Shape of ``obs``.

    The KL and its gradient are zero at ``s~ = s``, so the search starts at a uniform point of the ball.
    """
    _check_obs(obs, actor)
    if steps < 0:
        raise ValueError(f"steps must be >= 0, got {steps}")
    obs = obs.detach()
    with torch.no_grad():
        m1, ls1 = actor.gaussian(obs)
    start = random_attack(obs, eps, generator)

    def neg_kl(s_tilde: torch.Tensor) -> torch.Tensor:
        m2, ls2 = actor.gaussian(s_tilde)
        return -(ls2 - ls1 + (torch.exp(2 * ls1) + (m1 - m2) ** 2) / (2 * torch.exp(2 * ls2)) - 0.5).sum(-1)

    # PGD in the ball around obs, started at `start`: optimise the offset, then project.
    delta0 = start - obs
    best = _pgd(lambda d: neg_kl(obs + (d + delta0).clamp(-eps, eps)), torch.zeros_like(obs), eps, steps, lr)
    return obs + (best + delta0).clamp(-eps, eps)


class PerturbedObservation(gym.ObservationWrapper):
    """Show the agent ``attack(obs)`` instead of the raw observation ``obs`` (evaluation under attack).

    ``attack`` maps a float32 tensor (1, obs_dim) to a tensor of the same shape; ``None`` is the identity.
    The ``info`` of ``step``/``reset`` is unchanged; the true observation is kept in ``self.clean_obs``.
    """

    def __init__(self, env: gym.Env, attack: Callable[[torch.Tensor], torch.Tensor] | None):
        super().__init__(env)
        self.attack = attack
        self.clean_obs: np.ndarray | None = None

    def observation(self, observation):
        self.clean_obs = np.asarray(observation, dtype=np.float32)
        if self.attack is None:
            return self.clean_obs
        with torch.enable_grad():
            out = self.attack(torch.as_tensor(self.clean_obs).unsqueeze(0))
        return out.detach().squeeze(0).cpu().numpy().astype(np.float32)


ATTACKS: tuple[str, ...] = ("none", "random", "mad", "pgd_q")


def make_attack(name: str, actor: Actor, critic: TwinCritic | None, eps: float, steps: int = 10,
                seed: int = 0) -> Callable[[torch.Tensor], torch.Tensor] | None:
    """Build the named attack (one of :data:`ATTACKS`) as an ``obs -> s~`` callable (``None`` for "none")."""
    _check_eps(eps)
    gen = torch.Generator().manual_seed(seed)
    if name == "none":
        return None
    if name == "random":
        return lambda o: random_attack(o, eps, gen)
    if name == "mad":
        return lambda o: mad_attack(actor, o, eps, steps, generator=gen)
    if name == "pgd_q":
        if critic is None:
            raise ValueError("the pgd_q attack needs the victim's critic")
        return lambda o: pgd_q_attack(actor, critic, o, eps, steps)
    raise ValueError(f"attack must be one of {ATTACKS}, got {name!r}")


def env_factory(env: EnvSpec) -> Callable[[], gym.Env]:
    """Zero-argument constructor for ``env``: a name (see :func:`make_env`), an instance (deep-copied), a factory."""
    if isinstance(env, str):
        return lambda: make_env(env)
    if isinstance(env, gym.Env):
        return lambda: copy.deepcopy(env)
    if callable(env):
        return env
    raise ValueError(f"env must be a gymnasium id, an environment or a factory, got {type(env).__name__}")


def evaluate_under_attack(actor: Actor, env: EnvSpec, attack: str | Callable | None = "none",
                          eps: float = 0.0, n_episodes: int = 5, critic: TwinCritic | None = None,
                          attack_steps: int = 10, seed: int = 0) -> np.ndarray:
    """Undiscounted returns of the deterministic policy ``mean_action`` under an observation attack.

    The ``n_episodes`` episodes run in lockstep so that the attack (a PGD per step) is batched; each
    step is exactly what :class:`PerturbedObservation` does for one environment.

    Args:
        actor: the policy to evaluate.
        env: a name (gymnasium id or ``"PointMassReach"``), an environment (deep-copied) or a factory.
        attack: a name from :data:`ATTACKS`, or an ``obs -> s~`` callable on (B, obs_dim) tensors, or ``None``.
        eps: L-infinity radius in raw observation units.
        n_episodes: number of episodes; episode ``i`` is reset with seed ``seed + i``.
        critic: the victim's critic (needed by ``pgd_q``).
        attack_steps: PGD steps of the MAD / PGD-Q attacks.
        seed: base seed of the episodes and of the random attacks.

    Returns:
        Array (n_episodes,) of episode returns.
    """
    if n_episodes < 1:
        raise ValueError(f"n_episodes must be >= 1, got {n_episodes}")
    fn = make_attack(attack, actor, critic, eps, attack_steps, seed) if isinstance(attack, str) else attack
    device = next(actor.parameters()).device
    factory = env_factory(env)
    envs = [factory() for _ in range(n_episodes)]
    obs = np.stack([e.reset(seed=seed + i)[0] for i, e in enumerate(envs)]).astype(np.float32)
    returns = np.zeros(n_episodes)
    live = np.ones(n_episodes, bool)
    while live.any():
        o = torch.as_tensor(obs, device=device)
        if fn is not None:
            o = fn(o).detach()
        with torch.no_grad():
            acts = actor.mean_action(o).cpu().numpy()
        for i in np.flatnonzero(live):
            ob, r, term, trunc, _ = envs[i].step(acts[i])
            obs[i] = ob
            returns[i] += float(r)
            live[i] = not (term or trunc)
    return returns


# ----------------------------------------------------------------------------------------------
# The learner
# ----------------------------------------------------------------------------------------------

@dataclass
class TrainLog:
    """What a training run reports."""

    env_steps: int = 0
    """Environment steps taken (the same for every variant)."""
    updates: int = 0
    """Gradient updates of the critic."""
    episode_returns: list[float] = field(default_factory=list)
    """Undiscounted returns of the finished training episodes (behaviour policy, possibly attacked)."""
    alpha: float = float("nan")
    """Final entropy temperature."""


class ValtSAC:
    """The networks, optimisers and one update step of VALT-SAC (or SAC / Robust-SAC)."""

    def __init__(self, obs_dim: int, act_dim: int, low: np.ndarray, high: np.ndarray, cfg: ValtSACConfig):
        self.cfg, self.device = cfg, torch.device(cfg.device)
        self.actor = Actor(obs_dim, act_dim, cfg.hidden, low, high).to(self.device)
        self.critic = TwinCritic(obs_dim, act_dim, cfg.hidden).to(self.device)
        self.critic_target = TwinCritic(obs_dim, act_dim, cfg.hidden).to(self.device)
        self.critic_target.load_state_dict(self.critic.state_dict())
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=cfg.lr_actor)
        self.critic_opt = torch.optim.Adam(self.critic.parameters(), lr=cfg.lr_critic)
        self.log_alpha = torch.tensor(math.log(cfg.alpha_init), device=self.device, requires_grad=True)
        self.alpha_opt = torch.optim.Adam([self.log_alpha], lr=cfg.lr_actor)
        self.target_entropy = -float(act_dim)
        self.nu_model = (PerturbationModel(obs_dim, cfg.hidden, cfg.eps).to(self.device) if cfg.variant == "soft"
                         else None)
        self.nu_opt = torch.optim.Adam(self.nu_model.parameters(), lr=cfg.lr_actor) if self.nu_model else None

    @property
    def alpha(self) -> torch.Tensor:
        return self.log_alpha.exp().detach()

    def perturb(self, obs: torch.Tensor, critic: TwinCritic | None = None) -> torch.Tensor:
        """Draw s~ ~ nu(.|s) for a batch of true states (no gradient to any network). (B, obs_dim)."""
        cfg, critic = self.cfg, critic or self.critic
        if cfg.variant in ("none", "sa_reg") or cfg.eps == 0:
            return obs
        if cfg.variant == "soft":
            with torch.no_grad():
                return self.nu_model.sample(obs)[0]
        # VALT-EPS: mixture of the PGD worst case (prob. kappa_worst) and the uniform prior.
        out = random_attack(obs, cfg.eps)
        worst = torch.rand(obs.shape[0], device=obs.device) < cfg.kappa_worst
        if worst.any():
            out[worst] = pgd_q_attack(self.actor, critic, obs[worst], cfg.eps, cfg.pgd_steps, cfg.pgd_lr)
        return out

    def critic_loss(self, obs, act, rew, next_obs, done, next_obs_tilde=None) -> torch.Tensor:
        """Soft worst-case Bellman loss; the true s' indexes the critic, the policy sees s~' ~ nu(.|s').

        VALT-SOFT (with ``soft_critic_kl`` and ``eps > 0``) adds ``alpha_attk (log nu(s~'|s') - log p(s~'|s'))``
        to the next-state value, a one-sample estimate of the adversary's ``alpha_attk KL(nu || p)``.
        """
        cfg = self.cfg
        kl_term = cfg.variant == "soft" and cfg.soft_critic_kl and cfg.eps > 0
        if next_obs_tilde is None and not kl_term:
            next_obs_tilde = self.perturb(next_obs, self.critic_target)  # VALT-EPS runs PGD: outside no_grad
        with torch.no_grad():
            if next_obs_tilde is None:
                next_obs_tilde, log_nu = self.nu_model.sample(next_obs)
            elif kl_term:
                log_nu = self.nu_model.log_prob(next_obs, next_obs_tilde)
            next_act, next_logp = self.actor.sample(next_obs_tilde)
            target_q = self.critic_target.min_q(next_obs, next_act) - self.alpha * next_logp
            if kl_term:
                target_q = target_q + cfg.alpha_attk * self.nu_model.log_ratio_to_prior(log_nu)
            y = rew + cfg.gamma * (1 - done) * target_q
        q1, q2 = self.critic(obs, act)
        return F.mse_loss(q1, y) + F.mse_loss(q2, y)

    def actor_losses(self, obs, obs_tilde=None) -> tuple[torch.Tensor, torch.Tensor]:
        """Actor loss ``E[alpha log pi(a|s~) - min_j Q_j(s, a)]`` (a ~ pi(.|s~), s~ ~ nu(.|s)) and alpha loss."""
        cfg = self.cfg
        if obs_tilde is None:
            obs_tilde = self.perturb(obs)
        new_act, logp = self.actor.sample(obs_tilde)
        actor_loss = (self.alpha * logp - self.critic.min_q(obs, new_act)).mean()
        if cfg.variant == "sa_reg" and cfg.eps > 0:
            s_mad = mad_attack(self.actor, obs, cfg.eps, max(cfg.pgd_steps, 1), cfg.pgd_lr)
            actor_loss = actor_loss + cfg.sa_coef * policy_kl(self.actor, obs, s_mad).mean()
        alpha_loss = -(self.log_alpha * (logp.detach() + self.target_entropy)).mean()
        return actor_loss, alpha_loss

    def nu_loss(self, obs: torch.Tensor) -> torch.Tensor:
        """VALT-SOFT: KL(nu_model || nu*) up to a constant, with nu* ∝ p exp(-E_pi[Q - alpha log pi] / alpha_attk)."""
        s_tilde, log_nu = self.nu_model.sample(obs)
        a, logp = self.actor.sample(s_tilde)
        soft_q = self.critic.min_q(obs, a) - self.alpha * logp
        return (log_nu + soft_q / self.cfg.alpha_attk).mean()

    def update(self, batch: tuple[torch.Tensor, ...]) -> dict[str, float]:
        """One gradient step on critic, actor, temperature (and nu_model), then Polyak-average the targets."""
        out = {"critic": self.critic_loss(*batch)}
        self.critic_opt.zero_grad()
        out["critic"].backward()
        self.critic_opt.step()
        out["actor"], out["alpha"] = self.actor_losses(batch[0])
        self.actor_opt.zero_grad()
        out["actor"].backward()
        self.actor_opt.step()
        if self.cfg.autotune_alpha:
            self.alpha_opt.zero_grad()
            out["alpha"].backward()
            self.alpha_opt.step()
        if self.nu_model is not None:
            loss = self.nu_loss(batch[0])
            self.nu_opt.zero_grad()
            loss.backward()
            self.nu_opt.step()
            out["nu"] = loss
        with torch.no_grad():
            for p, pt in zip(self.critic.parameters(), self.critic_target.parameters()):
                pt.mul_(1 - self.cfg.tau).add_(self.cfg.tau * p)
        return {k: float(v.detach()) for k, v in out.items()}


def valt_sac_train(env: EnvSpec, cfg: ValtSACConfig | None = None, seed: int = 0,
                   progress: Callable[[int, int], None] | None = None) -> tuple[Actor, TwinCritic, TrainLog]:
    """Train VALT-SAC (or SAC / Robust-SAC, by ``cfg.variant``) on a continuous-action gymnasium env.

    Args:
        env: a name (gymnasium id such as ``"Pendulum-v1"``, or ``"PointMassReach"``), an environment or a
            factory; Box observation and action spaces.
        cfg: hyper-parameters (default :class:`ValtSACConfig`).
        seed: seeds torch, the replay sampler, the env and its action space.
        progress: optional ``progress(done, total)`` called every 1000 steps.

    Returns:
        ``(actor, critic, log)``.
    """
    cfg = cfg or ValtSACConfig()
    env = env if isinstance(env, gym.Env) else env_factory(env)()
    if not isinstance(env.observation_space, gym.spaces.Box) or not isinstance(env.action_space, gym.spaces.Box):
        raise ValueError("valt_sac_train needs Box observation and action spaces")
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    env.action_space.seed(seed)
    obs_dim, act_dim = env.observation_space.shape[0], env.action_space.shape[0]
    agent = ValtSAC(obs_dim, act_dim, env.action_space.low, env.action_space.high, cfg)
    device = agent.device
    n = min(cfg.buffer_size, cfg.total_steps)
    buf = {"obs": np.zeros((n, obs_dim), np.float32), "act": np.zeros((n, act_dim), np.float32),
           "rew": np.zeros(n, np.float32), "next": np.zeros((n, obs_dim), np.float32),
           "done": np.zeros(n, np.float32)}
    log = TrainLog()
    obs, _ = env.reset(seed=seed)
    ep_ret = 0.0
    for step in range(cfg.total_steps):
        # 1. act: the behaviour policy sees s~ ~ nu(.|s) with probability adv_ratio; the buffer stores s.
        if step < cfg.learning_starts:
            act = env.action_space.sample()
        else:
            o = torch.as_tensor(obs, dtype=torch.float32, device=device).unsqueeze(0)
            if rng.random() < cfg.adv_ratio:
                o = agent.perturb(o)
            with torch.no_grad():
                act = agent.actor.sample(o)[0].squeeze(0).cpu().numpy()
        next_obs, rew, term, trunc, _ = env.step(act)
        i = step % n
        buf["obs"][i], buf["act"][i], buf["rew"][i], buf["next"][i], buf["done"][i] = obs, act, rew, next_obs, term
        ep_ret += float(rew)
        obs = next_obs
        if term or trunc:
            log.episode_returns.append(ep_ret)
            ep_ret = 0.0
            obs, _ = env.reset()
        log.env_steps += 1
        # 2-4. critic, actor, temperature (and nu_model) updates on clean transitions.
        if step >= cfg.learning_starts:
            idx = rng.integers(0, min(step + 1, n), cfg.batch_size)
            batch = tuple(torch.as_tensor(buf[k][idx], device=device) for k in ("obs", "act", "rew", "next", "done"))
            agent.update(batch)
            log.updates += 1
        if progress is not None and (step + 1) % 1000 == 0:
            progress(step + 1, cfg.total_steps)
    log.alpha = float(agent.alpha)
    agent.actor.eval()
    return agent.actor, agent.critic, log


def sac_train(env: EnvSpec, cfg: ValtSACConfig | None = None, seed: int = 0,
              progress: Callable[[int, int], None] | None = None) -> tuple[Actor, TwinCritic, TrainLog]:
    """Plain SAC: :func:`valt_sac_train` with ``variant="none"`` (same code path, same budget)."""
    cfg = ValtSACConfig(**{**(cfg or ValtSACConfig()).__dict__, "variant": "none"})
    return valt_sac_train(env, cfg, seed, progress)

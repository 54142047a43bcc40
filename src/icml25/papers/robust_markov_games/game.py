"""Robust Markov games with fictitious TV uncertainty sets (Shi, Gai, Mazumdar, Chi & Wierman, ICML 2025).

Everything here is exact (no sampling except :meth:`MarkovGame.sample_next`):

* :func:`tv_robust_expectation` -- ``inf_{P': TV(P', p) <= sigma} P' v`` by its dual, a 1-D search over
  the breakpoints ``alpha in {v(s')}``;
* :class:`MarkovGame` -- a finite-horizon general-sum m-player Markov game with a generative model;
* :class:`CorrelatedPolicy` -- a Markov correlated policy ``pi_h(a | s)`` over joint actions;
* :func:`robust_policy_values`, :func:`robust_best_response_values`, :func:`robust_cce_gap` -- robust
  policy evaluation and best responses by backward induction on the agent-wise (s, a_i)-rectangular
  robust MDPs, and the robust CCE gap built from them.

Conventions: ``P`` has shape ``(H, S, A_1, ..., A_m, S)``, ``R`` has shape ``(m, H, S, A_1, ..., A_m)``
with rewards in [0, 1]; steps are indexed ``h = 0, ..., H-1`` (the paper's 1..H); values ``V`` have shape
``(m, H + 1, S)`` with ``V[:, H] = 0``.

The fictitious uncertainty set of agent i at (h, s, a_i) is the TV ball of radius ``sigma_i`` around the
nominal kernel averaged over the others' actions *conditioned on* a_i,
``P^{pi_{-i}}_{h,s,a_i} = sum_{a_{-i}} pi_h(a_i, a_{-i} | s) / pi_{i,h}(a_i | s) P_h(. | s, a)``
(for a product policy this is the others' marginal), and
``Q_i(s, a_i) = E_{a_{-i} | a_i} r_i(s, a) + inf_{TV(P', P^{pi_{-i}}_{h,s,a_i}) <= sigma_i} P' V_{i,h+1}``,
``V_i(s) = sum_{a_i} pi_i(a_i | s) Q_i(s, a_i)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from icml25.common.mdp import check_count

STOCHASTIC_ATOL = 1e-8
"""How far a distribution may sum from 1 before it is rejected."""


def _check_index(name: str, value: Any, size: int) -> int:
    """An integer index in [0, size); TypeError for other types (bool and float included)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {value!r} ({type(value).__name__})")
    if not 0 <= value < size:
        raise ValueError(f"{name} must be in [0, {size}), got {value}")
    return int(value)


# --------------------------------------------------------------------------- TV-robust expectation

def _check_sigma_value(sigma: Any) -> np.ndarray:
    s = np.asarray(sigma, dtype=float)
    if not np.all(np.isfinite(s)) or np.any(s < 0) or np.any(s > 1):
        raise ValueError(f"sigma must be in [0, 1], got {sigma!r}")
    return s


def _check_distributions(name: str, p: Any) -> np.ndarray:
    p = np.asarray(p, dtype=float)
    if p.ndim < 1 or p.shape[-1] < 1:
        raise ValueError(f"{name} must have at least one axis of positive length, got shape {p.shape}")
    if not np.all(np.isfinite(p)):
        raise ValueError(f"{name} must be finite")
    if np.any(p < -STOCHASTIC_ATOL):
        raise ValueError(f"{name} is not stochastic: it has negative entries")
    sums = p.sum(axis=-1)
    if not np.allclose(sums, 1.0, rtol=0.0, atol=1e-6):
        worst = np.unravel_index(np.argmax(np.abs(sums - 1.0)), sums.shape) if sums.ndim else ()
        raise ValueError(f"{name} is not stochastic: a row {worst} sums to {np.asarray(sums)[worst]:.6g}, not 1")
    return np.clip(p, 0.0, None)


def tv_robust(p: np.ndarray, v: np.ndarray, sigma: np.ndarray | float) -> np.ndarray:
    """Unchecked batched dual: ``max_j [sum_{l<j} p_l v_l + v_j sum_{l>=j} p_l - sigma (v_j - v_min)]``.

    With ``v`` sorted ascending, ``P [V]_alpha`` at ``alpha = v_(j)`` is the cumulative sum below ``j``
    plus ``v_(j)`` times the mass at or above ``j``; ``min_s' [V]_alpha = v_(1)`` for ``alpha >= v_(1)``.
    The dual objective is concave and piecewise linear in alpha, so its maximum sits on a breakpoint.
    """
    p, v = np.broadcast_arrays(p, v)
    order = np.argsort(v, axis=-1)
    vs = np.take_along_axis(v, order, axis=-1)
    ps = np.take_along_axis(p, order, axis=-1)
    below = np.cumsum(ps * vs, axis=-1) - ps * vs                   # sum_{l<j} p_l v_l
    at_or_above = np.flip(np.cumsum(np.flip(ps, -1), axis=-1), -1)  # sum_{l>=j} p_l
    sig = np.asarray(sigma, dtype=float)[..., None]
    dual = below + vs * at_or_above - sig * (vs - vs[..., :1])
    return dual.max(axis=-1)


def tv_robust_expectation(p: Any, v: Any, sigma: float) -> float:
    """Worst-case expectation of ``v`` over the total-variation ball of radius ``sigma`` around ``p``.

    ``inf_{P' in simplex, (1/2)||P' - p||_1 <= sigma} P' v
    = max_{alpha in [min v, max v]} { p [v]_alpha - sigma (alpha - min_s [v]_alpha(s)) }``,
    ``[v]_alpha = min(v, alpha)`` (eq. 16 of the paper; Iyengar 2005), computed exactly in O(S log S).

    Args:
        p: (S,) nominal distribution.
        v: (S,) values.
        sigma: radius in [0, 1].

    Returns:
        The robust expectation. ``sigma = 0`` gives ``p @ v``; ``sigma = 1`` gives ``min(v)``.
    """
    p = _check_distributions("p", p)
    v = np.asarray(v, dtype=float)
    if p.ndim != 1 or v.shape != p.shape:
        raise ValueError(f"p and v must be 1-D arrays of the same length, got shapes {p.shape} and {v.shape}")
    if not np.all(np.isfinite(v)):
        raise ValueError("v must be finite")
    sig = _check_sigma_value(sigma)
    if sig.ndim != 0:
        raise ValueError(f"sigma must be a scalar, got shape {sig.shape}")
    return float(tv_robust(p, v, sig))


def tv_robust_expectation_batch(p: Any, v: Any, sigma: Any) -> np.ndarray:
    """Batched :func:`tv_robust_expectation`: ``p`` (..., S), ``v`` broadcastable to it, ``sigma``
    broadcastable to ``p.shape[:-1]``; returns an array of shape ``broadcast(p, v).shape[:-1]``."""
    p = _check_distributions("p", p)
    v = np.asarray(v, dtype=float)
    if v.ndim < 1 or v.shape[-1] != p.shape[-1]:
        raise ValueError(f"v must end with an axis of length {p.shape[-1]} to match p, got shape {v.shape}")
    try:
        batch = np.broadcast_shapes(p.shape, v.shape)[:-1]
        sig = np.broadcast_to(_check_sigma_value(sigma), batch)
    except ValueError as exc:
        if "sigma must" in str(exc):
            raise
        raise ValueError(f"shapes do not broadcast: p {p.shape}, v {v.shape}, sigma {np.shape(sigma)}") from None
    if not np.all(np.isfinite(v)):
        raise ValueError("v must be finite")
    return tv_robust(p, v, sig)


# --------------------------------------------------------------------------- the game

class MarkovGame:
    """A finite-horizon general-sum m-player Markov game with a generative model.

    Args:
        P: (H, S, A_1, ..., A_m, S) transitions; ``P[h, s, a_1, ..., a_m]`` is a distribution over s'.
        R: (m, H, S, A_1, ..., A_m) rewards in [0, 1]; ``R[i]`` is agent i's reward.
        H: horizon (>= 1); must equal ``P.shape[0]``.

    Attributes:
        n_agents, n_states, horizon, n_actions (tuple of A_i), n_joint (prod A_i), and flat views
        ``P_flat`` (H, S, n_joint, S) and ``R_flat`` (m, H, S, n_joint) in C order of the joint action.
    """

    def __init__(self, P: Any, R: Any, H: int):
        H = check_count("H", H)
        P = np.asarray(P, dtype=float)
        R = np.asarray(R, dtype=float)
        if P.ndim < 4 or P.shape[1] != P.shape[-1] or min(P.shape) < 1:
            raise ValueError(f"P must have shape (H, S, A_1, ..., A_m, S) with m >= 1, got {P.shape}")
        if P.shape[0] != H:
            raise ValueError(f"H={H} does not match the leading axis of P ({P.shape[0]})")
        if not np.all(np.isfinite(P)):
            raise ValueError("P must be finite")
        if np.any(P < 0):
            raise ValueError("P is not stochastic: it has negative entries")
        sums = P.sum(axis=-1)
        if not np.allclose(sums, 1.0, rtol=0.0, atol=STOCHASTIC_ATOL):
            idx = np.unravel_index(np.argmax(np.abs(sums - 1.0)), sums.shape)
            raise ValueError(f"P is not stochastic: row P[{', '.join(map(str, idx))}] sums to {sums[idx]:.6g}, not 1")
        actions = tuple(int(a) for a in P.shape[2:-1])
        m, S = len(actions), P.shape[1]
        if R.shape != (m, H, S, *actions):
            raise ValueError(f"R must have shape (m, H, S, A_1, ..., A_m) = {(m, H, S, *actions)} to match P "
                             f"{P.shape}, got {R.shape}")
        if not np.all(np.isfinite(R)) or np.any(R < 0) or np.any(R > 1):
            raise ValueError("R must have entries in [0, 1]")
        self.P, self.R = P, R
        self.horizon, self.n_states, self.n_actions, self.n_agents = H, S, actions, m
        self.n_joint = int(np.prod(actions))
        self.P_flat = P.reshape(H, S, self.n_joint, S)
        self.R_flat = R.reshape(m, H, S, self.n_joint)
        self._cdf = None

    @property
    def H(self) -> int:
        return self.horizon

    @property
    def transition_cdf(self) -> np.ndarray:
        """(H, S, n_joint, S) cumulative transition probabilities (inverse-CDF sampling)."""
        if self._cdf is None:
            self._cdf = np.cumsum(self.P_flat, axis=-1)
        return self._cdf

    def joint_index(self, joint_a: Any) -> np.ndarray:
        """Flat index of joint actions given as (..., m) integer arrays."""
        a = np.asarray(joint_a)
        if a.shape[-1:] != (self.n_agents,) or not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"joint actions must be integers of shape (..., {self.n_agents}), got {a.shape}")
        if np.any(a < 0) or np.any(a >= np.array(self.n_actions)):
            raise ValueError(f"joint action out of range for action counts {self.n_actions}")
        return np.ravel_multi_index(tuple(np.moveaxis(a, -1, 0)), self.n_actions)

    def sample_next(self, h: int, s: int, joint_a: Any, rng: np.random.Generator) -> int:
        """The generative model: one draw of s' ~ P_h(. | s, a) for the joint action ``joint_a``."""
        h, s = _check_index("h", h, self.horizon), _check_index("s", s, self.n_states)
        j = int(self.joint_index(np.asarray(joint_a, dtype=int)))
        return int(min(np.searchsorted(self.transition_cdf[h, s, j], rng.random(), side="right"), self.n_states - 1))

    def sample_next_batch(self, h: int, s: np.ndarray, joint: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Vectorised generative model: next states for arrays of states ``s`` and flat joint indices."""
        cdf = self.transition_cdf[h, s, joint]
        u = rng.random(cdf.shape[:-1])
        return np.minimum((u[..., None] > cdf).sum(axis=-1), self.n_states - 1)


def random_general_sum_game(m: int, A: int | Sequence[int], S: int, H: int, seed: int | None = 0) -> MarkovGame:
    """A random general-sum Markov game: rows of P ~ Dirichlet(1, ..., 1), rewards ~ U[0, 1].

    Args:
        m: number of agents (>= 1).
        A: actions per agent, an int (same for all) or a sequence of m ints (each >= 1).
        S: number of states (>= 1).
        H: horizon (>= 1).
        seed: seed of the generator.
    """
    m = check_count("m", m)
    S = check_count("S", S)
    H = check_count("H", H)
    if isinstance(A, (int, np.integer)) and not isinstance(A, bool):
        actions = (check_count("A", A),) * m
    else:
        actions = tuple(check_count(f"A[{i}]", a) for i, a in enumerate(A))
        if len(actions) != m:
            raise ValueError(f"A must give one action count per agent ({m}), got {len(actions)}")
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(S), size=(H, S, *actions))
    R = rng.random((m, H, S, *actions))
    return MarkovGame(P, R, H)


# --------------------------------------------------------------------------- policies

@dataclass
class CorrelatedPolicy:
    """A Markov correlated policy: ``joint[h, s]`` is a distribution over joint actions (A_1, ..., A_m).

    Robust-Q-FTRL fills the optional fields: ``weights`` (H, S, K) mixture weights ``alpha^K_k`` and
    ``factors`` (one (H, S, K, A_i) array per agent) of the per-round product policies, so that
    ``joint[h, s] = sum_k weights[h, s, k] prod_i factors[i][h, s, k]``; ``value_estimates`` (m, H + 1, S)
    are the algorithm's own robust value estimates and ``n_samples`` the generative-model calls it used.
    """

    joint: np.ndarray
    weights: np.ndarray | None = None
    factors: tuple[np.ndarray, ...] | None = None
    value_estimates: np.ndarray | None = None
    n_samples: int = 0

    def __post_init__(self) -> None:
        joint = np.asarray(self.joint, dtype=float)
        if joint.ndim < 3:
            raise ValueError(f"joint must have shape (H, S, A_1, ..., A_m), got {joint.shape}")
        flat = _check_distributions("joint policy", joint.reshape(*joint.shape[:2], -1))
        self.joint = flat.reshape(joint.shape)

    @classmethod
    def product(cls, factors: Sequence[Any]) -> "CorrelatedPolicy":
        """The product policy of per-agent policies, each of shape (H, S, A_i)."""
        if len(factors) == 0:
            raise ValueError("factors must hold one (H, S, A_i) policy per agent, got none")
        fs = [_check_distributions(f"factors[{i}]", f) for i, f in enumerate(factors)]
        joint = np.ones(fs[0].shape[:2])
        for f in fs:
            joint = joint[..., None] * f.reshape(*f.shape[:2], *([1] * (joint.ndim - 2)), f.shape[-1])
        return cls(joint)

    @classmethod
    def mixture(cls, weights: np.ndarray, factors: Sequence[np.ndarray], **extra: Any) -> "CorrelatedPolicy":
        """``joint[h, s] = sum_k weights[h, s, k] prod_i factors[i][h, s, k]`` (the Robust-Q-FTRL output)."""
        joint = np.asarray(weights, dtype=float)
        for f in factors:
            joint = joint[..., None] * f.reshape(*f.shape[:3], *([1] * (joint.ndim - 3)), f.shape[-1])
        return cls(joint.sum(axis=2), weights=np.asarray(weights), factors=tuple(factors), **extra)

    @property
    def n_agents(self) -> int:
        return self.joint.ndim - 2

    def marginal(self, i: int) -> np.ndarray:
        """(H, S, A_i): agent i's marginal policy."""
        i = _check_index("agent i", i, self.n_agents)
        axes = tuple(2 + j for j in range(self.n_agents) if j != i)
        return self.joint.sum(axis=axes)

    def others_marginal(self, i: int) -> np.ndarray:
        """(H, S, A_1, ..., 1, ..., A_m): the others' marginal pi_{-i}, agent i's axis kept with length 1."""
        i = _check_index("agent i", i, self.n_agents)
        return self.joint.sum(axis=2 + i, keepdims=True)


def _check_policy(game: MarkovGame, policy: CorrelatedPolicy) -> None:
    if not isinstance(policy, CorrelatedPolicy):
        raise ValueError(f"policy must be a CorrelatedPolicy, got {type(policy).__name__}")
    expected = (game.horizon, game.n_states, *game.n_actions)
    if policy.joint.shape != expected:
        raise ValueError(f"policy.joint must have shape {expected} to match the game, got {policy.joint.shape}")


def check_sigmas(sigma: Any, m: int) -> np.ndarray:
    """Per-agent radii: a scalar or an (m,) array, each in [0, 1]."""
    s = _check_sigma_value(sigma)
    if s.ndim == 0:
        return np.full(m, float(s))
    if s.shape != (m,):
        raise ValueError(f"sigma must be a scalar or have shape ({m},), got {s.shape}")
    return s


# --------------------------------------------------------------------------- exact robust evaluation

def _sum_others(x: np.ndarray, i: int, m: int) -> np.ndarray:
    """Sum ``x`` (S, A_1..A_m, ...) over the action axes of every agent but i."""
    return x.sum(axis=tuple(1 + j for j in range(m) if j != i))


def robust_policy_values(game: MarkovGame, policy: CorrelatedPolicy, sigma: Any) -> np.ndarray:
    """Robust values ``V^{pi, sigma}_{i,h}(s)`` of a correlated policy, shape (m, H + 1, S).

    Backward induction with the fictitious center conditioned on a_i (see the module docstring); the
    center at actions a_i that pi never plays has weight 0 and is replaced by the others' marginal.
    """
    _check_policy(game, policy)
    m, H, S = game.n_agents, game.horizon, game.n_states
    sig = check_sigmas(sigma, m)
    V = np.zeros((m, H + 1, S))
    for h in range(H - 1, -1, -1):
        pi = policy.joint[h]                                           # (S, A_1..A_m)
        weighted_P = pi[..., None] * game.P[h]                         # (S, A_1..A_m, S')
        for i in range(m):
            pi_i = policy.marginal(i)[h]                               # (S, A_i)
            mass = _sum_others(weighted_P, i, m)                 # (S, A_i, S')
            fallback = _sum_others(policy.others_marginal(i)[h][..., None] * game.P[h], i, m)
            played = pi_i > 0
            center = np.where(played[..., None], mass / np.where(played, pi_i, 1.0)[..., None], fallback)
            robust = tv_robust(center, V[i, h + 1], sig[i])          # (S, A_i)
            reward = (pi * game.R[i, h]).reshape(S, -1).sum(axis=1)
            V[i, h] = reward + (pi_i * robust).sum(axis=1)
    return V


def others_model(game: MarkovGame, others: np.ndarray, i: int, h: int) -> tuple[np.ndarray, np.ndarray]:
    """Agent i's (r, P) at step h when the others play ``others`` (S, A_1..1..A_m): (S, A_i), (S, A_i, S')."""
    m = game.n_agents
    r = _sum_others(others * game.R[i, h], i, m)
    P = _sum_others(others[..., None] * game.P[h], i, m)
    return r, P


def robust_best_response_values(game: MarkovGame, policy: CorrelatedPolicy, sigma: Any) -> np.ndarray:
    """Robust best-response values ``max_{pi'_i} V^{pi'_i x pi_{-i}, sigma}_{i,h}(s)``, shape (m, H + 1, S).

    With the others fixed to the marginal pi_{-i} of the correlated policy, agent i faces an
    (s, a_i)-rectangular robust MDP with nominal kernel ``sum_{a_-i} pi_{-i}(a_-i|s) P_h(.|s, a_i, a_-i)``,
    solved exactly by robust backward induction (a deterministic Markov best response is optimal).
    """
    _check_policy(game, policy)
    m, H, S = game.n_agents, game.horizon, game.n_states
    sig = check_sigmas(sigma, m)
    V = np.zeros((m, H + 1, S))
    for i in range(m):
        others = policy.others_marginal(i)
        for h in range(H - 1, -1, -1):
            r, P = others_model(game, others[h], i, h)
            V[i, h] = (r + tv_robust(P, V[i, h + 1], sig[i])).max(axis=1)
    return V


def robust_cce_gaps(game: MarkovGame, policy: CorrelatedPolicy, sigma: Any,
                    initial_state: int | None = None) -> np.ndarray:
    """Per-agent robust CCE gaps (m,): ``max_{pi'_i} V_i^{pi'_i x pi_-i, sigma}(s) - V_i^{pi, sigma}(s)`` at
    step 1, at ``initial_state`` or (default) maximised over all initial states."""
    gaps = robust_best_response_values(game, policy, sigma)[:, 0] - robust_policy_values(game, policy, sigma)[:, 0]
    if initial_state is None:
        return gaps.max(axis=1)
    return gaps[:, _check_index("initial_state", initial_state, game.n_states)]


def robust_cce_gap(game: MarkovGame, policy: CorrelatedPolicy, sigma: Any, initial_state: int | None = None) -> float:
    """Exact robust CCE gap ``max_i [max_{pi'_i} V_i^{pi'_i x pi_-i, sigma} - V_i^{pi, sigma}](s_1)`` (>= 0).

    Args:
        game: the Markov game.
        policy: a :class:`CorrelatedPolicy` of matching shape.
        sigma: TV radius, a scalar or one per agent, each in [0, 1] (0 gives the standard CCE gap).
        initial_state: s_1; ``None`` (default) takes the worst initial state.

    Returns:
        The gap; 0 exactly at a robust CCE.
    """
    return float(robust_cce_gaps(game, policy, sigma, initial_state).max())

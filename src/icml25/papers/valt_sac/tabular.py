"""Tabular state-adversarial MDPs: the soft-constrained adversary and the symmetry of policy evaluation.

An SA-MDP here has ``S`` states, ``A`` actions, transitions ``P[s, a, s']``, rewards ``R[s, a]``, a
fixed agent policy ``pi[s~, a]`` over *observed* states, and a perturbation prior ``prior[s, s~]``
(the uniform distribution on the finite ball ``B(s)``; zero outside it).

The soft-constrained game (paper, Sec. 3-4): the adversary minimises
``J[nu, pi] + alpha_ent H(pi o nu) + alpha_attk KL(nu || prior)``. Writing
``G(s, s~) = E_{a~pi(.|s~)}[Q(s, a) - alpha_ent log pi(a|s~)]`` the agent's soft worst-case operator is

    V(s) = min_nu E_nu[G(s, s~)] + alpha_attk KL(nu(.|s) || prior(.|s))
         = -alpha_attk log sum_s~ prior(s~|s) exp(-G(s, s~) / alpha_attk),    Q = R + gamma P V,

attained by the Gibbs adversary ``nu*(s~|s) ∝ prior(s~|s) exp(-G(s, s~) / alpha_attk)``. The adversary,
seen as an agent of its own MDP (action ``s~``, reward ``-E_pi[R] - alpha_ent H(pi(.|s~))``, transition
``E_pi[P]``), has the soft-optimal value ``V^nu(s) = alpha_attk log sum prior exp(Q^nu / alpha_attk)``.
The symmetry theorem says ``V^nu = -V``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp


@dataclass
class SAMDP:
    """A finite state-adversarial MDP with a fixed agent policy."""

    P: np.ndarray
    """Transitions (S, A, S), rows sum to one."""
    R: np.ndarray
    """Rewards (S, A)."""
    pi: np.ndarray
    """Agent policy over observed states (S, A), rows sum to one."""
    prior: np.ndarray
    """Perturbation prior (S, S): prior[s, s~], uniform on the ball of s, zero outside."""
    gamma: float
    """Discount factor in (0, 1)."""


def random_sa_mdp(n_states: int = 6, n_actions: int = 3, ball_size: int = 3, gamma: float = 0.9,
                  seed: int = 0) -> SAMDP:
    """Random SA-MDP: a chain whose ball B(s) is s and its nearest neighbours, with a softmax policy.

    Args:
        n_states, n_actions: sizes (>= 2 each).
        ball_size: number of observations in each ball (odd, <= n_states): s and (ball_size-1)/2 each side,
            wrapping around the chain.
        gamma: discount in (0, 1).
        seed: random seed.
    """
    if n_states < 2 or n_actions < 2:
        raise ValueError(f"need n_states >= 2 and n_actions >= 2, got {n_states}, {n_actions}")
    if ball_size < 1 or ball_size > n_states or ball_size % 2 == 0:
        raise ValueError(f"ball_size must be odd and in [1, n_states], got {ball_size}")
    if not 0 < gamma < 1:
        raise ValueError(f"gamma must be in (0, 1), got {gamma}")
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(n_states), size=(n_states, n_actions))
    R = rng.normal(size=(n_states, n_actions))
    logits = 2 * rng.normal(size=(n_states, n_actions))
    pi = np.exp(logits - logsumexp(logits, axis=1, keepdims=True))
    prior = np.zeros((n_states, n_states))
    half = ball_size // 2
    for s in range(n_states):
        prior[s, [(s + k) % n_states for k in range(-half, half + 1)]] = 1.0 / ball_size
    return SAMDP(P, R, pi, prior, gamma)


def _check(m: SAMDP, alpha_ent: float, alpha_attk: float) -> None:
    if not (alpha_ent >= 0 and np.isfinite(alpha_ent)):
        raise ValueError(f"alpha_ent must be a finite number >= 0, got {alpha_ent}")
    if not (alpha_attk > 0 and np.isfinite(alpha_attk)):
        raise ValueError(f"alpha_attk must be a finite number > 0, got {alpha_attk}")
    if not np.allclose(m.prior.sum(1), 1) or np.any(m.prior < 0):
        raise ValueError("prior rows must be probability vectors")
    if not np.allclose(m.pi.sum(1), 1) or np.any(m.pi < 0):
        raise ValueError("pi rows must be probability vectors")


def _policy_entropy(pi: np.ndarray) -> np.ndarray:
    return -np.sum(np.where(pi > 0, pi * np.log(np.where(pi > 0, pi, 1.0)), 0.0), axis=1)


def gibbs_adversary(G: np.ndarray, prior: np.ndarray, alpha_attk: float) -> np.ndarray:
    """The soft-optimal (KL-constrained) adversary ``nu*(s~|s) ∝ prior(s~|s) exp(-G(s,s~)/alpha_attk)``.

    Args:
        G: (S, S~) soft value the agent gets when it sees s~ in true state s, ``E_pi[Q - alpha_ent log pi]``.
        prior: (S, S~) perturbation prior, rows summing to one.
        alpha_attk: KL weight (> 0).

    Returns:
        (S, S~) adversary, rows summing to one, zero where the prior is zero.
    """
    if not (alpha_attk > 0 and np.isfinite(alpha_attk)):
        raise ValueError(f"alpha_attk must be a finite number > 0, got {alpha_attk}")
    G, prior = np.asarray(G, dtype=float), np.asarray(prior, dtype=float)
    if G.ndim != 2:
        raise ValueError(f"G must be a 2-D (S, S~) array, got shape {G.shape}")
    if G.shape != prior.shape:
        raise ValueError(f"G {G.shape} and prior {prior.shape} must have the same shape")
    with np.errstate(divide="ignore"):
        logits = np.log(prior) - G / alpha_attk
    return np.exp(logits - logsumexp(logits, axis=1, keepdims=True))


def agent_soft_worst_case_value(m: SAMDP, alpha_ent: float, alpha_attk: float, tol: float = 1e-13,
                                max_iter: int = 100_000) -> tuple[np.ndarray, np.ndarray]:
    """Fixed point of the agent's soft worst-case Bellman operator, by value iteration on V (S,).

    Returns:
        ``(V, nu)``: the value (S,) and the Gibbs adversary (S, S) at the fixed point.
    """
    _check(m, alpha_ent, alpha_attk)
    H = _policy_entropy(m.pi)
    with np.errstate(divide="ignore"):
        log_prior = np.log(m.prior)
    V = np.zeros(m.R.shape[0])
    for _ in range(max_iter):
        Q = m.R + m.gamma * m.P @ V                       # (S, A), true state
        G = Q @ m.pi.T + alpha_ent * H[None, :]           # (S, S~)
        V_new = -alpha_attk * logsumexp(log_prior - G / alpha_attk, axis=1)
        if np.max(np.abs(V_new - V)) < tol:
            V = V_new
            break
        V = V_new
    Q = m.R + m.gamma * m.P @ V
    return V, gibbs_adversary(Q @ m.pi.T + alpha_ent * H[None, :], m.prior, alpha_attk)


def adversary_soft_optimal_value(m: SAMDP, alpha_ent: float, alpha_attk: float, tol: float = 1e-13,
                                 max_iter: int = 100_000) -> np.ndarray:
    """Soft-optimal value of the adversary's own MDP (action s~), by value iteration on Q^nu (S, S~).

    The adversary's MDP: reward ``r(s, s~) = -sum_a pi(a|s~) R(s, a) - alpha_ent H(pi(.|s~))``,
    transition ``P(s'|s, s~) = sum_a pi(a|s~) P(s'|s, a)``, KL-regularised to ``prior`` with weight alpha_attk.

    Returns:
        V^nu (S,).
    """
    _check(m, alpha_ent, alpha_attk)
    H = _policy_entropy(m.pi)
    r_adv = -(m.R @ m.pi.T) - alpha_ent * H[None, :]          # (S, S~)
    P_adv = np.einsum("sat,oa->sot", m.P, m.pi)                # (S, S~, S')
    with np.errstate(divide="ignore"):
        log_prior = np.log(m.prior)
    Qn = np.zeros_like(r_adv)
    for _ in range(max_iter):
        V = alpha_attk * logsumexp(log_prior + Qn / alpha_attk, axis=1)
        Q_new = r_adv + m.gamma * P_adv @ V
        if np.max(np.abs(Q_new - Qn)) < tol:
            Qn = Q_new
            break
        Qn = Q_new
    return alpha_attk * logsumexp(log_prior + Qn / alpha_attk, axis=1)

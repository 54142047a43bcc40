"""Finite-horizon episodic tabular MDPs: a gymnasium-style environment, RiverSwim, random MDPs.

RiverSwim and the dense-uniform illustrative MDPs follow the authors' code (marcomussi/position_constants).

Conventions (those of :mod:`icml25.common.mdp`): ``P`` of shape ``(A, S, S)`` (stationary) or
``(H, A, S, S)`` (stage-dependent), rewards ``R`` of shape ``(S, A)`` or ``(H, S, A)`` in [0, 1];
steps are numbered ``h = 0, ..., H-1`` and every episode starts in the fixed state ``s0``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.common.mdp import backward_induction, check_count, check_transitions, garnet_mdp


def check_episodic_mdp(P: Any, R: Any, H: Any) -> tuple[np.ndarray, np.ndarray, int]:
    """Validate a finite-horizon MDP; return ``(P, R, H)`` with P (H, A, S, S) and R (H, S, A).

    Raises:
        ValueError: horizon < 1, a non-stochastic ``P``, a shape mismatch between ``P`` and
            ``R``, or rewards outside [0, 1].
    """
    H = check_count("H", H)
    P = np.asarray(P, dtype=float)
    R = np.asarray(R, dtype=float)
    if P.ndim == 3:
        P = np.broadcast_to(P, (H, *P.shape))
    if P.ndim != 4 or P.shape[0] != H:
        raise ValueError(f"P must have shape (A, S, S) or (H, A, S, S) with H={H}, got {P.shape}")
    for h in range(H):
        check_transitions(P[h])
    n_actions, n_states = P.shape[1], P.shape[2]
    if R.ndim == 2:
        R = np.broadcast_to(R, (H, *R.shape))
    if R.shape != (H, n_states, n_actions):
        raise ValueError(f"R must have shape (S, A) = ({n_states}, {n_actions}) or (H, S, A) to match P, "
                         f"got {np.shape(R)}")
    if not np.all(np.isfinite(R)) or R.min() < 0 or R.max() > 1:
        raise ValueError("rewards R must lie in [0, 1]")
    return np.ascontiguousarray(P), np.ascontiguousarray(R), H


def policy_value(P: np.ndarray, R: np.ndarray, policy: np.ndarray) -> np.ndarray:
    """Value of a deterministic non-stationary policy, shape (H + 1, S); ``V[H] = 0``.

    Args:
        P: (H, A, S, S) transitions. R: (H, S, A) rewards. policy: (H, S) integer actions.

    Raises:
        ValueError: ``P``/``R`` of other shapes, or a policy of another shape or with an action
            outside [0, A). TypeError: a policy that is not an integer array.
    """
    P, R, policy = np.asarray(P), np.asarray(R), np.asarray(policy)
    if P.ndim != 4 or P.shape[2] != P.shape[3] or R.shape != (P.shape[0], P.shape[2], P.shape[1]):
        raise ValueError(f"P must be (H, A, S, S) and R (H, S, A), got {P.shape} and {R.shape}")
    H, A, S, _ = P.shape
    if policy.shape != (H, S):
        raise ValueError(f"policy must have shape (H, S) = ({H}, {S}), got {policy.shape}")
    if not np.issubdtype(policy.dtype, np.integer):
        raise TypeError(f"policy must be an integer array of actions, got dtype {policy.dtype}")
    if policy.size and (policy.min() < 0 or policy.max() >= A):
        raise ValueError(f"policy actions must be in [0, {A}), got values in [{policy.min()}, {policy.max()}]")
    hs, idx = np.arange(H)[:, None], np.arange(S)[None, :]
    P_pi, r_pi = P[hs, policy, idx], R[hs, idx, policy]  # (H, S, S) and (H, S) under the policy
    V = np.zeros((H + 1, S))
    for h in range(H - 1, -1, -1):
        V[h] = r_pi[h] + P_pi[h] @ V[h + 1]  # V_h(s) = r(s, pi(s)) + P(.|s, pi(s)) V_{h+1}
    return V


class TabularEpisodicMDP:
    """A finite-horizon tabular MDP with a gymnasium-style ``reset`` / ``step``.

    Args:
        P: (A, S, S) or (H, A, S, S) transition probabilities.
        R: (S, A) or (H, S, A) deterministic rewards in [0, 1].
        H: horizon (steps per episode), >= 1.
        s0: fixed initial state.

    ``step`` returns ``(next_state, reward, terminated, truncated, info)``; ``terminated`` is True
    after the H-th step. ``optimal_value`` is V*_0(s0) from exact backward induction.
    """

    def __init__(self, P: Any, R: Any, H: int, s0: int = 0):
        self.P, self.R, self.H = check_episodic_mdp(P, R, H)
        self.n_actions, self.n_states = self.P.shape[1], self.P.shape[2]
        if isinstance(s0, bool) or not isinstance(s0, (int, np.integer)) or not 0 <= s0 < self.n_states:
            raise ValueError(f"s0 must be a state index in [0, {self.n_states}), got {s0!r}")
        self.s0 = int(s0)
        self.V_star, self.pi_star = backward_induction(self.P, self.R)
        self._rng = np.random.default_rng()
        self._cdf = np.cumsum(self.P, axis=-1)
        self._h = self.H
        self._s = self.s0

    @property
    def optimal_value(self) -> float:
        return float(self.V_star[0, self.s0])

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[int, dict]:
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self._h, self._s = 0, self.s0
        return self._s, {"h": 0}

    def step(self, action: int) -> tuple[int, float, bool, bool, dict]:
        if self._h >= self.H:
            raise RuntimeError("episode is over: call reset()")
        if isinstance(action, bool) or not isinstance(action, (int, np.integer)):
            raise TypeError(f"action must be an integer, got {action!r} ({type(action).__name__})")
        if not 0 <= action < self.n_actions:
            raise ValueError(f"action must be in [0, {self.n_actions}), got {action!r}")
        h, s = self._h, self._s
        reward = float(self.R[h, s, action])
        # inverse-CDF draw; min() guards against a last cumulative entry of 1 - 1e-16
        s_next = min(int(np.searchsorted(self._cdf[h, action, s], self._rng.random(), side="right")),
                     self.n_states - 1)
        self._h, self._s = h + 1, s_next
        return s_next, reward, self._h == self.H, False, {"h": self._h}

    def expected_regret(self, policy: np.ndarray) -> float:
        """``V*_0(s0) - V^pi_0(s0)`` for a deterministic policy of shape (H, S)."""
        return self.optimal_value - float(policy_value(self.P, self.R, policy)[0, self.s0])


def riverswim(n_states: int = 10, H: int = 25) -> TabularEpisodicMDP:
    """RiverSwim as the authors run it (marcomussi/position_constants); action 0 = left, 1 = right.

    Left moves one state left deterministically (stays in state 0). Right from an interior state: 0.3
    right, 0.6 stay, 0.1 left; from state 0: 0.3 right, 0.7 stay; from the right end: 0.3 stay, 0.7 left.
    Expected rewards (deterministic): 0.005 / 0.3 for left in state 0 and 1 for right in the last state
    (the authors' reward 0.005 on the transition 0 -> 0 and 1 on the transition S-1 -> S-1 under right,
    averaged over the next state and divided by 0.3). Episodes start in state 0.
    """
    S = check_count("n_states", n_states, minimum=2)
    P = np.zeros((2, S, S))
    for s in range(S):
        P[0, s, max(s - 1, 0)] = 1.0
        if s == 0:
            P[1, s, 1], P[1, s, 0] = 0.3, 0.7
        elif s == S - 1:
            P[1, s, s], P[1, s, s - 1] = 0.3, 0.7
        else:
            P[1, s, s + 1], P[1, s, s], P[1, s, s - 1] = 0.3, 0.6, 0.1
    R = np.zeros((S, 2))
    R[0, 0] = 0.005 / 0.3
    R[S - 1, 1] = 1.0
    return TabularEpisodicMDP(P, R, H, s0=0)


def illustrative_mdp(S: int = 3, A: int = 3, H: int = 5, seed: int = 0) -> TabularEpisodicMDP:
    """The authors' illustrative MDP: P(.|s,a) with Uniform(0, 1) entries, normalised; R ~ Uniform(0, 1).

    Drawn with ``numpy.random.RandomState(seed)`` in the authors' order (P as (S, A, S), then R as
    (S, A)), so ``seed = i`` gives the instance of their trial ``i``. Start state 0, stationary.
    """
    S, A = check_count("S", S), check_count("A", A)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    rs = np.random.RandomState(int(seed))
    P = rs.uniform(low=0.0, high=1.0, size=(S, A, S))
    P = P / P.sum(axis=-1, keepdims=True)
    R = rs.uniform(low=0.0, high=1.0, size=(S, A))
    return TabularEpisodicMDP(P.transpose(1, 0, 2), R, H, s0=0)


def random_episodic_mdp(S: int = 10, A: int = 3, H: int = 10, seed: int | None = 0,
                        branching: int | None = None) -> TabularEpisodicMDP:
    """A stationary Garnet MDP (``icml25.common.mdp.garnet_mdp``) used episodically from state 0.

    ``branching`` next states per (s, a) (default ``max(2, S // 2)``); rewards uniform on [0, 1].
    """
    branching = max(2, S // 2) if branching is None else branching
    P, R = garnet_mdp(S, A, branching, seed=seed)
    return TabularEpisodicMDP(P, R, H, s0=0)

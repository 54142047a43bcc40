"""OMDPD and baselines: online learners for episodic CMDPs with unknown P and r.

All learners share one interface: ``policy() -> (H, S, A)`` (the policy of the next episode) and
``update(trajectory, g_k)`` (the episode's trajectory, with bandit reward feedback, and the
constraint g_k revealed after it). They also share the optimistic model (:class:`OptimisticModel`):
empirical P and r from counts pooled over steps (the environment is stationary), with a bonus
``b(s, a) = c (sqrt(L / N) + H sqrt(S L / N))``, ``L = log(2 S A H k / delta)``, added to rewards only;
constraints are evaluated on the plug-in model (see docs/papers/omdpd.md, "Constraint optimism").

* :class:`OMDPD` (this paper; update rule INFERRED, see docs/papers/omdpd.md): policy mirror descent
  (KL, one exponential-weights step per (h, s)) on the rectified surrogate
  ``r_hat - lambda_k 1{V_hat_{g_k} > 0} g_k`` with a queue dual ``lambda_k = eta_dual * Q_k``,
  ``Q_k = sum_{j <= k} [V_hat_{g_j}^{pi_j}]_+`` (Sinha & Vaze 2024's Lyapunov weight Phi'(Q) for
  Phi(Q) = eta_dual Q^2 / 2) and an AdaGrad step size. No Slater constant is needed: the dual never
  relies on a margin, and errors cannot cancel because only the positive part enters Q_k.
* :class:`OptPrimalDualCMDP` (Efroni, Mannor & Pirotta 2020): the same primal step on the
  Lagrangian with the running mean of the g_j (it models constraints as stochastic) and projected
  dual ascent ``lambda_{k+1} = [lambda_k + eta_dual / sqrt(k) V_hat_{g_bar}^{pi_k}]_+``.
* :class:`UnconstrainedUCBVI`: greedy on optimistic Q-values, ignores constraints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from icml25.common.mdp import check_count
from icml25.papers.omdpd.cmdp import (
    EpisodicCMDP,
    Trajectory,
    check_episodic_transitions,
    check_initial_distribution,
    check_policy,
    check_stage_function,
    check_trajectory,
    forward_occupancy,
)


def _check_positive(name: str, value: Any, allow_zero: bool = False) -> float:
    v = float(value)
    if not np.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise ValueError(f"{name} must be {'>= 0' if allow_zero else '> 0'}, got {value!r}")
    return v


def evaluate_policy(P: np.ndarray, f: np.ndarray, policy: np.ndarray, bonus: np.ndarray | float = 0.0,
                    f_min: float | None = None, f_max: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Backward policy evaluation ``Q_h = f_h + bonus + P_h V_{h+1}``, ``V_h = <pi_h, Q_h>``.

    Args:
        P: (H, A, S, S); f: (H, S, A); policy: (H, S, A); bonus: (S, A), (H, S, A) or scalar.
        f_min, f_max: per-step range of f; Q_h is clipped to [(H - h) f_min, (H - h) f_max]
            (the clipping of optimistic evaluation).

    Returns:
        ``(Q, V)`` of shapes (H, S, A) and (H + 1, S).

    Raises:
        ValueError: a non-stochastic ``P``, arrays of other shapes, non-finite ``f`` or ``bonus``,
            or a policy whose rows are not distributions.
    """
    P = check_episodic_transitions(P)
    H, A, S, _ = P.shape
    f = check_stage_function("f", f, (H, S, A))
    policy = check_policy(policy, (H, S, A))
    bonus = np.asarray(bonus, dtype=float)
    if bonus.shape not in ((), (S, A), (H, S, A)) or not np.all(np.isfinite(bonus)):
        raise ValueError(f"bonus must be a finite scalar, (S, A) or (H, S, A) array, got shape {bonus.shape}")
    for name, v in (("f_min", f_min), ("f_max", f_max)):
        if v is not None and not np.isfinite(v):
            raise ValueError(f"{name} must be finite or None, got {v!r}")
    return _evaluate_policy(P, f, policy, bonus, f_min, f_max)


def _evaluate_policy(P: np.ndarray, f: np.ndarray, policy: np.ndarray, bonus: np.ndarray | float = 0.0,
                     f_min: float | None = None, f_max: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`evaluate_policy` on checked arguments (the learners' inner loop)."""
    H, A, S, _ = P.shape
    bonus = np.broadcast_to(np.asarray(bonus, dtype=float), (H, S, A))
    Q = np.empty((H, S, A))
    V = np.zeros((H + 1, S))
    for h in range(H - 1, -1, -1):
        Q[h] = f[h] + bonus[h] + np.einsum("ast,t->sa", P[h], V[h + 1])
        if f_min is not None or f_max is not None:
            Q[h] = np.clip(Q[h], None if f_min is None else (H - h) * f_min, None if f_max is None else (H - h) * f_max)
        V[h] = np.sum(policy[h] * Q[h], axis=1)
    return Q, V


def mirror_descent_step(logits: np.ndarray, Q: np.ndarray, eta: float) -> tuple[np.ndarray, np.ndarray]:
    """One KL mirror-ascent step per (h, s): ``pi' ∝ pi exp(eta Q)``, which solves
    ``argmax_p <p, Q_h(s, .)> - KL(p || pi_h(. | s)) / eta`` over the simplex.

    Works on logits (``pi = softmax(logits)``) for numerical stability; returns (new logits, new policy).

    Raises:
        ValueError: ``logits`` and ``Q`` of different shapes or non-finite, or ``eta`` not finite and >= 0.
    """
    logits, Q = np.asarray(logits, dtype=float), np.asarray(Q, dtype=float)
    if logits.shape != Q.shape or logits.ndim < 1:
        raise ValueError(f"logits and Q must have the same shape (..., A), got {logits.shape} and {Q.shape}")
    if not (np.all(np.isfinite(logits)) and np.all(np.isfinite(Q))):
        raise ValueError("logits and Q must be finite")
    return _mirror_descent_step(logits, Q, _check_positive("eta", eta, allow_zero=True))


def _mirror_descent_step(logits: np.ndarray, Q: np.ndarray, eta: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`mirror_descent_step` on checked arguments (the learners' inner loop)."""
    logits = logits + eta * Q
    logits = logits - logits.max(axis=-1, keepdims=True)
    policy = np.exp(logits)
    policy /= policy.sum(axis=-1, keepdims=True)
    return logits, policy


class OptimisticModel:
    """Counts-based estimate of a stationary CMDP with UCB-style bonuses.

    Attributes:
        counts: visits N(s, a); transitions: N(s, a, s2); reward_sums: summed rewards per (s, a).
    """

    def __init__(self, n_states: int, n_actions: int, horizon: int, delta: float = 0.05, bonus_scale: float = 0.1):
        self.S, self.A = check_count("n_states", n_states), check_count("n_actions", n_actions)
        self.H = check_count("horizon", horizon)
        self.delta = _check_positive("delta", delta)
        if self.delta >= 1:
            raise ValueError(f"delta must be in (0, 1), got {delta}")
        self.bonus_scale = _check_positive("bonus_scale", bonus_scale, allow_zero=True)
        self.counts = np.zeros((self.S, self.A))
        self.transitions = np.zeros((self.S, self.A, self.S))
        self.reward_sums = np.zeros((self.S, self.A))
        self.episodes = 0

    def add(self, traj: Trajectory) -> None:
        """Add one episode's transitions and rewards to the counts."""
        check_trajectory(traj, self.S, self.A, self.H)
        s, a, s2 = traj.states[:-1], traj.actions, traj.states[1:]
        np.add.at(self.counts, (s, a), 1.0)
        np.add.at(self.transitions, (s, a, s2), 1.0)
        np.add.at(self.reward_sums, (s, a), traj.rewards)
        self.episodes += 1

    def estimate(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(P_hat (H, A, S, S), r_hat (H, S, A), bonus (S, A))``; unvisited pairs: uniform P, reward 0."""
        n = np.maximum(self.counts, 1.0)
        P_hat = np.where(self.counts[..., None] > 0, self.transitions / n[..., None], 1.0 / self.S)
        r_hat = self.reward_sums / n
        L = np.log(2 * self.S * self.A * self.H * max(self.episodes, 1) / self.delta)
        bonus = self.bonus_scale * (np.sqrt(L / n) + self.H * np.sqrt(self.S * L / n))
        P_hat = np.broadcast_to(P_hat.transpose(1, 0, 2), (self.H, self.A, self.S, self.S))
        return P_hat, np.broadcast_to(r_hat, (self.H, self.S, self.A)), bonus


@dataclass
class _KnownModel:
    """A learner given the true model: no estimation, no bonus (the "accurate estimates" regime)."""

    P: np.ndarray
    r: np.ndarray
    episodes: int = 0
    bonus: np.ndarray = field(default_factory=lambda: np.zeros(()))

    def add(self, traj: Trajectory) -> None:
        self.episodes += 1

    def estimate(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.P, self.r, self.bonus


class _PolicyMirrorDescentLearner:
    """Shared state of the policy-mirror-descent learners: model, logits, policy, step counter."""

    def __init__(self, n_states: int, n_actions: int, horizon: int, mu: Any = 0, delta: float = 0.05,
                 bonus_scale: float = 0.1, model: tuple[Any, Any] | None = None, g_range: tuple[float, float] = (-1, 1)):
        self.S, self.A = check_count("n_states", n_states), check_count("n_actions", n_actions)
        self.H = check_count("horizon", horizon)
        self.mu = check_initial_distribution(mu, self.S)
        if model is None:
            self.model: Any = OptimisticModel(self.S, self.A, self.H, delta, bonus_scale)
        else:
            P = check_episodic_transitions(model[0], self.H)
            if P.shape[1:] != (self.A, self.S, self.S):
                raise ValueError(f"model P must have (A, S, S) = {(self.A, self.S, self.S)}, got {P.shape[1:]}")
            self.model = _KnownModel(P, check_stage_function("model r", model[1], (self.H, self.S, self.A)))
        self.g_min, self.g_max = float(g_range[0]), float(g_range[1])
        if not (np.isfinite(self.g_min) and np.isfinite(self.g_max) and self.g_min <= self.g_max):
            raise ValueError(f"g_range must be (low, high) with low <= high, got {g_range}")
        self.logits = np.zeros((self.H, self.S, self.A))
        self._policy = np.full((self.H, self.S, self.A), 1.0 / self.A)
        self.k = 0

    def policy(self) -> np.ndarray:
        """The policy to play in the next episode, shape (H, S, A)."""
        return self._policy.copy()

    def _check_update(self, traj: Trajectory, g: Any) -> np.ndarray:
        check_trajectory(traj, self.S, self.A, self.H)
        g = check_stage_function("g_k", g, (self.H, self.S, self.A))
        if g.min() < self.g_min - 1e-12 or g.max() > self.g_max + 1e-12:
            raise ValueError(f"g_k must lie in g_range = [{self.g_min}, {self.g_max}]")
        return g

    def _optimistic_values(self, g: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """Optimistic Q of the reward (UCB), plug-in Q of the constraint, and the estimate of V_g^pi(mu)."""
        P_hat, r_hat, bonus = self.model.estimate()
        Q_r, _ = _evaluate_policy(P_hat, r_hat, self._policy, bonus, 0.0, 1.0)
        Q_g, V_g = _evaluate_policy(P_hat, g, self._policy, 0.0, self.g_min, self.g_max)  # plug-in (no bonus)
        return Q_r, Q_g, float(self.mu @ V_g[0])


class OMDPD(_PolicyMirrorDescentLearner):
    """Optimistic Mirror Descent Primal-Dual for CMDPs with anytime adversarial constraints (inferred form).

    After episode k (trajectory + revealed g_k):

    1. update the optimistic model; evaluate pi_k optimistically: Q_r (reward + bonus), Q_g (g_k - bonus),
       and the estimated violation v_k = V_hat_{g_k}^{pi_k}(mu);
    2. queue ``Q_k = Q_{k-1} + [v_k]_+`` and dual weight ``lambda_k = eta_dual Q_k``;
    3. rectified surrogate ``Q_L = Q_r - lambda_k 1{v_k > 0} Q_g``;
    4. AdaGrad step ``eta_k = eta / sqrt(sum_{j <= k} ||Q_L^j||_inf^2)``, and
       ``pi_{k+1}(. | s, h) ∝ pi_k(. | s, h) exp(eta_k Q_L[h, s, .])``.

    Args:
        n_states, n_actions, horizon: S, A, H.
        eta: primal step scale; eta_dual: dual weight per unit of queue.
        delta: confidence level of the bonuses; bonus_scale: multiplier c of the bonuses.
        mu: initial state (int) or distribution.
        model: optional ``(P, r_mean)`` known model (no bonus): the accurate-estimates regime.
        g_range: per-step range of every g_k (used to clip the constraint Q-values).
    """

    def __init__(self, n_states: int, n_actions: int, horizon: int, eta: float = 1.0, eta_dual: float = 1.0,
                 delta: float = 0.05, bonus_scale: float = 0.1, mu: Any = 0, model: tuple[Any, Any] | None = None,
                 g_range: tuple[float, float] = (-1.0, 1.0)):
        super().__init__(n_states, n_actions, horizon, mu, delta, bonus_scale, model, g_range)
        self.eta = _check_positive("eta", eta)
        self.eta_dual = _check_positive("eta_dual", eta_dual, allow_zero=True)
        self.queue = 0.0
        self.lam = 0.0
        self._grad_sq = 0.0
        self.estimated_violations: list[float] = []

    def update(self, traj: Trajectory, g: Any) -> "OMDPD":
        g = self._check_update(traj, g)
        self.k += 1
        self.model.add(traj)
        Q_r, Q_g, v = self._optimistic_values(g)
        self.estimated_violations.append(v)
        self.queue += max(v, 0.0)                      # Q_k = sum_j [V_hat_{g_j}^{pi_j}]_+
        self.lam = self.eta_dual * self.queue          # lambda_k = Phi'(Q_k), Phi(Q) = eta_dual Q^2 / 2
        Q_L = Q_r - (self.lam * Q_g if v > 0 else 0.0)  # gradient of the rectified surrogate
        self._grad_sq += float(np.abs(Q_L).max()) ** 2
        self.logits, self._policy = _mirror_descent_step(self.logits, Q_L, self.eta / np.sqrt(self._grad_sq))
        return self


class OptPrimalDualCMDP(_PolicyMirrorDescentLearner):
    """OptPrimalDual-CMDP (Efroni, Mannor & Pirotta 2020), which assumes stochastic constraints.

    It treats g_1, g_2, ... as noisy draws of one fixed constraint and uses their running mean g_bar_k:
    ``pi_{k+1} ∝ pi_k exp(eta_k (Q_r - lambda_k Q_{g_bar}))`` with ``eta_k = eta / (H sqrt(k))``, then
    ``lambda_{k+1} = [lambda_k + eta_dual / sqrt(k) V_hat_{g_bar}^{pi_k}(mu)]_+``.
    Its violation guarantee is on the (cancelling) sum of V_g, so adversarial schedules break it.
    """

    def __init__(self, n_states: int, n_actions: int, horizon: int, eta: float = 1.0, eta_dual: float = 1.0,
                 delta: float = 0.05, bonus_scale: float = 0.1, mu: Any = 0, model: tuple[Any, Any] | None = None,
                 g_range: tuple[float, float] = (-1.0, 1.0)):
        super().__init__(n_states, n_actions, horizon, mu, delta, bonus_scale, model, g_range)
        self.eta = _check_positive("eta", eta)
        self.eta_dual = _check_positive("eta_dual", eta_dual, allow_zero=True)
        self.lam = 0.0
        self.g_bar = np.zeros((self.H, self.S, self.A))

    def update(self, traj: Trajectory, g: Any) -> "OptPrimalDualCMDP":
        g = self._check_update(traj, g)
        self.k += 1
        self.model.add(traj)
        self.g_bar += (g - self.g_bar) / self.k
        Q_r, Q_g, v = self._optimistic_values(self.g_bar)
        Q_L = Q_r - self.lam * Q_g
        self.logits, self._policy = _mirror_descent_step(self.logits, Q_L, self.eta / (self.H * np.sqrt(self.k)))
        self.lam = max(0.0, self.lam + self.eta_dual / np.sqrt(self.k) * v)
        return self


class UnconstrainedUCBVI(_PolicyMirrorDescentLearner):
    """Optimistic value iteration that ignores constraints: greedy on ``Q_h = min(H - h, r_hat + b + P_hat V_{h+1})``."""

    def update(self, traj: Trajectory, g: Any = None) -> "UnconstrainedUCBVI":
        if g is not None:
            self._check_update(traj, g)
        else:
            check_trajectory(traj, self.S, self.A, self.H)
        self.k += 1
        self.model.add(traj)
        P_hat, r_hat, bonus = self.model.estimate()
        V = np.zeros(self.S)
        policy = np.zeros((self.H, self.S, self.A))
        for h in range(self.H - 1, -1, -1):
            Q = np.minimum(r_hat[h] + bonus + np.einsum("ast,t->sa", P_hat[h], V), self.H - h)
            best = np.argmax(Q, axis=1)
            policy[h, np.arange(self.S), best] = 1.0
            V = Q[np.arange(self.S), best]
        self._policy = policy
        return self


@dataclass
class OnlineRun:
    """Exact per-episode values of an online run: ``reward_values[k] = V_r^{pi_k}``,
    ``constraint_values[k] = V_{g_k}^{pi_k}`` (true P), and the revealed constraints g_k."""

    reward_values: np.ndarray
    constraint_values: np.ndarray
    constraints: list[np.ndarray]

    def strong_violation(self) -> np.ndarray:
        """``V(K) = sum_{k <= K} [V_{g_k}^{pi_k}]_+`` for every K."""
        return np.cumsum(np.maximum(self.constraint_values, 0.0))

    def strong_regret(self, comparator_value: float | np.ndarray) -> np.ndarray:
        """``R(K) = sum_{k <= K} (V* - V_r^{pi_k})`` for every K (V* scalar or per episode)."""
        return np.cumsum(comparator_value - self.reward_values)


def run_online(env: EpisodicCMDP, learner: Any, n_episodes: int, progress: Any = None) -> OnlineRun:
    """Play ``n_episodes`` episodes of ``learner`` in ``env``; record exact values under the true model."""
    K = check_count("n_episodes", n_episodes)
    v_r, v_g = np.empty(K), np.empty(K)
    for k in range(K):
        pi = learner.policy()
        traj, g = env.rollout(pi)
        q = forward_occupancy(env.P, pi, env.mu)  # exact values of pi_k under the true P
        v_r[k], v_g[k] = float(np.sum(q * env.reward_mean)), float(np.sum(q * g))
        learner.update(traj, g)
        if progress is not None and (k + 1) % 100 == 0:
            progress(k + 1, K)
    return OnlineRun(v_r, v_g, env.constraints[-K:])

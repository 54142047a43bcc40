"""Episodic constrained MDPs: occupancy measures, the occupancy LP, adversarial constraint schedules.

Conventions (those of :mod:`icml25.common.mdp`, finite horizon):

* ``P`` has shape ``(H, A, S, S)`` (time-varying) or ``(A, S, S)`` (stationary);
  ``P[h, a, s, s2]`` is the probability of ``s -> s2`` under ``a`` at step ``h``.
* Rewards and constraint functions have shape ``(H, S, A)`` or ``(S, A)``.
* A policy has shape ``(H, S, A)``: ``policy[h, s]`` is a distribution over actions.
* An occupancy measure ``q`` has shape ``(H, S, A)``: ``q[h, s, a] = Pr(s_h = s, a_h = a)``.
  It satisfies the flow constraints ``sum_a q[0, s, a] = mu(s)`` and
  ``sum_a q[h+1, s2, a] = sum_{s, a} P[h, a, s, s2] q[h, s, a]``, and ``V_f^pi = <q, f>``.
* A constraint ``g`` is satisfied by ``pi`` when ``V_g^pi = <q^pi, g> <= 0`` (thresholds are
  folded into ``g``, e.g. ``g = c - tau / H``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import linprog

from icml25.common.mdp import check_count, check_transitions

# --------------------------------------------------------------------------- validation


def check_episodic_transitions(P: Any, horizon: int | None = None) -> np.ndarray:
    """Validate ``P`` ((H, A, S, S) or stationary (A, S, S)) and return it as (H, A, S, S)."""
    P = np.asarray(P, dtype=float)
    if P.ndim == 3:
        if horizon is None:
            raise ValueError("horizon is required when P is stationary (A, S, S)")
        H = check_count("horizon", horizon)
        return np.broadcast_to(check_transitions(P), (H, *P.shape))
    if P.ndim != 4:
        raise ValueError(f"P must have shape (H, A, S, S) or (A, S, S), got {P.shape}")
    if horizon is not None and check_count("horizon", horizon) != P.shape[0]:
        raise ValueError(f"horizon={horizon} does not match the leading axis of P ({P.shape[0]})")
    if P.shape[0] < 1:
        raise ValueError("P must have at least one step")
    for h in range(P.shape[0]):
        try:
            check_transitions(P[h])
        except ValueError as exc:
            raise ValueError(f"P[{h}]: {exc}") from None
    return P


def check_stage_function(name: str, f: Any, shape: tuple[int, int, int]) -> np.ndarray:
    """Validate a reward/constraint ``f`` of shape (H, S, A) or (S, A); return it as (H, S, A)."""
    f = np.asarray(f, dtype=float)
    H, S, A = shape
    if f.shape == (S, A):
        f = np.broadcast_to(f, shape)
    elif f.shape != shape:
        raise ValueError(f"{name} must have shape (H, S, A) = {shape} or (S, A) = {(S, A)}, got {f.shape}")
    if not np.all(np.isfinite(f)):
        raise ValueError(f"{name} must be finite")
    return f


def check_initial_distribution(mu: Any, n_states: int) -> np.ndarray:
    """An int is a fixed initial state; otherwise a probability vector of length S."""
    if isinstance(mu, (int, np.integer)) and not isinstance(mu, bool):
        if not 0 <= mu < n_states:
            raise ValueError(f"initial state must be in [0, {n_states}), got {mu}")
        out = np.zeros(n_states)
        out[int(mu)] = 1.0
        return out
    mu = np.asarray(mu, dtype=float)
    if mu.shape != (n_states,) or np.any(mu < 0) or not np.isclose(mu.sum(), 1.0, atol=1e-8):
        raise ValueError(f"initial distribution must be a probability vector of length {n_states}")
    return mu / mu.sum()


def check_policy(policy: Any, shape: tuple[int, int, int]) -> np.ndarray:
    """Validate a policy of shape (H, S, A) whose rows are distributions."""
    policy = np.asarray(policy, dtype=float)
    if policy.shape != shape:
        raise ValueError(f"policy must have shape (H, S, A) = {shape}, got {policy.shape}")
    if np.any(policy < -1e-12) or not np.allclose(policy.sum(axis=2), 1.0, atol=1e-8):
        raise ValueError("policy rows must be probability distributions over actions")
    return policy


def check_trajectory(traj: Any, n_states: int, n_actions: int, horizon: int) -> "Trajectory":
    """Validate an episode: a :class:`Trajectory` with H integer actions in [0, A), H + 1 integer
    states in [0, S) and H rewards in [0, 1] (Bernoulli feedback); return it unchanged.

    Raises:
        TypeError: not a Trajectory, or non-integer states or actions.
        ValueError: wrong lengths, an index out of range, or a reward outside [0, 1].
    """
    if not isinstance(traj, Trajectory):
        raise TypeError(f"trajectory must be a Trajectory, got {type(traj).__name__}")
    states, actions, rewards = (np.asarray(x) for x in (traj.states, traj.actions, traj.rewards))
    if states.shape != (horizon + 1,) or actions.shape != (horizon,) or rewards.shape != (horizon,):
        raise ValueError(f"trajectory must have {horizon + 1} states, {horizon} actions and {horizon} rewards, "
                         f"got shapes {states.shape}, {actions.shape}, {rewards.shape}")
    for name, x, n in (("states", states, n_states), ("actions", actions, n_actions)):
        if not np.issubdtype(x.dtype, np.integer):
            raise TypeError(f"trajectory {name} must be integer indices, got dtype {x.dtype}")
        if x.min() < 0 or x.max() >= n:
            raise ValueError(f"trajectory {name} must be in [0, {n}), got values in [{x.min()}, {x.max()}]")
    if not np.issubdtype(rewards.dtype, np.number) or not np.all(np.isfinite(rewards)) \
            or rewards.min() < 0 or rewards.max() > 1:
        raise ValueError("trajectory rewards must lie in [0, 1]")
    return traj


# --------------------------------------------------------------------------- occupancy measures


def occupancy_from_policy(P: Any, policy: Any, mu: Any = 0) -> np.ndarray:
    """Occupancy measure ``q[h, s, a]`` of ``policy`` under ``P`` from initial distribution ``mu``.

    Exact forward pass: ``d_0 = mu``, ``q_h = d_h * pi_h``, ``d_{h+1} = sum_{s,a} q_h(s, a) P_h[a, s, .]``.
    """
    policy = np.asarray(policy, dtype=float)
    if policy.ndim != 3:
        raise ValueError(f"policy must have shape (H, S, A), got {policy.shape}")
    P = check_episodic_transitions(P, policy.shape[0])
    H, A, S, _ = P.shape
    policy = check_policy(policy, (H, S, A))
    return forward_occupancy(P, policy, check_initial_distribution(mu, S))


def forward_occupancy(P: np.ndarray, policy: np.ndarray, d0: np.ndarray) -> np.ndarray:
    """:func:`occupancy_from_policy` without input checks (P (H, A, S, S), d0 (S,)), for inner loops."""
    H, S, A = policy.shape
    q = np.empty((H, S, A))
    d = d0
    for h in range(H):
        q[h] = d[:, None] * policy[h]
        d = np.einsum("sa,ast->t", q[h], P[h])
    return q


def policy_from_occupancy(q: Any) -> np.ndarray:
    """``pi[h, s, a] = q[h, s, a] / sum_a q[h, s, a]``; uniform where a state is never reached."""
    q = np.asarray(q, dtype=float)
    if q.ndim != 3:
        raise ValueError(f"q must have shape (H, S, A), got {q.shape}")
    if not np.all(np.isfinite(q)):
        raise ValueError("q must be finite")
    if np.any(q < -1e-9):
        raise ValueError("q must be non-negative")
    q = np.clip(q, 0.0, None)
    mass = q.sum(axis=2, keepdims=True)
    uniform = np.full_like(q, 1.0 / q.shape[2])
    return np.where(mass > 1e-12, q / np.where(mass > 1e-12, mass, 1.0), uniform)


def policy_value(P: Any, f: Any, policy: Any, mu: Any = 0) -> float:
    """``V_f^pi(mu) = <q^pi, f>``, the expected sum of ``f`` over an episode."""
    q = occupancy_from_policy(P, policy, mu)
    return float(np.sum(q * check_stage_function("f", f, q.shape)))


def flow_residual(P: Any, q: Any, mu: Any = 0) -> float:
    """Largest violation of the flow constraints by ``q`` (0 for a valid occupancy measure)."""
    q = np.asarray(q, dtype=float)
    if q.ndim != 3:
        raise ValueError(f"q must have shape (H, S, A), got {q.shape}")
    P = check_episodic_transitions(P, q.shape[0])
    if q.shape[1:] != (P.shape[2], P.shape[1]):
        raise ValueError(f"q must have shape (H, S, A) = {(P.shape[0], P.shape[2], P.shape[1])} to match P, "
                         f"got {q.shape}")
    if not np.all(np.isfinite(q)):
        raise ValueError("q must be finite")
    d0 = check_initial_distribution(mu, P.shape[2])
    res = [np.abs(q[0].sum(axis=1) - d0).max()]
    for h in range(q.shape[0] - 1):
        res.append(np.abs(q[h + 1].sum(axis=1) - np.einsum("sa,ast->t", q[h], P[h])).max())
    return float(max(res))


# --------------------------------------------------------------------------- the occupancy LP


def flow_equalities(P: np.ndarray, mu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``A_eq q = b_eq`` over ``q`` flattened in (H, S, A) order."""
    H, A, S, _ = P.shape
    n = S * A
    A_eq = np.zeros((H * S, H * n))
    b_eq = np.zeros(H * S)
    out_flow = np.kron(np.eye(S), np.ones((1, A)))  # row s sums q[h, s, :]
    for h in range(H):
        A_eq[h * S:(h + 1) * S, h * n:(h + 1) * n] = out_flow
        if h > 0:  # minus inflow: sum_{s,a} P[h-1, a, s, s2] q[h-1, s, a]
            A_eq[h * S:(h + 1) * S, (h - 1) * n:h * n] = -P[h - 1].transpose(2, 1, 0).reshape(S, n)
    b_eq[:S] = mu
    return A_eq, b_eq


def _stack_constraints(constraints: Any, shape: tuple[int, int, int]) -> np.ndarray:
    if constraints is None:
        return np.zeros((0, int(np.prod(shape))))
    if isinstance(constraints, np.ndarray) and constraints.ndim in (2, 3) and constraints.shape[-2:] == shape[1:] \
            and (constraints.ndim == 2 or constraints.shape == shape):
        constraints = [constraints]
    rows = [check_stage_function(f"constraints[{i}]", g, shape).ravel() for i, g in enumerate(constraints)]
    return np.array(rows).reshape(len(rows), -1)


@dataclass(frozen=True)
class OccupancyLPResult:
    """Solution of :func:`occupancy_lp`: the optimal occupancy measure, its value and policy."""

    q: np.ndarray
    """Optimal occupancy measure, shape (H, S, A)."""
    value: float
    """Optimal value ``<q, r>``."""
    policy: np.ndarray
    """A policy inducing ``q`` (uniform in unreached states), shape (H, S, A)."""


def occupancy_lp(P: Any, r: Any, constraints: Any = None, mu: Any = 0, horizon: int | None = None) -> OccupancyLPResult:
    """Best policy satisfying every constraint, as the occupancy-measure LP (Altman 1999), solved by HiGHS.

    ``max_q <q, r>`` subject to the flow constraints, ``q >= 0`` and ``<q, g_i> <= 0`` for each ``g_i``.
    With all g_k of an online run this is the comparator pi* of the strong regret.

    Args:
        P: (H, A, S, S) or (A, S, S) transitions (the latter needs ``horizon`` or a time-varying ``r``).
        r: (H, S, A) or (S, A) rewards.
        constraints: one constraint (H, S, A)/(S, A), or a sequence of them; None for an unconstrained MDP.
        mu: initial state (int) or distribution (S,).
        horizon: H when P and r are both stationary.

    Returns:
        :class:`OccupancyLPResult`. Raises ValueError when no policy satisfies all constraints.
    """
    r_arr = np.asarray(r, dtype=float)
    if horizon is None and np.ndim(P) == 3 and r_arr.ndim == 3:
        horizon = r_arr.shape[0]
    P = check_episodic_transitions(P, horizon)
    H, A, S, _ = P.shape
    r_arr = check_stage_function("r", r_arr, (H, S, A))
    G = _stack_constraints(constraints, (H, S, A))
    A_eq, b_eq = flow_equalities(P, check_initial_distribution(mu, S))
    res = linprog(-r_arr.ravel(), A_ub=G if len(G) else None, b_ub=np.zeros(len(G)) if len(G) else None,
                  A_eq=A_eq, b_eq=b_eq, bounds=(0, None), method="highs")
    if res.status == 2:
        raise ValueError("no policy satisfies all constraints (the occupancy LP is infeasible)")
    if res.status != 0:
        raise RuntimeError(f"occupancy LP failed: {res.message}")
    q = np.clip(res.x.reshape(H, S, A), 0.0, None)
    return OccupancyLPResult(q, float(-res.fun), policy_from_occupancy(q))


def min_max_constraint_value(P: Any, constraints: Sequence[Any], mu: Any = 0, horizon: int | None = None) -> float:
    """``min_pi max_i V_{g_i}^pi``: the smallest worst-case constraint value any policy attains (an LP)."""
    P = check_episodic_transitions(P, horizon)
    H, A, S, _ = P.shape
    constraints = list(constraints)
    if not constraints:
        raise ValueError("constraints must hold at least one constraint g_i")
    G = _stack_constraints(constraints, (H, S, A))
    A_eq, b_eq = flow_equalities(P, check_initial_distribution(mu, S))
    n = H * S * A  # variables (q, t): minimise t s.t. G q - t <= 0
    c = np.zeros(n + 1)
    c[-1] = 1.0
    res = linprog(c, A_ub=np.hstack([G, -np.ones((len(G), 1))]), b_ub=np.zeros(len(G)),
                  A_eq=np.hstack([A_eq, np.zeros((len(A_eq), 1))]), b_eq=b_eq,
                  bounds=[(0, None)] * n + [(None, None)], method="highs")
    if res.status != 0:
        raise RuntimeError(f"min-max constraint LP failed: {res.message}")
    return float(res.fun)


# --------------------------------------------------------------------------- adversarial constraint schedules

ConstraintSchedule = Callable[[int, list], np.ndarray]
"""``schedule(k, history) -> g_k``: the constraint of episode k (0-based), chosen from past trajectories."""


class SwitchingSchedule:
    """Alternates between two constraints in phases of doubling length: episodes [2^j - 1, 2^(j+1) - 1)
    use ``g_a`` for even j and ``g_b`` for odd j, so the running mean of g_k never settles on either."""

    def __init__(self, g_a: Any, g_b: Any):
        self.g_a, self.g_b = np.asarray(g_a, dtype=float), np.asarray(g_b, dtype=float)
        if self.g_a.shape != self.g_b.shape:
            raise ValueError(f"g_a and g_b must have the same shape, got {self.g_a.shape} and {self.g_b.shape}")
        if not (np.all(np.isfinite(self.g_a)) and np.all(np.isfinite(self.g_b))):
            raise ValueError("g_a and g_b must be finite")

    @property
    def variants(self) -> list[np.ndarray]:
        return [self.g_a, self.g_b]

    def __call__(self, k: int, history: list) -> np.ndarray:
        phase = int(np.floor(np.log2(k + 1)))
        return self.g_a if phase % 2 == 0 else self.g_b


class ReactiveSchedule:
    """Penalises the action the learner played most in the previous episode:
    ``g_k = base + penalty * e_{a*}`` with ``a* = argmax_a #{h : a_h = a}`` in episode k-1 (ties: lowest a);
    ``g_0 = base``."""

    def __init__(self, base: Any, penalty: float):
        self.base = np.asarray(base, dtype=float)
        if self.base.ndim not in (2, 3):
            raise ValueError(f"base must have shape (S, A) or (H, S, A), got {self.base.shape}")
        if not np.all(np.isfinite(self.base)):
            raise ValueError("base must be finite")
        if not penalty >= 0 or not np.isfinite(penalty):
            raise ValueError(f"penalty must be >= 0, got {penalty}")
        self.penalty = float(penalty)
        n_actions = self.base.shape[-1]
        self._variants = [self.base]
        for a in range(n_actions):
            g = self.base.copy()
            g[..., a] += self.penalty
            self._variants.append(g)

    @property
    def variants(self) -> list[np.ndarray]:
        """Every constraint the adversary can pick: ``base`` and one per penalised action."""
        return self._variants

    def __call__(self, k: int, history: list) -> np.ndarray:
        if not history:
            return self._variants[0]
        counts = np.bincount(history[-1].actions, minlength=self.base.shape[-1])
        return self._variants[1 + int(np.argmax(counts))]


class IIDCostSchedule:
    """Costs drawn independently every episode: each entry of ``d_k`` (H, S, A) is uniform on ``values``.

    The adversarial setting of the paper's experiment (Fig. 2): values {-1, -0.6, -0.2, 0, 0.2, 0.6, 1},
    threshold 0. ``d_k`` depends only on ``(seed, k)``, not on the history, so runs are reproducible.
    """

    def __init__(self, values: Any, shape: tuple[int, int, int], seed: int | None = 0):
        self.values = np.asarray(values, dtype=float)
        if self.values.ndim != 1 or self.values.size == 0 or not np.all(np.isfinite(self.values)):
            raise ValueError(f"values must be a non-empty 1-d array of finite numbers, got {values!r}")
        if len(shape) != 3 or any(int(n) < 1 for n in shape):
            raise ValueError(f"shape must be (H, S, A) with positive entries, got {shape!r}")
        self.shape = tuple(int(n) for n in shape)
        self.seed = 0 if seed is None else int(seed)

    @property
    def g_range(self) -> tuple[float, float]:
        return float(self.values.min()), float(self.values.max())

    def __call__(self, k: int, history: list) -> np.ndarray:
        return np.random.default_rng([self.seed, int(k)]).choice(self.values, size=self.shape)


# --------------------------------------------------------------------------- the environment


@dataclass(frozen=True)
class Trajectory:
    """One episode: ``states`` (H + 1,), ``actions`` (H,), ``rewards`` (H,)."""

    states: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray


class EpisodicCMDP:
    """An episodic CMDP with Bernoulli rewards and a (possibly adversarial) constraint schedule.

    Gymnasium-style: ``reset()`` starts episode k (the schedule commits to g_k from the history,
    unseen by the learner), ``step(a) -> (s2, reward, terminated, truncated, info)``; the episode
    terminates after H steps and only then ``info["constraint"]`` reveals g_k (full-information
    constraint feedback; the reward is bandit feedback, a Bernoulli draw of ``reward_mean[h, s, a]``).

    Args:
        P: (H, A, S, S) or (A, S, S) transitions.
        reward_mean: (H, S, A) or (S, A) mean rewards in [0, 1].
        horizon: H.
        mu: initial state (int) or distribution (S,).
        constraint_schedule: ``schedule(k, history) -> g_k`` of shape (H, S, A)/(S, A); None: no constraint.
        seed: seed of the environment's random numbers.
    """

    def __init__(self, P: Any, reward_mean: Any, horizon: int, mu: Any = 0,
                 constraint_schedule: ConstraintSchedule | None = None, seed: int | None = None):
        self.P = check_episodic_transitions(P, horizon)
        self.H, self.A, self.S = self.P.shape[0], self.P.shape[1], self.P.shape[2]
        self.reward_mean = check_stage_function("reward_mean", reward_mean, (self.H, self.S, self.A))
        if np.any(self.reward_mean < 0) or np.any(self.reward_mean > 1):
            raise ValueError("reward_mean must lie in [0, 1] (Bernoulli rewards)")
        self.mu = check_initial_distribution(mu, self.S)
        self.schedule = constraint_schedule
        self.rng = np.random.default_rng(seed)
        self._cum_P = np.cumsum(self.P, axis=3)
        self._cum_mu = np.cumsum(self.mu)
        self.history: list[Trajectory] = []
        self.constraints: list[np.ndarray] = []
        self._h = None

    @property
    def episode(self) -> int:
        """Number of finished episodes."""
        return len(self.history)

    def _draw(self, cum: np.ndarray) -> int:
        return int(min(np.searchsorted(cum, self.rng.random() * cum[-1], side="right"), self.S - 1))

    def _commit_constraint(self) -> np.ndarray:
        if self.schedule is None:
            return np.zeros((self.H, self.S, self.A))
        return check_stage_function("g_k", self.schedule(self.episode, self.history), (self.H, self.S, self.A))

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[int, dict]:
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self._g = self._commit_constraint()
        self._h = 0
        self._s = self._draw(self._cum_mu)
        self._traj = ([self._s], [], [])
        return self._s, {"h": 0, "episode": self.episode}

    def step(self, action: int) -> tuple[int, float, bool, bool, dict]:
        if self._h is None or self._h >= self.H:
            raise RuntimeError("call reset() before step() (the episode is over)")
        if isinstance(action, bool) or not isinstance(action, (int, np.integer)):
            raise TypeError(f"action must be an integer, got {action!r} ({type(action).__name__})")
        if not 0 <= action < self.A:
            raise ValueError(f"action must be in [0, {self.A}), got {action!r}")
        h, s, a = self._h, self._s, int(action)
        reward = float(self.rng.random() < self.reward_mean[h, s, a])
        self._s = self._draw(self._cum_P[h, a, s])
        self._h += 1
        for lst, x in zip(self._traj, (self._s, a, reward)):
            lst.append(x)
        info: dict = {"h": self._h, "episode": self.episode}
        terminated = self._h == self.H
        if terminated:
            traj = Trajectory(np.array(self._traj[0]), np.array(self._traj[1]), np.array(self._traj[2]))
            self.history.append(traj)
            self.constraints.append(self._g)
            info.update(constraint=self._g, trajectory=traj)
        return self._s, reward, terminated, False, info

    def rollout(self, policy: np.ndarray) -> tuple[Trajectory, np.ndarray]:
        """Play one whole episode with ``policy`` (H, S, A); return its trajectory and the revealed g_k."""
        policy = check_policy(policy, (self.H, self.S, self.A))
        s, _ = self.reset()
        info: dict = {}
        for h in range(self.H):
            cum = np.cumsum(policy[h, s])
            a = int(min(np.searchsorted(cum, self.rng.random() * cum[-1], side="right"), self.A - 1))
            s, _, _, _, info = self.step(a)
        return info["trajectory"], info["constraint"]

    def value(self, policy: Any, f: Any) -> float:
        """Exact ``V_f^pi`` under the true transitions (e.g. ``f = reward_mean`` or a constraint)."""
        return policy_value(self.P, f, policy, self.mu)


# --------------------------------------------------------------------------- random instances


def random_cmdp(n_states: int, n_actions: int, horizon: int, seed: int | None = 0,
                concentration: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Stationary CMDP skeleton: ``P[a, s] ~ Dirichlet(concentration)`` and mean rewards ``U(0, 1)``."""
    S, A = check_count("n_states", n_states), check_count("n_actions", n_actions)
    check_count("horizon", horizon)
    if not concentration > 0:
        raise ValueError(f"concentration must be > 0, got {concentration}")
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.full(S, concentration), size=(A, S))
    return P, rng.uniform(0.0, 1.0, size=(S, A))


@dataclass(frozen=True)
class AdversarialInstance:
    """A random CMDP with an adversarial constraint schedule whose variants admit a common feasible policy."""

    P: np.ndarray
    """Stationary transitions (A, S, S)."""
    reward_mean: np.ndarray
    """Mean rewards (S, A)."""
    horizon: int
    """H."""
    schedule: Any
    """The constraint schedule (:class:`SwitchingSchedule` or :class:`ReactiveSchedule`)."""
    variants: list
    """Every constraint the schedule can produce (each (S, A), threshold folded in)."""
    threshold: float
    """Budget tau of the costs: g = c - tau / H."""

    @property
    def g_range(self) -> tuple[float, float]:
        return float(min(v.min() for v in self.variants)), float(max(v.max() for v in self.variants))

    def env(self, seed: int | None = None) -> EpisodicCMDP:
        return EpisodicCMDP(self.P, self.reward_mean, self.horizon, 0, self.schedule, seed)


def adversarial_instance(kind: str, n_states: int, n_actions: int, horizon: int, seed: int | None = 0,
                         tightness: float = 0.5, penalty: float = 0.5) -> AdversarialInstance:
    """Random CMDP (Dirichlet P, U(0, 1) rewards, initial state 0) with an adversarial schedule.

    Costs ``c = (r + u) / 2`` with ``u ~ U(0, 1)`` conflict with the reward. ``kind="switching"``
    alternates between ``c`` and ``1 - c`` (their mean is the constant 1/2: a learner that averages the
    g_k sees no constraint at all); ``kind="reactive"`` adds ``penalty`` to the cost of the action played
    most in the previous episode. The budget ``tau = t_min + tightness (t_max - t_min)``, where t_min is
    ``min_pi max_i V_{c_i}^pi`` and t_max the worst cost of the unconstrained optimum, so a policy
    feasible for every variant exists (``tightness >= 0``) and the unconstrained optimum violates one.
    """
    if kind not in ("switching", "reactive"):
        raise ValueError(f"kind must be 'switching' or 'reactive', got {kind!r}")
    if not 0 <= tightness <= 1:
        raise ValueError(f"tightness must be in [0, 1], got {tightness}")
    P, r = random_cmdp(n_states, n_actions, horizon, seed)
    c = (r + np.random.default_rng([0 if seed is None else seed, 1]).uniform(size=r.shape)) / 2
    if kind == "switching":
        costs = [c, 1.0 - c]
    else:
        costs = ReactiveSchedule(c, penalty).variants
    t_min = min_max_constraint_value(P, costs, 0, horizon)
    greedy = occupancy_lp(P, r, None, 0, horizon)
    t_max = max(float(np.sum(greedy.q * ci)) for ci in costs)
    tau = t_min + tightness * max(t_max - t_min, 0.0)
    variants = [ci - tau / horizon for ci in costs]
    schedule = SwitchingSchedule(*variants) if kind == "switching" else ReactiveSchedule(variants[0], penalty)
    return AdversarialInstance(P, r, horizon, schedule, list(schedule.variants), float(tau))


PAPER_COST_VALUES = (-1.0, -0.6, -0.2, 0.0, 0.2, 0.6, 1.0)
"""Cost values of the adversarial setting of the paper's experiment."""


def paper_instance(n_states: int = 5, n_actions: int = 3, horizon: int = 5, seed: int | None = 0,
                   concentration: float = 0.5, cost_values: Sequence[float] = PAPER_COST_VALUES) -> EpisodicCMDP:
    """The synthetic CMDP of the paper's experiment (adversarial costs), as an environment.

    Stage-dependent transitions ``P_h(. | s, a) ~ Dirichlet(concentration)`` and mean rewards
    ``r_h(s, a) ~ U(0, 1)`` (Bernoulli draws), initial state 0, costs from :class:`IIDCostSchedule`,
    threshold 0. Whether the paper's transitions depend on h is not stated in the sources we read (ours).
    """
    S, A, H = check_count("n_states", n_states), check_count("n_actions", n_actions), check_count("horizon", horizon)
    if not concentration > 0:
        raise ValueError(f"concentration must be > 0, got {concentration}")
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.full(S, concentration), size=(H, A, S))
    r = rng.uniform(0.0, 1.0, size=(H, S, A))
    schedule = IIDCostSchedule(cost_values, (H, S, A), seed=int(rng.integers(2 ** 31)))
    return EpisodicCMDP(P, r, H, 0, schedule, seed=int(rng.integers(2 ** 31)))

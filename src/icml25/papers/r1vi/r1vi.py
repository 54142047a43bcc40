"""Rank-One Modified Value Iteration (R1-VI) and Rank-One Q-learning (R1-QL).

Kolarijani, Ok, Mohajerin Esfahani & Sharifi Kolarijani, "Rank-One Modified Value
Iteration", ICML 2025 (arXiv 2505.01828).

Policy iteration is a Newton step ``v+ = v + (I - gamma P_pi)^{-1} (T v - v)`` with
``pi`` greedy for ``v``. R1-VI replaces ``P_pi`` by the rank-one matrix ``1 d^T``, where
``d`` approximates the stationary distribution of ``P_pi`` (a few power-method steps,
warm-started). Because ``d^T 1 = 1``, Sherman-Morrison gives
``(I - gamma 1 d^T)^{-1} = I + gamma/(1 - gamma) 1 d^T`` and the update

    v_{k+1} = T v_k + gamma/(1 - gamma) * (d_k^T (T v_k - v_k)) * 1          (R1-VI)

costs one Bellman application plus ``power_steps`` products with P_pi: O(S^2 A) per
iteration, no linear solve.

Structure (tested): ``T(v + c 1) = T(v) + gamma c 1``, so from the same ``v_0`` the R1-VI
and VI iterates differ by a constant vector ``c_k 1`` at every k, and their greedy
policies are identical. R1-VI is VI plus a scalar shift that cancels the error
component along ``1`` (the eigenvalue-1 direction of every P_pi). The same holds for
R1-QL against Q-learning run on common samples.

Special cases: ``gamma = 0`` gives ``v_1 = max_a r`` for both; with ``power_steps=0`` and
a fixed ``d`` the shift still uses ``d``; a single-state MDP is solved in one step
(``d = [1]`` is exact, so R1-VI is exactly Newton / policy iteration there).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from icml25.common.checks import ConfigError, check_ranges
from icml25.common.mdp import (
    LearningResult,
    Sampler,
    SolverResult,
    SolverTrace,
    check_count,
    check_learning_args,
    check_mdp,
    check_transitions,
    check_vector,
    greedy_step,
    policy_transitions,
    q_values,
    sample_next_states,
    setup_solver,
    step_sizes,
)


@dataclass(frozen=True)
class R1VIConfig:
    """Settings of R1-VI (:func:`r1_value_iteration`) beyond the MDP, the discount and the stopping rule."""

    power_steps: int = 10
    """Power-method steps per iteration, warm-started from the previous d (the third-party code's 10; the
    paper's number was not read)."""

    def __post_init__(self) -> None:
        # named as the setting is typed (``--set r1vi.power_steps=...``)
        check_ranges("r1vi", vars(self), integer=("power_steps",), nonnegative=("power_steps",),
                     at_most={"power_steps": 10**4})


@dataclass(frozen=True)
class R1QLConfig:
    """Settings of R1-QL (:func:`r1_q_learning`), shared with the Q-learning baseline it is compared with."""

    step_size: str = "1/k"
    """Step-size rule: '1/k' (alpha_k = 1/(k+1)) or a constant in (0, 1] given as text, e.g. '0.1'."""

    def __post_init__(self) -> None:
        if self.step_size == "1/k":
            return
        try:
            alpha = float(self.step_size)
        except (TypeError, ValueError):
            alpha = float("nan")
        if not 0.0 < alpha <= 1.0:
            raise ConfigError(f"r1ql.step_size must be '1/k' or a number in (0, 1], got {self.step_size!r}")

    @property
    def step(self) -> str | float:
        """The step size as :func:`r1_q_learning` takes it ('1/k' or a float)."""
        return self.step_size if self.step_size == "1/k" else float(self.step_size)


def _check_distribution(name: str, d: Any, size: int) -> np.ndarray:
    d = check_vector(name, d, (size,))
    if np.any(d < 0) or d.sum() <= 0:
        raise ValueError(f"{name} must be a non-negative vector with positive sum")
    return d / d.sum()


def power_step(P_pi: Any, d: Any, steps: int) -> np.ndarray:
    """``steps`` iterations of ``d <- normalise(P_pi^T d)`` (row vector ``d^T P_pi``).

    Args:
        P_pi: a stochastic matrix (S, S), e.g. the transitions of a policy.
        d: a non-negative vector (S,) with positive sum (normalised after each step).
        steps: number of power steps (>= 0); ``steps=0`` returns ``d`` unchanged.

    Returns:
        the distribution (S,) after ``steps`` steps.

    Raises:
        ValueError: when ``P_pi`` is not a finite stochastic square matrix, ``d`` has
            another length, a negative entry or zero sum, or ``steps`` is not an integer >= 0.
    """
    P_pi = np.asarray(P_pi, dtype=float)
    if P_pi.ndim != 2:
        raise ValueError(f"P_pi must have shape (S, S), got {P_pi.shape}")
    P_pi = check_transitions(P_pi[None])[0]
    d = check_vector("d", d, (P_pi.shape[0],))
    if np.any(d < 0) or d.sum() <= 0:
        raise ValueError("d must be a non-negative vector with positive sum")
    return _power_step(P_pi, d, check_count("steps", steps, minimum=0))


def _power_step(P_pi: np.ndarray, d: np.ndarray, steps: int) -> np.ndarray:
    """:func:`power_step` on checked arguments (the solvers' inner loop)."""
    for _ in range(steps):
        d = P_pi.T @ d
        d = d / d.sum()
    return d


def r1_value_iteration(P: Any, r: Any, gamma: float, v0: Any = None, tol: float = 1e-8, max_iter: int = 100_000,
                       power_steps: int = 10, d0: Any = None, v_ref: Any = None) -> SolverResult:
    """Rank-one modified value iteration (R1-VI, Algorithm 1 of the paper).

    Each iteration: ``pi_k = greedy(v_k)`` and ``T v_k`` (one Bellman application);
    ``d_k = (P_{pi_k}^T)^{power_steps} d_{k-1}`` normalised to sum 1; then (R1-VI).

    Args:
        P: transitions (A, S, S), rows sum to 1.
        r: rewards (S, A).
        gamma: discount in [0, 1).
        v0: initial value (S,), zeros by default.
        tol: stop when ``||T v_k - v_k||_inf <= tol``.
        max_iter: at most this many Bellman applications.
        power_steps: power-method steps per iteration (>= 0), warm-started from d_{k-1}.
        d0: initial distribution (S,), uniform by default.
        v_ref: optional reference (e.g. v*): ``||v_k - v_ref||`` is recorded in ``errors``.

    Returns:
        :class:`~icml25.common.mdp.SolverResult`; ``n_iter`` counts Bellman applications.
    """
    P, r, gamma, v, tol, max_iter, ref = setup_solver(P, r, gamma, v0, tol, max_iter, v_ref)
    power_steps = check_count("power_steps", power_steps, minimum=0)
    n_states = P.shape[1]
    d = np.full(n_states, 1.0 / n_states) if d0 is None else _check_distribution("d0", d0, n_states)
    shift = gamma / (1.0 - gamma)
    trace = SolverTrace(ref)
    while True:
        Tv, policy = greedy_step(P, r, v, gamma, trace)
        if trace.record(v, Tv) <= tol or trace.n_evals >= max_iter:
            return trace.result(v, policy, tol)
        d = _power_step(policy_transitions(P, policy), d, power_steps)
        # (R1-VI): v+ = T v + gamma/(1-gamma) d^T (T v - v) 1
        v = Tv + shift * float(d @ (Tv - v))


def _q_greedy_chain_step(P: np.ndarray, d: np.ndarray, policy: np.ndarray) -> np.ndarray:
    """One step ``d^T P^pi`` of the state-action chain ``P^pi((s,a),(s2,a2)) = P[a,s,s2] 1[a2 = pi(s2)]``."""
    n_actions, n_states = P.shape[0], P.shape[1]
    # state marginal of the next state: mu(s2) = sum_{s,a} d(s,a) P[a,s,s2]   (O(S^2 A))
    mu = d.T.reshape(n_actions * n_states) @ P.reshape(n_actions * n_states, n_states)
    out = np.zeros((n_states, n_actions))
    out[np.arange(n_states), policy] = mu
    return out / out.sum()


def r1_q_value_iteration(P: Any, r: Any, gamma: float, q0: Any = None, tol: float = 1e-8, max_iter: int = 100_000,
                         power_steps: int = 10, d0: Any = None, q_ref: Any = None) -> SolverResult:
    """R1-VI on Q-functions: ``Q_{k+1} = T Q_k + gamma/(1-gamma) (d_k^T (T Q_k - Q_k)) 1``.

    ``T Q(s, a) = r(s, a) + gamma sum_s2 P[a, s, s2] max_a2 Q(s2, a2)`` and ``d_k`` is a
    distribution over state-action pairs, power-iterated on the chain
    ``P^pi((s, a), (s2, a2)) = P[a, s, s2] 1[a2 = pi_k(s2)]`` with ``pi_k`` greedy for ``Q_k``.

    Args and Returns as :func:`r1_value_iteration`, with ``q0``, ``d0`` and ``q_ref`` of
    shape (S, A); the result's ``v`` is the final Q (S, A) and residuals are
    ``||T Q_k - Q_k||_inf``.
    """
    P, r, gamma = check_mdp(P, r, gamma)
    n_actions, n_states = P.shape[0], P.shape[1]
    q = np.zeros((n_states, n_actions)) if q0 is None else check_vector("q0", q0, (n_states, n_actions))
    if not float(tol) > 0:
        raise ValueError(f"tol must be > 0, got {tol!r}")
    max_iter = check_count("max_iter", max_iter)
    power_steps = check_count("power_steps", power_steps, minimum=0)
    ref = None if q_ref is None else check_vector("q_ref", q_ref, (n_states, n_actions))
    if d0 is None:
        d = np.full((n_states, n_actions), 1.0 / (n_states * n_actions))
    else:
        d = _check_distribution("d0", np.ravel(d0), n_states * n_actions).reshape(n_states, n_actions)
    shift = gamma / (1.0 - gamma)
    trace = SolverTrace(ref)
    while True:
        policy = np.argmax(q, axis=1)
        Tq = q_values(P, r, q[np.arange(n_states), policy], gamma)
        trace.n_evals += 1
        if trace.record(q, Tq) <= tol or trace.n_evals >= max_iter:
            return trace.result(q, policy, float(tol))
        for _ in range(power_steps):
            d = _q_greedy_chain_step(P, d, policy)
        q = Tq + shift * float(np.sum(d * (Tq - q)))


def r1_q_learning(sampler: Sampler, r: Any, gamma: float, n_iter: int, step_size: str | float = "1/k",
                  seed: int | None = 0, q0: Any = None, q_ref: Any = None, log_every: int = 100,
                  d0: Any = None) -> LearningResult:
    """Rank-one modified Q-learning (R1-QL), synchronous generative model.

    At iteration k, draw ``s'_k(s, a) ~ P(.|s, a)`` for every pair (one call to
    ``sampler``), giving the empirical operator ``T_k`` and the empirical greedy chain
    ``P_k((s,a),(s2,a2)) = 1[s2 = s'_k(s,a)] 1[a2 = pi_k(s2)]`` with ``pi_k = greedy(Q_k)``. Then

        d_k     = (1 - alpha_k) d_{k-1} + alpha_k (P_k^T d_{k-1})
        Q_{k+1} = (1 - alpha_k) Q_k + alpha_k [T_k Q_k + gamma/(1-gamma) (d_k^T (T_k Q_k - Q_k)) 1]

    The d-update (a stochastic-approximation power step with the same step size) is
    our reading; the paper's exact rule was not retrieved (see docs/papers/r1vi.md).

    Args:
        sampler: ``sampler(rng) -> next_states`` (S, A), e.g.
            :func:`icml25.common.mdp.generative_model`.
        r: rewards (S, A).
        gamma: discount in [0, 1).
        n_iter: synchronous iterations.
        step_size: ``"1/k"`` (alpha_k = 1/(k+1)) or a constant in (0, 1].
        seed: seed of the generator handed to ``sampler``; with the same seed and
            sampler, :func:`icml25.common.mdp.q_learning` sees the same samples.
        q0: initial Q (zeros by default).
        q_ref: optional Q* whose sup-distance is logged every ``log_every`` iterations.
        d0: initial state-action distribution (S, A), uniform by default.

    Returns:
        :class:`~icml25.common.mdp.LearningResult`.
    """
    r, gamma, n_iter, q, ref, log_every = check_learning_args(sampler, r, gamma, n_iter, q0, q_ref, log_every)
    n_states, n_actions = r.shape
    if d0 is None:
        d = np.full((n_states, n_actions), 1.0 / (n_states * n_actions))
    else:
        d = _check_distribution("d0", np.ravel(d0), n_states * n_actions).reshape(n_states, n_actions)
    rng = np.random.default_rng(seed)
    alphas = step_sizes(step_size, n_iter)
    shift = gamma / (1.0 - gamma)
    rows = np.arange(n_states)
    errors, iters = [], []
    for k in range(n_iter):
        nxt = sample_next_states(sampler, rng, r.shape)
        policy = np.argmax(q, axis=1)
        target = r + gamma * q[rows, policy][nxt]  # T_k Q_k
        # one empirical power step: mass of (s, a) moves to (s'_k(s,a), pi_k(s'_k(s,a)))
        mu = np.bincount(nxt.ravel(), weights=d.ravel(), minlength=n_states)
        moved = np.zeros_like(d)
        moved[rows, policy] = mu
        d = (1.0 - alphas[k]) * d + alphas[k] * moved
        d /= d.sum()
        q = (1.0 - alphas[k]) * q + alphas[k] * (target + shift * float(np.sum(d * (target - q))))
        if ref is not None and ((k + 1) % log_every == 0 or k + 1 == n_iter):
            errors.append(float(np.max(np.abs(q - ref))))
            iters.append(k + 1)
    return LearningResult(q, np.argmax(q, axis=1), n_iter, np.asarray(errors), np.asarray(iters, dtype=int))

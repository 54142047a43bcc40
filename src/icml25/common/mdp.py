"""Tabular MDPs: a Garnet generator, Bellman operators, exact and iterative solvers.

Conventions (every function here, and every paper that uses this module):

* ``P`` has shape ``(A, S, S)``: ``P[a, s, s2]`` is the probability of moving from
  ``s`` to ``s2`` under action ``a``; every row ``P[a, s]`` sums to 1.
* ``r`` has shape ``(S, A)``: the expected reward of taking ``a`` in ``s``.
* ``gamma`` is in ``[0, 1)``. Values ``v`` have shape ``(S,)``, Q-functions ``(S, A)``,
  deterministic policies are integer arrays of shape ``(S,)``.
* Finite-horizon versions add a leading ``H`` axis: ``P`` ``(H, A, S, S)``, ``r`` ``(H, S, A)``.

The Bellman optimality operator is ``T(v)(s) = max_a [r(s, a) + gamma sum_s2 P[a, s, s2] v(s2)]``.
Every iterative planner returns a :class:`SolverResult` and stops when the sup-norm
residual ``||T v_k - v_k||`` is at most ``tol``; ``n_iter`` counts Bellman operator
applications (one application costs O(S^2 A)).

Solvers: :func:`value_iteration`, :func:`policy_iteration` (exact, the ground truth),
:func:`nesterov_value_iteration` (safeguarded momentum VI, Goyal & Grand-Clement 2022),
:func:`anderson_value_iteration` (safeguarded Anderson mixing, Geist & Scherrer 2018),
:func:`backward_induction` (finite horizon) and :func:`q_learning` (synchronous
generative model). :class:`TabularEnv` wraps an MDP as a gymnasium environment
(needs ``pip install 'icml25[rl]'``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

STOCHASTIC_ATOL = 1e-8
"""How far a row of P may sum from 1 before it is rejected."""

Sampler = Callable[[np.random.Generator], np.ndarray]
"""A synchronous generative model: ``sampler(rng) -> next_states`` of shape (S, A)."""


# --------------------------------------------------------------------------- validation

def check_count(name: str, value: Any, minimum: int = 1) -> int:
    """Return ``value`` as an int, or raise ValueError if it is not an integer >= minimum."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def check_gamma(gamma: Any) -> float:
    """Return ``gamma`` as a float, or raise ValueError if it is not in [0, 1)."""
    g = float(gamma)
    if not (0.0 <= g < 1.0):
        raise ValueError(f"gamma must be in [0, 1), got {gamma!r}")
    return g


def check_transitions(P: Any) -> np.ndarray:
    """Validate a transition tensor of shape (A, S, S) whose rows are distributions."""
    P = np.asarray(P, dtype=float)
    if P.ndim != 3 or P.shape[1] != P.shape[2] or P.shape[0] < 1 or P.shape[1] < 1:
        raise ValueError(f"P must have shape (A, S, S), got {P.shape}")
    # two reductions and no (A, S, S) temporaries: a NaN or inf entry makes its row sum non-finite
    sums = P.sum(axis=2)
    if not np.all(np.isfinite(sums)):
        raise ValueError("P must be finite")
    if P.min() < 0:
        raise ValueError("P is not stochastic: it has negative entries")
    if not np.allclose(sums, 1.0, rtol=0.0, atol=STOCHASTIC_ATOL):
        a, s = np.unravel_index(np.argmax(np.abs(sums - 1.0)), sums.shape)
        raise ValueError(f"P is not stochastic: row P[{a}, {s}] sums to {sums[a, s]:.6g}, not 1")
    return P


def check_mdp(P: Any, r: Any, gamma: Any | None = None) -> tuple[np.ndarray, np.ndarray, float | None]:
    """Validate ``(P, r, gamma)``; return them as float arrays (gamma None stays None)."""
    P = check_transitions(P)
    r = np.asarray(r, dtype=float)
    n_actions, n_states = P.shape[0], P.shape[1]
    if r.shape != (n_states, n_actions):
        raise ValueError(f"r must have shape (S, A) = ({n_states}, {n_actions}) to match P {P.shape}, got {r.shape}")
    if not np.all(np.isfinite(r)):
        raise ValueError("r must be finite")
    return P, r, (None if gamma is None else check_gamma(gamma))


def check_vector(name: str, v: Any, shape: tuple[int, ...]) -> np.ndarray:
    """Return a finite float copy of ``v`` with the given shape, or raise ValueError naming ``name``."""
    v = np.asarray(v, dtype=float)
    if v.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {v.shape}")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name} must be finite")
    return v.copy()


# --------------------------------------------------------------------------- generators

def garnet_mdp(n_states: int, n_actions: int, branching: int, seed: int | None = 0) -> tuple[np.ndarray, np.ndarray]:
    """A random Garnet MDP (Archibald et al. 1995; Bhatnagar et al. 2009).

    Every ``(s, a)`` moves to ``branching`` distinct next states drawn uniformly
    without replacement, with probabilities given by the gaps of ``branching - 1``
    sorted uniform cut points; rewards are i.i.d. uniform on [0, 1].

    Args:
        n_states: S >= 1.
        n_actions: A >= 1.
        branching: next states per (s, a), 1 <= branching <= S.
        seed: seed of the NumPy generator.

    Returns:
        ``(P, r)`` with ``P`` of shape (A, S, S) and ``r`` of shape (S, A).
    """
    n_states = check_count("n_states", n_states)
    n_actions = check_count("n_actions", n_actions)
    branching = check_count("branching", branching)
    if branching > n_states:
        raise ValueError(f"branching must be <= n_states = {n_states}, got {branching}")
    rng = np.random.default_rng(seed)
    n_pairs = n_actions * n_states
    # Distinct next states per (a, s): the first `branching` columns of a random permutation.
    targets = np.argsort(rng.random((n_pairs, n_states)), axis=1)[:, :branching]
    cuts = np.sort(rng.random((n_pairs, branching - 1)), axis=1)
    probs = np.diff(np.concatenate([np.zeros((n_pairs, 1)), cuts, np.ones((n_pairs, 1))], axis=1), axis=1)
    P = np.zeros((n_pairs, n_states))
    np.put_along_axis(P, targets, probs, axis=1)
    P /= P.sum(axis=1, keepdims=True)
    r = rng.random((n_states, n_actions))
    return P.reshape(n_actions, n_states, n_states), r


# --------------------------------------------------------------------------- operators

def q_values(P: np.ndarray, r: np.ndarray, v: np.ndarray, gamma: float) -> np.ndarray:
    """``Q(s, a) = r(s, a) + gamma sum_s2 P[a, s, s2] v(s2)``, shape (S, A). No validation."""
    return _q_action_major(P, r.T, v, gamma).T


def _q_action_major(P: np.ndarray, r_t: np.ndarray, v: np.ndarray, gamma: float) -> np.ndarray:
    """Q in (A, S) layout; one (S, S) matrix-vector product per action, like pymdptoolbox.

    A single (A*S, S) product is as fast on an idle machine, but OpenBLAS threads it and
    it slows down several-fold when the cores are shared; per-action products do not.
    """
    q = np.empty((P.shape[0], P.shape[1]))
    for a in range(P.shape[0]):
        np.dot(P[a], v, out=q[a])
    q *= gamma
    q += r_t
    return q


def bellman_optimality(P: Any, r: Any, v: Any, gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """One application of the Bellman optimality operator.

    Returns:
        ``(Tv, greedy_policy)``: ``Tv`` of shape (S,), the greedy policy (ties to the
        lowest action index) of shape (S,), int.
    """
    P, r, gamma = check_mdp(P, r, gamma)
    v = check_vector("v", v, (P.shape[1],))
    q = q_values(P, r, v, gamma)
    policy = np.argmax(q, axis=1)
    return q[np.arange(q.shape[0]), policy], policy


def policy_transitions(P: np.ndarray, policy: np.ndarray) -> np.ndarray:
    """``P_pi[s, s2] = P[pi(s), s, s2]``, shape (S, S)."""
    return P[policy, np.arange(P.shape[1])]


def policy_rewards(r: np.ndarray, policy: np.ndarray) -> np.ndarray:
    """``r_pi[s] = r[s, pi(s)]``, shape (S,)."""
    return r[np.arange(r.shape[0]), policy]


def policy_evaluation(P: Any, r: Any, policy: Any, gamma: float) -> np.ndarray:
    """Exact value of a deterministic policy: solve ``(I - gamma P_pi) v = r_pi``."""
    P, r, gamma = check_mdp(P, r, gamma)
    policy = np.asarray(policy)
    if policy.shape != (P.shape[1],) or not np.issubdtype(policy.dtype, np.integer):
        raise ValueError(f"policy must be an integer array of shape ({P.shape[1]},)")
    if policy.min() < 0 or policy.max() >= P.shape[0]:
        raise ValueError(f"policy actions must be in [0, {P.shape[0]})")
    n_states = P.shape[1]
    return np.linalg.solve(np.eye(n_states) - gamma * policy_transitions(P, policy), policy_rewards(r, policy))


# --------------------------------------------------------------------------- results

@dataclass(frozen=True)
class SolverResult:
    """What every planner returns.

    Attributes:
        v: the final value (S,), or Q-function (S, A) for Q-form solvers.
        policy: greedy policy of ``v`` (S,), int.
        n_iter: Bellman operator applications spent.
        residuals: ``||T v_k - v_k||_inf`` of each iterate ``v_k``, in order.
        converged: whether the last residual is ``<= tol``.
        errors: ``||v_k - v_ref||_inf`` of each iterate when ``v_ref`` was given, else empty.
        evals: Bellman applications spent when each iterate's residual was known
            (same length as ``residuals``); for plain VI ``evals[k] = k + 1``.
    """

    v: np.ndarray
    policy: np.ndarray
    n_iter: int
    residuals: np.ndarray
    converged: bool
    errors: np.ndarray = field(default_factory=lambda: np.empty(0))
    evals: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=int))

    def evals_to_error(self, threshold: float) -> float:
        """Bellman applications until ``||v_k - v_ref|| <= threshold`` first held (inf if never)."""
        if self.errors.size == 0:
            raise ValueError("no errors were recorded: pass v_ref to the solver")
        hit = np.nonzero(self.errors <= threshold)[0]
        return float(self.evals[hit[0]]) if hit.size else float("inf")


SPARSE_DENSITY = 0.25
"""Above S*S*A >= 10_000 entries, P with fewer non-zeros than this share is applied as a CSR matrix."""


def _transition_operator(P: np.ndarray) -> Any:
    """``P`` as an (A*S, S) matrix for ``q = P v``: CSR when sparse enough, else the dense array.

    Garnet MDPs with branching b << S have density b/S; the sparse product reads b/S of
    the memory that the dense one does (and gives the same numbers up to round-off).
    """
    flat = P.reshape(P.shape[0] * P.shape[1], P.shape[2])
    if flat.size >= 10_000 and np.count_nonzero(flat) < SPARSE_DENSITY * flat.size:
        from scipy.sparse import csr_matrix

        return csr_matrix(flat)
    return flat


class SolverTrace:
    """Records residuals, errors and evaluation counts of a run."""

    def __init__(self, v_ref: np.ndarray | None):
        self.operator: Any = None
        self.v_ref = v_ref
        self.residuals: list[float] = []
        self.errors: list[float] = []
        self.evals: list[int] = []
        self.n_evals = 0

    def record(self, v: np.ndarray, Tv: np.ndarray) -> float:
        res = float(np.max(np.abs(Tv - v)))
        self.residuals.append(res)
        self.evals.append(self.n_evals)
        if self.v_ref is not None:
            self.errors.append(float(np.max(np.abs(v - self.v_ref))))
        return res

    def result(self, v: np.ndarray, policy: np.ndarray, tol: float) -> SolverResult:
        res = np.asarray(self.residuals)
        return SolverResult(v=v, policy=policy, n_iter=self.n_evals, residuals=res,
                            converged=bool(res.size and res[-1] <= tol), errors=np.asarray(self.errors),
                            evals=np.asarray(self.evals, dtype=int))


def setup_solver(P, r, gamma, v0, tol, max_iter, v_ref):
    """Validate a planner's arguments; return ``(P, r, gamma, v0 or zeros, tol, max_iter, v_ref)`` as arrays."""
    P, r, gamma = check_mdp(P, r, gamma)
    n_states = P.shape[1]
    v = np.zeros(n_states) if v0 is None else check_vector("v0", v0, (n_states,))
    if not float(tol) > 0:
        raise ValueError(f"tol must be > 0, got {tol!r}")
    max_iter = check_count("max_iter", max_iter)
    ref = None if v_ref is None else check_vector("v_ref", v_ref, (n_states,))
    return P, r, gamma, v, float(tol), max_iter, ref


def _q_traced(P: np.ndarray, r: np.ndarray, v: np.ndarray, gamma: float, trace: SolverTrace) -> np.ndarray:
    """Q in (A, S) layout through the run's transition operator, counting one Bellman application."""
    if trace.operator is None:  # built once per run
        trace.operator = _transition_operator(P)
    if isinstance(trace.operator, np.ndarray):
        q = _q_action_major(P, r.T, v, gamma)
    else:
        q = (trace.operator @ v).reshape(P.shape[0], P.shape[1])
        q *= gamma
        q += r.T
    trace.n_evals += 1
    return q


def greedy_step(P: np.ndarray, r: np.ndarray, v: np.ndarray, gamma: float, trace: SolverTrace) -> tuple[np.ndarray, np.ndarray]:
    """Tv and greedy policy, counting one Bellman application."""
    q = _q_traced(P, r, v, gamma, trace)
    return q.max(axis=0), np.argmax(q, axis=0)


# --------------------------------------------------------------------------- planners

def value_iteration(P: Any, r: Any, gamma: float, v0: Any = None, tol: float = 1e-8, max_iter: int = 100_000,
                    v_ref: Any = None) -> SolverResult:
    """Value iteration ``v_{k+1} = T(v_k)``.

    Args:
        P, r, gamma: the MDP (see the module docstring).
        v0: initial value (S,), zeros by default.
        tol: stop when ``||T v_k - v_k||_inf <= tol``.
        max_iter: at most this many Bellman applications.
        v_ref: optional reference value (e.g. v*); its sup-distance to every iterate is recorded.

    Returns:
        :class:`SolverResult`; ``v`` is the last iterate whose residual was measured.
    """
    P, r, gamma, v, tol, max_iter, ref = setup_solver(P, r, gamma, v0, tol, max_iter, v_ref)
    trace = SolverTrace(ref)
    while True:
        Tv, policy = greedy_step(P, r, v, gamma, trace)
        if trace.record(v, Tv) <= tol or trace.n_evals >= max_iter:
            return trace.result(v, policy, tol)
        v = Tv


def policy_iteration(P: Any, r: Any, gamma: float, v0: Any = None, tol: float = 1e-8, max_iter: int = 10_000,
                     v_ref: Any = None) -> SolverResult:
    """Howard's policy iteration with exact evaluation (the ground truth v*).

    ``pi_{k+1} = greedy(v_k)``, ``v_{k+1} = (I - gamma P_{pi_{k+1}})^{-1} r_{pi_{k+1}}``; a policy
    changes only where the improvement exceeds round-off, so it stops after finitely
    many steps at an optimal policy. ``tol`` only decides ``converged``.
    """
    P, r, gamma, v, tol, max_iter, ref = setup_solver(P, r, gamma, v0, tol, max_iter, v_ref)
    trace = SolverTrace(ref)
    n_states = P.shape[1]
    rows = np.arange(n_states)
    policy = None
    while True:
        # few iterations: per-action dense products (a sparse operator would not pay for its construction)
        q = _q_action_major(P, r.T, v, gamma).T  # (S, A) view
        trace.n_evals += 1
        greedy = np.argmax(q, axis=1)
        trace.record(v, q[rows, greedy])
        if policy is not None:
            # keep the current action unless another one is better by more than round-off
            scale = 1e-12 * max(1.0, float(np.max(np.abs(q))))
            greedy = np.where(q[rows, greedy] > q[rows, policy] + scale, greedy, policy)
            if np.array_equal(greedy, policy) or trace.n_evals >= max_iter:
                return trace.result(v, policy, tol)
        policy = greedy
        v = np.linalg.solve(np.eye(n_states) - gamma * policy_transitions(P, policy), policy_rewards(r, policy))


def _safe(res_candidate: float, res0: float, gamma: float, k: int) -> bool:
    """Safeguard: keep an accelerated iterate only if its residual meets VI's worst-case bound gamma^k res0."""
    return res_candidate <= gamma ** k * res0


def nesterov_value_iteration(P: Any, r: Any, gamma: float, v0: Any = None, tol: float = 1e-8,
                             max_iter: int = 100_000, v_ref: Any = None) -> SolverResult:
    """Safeguarded Nesterov-accelerated value iteration (after Goyal & Grand-Clement 2022, S-AVI).

    ``h_k = v_k + beta (v_k - v_{k-1})``, ``y = h_k - alpha (h_k - T h_k)`` with
    ``alpha = 1/(1+gamma)`` and ``beta = (1 - sqrt(1 - gamma^2))/gamma``. The step is kept
    only when ``||T y - y|| <= gamma^{k+1} ||T v_0 - v_0||`` (VI's guaranteed rate);
    otherwise ``v_{k+1} = T v_k``. Costs two Bellman applications per accepted step.
    """
    P, r, gamma, v, tol, max_iter, ref = setup_solver(P, r, gamma, v0, tol, max_iter, v_ref)
    trace = SolverTrace(ref)
    alpha = 1.0 / (1.0 + gamma)
    beta = (1.0 - np.sqrt(1.0 - gamma**2)) / gamma if gamma > 0 else 0.0
    Tv, policy = greedy_step(P, r, v, gamma, trace)
    res0 = trace.record(v, Tv)
    v_prev, k = v, 0
    while trace.residuals[-1] > tol and trace.n_evals < max_iter:
        k += 1
        h = v + beta * (v - v_prev)
        Th, _ = greedy_step(P, r, h, gamma, trace)
        y = h - alpha * (h - Th)
        Ty, policy_y = greedy_step(P, r, y, gamma, trace)
        res_y = float(np.max(np.abs(Ty - y)))
        if not _safe(res_y, res0, gamma, k):  # fall back to a plain VI step
            y = Tv
            Ty, policy_y = greedy_step(P, r, y, gamma, trace)
        v_prev, v, Tv, policy = v, y, Ty, policy_y
        trace.record(v, Tv)
    return trace.result(v, policy, tol)


def anderson_value_iteration(P: Any, r: Any, gamma: float, v0: Any = None, tol: float = 1e-8,
                             max_iter: int = 100_000, v_ref: Any = None, window: int = 5,
                             regularization: float = 1e-10) -> SolverResult:
    """Safeguarded Anderson-accelerated value iteration (after Geist & Scherrer 2018).

    With the last ``window + 1`` iterates and residuals ``g_i = T v_i - v_i``, solve
    ``min ||sum_i a_i g_i||_2`` s.t. ``sum_i a_i = 1`` (a ``(window+1)``-sized system,
    Tikhonov-regularised) and set ``y = sum_i a_i T v_i``. The step is kept when
    ``||T y - y|| <= gamma^{k+1} ||T v_0 - v_0||``, otherwise ``v_{k+1} = T v_k``.
    One Bellman application per accepted step.
    """
    P, r, gamma, v, tol, max_iter, ref = setup_solver(P, r, gamma, v0, tol, max_iter, v_ref)
    window = check_count("window", window, minimum=0)
    trace = SolverTrace(ref)
    Tv, policy = greedy_step(P, r, v, gamma, trace)
    res0 = trace.record(v, Tv)
    vs, Tvs, k = [v], [Tv], 0
    while trace.residuals[-1] > tol and trace.n_evals < max_iter:
        k += 1
        G = np.stack([b - a for a, b in zip(vs, Tvs)], axis=1)  # (S, m)
        gram = G.T @ G
        gram += (regularization * float(np.trace(gram)) + 1e-300) * np.eye(gram.shape[0])
        weights = np.linalg.solve(gram, np.ones(gram.shape[0]))
        weights /= weights.sum()
        y = np.stack(Tvs, axis=1) @ weights
        Ty, policy_y = greedy_step(P, r, y, gamma, trace)
        if not _safe(float(np.max(np.abs(Ty - y))), res0, gamma, k):
            y = Tv
            Ty, policy_y = greedy_step(P, r, y, gamma, trace)
            vs, Tvs = [], []  # restart the memory after a rejected step
        v, Tv, policy = y, Ty, policy_y
        vs, Tvs = (vs + [v])[-(window + 1):], (Tvs + [Tv])[-(window + 1):]
        trace.record(v, Tv)
    return trace.result(v, policy, tol)


def backward_induction(P: Any, r: Any, horizon: int | None = None,
                       terminal_value: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Finite-horizon dynamic programming (undiscounted).

    Args:
        P: (H, A, S, S) time-varying transitions, or (A, S, S) stationary ones.
        r: (H, S, A) time-varying rewards, or (S, A) stationary ones.
        horizon: H; needed only when both P and r are stationary.
        terminal_value: V_H of shape (S,), zeros by default.

    Returns:
        ``(V, policy)``: ``V`` of shape (H + 1, S) with ``V[t]`` the optimal value-to-go at
        step t, ``policy`` of shape (H, S).
    """
    P = np.asarray(P, dtype=float)
    r = np.asarray(r, dtype=float)
    lengths = {x.shape[0] for x, nd in ((P, 4), (r, 3)) if x.ndim == nd}
    if len(lengths) > 1:
        raise ValueError(f"P and r disagree on the horizon: {sorted(lengths)}")
    if lengths:
        H = lengths.pop()
        if horizon is not None and check_count("horizon", horizon) != H:
            raise ValueError(f"horizon={horizon} does not match the leading axis of P/r ({H})")
    elif horizon is None:
        raise ValueError("horizon is required when P and r are stationary")
    else:
        H = check_count("horizon", horizon)
    Ps = P if P.ndim == 4 else np.broadcast_to(P, (H, *P.shape))
    rs = r if r.ndim == 3 else np.broadcast_to(r, (H, *r.shape))
    for t in range(H):
        check_mdp(Ps[t], rs[t])
    n_states = Ps.shape[2]
    V = np.zeros((H + 1, n_states))
    if terminal_value is not None:
        V[H] = check_vector("terminal_value", terminal_value, (n_states,))
    policy = np.zeros((H, n_states), dtype=int)
    for t in range(H - 1, -1, -1):
        q = q_values(Ps[t], rs[t], V[t + 1], 1.0)
        policy[t] = np.argmax(q, axis=1)
        V[t] = q[np.arange(n_states), policy[t]]
    return V, policy


# --------------------------------------------------------------------------- learning

def generative_model(P: Any) -> Sampler:
    """A synchronous generative model of ``P``: ``sampler(rng)`` draws one next state per (s, a).

    Returns a function ``rng -> next_states`` of shape (S, A), int, with
    ``next_states[s, a] ~ P[a, s, :]`` independently.
    """
    P = check_transitions(P)
    n_actions, n_states = P.shape[0], P.shape[1]
    cdf = np.cumsum(P.transpose(1, 0, 2).reshape(n_states * n_actions, n_states), axis=1)
    cdf[:, -1] = 1.0

    def sampler(rng: np.random.Generator) -> np.ndarray:
        u = rng.random(n_states * n_actions)
        idx = (u[:, None] >= cdf).sum(axis=1)
        return np.minimum(idx, n_states - 1).reshape(n_states, n_actions)

    return sampler


@dataclass(frozen=True)
class LearningResult:
    """What the learning algorithms return.

    Attributes:
        q: final Q-function (S, A).
        policy: its greedy policy (S,).
        n_iter: synchronous iterations (each draws one next state per (s, a)).
        errors: ``||Q_k - q_ref||_inf`` at the iterations in ``error_iters`` (empty without q_ref).
        error_iters: iteration numbers of the recorded errors.
    """

    q: np.ndarray
    policy: np.ndarray
    n_iter: int
    errors: np.ndarray
    error_iters: np.ndarray


def step_sizes(step_size: str | float, n_iter: int) -> np.ndarray:
    """Step sizes alpha_k, k = 0..n_iter-1: ``"1/k"`` gives 1/(k+1); a float in (0, 1] a constant step."""
    if isinstance(step_size, str):
        if step_size != "1/k":
            raise ValueError(f"step_size must be '1/k' or a float in (0, 1], got {step_size!r}")
        return 1.0 / np.arange(1, n_iter + 1)
    alpha = float(step_size)
    if not (0.0 < alpha <= 1.0):
        raise ValueError(f"a constant step_size must be in (0, 1], got {step_size!r}")
    return np.full(n_iter, alpha)


def check_learning_args(sampler, r, gamma, n_iter, q0, q_ref, log_every):
    """Validate the arguments shared by the Q-learning variants (here and in papers built on this module)."""
    if not callable(sampler):
        raise ValueError("sampler must be callable: sampler(rng) -> next_states of shape (S, A)")
    r = np.asarray(r, dtype=float)
    if r.ndim != 2 or not np.all(np.isfinite(r)):
        raise ValueError(f"r must be a finite array of shape (S, A), got shape {r.shape}")
    gamma = check_gamma(gamma)
    n_iter = check_count("n_iter", n_iter, minimum=0)
    log_every = check_count("log_every", log_every)
    q = np.zeros(r.shape) if q0 is None else check_vector("q0", q0, r.shape)
    ref = None if q_ref is None else check_vector("q_ref", q_ref, r.shape)
    return r, gamma, n_iter, q, ref, log_every


def sample_next_states(sampler: Sampler, rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """One draw of next states for every (s, a) from ``sampler``, checked: shape (S, A), integer ids in [0, S)."""
    nxt = np.asarray(sampler(rng))
    if nxt.shape != shape:
        raise ValueError(f"sampler must return next states of shape {shape}, got {nxt.shape}")
    if not np.issubdtype(nxt.dtype, np.integer):
        raise ValueError(f"sampler must return integer next states, got dtype {nxt.dtype}")
    if nxt.size and (nxt.min() < 0 or nxt.max() >= shape[0]):
        raise ValueError(f"sampler must return next states in [0, {shape[0]}), got values in "
                         f"[{nxt.min()}, {nxt.max()}]")
    return nxt


def q_learning(sampler: Sampler, r: Any, gamma: float, n_iter: int, step_size: str | float = "1/k",
               seed: int | None = 0, q0: Any = None, q_ref: Any = None, log_every: int = 100) -> LearningResult:
    """Synchronous Q-learning with a generative model.

    ``Q_{k+1} = (1 - alpha_k) Q_k + alpha_k T_k(Q_k)`` with the empirical operator
    ``T_k(Q)(s, a) = r(s, a) + gamma max_a2 Q(s'_k(s, a), a2)``, ``s'_k ~ P(.|s, a)``.

    Args:
        sampler: ``sampler(rng) -> next_states`` (S, A), e.g. :func:`generative_model`.
        r: rewards (S, A).
        gamma: discount in [0, 1).
        n_iter: synchronous iterations.
        step_size: ``"1/k"`` (alpha_k = 1/(k+1)) or a constant in (0, 1].
        seed: seed of the generator handed to ``sampler`` (same seed = same samples).
        q0: initial Q (zeros by default).
        q_ref: optional Q* whose distance is logged every ``log_every`` iterations.
    """
    r, gamma, n_iter, q, ref, log_every = check_learning_args(sampler, r, gamma, n_iter, q0, q_ref, log_every)
    rng = np.random.default_rng(seed)
    alphas = step_sizes(step_size, n_iter)
    errors, iters = [], []
    for k in range(n_iter):
        nxt = sample_next_states(sampler, rng, r.shape)
        target = r + gamma * q.max(axis=1)[nxt]
        q = (1.0 - alphas[k]) * q + alphas[k] * target
        if ref is not None and ((k + 1) % log_every == 0 or k + 1 == n_iter):
            errors.append(float(np.max(np.abs(q - ref))))
            iters.append(k + 1)
    return LearningResult(q, np.argmax(q, axis=1), n_iter, np.asarray(errors), np.asarray(iters, dtype=int))


# --------------------------------------------------------------------------- gymnasium

def _make_tabular_env() -> type:
    import gymnasium as gym
    from gymnasium import spaces

    class TabularEnv(gym.Env):
        """A tabular MDP as a gymnasium environment.

        Observations and actions are ``Discrete(S)`` and ``Discrete(A)``; ``step(a)``
        draws ``s2 ~ P[a, s]`` and pays ``r[s, a]``. Episodes never terminate; they are
        truncated after ``max_episode_steps`` steps.

        Args:
            P, r: the MDP.
            initial_distribution: distribution of the first state (S,), uniform by default.
            max_episode_steps: episode length.
        """

        metadata = {"render_modes": []}

        def __init__(self, P: Any, r: Any, initial_distribution: Any = None, max_episode_steps: int = 100):
            self.P, self.r, _ = check_mdp(P, r)
            n_actions, n_states = self.P.shape[0], self.P.shape[1]
            if initial_distribution is None:
                initial_distribution = np.full(n_states, 1.0 / n_states)
            mu = check_vector("initial_distribution", initial_distribution, (n_states,))
            if np.any(mu < 0) or not np.isclose(mu.sum(), 1.0, atol=STOCHASTIC_ATOL):
                raise ValueError("initial_distribution must be a probability vector")
            self.initial_distribution = mu / mu.sum()
            self.max_episode_steps = check_count("max_episode_steps", max_episode_steps)
            self.observation_space = spaces.Discrete(n_states)
            self.action_space = spaces.Discrete(n_actions)
            self._state = 0
            self._t = 0

        def reset(self, *, seed: int | None = None, options: dict | None = None):
            super().reset(seed=seed)
            self._state = int(self.np_random.choice(self.observation_space.n, p=self.initial_distribution))
            self._t = 0
            return self._state, {}

        def step(self, action):
            if not self.action_space.contains(action):
                raise ValueError(f"action must be in [0, {self.action_space.n}), got {action!r}")
            a, s = int(action), self._state
            reward = float(self.r[s, a])
            self._state = int(self.np_random.choice(self.observation_space.n, p=self.P[a, s]))
            self._t += 1
            return self._state, reward, False, self._t >= self.max_episode_steps, {}

    return TabularEnv


def make_garnet_env(n_states: int = 10, n_actions: int = 3, branching: int = 3, seed: int = 0,
                    max_episode_steps: int = 100) -> Any:
    """A :class:`TabularEnv` over a random Garnet MDP (:func:`garnet_mdp`); ``gym.make("icml25/Garnet-v0")``."""
    P, r = garnet_mdp(n_states, n_actions, branching, seed=seed)
    return __getattr__("TabularEnv")(P, r, max_episode_steps=max_episode_steps)


_LAZY: dict[str, type] = {}


def __getattr__(name: str) -> Any:
    """``TabularEnv`` is built on first access, so gymnasium stays optional."""
    if name == "TabularEnv":
        if name not in _LAZY:
            try:
                _LAZY[name] = _make_tabular_env()
            except ImportError as exc:  # pragma: no cover - depends on the install
                raise ImportError("TabularEnv needs gymnasium: pip install 'icml25[rl]'") from exc
        return _LAZY[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""OMDPD and baselines: online learners for episodic CMDPs with unknown P and r.

All learners share one interface: ``policy() -> (H, S, A)`` (the policy of the next episode) and
``update(trajectory, g_k)`` (the episode's trajectory, with bandit reward feedback, and the
cost/constraint g_k revealed in full after it). They also share the optimistic model (:class:`OptimisticModel`):
empirical P and r from counts (pooled over steps, or per step with ``stage_dependent=True``), with a bonus
``b = c (sqrt(L / N) + H sqrt(S L / N))``, ``L = log(2 S A H k / delta)``.

* :class:`OMDPD` (the paper's algorithm as described in the sources we could read, see docs/papers/omdpd.md):
  optimistic online mirror descent with the Euclidean regulariser on occupancy measures (a correction step
  and a prediction step with the last gradient as hint, each a Euclidean projection onto the occupancy
  polytope, :func:`project_occupancy`), the surrogate ``alpha(-r_tilde^T q + Phi'(lambda_k) [d_tilde^T q]_+)``
  with the exponential potential ``Phi(x) = exp(beta x) - 1``, optimistic estimates ``r_tilde = r_hat + b``,
  ``d_tilde = d_k - b``, a step size adapted to the gradient variation, and the dual
  ``lambda_{k+1} = lambda_k + alpha [d_k^T q_k]_+``.
* :class:`KLPolicyOMDPD` (ours, a labelled alternative): KL mirror descent on policies (one
  exponential-weights step per (h, s)) on the rectified surrogate ``r_hat - lambda_k 1{V_hat_{g_k} > 0} g_k``
  with a quadratic-potential queue dual ``lambda_k = eta_dual * Q_k`` and an AdaGrad step size; constraints on
  the plug-in model (no bonus).
* :class:`OptPrimalDualCMDP` (Efroni, Mannor & Pirotta 2020): the same primal step as KLPolicyOMDPD on the
  Lagrangian with the running mean of the g_j (it models constraints as stochastic) and projected
  dual ascent ``lambda_{k+1} = [lambda_k + eta_dual / sqrt(k) V_hat_{g_bar}^{pi_k}]_+``.
* :class:`UnconstrainedUCBVI`: greedy on optimistic Q-values, ignores constraints.

Settings: each learner takes its own config dataclass whole (:class:`OMDPDConfig`, :class:`KLPolicyOMDPDConfig`,
:class:`OptPrimalDualConfig`) and the bonuses' :class:`OptimismConfig`, which the learners of one comparison
share: ``OMDPD(S, A, H, OMDPDConfig(eta=2.0), optimism=OptimismConfig(bonus_scale=0.1))``. The keyword form
``OMDPD(S, A, H, eta=2.0, bonus_scale=0.1)`` builds the same configs.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np

from icml25.common.checks import check_fields, check_ranges
from icml25.common.mdp import check_count
from icml25.papers.omdpd.cmdp import (
    EpisodicCMDP,
    Trajectory,
    check_episodic_transitions,
    check_initial_distribution,
    check_policy,
    check_stage_function,
    check_trajectory,
    flow_equalities,
    forward_occupancy,
    policy_from_occupancy,
)


@dataclass(frozen=True)
class OptimismConfig:
    """Settings of the optimistic model (:class:`OptimisticModel`) that every learner here keeps.

    One instance is shared by the learners of a comparison, so they explore with the same bonuses.
    """

    delta: float = 0.05
    """Confidence level inside the bonuses, in (0, 1)."""
    bonus_scale: float = 0.1
    """Multiplier c of the exploration bonuses (1 is the textbook size; 0 turns optimism off)."""

    def __post_init__(self) -> None:
        check_fields(self, finite=True, open_fraction=("delta",), nonnegative=("bonus_scale",))


@dataclass(frozen=True)
class OMDPDConfig:
    """Settings of :class:`OMDPD` (the constants are not given in the sources we could read; see the doc)."""

    alpha: float = 3000 ** -0.5
    """Scale of the surrogate and of the dual increments (default 1/sqrt(3000), 1/sqrt of the paper's K)."""
    beta: float = 1.0
    """Rate of the exponential potential Phi(x) = exp(beta x) - 1."""
    eta: float = 1.0
    """Multiplier of the gradient-variation step size eta sqrt(2H) / sqrt(sum ||G_j - G_{j-1}||^2)."""
    cost_optimism: bool = True
    """Subtract the bonus from the revealed cost in the surrogate (the paper's d_tilde); False uses d_k."""

    def __post_init__(self) -> None:
        check_fields(self, finite=("alpha", "beta", "eta"), positive=("alpha", "beta", "eta"),
                     choices={"cost_optimism": (True, False)})


@dataclass(frozen=True)
class KLPolicyOMDPDConfig:
    """Settings of :class:`KLPolicyOMDPD` (ours)."""

    eta: float = 1.0
    """Primal step scale (AdaGrad: eta / sqrt(sum of squared sup-norms of the surrogate Q))."""
    eta_dual: float = 1.0
    """Dual weight per unit of cumulative violation (lambda_k = eta_dual Q_k)."""

    def __post_init__(self) -> None:
        check_fields(self, finite=True, positive=("eta",), nonnegative=("eta_dual",))


@dataclass(frozen=True)
class OptPrimalDualConfig:
    """Settings of :class:`OptPrimalDualCMDP`."""

    eta: float = 1.0
    """Primal step scale (eta / (H sqrt(k)))."""
    eta_dual: float = 1.0
    """Dual step scale (eta_dual / sqrt(k))."""

    def __post_init__(self) -> None:
        check_fields(self, finite=True, positive=("eta",), nonnegative=("eta_dual",))


def _configs_from_settings(owner: str, settings: dict[str, Any], *configs: Any) -> list[Any]:  # noqa: ANN401
    """The configs with keyword settings applied (the keyword form ``OMDPD(S, A, H, eta=2.0)``).

    Each name in ``settings`` must be a field of exactly one of ``configs``; the copies validate themselves.

    Raises:
        TypeError: a name that is a field of none of the configs.
    """
    names = [{f.name for f in fields(cfg)} for cfg in configs]
    unknown = sorted(set(settings) - set().union(*names))
    if unknown:
        valid = ", ".join(sorted(set().union(*names)))
        raise TypeError(f"{owner} got an unexpected setting {unknown[0]!r}; valid: {valid}")
    return [replace(cfg, **{k: v for k, v in settings.items() if k in own}) for cfg, own in zip(configs, names)]


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
    check_ranges("mirror_descent_step", {"eta": eta}, finite=True, nonnegative=True)
    return _mirror_descent_step(logits, Q, float(eta))


def _mirror_descent_step(logits: np.ndarray, Q: np.ndarray, eta: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`mirror_descent_step` on checked arguments (the learners' inner loop)."""
    logits = logits + eta * Q
    logits = logits - logits.max(axis=-1, keepdims=True)
    policy = np.exp(logits)
    policy /= policy.sum(axis=-1, keepdims=True)
    return logits, policy


def project_occupancy(z: Any, P: Any, mu: Any = 0, tol: float = 1e-10, max_iter: int = 100) -> np.ndarray:
    """Euclidean projection ``argmin_{q in Q(P)} ||q - z||^2`` onto the occupancy measures of ``P``.

    ``Q(P) = {q >= 0 : sum_a q_0(s, a) = mu(s), sum_a q_{h+1}(s', a) = sum_{s,a} P_h(s' | s, a) q_h(s, a)}``.
    Solved through its dual, ``max_y  b^T y - ||[z + M^T y]_+||^2 / 2`` (M q = b the flow equalities), by a
    semismooth Newton method with an Armijo line search; the primal solution is ``q = [z + M^T y]_+``.

    Args:
        z: (H, S, A) point to project; P: (H, A, S, S) or (A, S, S) transitions; mu: initial state or distribution.
        tol: stopping tolerance on the largest flow residual; max_iter: Newton iterations at most.

    Returns:
        q of shape (H, S, A): non-negative, flow residual <= tol.

    Raises:
        ValueError: non-finite ``z``, a ``z`` whose shape does not match ``P``, a non-stochastic ``P``,
            or ``tol`` / ``max_iter`` not positive.
    """
    z = np.asarray(z, dtype=float)
    if z.ndim != 3 or not np.all(np.isfinite(z)):
        raise ValueError(f"z must be a finite (H, S, A) array, got shape {z.shape}")
    P = check_episodic_transitions(P, z.shape[0])
    if z.shape[1:] != (P.shape[2], P.shape[1]):
        raise ValueError(f"z must have shape (H, S, A) = {(P.shape[0], P.shape[2], P.shape[1])}, got {z.shape}")
    check_ranges("project_occupancy", {"tol": tol}, finite=True, positive=True)
    max_iter = check_count("max_iter", max_iter)
    M, b = flow_equalities(P, check_initial_distribution(mu, P.shape[2]))
    return _project_flow_polytope(z.ravel(), M, b, float(tol), max_iter)[0].reshape(z.shape)


def _project_flow_polytope(z: np.ndarray, M: np.ndarray, b: np.ndarray, tol: float = 1e-10, max_iter: int = 100,
                           y0: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`project_occupancy` on flattened, checked arguments; returns ``(q, y)`` (y warm-starts the next call)."""
    y = np.zeros(M.shape[0]) if y0 is None else y0.copy()

    def dual(y: np.ndarray) -> tuple[float, np.ndarray]:
        w = z + M.T @ y
        return float(b @ y - 0.5 * np.sum(np.maximum(w, 0.0) ** 2)), w

    theta, w = dual(y)
    for _ in range(max_iter):
        q = np.maximum(w, 0.0)
        grad = b - M @ q                                   # dual gradient = flow residual
        if np.abs(grad).max() <= tol:
            break
        MD = M[:, w > 0]
        hess = MD @ MD.T + min(1e-3, float(np.abs(grad).max())) * np.eye(M.shape[0])  # regularised M D M^T
        step = np.linalg.solve(hess, grad)
        slope, t = float(grad @ step), 1.0
        while True:                                        # Armijo backtracking on the concave dual
            theta_new, w_new = dual(y + t * step)
            if theta_new >= theta + 1e-4 * t * slope or t < 1e-12:
                break
            t *= 0.5
        y, theta, w = y + t * step, theta_new, w_new
    return np.maximum(w, 0.0), y


class OptimisticModel:
    """Counts-based estimate of a CMDP with UCB-style bonuses.

    Args:
        n_states, n_actions, horizon: S, A, H.
        cfg: :class:`OptimismConfig` (delta, bonus_scale); default ``OptimismConfig()``.
        stage_dependent: estimate P_h and r_h separately for every step h (the paper's experiment has
            stage-dependent rewards); False pools the counts over steps (a stationary CMDP).
        **settings: fields of ``cfg`` by keyword (``OptimisticModel(S, A, H, bonus_scale=0.5)``).

    Attributes:
        cfg: the settings in force.
        counts: visits N(h, s, a); transitions: N(h, s, a, s2); reward_sums: summed rewards per (h, s, a)
            (leading axis of length 1 when the counts are pooled over steps).
    """

    def __init__(self, n_states: int, n_actions: int, horizon: int, cfg: OptimismConfig | None = None,
                 stage_dependent: bool = False, **settings: Any):
        self.S, self.A = check_count("n_states", n_states), check_count("n_actions", n_actions)
        self.H = check_count("horizon", horizon)
        (self.cfg,) = _configs_from_settings("OptimisticModel", settings, cfg or OptimismConfig())
        self.delta, self.bonus_scale = float(self.cfg.delta), float(self.cfg.bonus_scale)
        if not isinstance(stage_dependent, (bool, np.bool_)):
            raise ValueError(f"stage_dependent must be a bool, got {stage_dependent!r}")
        self.stage_dependent = bool(stage_dependent)
        n_h = self.H if self.stage_dependent else 1
        self.counts = np.zeros((n_h, self.S, self.A))
        self.transitions = np.zeros((n_h, self.S, self.A, self.S))
        self.reward_sums = np.zeros((n_h, self.S, self.A))
        self.episodes = 0

    def add(self, traj: Trajectory) -> None:
        """Add one episode's transitions and rewards to the counts."""
        check_trajectory(traj, self.S, self.A, self.H)
        s, a, s2 = traj.states[:-1], traj.actions, traj.states[1:]
        h = np.arange(self.H) if self.stage_dependent else np.zeros(self.H, dtype=int)
        np.add.at(self.counts, (h, s, a), 1.0)
        np.add.at(self.transitions, (h, s, a, s2), 1.0)
        np.add.at(self.reward_sums, (h, s, a), traj.rewards)
        self.episodes += 1

    def estimate(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(P_hat (H, A, S, S), r_hat (H, S, A), bonus)``; unvisited pairs: uniform P, reward 0.

        ``bonus = c (sqrt(L / N) + H sqrt(S L / N))``, ``L = log(2 S A H k / delta)``, of shape (S, A) when
        the counts are pooled over steps and (H, S, A) when they are stage-dependent.
        """
        n = np.maximum(self.counts, 1.0)
        P_hat = np.where(self.counts[..., None] > 0, self.transitions / n[..., None], 1.0 / self.S)
        r_hat = self.reward_sums / n
        L = np.log(2 * self.S * self.A * self.H * max(self.episodes, 1) / self.delta)
        bonus = self.bonus_scale * (np.sqrt(L / n) + self.H * np.sqrt(self.S * L / n))
        P_hat = np.broadcast_to(P_hat.transpose(0, 2, 1, 3), (self.H, self.A, self.S, self.S))
        if not self.stage_dependent:
            bonus = bonus[0]
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
    """Shared state of the policy-mirror-descent learners: model, logits, policy, step counter.

    Args:
        n_states, n_actions, horizon: S, A, H.
        optimism: :class:`OptimismConfig` of the bonuses; default ``OptimismConfig()``.
        mu: initial state (int) or distribution.
        model: optional ``(P, r_mean)`` known model (no bonus): the accurate-estimates regime.
        g_range: per-step range of every revealed constraint g_k.
        stage_dependent: estimate P_h and r_h per step h (see :class:`OptimisticModel`).
        **settings: fields of ``optimism`` by keyword (``UnconstrainedUCBVI(S, A, H, bonus_scale=0.5)``).
    """

    def __init__(self, n_states: int, n_actions: int, horizon: int, optimism: OptimismConfig | None = None, *,
                 mu: Any = 0, model: tuple[Any, Any] | None = None, g_range: tuple[float, float] = (-1, 1),
                 stage_dependent: bool = False, **settings: Any):
        self.S, self.A = check_count("n_states", n_states), check_count("n_actions", n_actions)
        self.H = check_count("horizon", horizon)
        self.mu = check_initial_distribution(mu, self.S)
        (self.optimism,) = _configs_from_settings(type(self).__name__, settings, optimism or OptimismConfig())
        if model is None:
            self.model: Any = OptimisticModel(self.S, self.A, self.H, self.optimism, stage_dependent)
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
    """Optimistic Mirror Descent Primal-Dual (Zhu et al., ICML 2025): Euclidean optimistic OMD on occupancy measures.

    The learner keeps two occupancy measures, the played ``q_k`` and the secondary ``q_hat_k``, and a dual
    (Lyapunov) state ``lambda_k``. After episode k (trajectory with bandit rewards, cost d_k revealed in full):

    1. update the counts; optimistic estimates ``r_tilde = r_hat + b`` and ``d_tilde = d_k - b``
       (``cost_optimism=False``: ``d_tilde = d_k``); Q_{k+1} = occupancy measures of the empirical P_hat;
    2. gradient of the surrogate loss ``alpha (-r_tilde^T q + Phi'(lambda_k) [d_tilde^T q]_+)`` at ``q_k``,
       ``G_k = alpha (-r_tilde + Phi'(lambda_k) 1{d_tilde^T q_k > 0} d_tilde)``, with the exponential potential
       ``Phi(x) = exp(beta x) - 1``, ``Phi'(x) = beta exp(beta x)``;
    3. step size adapted to the gradient variation: ``eta_k = eta sqrt(2 H) / sqrt(sum_{j <= k} ||G_j - G_{j-1}||^2)``
       (``G_0 = 0``; sqrt(2H) bounds the diameter of the occupancy polytope);
    4. correction ``q_hat_{k+1} = Proj_{Q_{k+1}}(q_hat_k - eta_k G_k)``, then prediction with the hint
       ``M_{k+1} = G_k``: ``q_{k+1} = Proj_{Q_{k+1}}(q_hat_{k+1} - eta_k M_{k+1})`` (Euclidean projections,
       :func:`project_occupancy`);
    5. dual ``lambda_{k+1} = lambda_k + alpha [d_k^T q_k]_+`` (only positive violations accumulate);
    6. play ``pi_{k+1}(a | s, h) = q_{k+1, h}(s, a) / sum_a' q_{k+1, h}(s, a')``.

    Steps 2, 4 and 5 follow the paper's description; the constants (alpha, beta, eta), the bonus form and the
    use of the empirical P_hat for Q_k (rather than a transition confidence polytope) are ours: see
    docs/papers/omdpd.md, "Sources and verification".

    Args:
        n_states, n_actions, horizon: S, A, H.
        cfg: :class:`OMDPDConfig` (alpha, beta, eta, cost_optimism); default ``OMDPDConfig()``.
        optimism: :class:`OptimismConfig` of the bonuses (delta, bonus_scale); default ``OptimismConfig()``.
        mu: initial state (int) or distribution.
        model: optional ``(P, r_mean)`` known model (no bonus): the accurate-estimates regime.
        g_range: per-step range of every revealed cost d_k.
        stage_dependent: estimate P_h and r_h per step h (see :class:`OptimisticModel`).
        **settings: fields of ``cfg`` or ``optimism`` by keyword (``OMDPD(S, A, H, eta=2.0, delta=0.1)``).

    Attributes:
        cfg, optimism: the settings in force.
        q, q_hat: current played and secondary occupancy measures (H, S, A); lam: dual state lambda_k;
        estimated_violations: ``d_k^T q_k`` per episode (the learner's estimate, which drives the dual).
    """

    def __init__(self, n_states: int, n_actions: int, horizon: int, cfg: OMDPDConfig | None = None, *,
                 optimism: OptimismConfig | None = None, mu: Any = 0, model: tuple[Any, Any] | None = None,
                 g_range: tuple[float, float] = (-1.0, 1.0), stage_dependent: bool = False, **settings: Any):
        self.cfg, optimism = _configs_from_settings("OMDPD", settings, cfg or OMDPDConfig(),
                                                    optimism or OptimismConfig())
        super().__init__(n_states, n_actions, horizon, optimism, mu=mu, model=model, g_range=g_range,
                         stage_dependent=stage_dependent)
        self.alpha, self.beta, self.eta = float(self.cfg.alpha), float(self.cfg.beta), float(self.cfg.eta)
        self.cost_optimism = bool(self.cfg.cost_optimism)
        P_hat, _, _ = self.model.estimate()
        self.q = forward_occupancy(P_hat, self._policy, self.mu)
        self.q_hat = self.q.copy()
        self.lam = 0.0
        self._grad_prev = np.zeros_like(self.q)
        self._variation = 0.0
        self._y: tuple[np.ndarray | None, np.ndarray | None] = (None, None)
        self.estimated_violations: list[float] = []

    def potential_derivative(self, x: float) -> float:
        """``Phi'(x) = beta exp(beta x)`` of ``Phi(x) = exp(beta x) - 1`` (exponent capped at 700 against overflow)."""
        return self.beta * float(np.exp(min(self.beta * x, 700.0)))

    def update(self, traj: Trajectory, g: Any) -> "OMDPD":
        d = self._check_update(traj, g)
        self.k += 1
        v = float(np.sum(d * self.q))                      # estimated violation d_k^T q_k
        self.estimated_violations.append(v)
        self.model.add(traj)
        P_hat, r_hat, bonus = self.model.estimate()
        r_opt = r_hat + bonus                              # optimistic reward r_tilde
        d_opt = d - bonus if self.cost_optimism else d     # optimistic cost d_tilde
        active = float(np.sum(d_opt * self.q)) > 0
        G = self.alpha * (-r_opt + (self.potential_derivative(self.lam) * d_opt if active else 0.0))
        self._variation += float(np.sum((G - self._grad_prev) ** 2))
        eta_k = self.eta * np.sqrt(2 * self.H) / max(np.sqrt(self._variation), 1e-300)
        M, b = flow_equalities(P_hat, self.mu)
        q_hat, y_hat = _project_flow_polytope((self.q_hat - eta_k * G).ravel(), M, b, y0=self._y[0])
        q, y = _project_flow_polytope(q_hat - eta_k * G.ravel(), M, b, y0=self._y[1])  # hint M_{k+1} = G_k
        self._y = (y_hat, y)
        self.q_hat, self.q = q_hat.reshape(self.q.shape), q.reshape(self.q.shape)
        self.lam += self.alpha * max(v, 0.0)               # lambda_{k+1} = lambda_k + alpha [d_k^T q_k]_+
        self._grad_prev = G
        self._policy = policy_from_occupancy(self.q)
        return self


class KLPolicyOMDPD(_PolicyMirrorDescentLearner):
    """Labelled alternative (ours, not the paper's algorithm): KL mirror descent on policies with a quadratic
    queue potential. It was our inferred form of OMDPD before the paper's structure was known; the paper's
    algorithm is :class:`OMDPD` (Euclidean steps on occupancy measures, exponential potential).

    After episode k (trajectory + revealed g_k):

    1. update the optimistic model; evaluate pi_k: Q_r (reward + bonus, optimistic) and Q_g (g_k on the
       plug-in model, no bonus), and the estimated violation v_k = V_hat_{g_k}^{pi_k}(mu);
    2. queue ``Q_k = Q_{k-1} + [v_k]_+`` and dual weight ``lambda_k = eta_dual Q_k``;
    3. rectified surrogate ``Q_L = Q_r - lambda_k 1{v_k > 0} Q_g``;
    4. AdaGrad step ``eta_k = eta / sqrt(sum_{j <= k} ||Q_L^j||_inf^2)``, and
       ``pi_{k+1}(. | s, h) ∝ pi_k(. | s, h) exp(eta_k Q_L[h, s, .])``.

    Args:
        n_states, n_actions, horizon: S, A, H.
        cfg: :class:`KLPolicyOMDPDConfig` (eta, eta_dual); default ``KLPolicyOMDPDConfig()``.
        optimism: :class:`OptimismConfig` of the bonuses; default ``OptimismConfig()``.
        mu: initial state (int) or distribution.
        model: optional ``(P, r_mean)`` known model (no bonus): the accurate-estimates regime.
        g_range: per-step range of every g_k (used to clip the constraint Q-values).
        **settings: fields of ``cfg`` or ``optimism`` by keyword.
    """

    def __init__(self, n_states: int, n_actions: int, horizon: int, cfg: KLPolicyOMDPDConfig | None = None, *,
                 optimism: OptimismConfig | None = None, mu: Any = 0, model: tuple[Any, Any] | None = None,
                 g_range: tuple[float, float] = (-1.0, 1.0), **settings: Any):
        self.cfg, optimism = _configs_from_settings("KLPolicyOMDPD", settings, cfg or KLPolicyOMDPDConfig(),
                                                    optimism or OptimismConfig())
        super().__init__(n_states, n_actions, horizon, optimism, mu=mu, model=model, g_range=g_range)
        self.eta, self.eta_dual = float(self.cfg.eta), float(self.cfg.eta_dual)
        self.queue = 0.0
        self.lam = 0.0
        self._grad_sq = 0.0
        self.estimated_violations: list[float] = []

    def update(self, traj: Trajectory, g: Any) -> "KLPolicyOMDPD":
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

    Args: as :class:`KLPolicyOMDPD`, with ``cfg`` an :class:`OptPrimalDualConfig` (eta, eta_dual).
    """

    def __init__(self, n_states: int, n_actions: int, horizon: int, cfg: OptPrimalDualConfig | None = None, *,
                 optimism: OptimismConfig | None = None, mu: Any = 0, model: tuple[Any, Any] | None = None,
                 g_range: tuple[float, float] = (-1.0, 1.0), **settings: Any):
        self.cfg, optimism = _configs_from_settings("OptPrimalDualCMDP", settings, cfg or OptPrimalDualConfig(),
                                                    optimism or OptimismConfig())
        super().__init__(n_states, n_actions, horizon, optimism, mu=mu, model=model, g_range=g_range)
        self.eta, self.eta_dual = float(self.cfg.eta), float(self.cfg.eta_dual)
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
    """Optimistic value iteration that ignores constraints: greedy on
    ``Q_h = min(H - h, r_hat + b + P_hat V_{h+1})``.

    Args: ``n_states, n_actions, horizon, optimism, mu, model, g_range, stage_dependent`` and ``**settings``
    as :class:`OMDPD`; its only settings are the bonuses (``optimism``).
    """

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

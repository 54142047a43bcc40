"""UCBVI (Azar, Osband & Munos 2017) with its bonuses side by side, MVP (Zhang et al. 2024), regret.

UCBVI, per episode k (Azar et al. 2017, Alg. 1): from all past data build N(s,a), P_hat, r_hat, then
for h = H-1..0

    Q_h(s,a) = min(Q^{k-1}_h(s,a), H, r_hat(s,a) + P_hat(.|s,a) V_{h+1} + b_h(s,a)),   V_h = max_a Q_h,

with Q_h(s,a) = H for unvisited pairs and V_H = 0, and act greedily (ties broken at random) for
the whole episode. The bonus b is one of the functions below, with its constants in plain sight:

* ``bonus_ch``   (UCBVI-CH, Azar et al. Alg. 3):  7 H L / sqrt(N),  L = ln(5 S A T / delta).
* ``bonus_bf``   (UCBVI-BF, Azar et al. Alg. 4):  sqrt(8 L Var_P_hat(V_{h+1}) / N) + 14 H L / (3 N)
                 + sqrt(8 sum_y P_hat(y|s,a) min(1e4 H^3 S^2 A L^2 / N'_{h+1}(y), H^2) / N).
* ``bonus_ch_refined`` / ``bonus_bf_refined`` (CH-I / BF-I, Drago, Mussi & Metelli, arXiv 2502.17370):
  the same expressions with the paper's smaller constants. Those constants could NOT be
  retrieved for this implementation, so these functions take them as required arguments and
  nothing here ships default values for them (see docs/papers/ucbvi_constants.md).
* ``bonus_mvp``  (MVP, Zhang, Chen, Lee & Du 2024, as recalled):  c1 sqrt(Var_P_hat(V_{h+1}) iota / n)
                 + c2 sqrt(Var_hat(r) iota / n) + c3 H iota / n,  c1 = 460/9, c2 = 2 sqrt(2), c3 = 544/9,
                 iota = ln(S A H K / delta).

MVP keeps stage-dependent statistics, and refreshes the statistics of (h, s, a) only when its visit count
reaches a power of two, from the samples of the latest doubling epoch; the policy is recomputed only
after such a refresh (monotonic value propagation, Q capped at H).

Planning is vectorised over states and actions; the only Python loop is over the H steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from icml25.common.mdp import check_count
from icml25.papers.ucbvi_constants.envs import TabularEpisodicMDP

BONUSES = ("ch", "bf", "ch_refined", "bf_refined")

AZAR_CH = {"c": 7.0, "c_log": 5.0}
"""UCBVI-CH constants of Azar et al. (2017): b = c H L / sqrt(N), L = ln(c_log S A T / delta)."""
AZAR_BF = {"c_var": 8.0, "c_lin": 14.0 / 3.0, "c_corr": 8.0, "c_cap": 1e4, "c_log": 5.0}
"""UCBVI-BF constants of Azar et al. (2017), names as in :func:`bonus_bf`."""
MVP_CONSTANTS = {"c1": 460.0 / 9.0, "c2": 2.0 * math.sqrt(2.0), "c3": 544.0 / 9.0}
"""MVP bonus constants as recalled from Zhang et al. (unverified here; see the doc)."""
REFINED_NOT_CONFIRMED = (
    "the refined (CH-I / BF-I) constants of Drago, Mussi & Metelli (arXiv 2502.17370, Secs. 3-4) could not be "
    "retrieved for this implementation; pass them explicitly as refined_constants=dict(...) after transcribing "
    "them from the paper (keys: {keys})"
)


class Trajectory(NamedTuple):
    """One episode: ``states`` (H + 1,), ``actions`` (H,), ``rewards`` (H,)."""

    states: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray


def log_term(S: int, A: int, T: int, delta: float, c_log: float = 5.0) -> float:
    """``L = ln(c_log S A T / delta)``; Azar et al. use ``c_log = 5``.

    Raises:
        ValueError: ``S``, ``A`` or ``T`` not a positive integer, ``delta`` outside (0, 1), or
            ``c_log`` not a finite positive number.
    """
    S, A, T = (check_count(k, v) for k, v in (("S", S), ("A", A), ("T", T)))
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    if not (np.isfinite(c_log) and c_log > 0):
        raise ValueError(f"c_log must be finite and > 0, got {c_log!r}")
    return math.log(c_log * S * A * T / delta)


def _check_counts(n: Any) -> np.ndarray:
    n = np.asarray(n, dtype=float)
    if np.any(n < 0) or not np.all(np.isfinite(n)):
        raise ValueError("visit counts must be finite and non-negative")
    return np.maximum(n, 1.0)  # bonuses of unvisited pairs are never used (Q = H there)


def _check_model(n: Any, p_hat: Any, v_next: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Counts (S, A) (0 read as 1), empirical transitions (S, A, S) and V_{h+1} (S,), all finite."""
    n = _check_counts(n)
    p_hat = np.asarray(p_hat, dtype=float)
    v_next = np.asarray(v_next, dtype=float)
    if n.ndim != 2 or p_hat.shape != (*n.shape, n.shape[0]):
        raise ValueError(f"counts n must be (S, A) and p_hat (S, A, S), got {n.shape} and {p_hat.shape}")
    if v_next.shape != (n.shape[0],):
        raise ValueError(f"v_next must have shape (S,) = ({n.shape[0]},), got {v_next.shape}")
    if not (np.all(np.isfinite(p_hat)) and np.all(np.isfinite(v_next))):
        raise ValueError("p_hat and v_next must be finite")
    return n, p_hat, v_next


def _variance(p_hat: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``Var_{P_hat(.|s,a)}(v)`` for every (s, a), clipped at 0 against round-off."""
    mean = p_hat @ v
    return np.maximum(p_hat @ (v * v) - mean * mean, 0.0)


def bonus_ch(n: Any, H: int, L: float, *, c: float = 7.0) -> np.ndarray:
    """UCBVI-CH bonus of Azar et al. (2017): ``c H L sqrt(1 / N)`` with ``c = 7``.

    Args:
        n: visit counts N(s, a), any shape; 0 is treated as 1.
        H: horizon. L: ``ln(5 S A T / delta)`` (:func:`log_term`).
    """
    return c * H * L / np.sqrt(_check_counts(n))


def bonus_bf(n: Any, p_hat: np.ndarray, v_next: np.ndarray, n_next: Any, H: int, L: float, *,
             c_var: float = 8.0, c_lin: float = 14.0 / 3.0, c_corr: float = 8.0, c_cap: float = 1e4) -> np.ndarray:
    """UCBVI-BF bonus of Azar et al. (2017), shape of ``n`` (S, A).

    ``sqrt(c_var L Var_P_hat(V_{h+1}) / N) + c_lin H L / N
    + sqrt(c_corr sum_y P_hat(y|s,a) min(c_cap H^3 S^2 A L^2 / N'_{h+1}(y), H^2) / N)``
    with Azar's ``c_var = 8, c_lin = 14/3, c_corr = 8, c_cap = 100^2``.

    Args:
        n: (S, A) counts N(s, a). p_hat: (S, A, S) empirical transitions. v_next: (S,) V_{h+1}.
        n_next: (S,) visits N'_{h+1}(y) of each state at step h + 1 (0 gives the cap H^2).
        H: horizon. L: log term.
    """
    n, p_hat, v_next = _check_model(n, p_hat, v_next)
    n_next = np.asarray(n_next, dtype=float)
    if n_next.shape != v_next.shape:
        raise ValueError(f"n_next must have shape (S,) = {v_next.shape}, got {n_next.shape}")
    if np.any(n_next < 0) or not np.all(np.isfinite(n_next)):
        raise ValueError("visit counts must be finite and non-negative")
    var_part = np.sqrt(c_var * L * _variance(p_hat, v_next) / n)
    return var_part + _bf_static_part(n, p_hat, n_next, H, L, c_lin, c_corr, c_cap)


def _bf_static_part(n: np.ndarray, p_hat: np.ndarray, n_next: np.ndarray, H: int, L: float, c_lin: float,
                    c_corr: float, c_cap: float) -> np.ndarray:
    """The V-independent terms of the BF bonus; ``n_next`` is (S,) or (H, S) (then output (S, A, H))."""
    S, A = p_hat.shape[0], p_hat.shape[1]
    with np.errstate(divide="ignore"):
        capped = np.minimum(c_cap * H**3 * S**2 * A * L**2 / n_next, float(H) ** 2)
    if capped.ndim == 1:
        return c_lin * H * L / n + np.sqrt(c_corr * (p_hat @ capped) / n)
    return (c_lin * H * L / n)[..., None] + np.sqrt(c_corr * (p_hat @ capped.T) / n[..., None])


def _refined(constants: dict | None, keys: tuple[str, ...]) -> dict:
    if constants is None or set(constants) != set(keys):
        raise ValueError(REFINED_NOT_CONFIRMED.format(keys=", ".join(keys)))
    return {k: float(v) for k, v in constants.items()}


CH_REFINED_KEYS = ("c", "c_log")
BF_REFINED_KEYS = ("c_var", "c_lin", "c_corr", "c_cap", "c_log")


def bonus_ch_refined(n: Any, H: int, L: float, *, constants: dict | None) -> np.ndarray:
    """CH-I (arXiv 2502.17370): the CH expression with the paper's constants, which must be given.

    Raises:
        ValueError: when ``constants`` (keys ``c``, ``c_log``) are not supplied.
    """
    c = _refined(constants, CH_REFINED_KEYS)["c"]
    return bonus_ch(n, H, L, c=c)


def bonus_bf_refined(n: Any, p_hat: np.ndarray, v_next: np.ndarray, n_next: Any, H: int, L: float, *,
                     constants: dict | None) -> np.ndarray:
    """BF-I (arXiv 2502.17370): the BF expression with the paper's constants, which must be given.

    Raises:
        ValueError: when ``constants`` (keys of :data:`BF_REFINED_KEYS`) are not supplied.
    """
    c = _refined(constants, BF_REFINED_KEYS)
    return bonus_bf(n, p_hat, v_next, n_next, H, L, c_var=c["c_var"], c_lin=c["c_lin"], c_corr=c["c_corr"],
                    c_cap=c["c_cap"])


def bonus_mvp(n: Any, p_hat: np.ndarray, v_next: np.ndarray, var_r: Any, H: int, iota: float, *,
              c1: float = 460.0 / 9.0, c2: float = 2.0 * math.sqrt(2.0), c3: float = 544.0 / 9.0) -> np.ndarray:
    """MVP bonus: ``c1 sqrt(Var_P_hat(V_{h+1}) iota / n) + c2 sqrt(Var_hat(r) iota / n) + c3 H iota / n``.

    Args:
        n: (S, A) counts (0 read as 1). p_hat: (S, A, S) empirical transitions. v_next: (S,) V_{h+1}.
        var_r: (S, A) empirical reward variances (>= 0). H: horizon. iota: ``ln(S A H K / delta)``.
    """
    n, p_hat, v_next = _check_model(n, p_hat, v_next)
    var_r = np.asarray(var_r, dtype=float)
    if var_r.shape != n.shape or np.any(var_r < 0) or not np.all(np.isfinite(var_r)):
        raise ValueError(f"var_r must be a finite non-negative array of shape {n.shape}, got shape {var_r.shape}")
    return (c1 * np.sqrt(_variance(p_hat, v_next) * iota / n) + c2 * np.sqrt(np.asarray(var_r) * iota / n)
            + c3 * H * iota / n)


def greedy_policy(Q: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """argmax_a Q[..., a] with ties (within 1e-9) broken uniformly at random."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    Q = np.asarray(Q, dtype=float)
    if Q.ndim < 1 or Q.shape[-1] < 1 or not np.all(np.isfinite(Q)):
        raise ValueError(f"Q must be a finite array with at least one action on its last axis, got shape {Q.shape}")
    ties = Q >= Q.max(axis=-1, keepdims=True) - 1e-9
    return np.argmax(np.where(ties, rng.random(Q.shape), -1.0), axis=-1)


def optimistic_backward_induction(p_hat: np.ndarray, r_hat: np.ndarray, visited: np.ndarray, H: int,
                                  bonus_fn, q_prev: np.ndarray | None = None) -> np.ndarray:
    """Optimistic Q of shape (H, S, A).

    ``Q_h = min(q_prev_h, H, r_hat + P_hat V_{h+1} + bonus_fn(h, Var_P_hat(V_{h+1})))`` on visited pairs and
    ``H`` elsewhere; ``V_h = max_a Q_h``, ``V_H = 0``. ``p_hat``/``r_hat``/``visited`` are stationary
    ((S, A, S), (S, A), (S, A)) or stage-dependent (leading H axis). Note the model layout
    ``p_hat[s, a, s2]`` (the toolkit's ``P[a, s, s2]`` transposed by ``P.transpose(1, 0, 2)``), so that
    ``p_hat @ V`` is (S, A). ``bonus_fn(h, var)`` returns the (S, A) bonus (or a scalar).

    Raises:
        ValueError: ``H`` not a positive integer, or shapes of ``p_hat``, ``r_hat``, ``visited``
            (or ``q_prev``, (H, S, A)) that do not match.
    """
    H = check_count("H", H)
    p_hat, r_hat, visited = np.asarray(p_hat), np.asarray(r_hat), np.asarray(visited)
    stage = p_hat.ndim == 4
    S = p_hat.shape[-1] if p_hat.ndim else 0
    A = p_hat.shape[-2] if p_hat.ndim >= 2 else 0
    expected = (H, S, A) if stage else (S, A)
    if p_hat.shape != (*expected, S) or S < 1 or A < 1:
        raise ValueError(f"p_hat must have shape (S, A, S) or (H, S, A, S) with H={H}, got {p_hat.shape}")
    if r_hat.shape != expected or visited.shape != expected:
        raise ValueError(f"r_hat and visited must have shape {expected} to match p_hat {p_hat.shape}, "
                         f"got {r_hat.shape} and {visited.shape}")
    if q_prev is not None and np.shape(q_prev) != (H, S, A):
        raise ValueError(f"q_prev must have shape (H, S, A) = {(H, S, A)}, got {np.shape(q_prev)}")
    V = np.zeros(S)
    Q = np.empty((H, S, r_hat.shape[-1]))
    cap = np.where(visited, float(H), -np.inf)  # -inf marks unvisited pairs, set to H below
    for h in range(H - 1, -1, -1):
        p, r, c = (p_hat[h], r_hat[h], cap[h]) if stage else (p_hat, r_hat, cap)
        moments = p @ np.stack([V, V * V], axis=1)  # (S, A, 2): E[V_{h+1}] and E[V_{h+1}^2]
        pv = moments[..., 0]
        var = np.maximum(moments[..., 1] - pv * pv, 0.0)
        q = np.minimum(r + pv + bonus_fn(h, var), c)
        if q_prev is not None:
            np.minimum(q, q_prev[h], out=q)
        Q[h] = np.where(c == -np.inf, float(H), q)
        V = Q[h].max(axis=1)
    return Q


def _check_agent_args(S: int, A: int, H: int, K: int, delta: float) -> tuple[int, int, int, int, float]:
    S, A, H, K = (check_count(k, v) for k, v in (("S", S), ("A", A), ("H", H), ("K", K)))
    if not 0.0 < float(delta) < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    return S, A, H, K, float(delta)


def _check_bonus_scale(bonus_scale: Any) -> float:
    if isinstance(bonus_scale, bool) or not isinstance(bonus_scale, (int, float, np.integer, np.floating)):
        raise TypeError(f"bonus_scale must be a number, got {bonus_scale!r}")
    if not (np.isfinite(bonus_scale) and bonus_scale >= 0):
        raise ValueError(f"bonus_scale must be finite and >= 0, got {bonus_scale!r}")
    return float(bonus_scale)


def _check_step_state(h: Any, s: Any, H: int, S: int) -> None:
    """``act(h, s)`` arguments: integer indices (bool and float rejected), ``0 <= h < H``, ``0 <= s < S``."""
    # type(x) is int: fast path for the run_regret loop (and excludes bool, a subclass of int)
    if type(h) is not int and (isinstance(h, bool) or not isinstance(h, (int, np.integer))):
        raise TypeError(f"step index h must be an integer, got {h!r} ({type(h).__name__})")
    if type(s) is not int and (isinstance(s, bool) or not isinstance(s, (int, np.integer))):
        raise TypeError(f"state index s must be an integer, got {s!r} ({type(s).__name__})")
    if not 0 <= h < H:
        raise ValueError(f"step index h must be in [0, H) = [0, {H}), got {h!r}")
    if not 0 <= s < S:
        raise ValueError(f"state index s must be in [0, S) = [0, {S}), got {s!r}")


def _check_trajectory(traj: Trajectory, S: int, A: int, H: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    s, a, r = (np.asarray(x) for x in traj)
    if s.shape != (H + 1,) or a.shape != (H,) or r.shape != (H,):
        raise ValueError(f"trajectory must have states (H+1,), actions (H,), rewards (H,) with H={H}, "
                         f"got {s.shape}, {a.shape}, {r.shape}")
    for name, x in (("states", s), ("actions", a)):
        if not np.issubdtype(x.dtype, np.integer):  # floats would be truncated by astype(int), bools read as 0/1
            raise TypeError(f"trajectory {name} must be an integer array of indices, got dtype {x.dtype}")
    if s.min() < 0 or s.max() >= S or a.min() < 0 or a.max() >= A:
        raise ValueError("trajectory has a state or action index out of range")
    if not np.all(np.isfinite(r)) or r.min() < 0 or r.max() > 1:
        raise ValueError("trajectory rewards must lie in [0, 1]")
    return s.astype(int), a.astype(int), r.astype(float)


class UCBVI:
    """UCBVI with a choice of bonus (Azar et al. 2017; refined constants of arXiv 2502.17370).

    Args:
        S, A, H, K: states, actions, horizon, number of episodes (T = H K enters the log term).
        delta: confidence level.
        bonus: ``"ch"``, ``"bf"``, ``"ch_refined"`` or ``"bf_refined"``.
        bonus_scale: multiplies the bonus (1 = as published); the "constants" knob.
        refined_constants: the refined variants' constants (required for them, see the module doc).
        seed: seed of the tie-breaking generator.

    Attributes:
        policy: (H, S) greedy actions for the current episode. Q: (H, S, A) optimistic Q.
    """

    def __init__(self, S: int, A: int, H: int, K: int, delta: float = 0.1, bonus: str = "bf",
                 bonus_scale: float = 1.0, refined_constants: dict | None = None, seed: int | None = None):
        self.S, self.A, self.H, self.K, self.delta = _check_agent_args(S, A, H, K, delta)
        if bonus not in BONUSES:
            raise ValueError(f"bonus must be one of {BONUSES}, got {bonus!r}")
        self.bonus, self.bonus_scale = bonus, _check_bonus_scale(bonus_scale)
        if bonus == "ch_refined":
            self.constants = _refined(refined_constants, CH_REFINED_KEYS)
        elif bonus == "bf_refined":
            self.constants = _refined(refined_constants, BF_REFINED_KEYS)
        else:
            self.constants = dict(AZAR_CH if bonus == "ch" else AZAR_BF)
        self.L = log_term(self.S, self.A, self.H * self.K, self.delta, self.constants["c_log"])
        self.rng = np.random.default_rng(seed)
        self.n_sas = np.zeros((self.S, self.A, self.S))
        self.r_sum = np.zeros((self.S, self.A))
        self.n_step_state = np.zeros((self.H + 1, self.S))  # N'_h(y): visits of y at step h
        self.Q = np.full((self.H, self.S, self.A), float(self.H))
        self.policy = greedy_policy(self.Q, self.rng)

    @property
    def n_sa(self) -> np.ndarray:
        return self.n_sas.sum(axis=2)

    def bonus_values(self, h: int, v_next: np.ndarray) -> np.ndarray:
        """The (S, A) bonus b_h used at step h given V_{h+1}, times ``bonus_scale`` (public functions)."""
        n, H, L, c = self.n_sa, self.H, self.L, self.constants
        if self.bonus in ("ch", "ch_refined"):
            b = bonus_ch(n, H, L, c=c["c"])
        else:
            p_hat = self.n_sas / np.maximum(n, 1.0)[..., None]
            b = bonus_bf(n, p_hat, v_next, self.n_step_state[h + 1], H, L, c_var=c["c_var"], c_lin=c["c_lin"],
                         c_corr=c["c_corr"], c_cap=c["c_cap"])
        return self.bonus_scale * b

    def plan(self) -> None:
        """Recompute Q (monotone in k through the min with the previous Q) and the greedy policy.

        Same numbers as :meth:`bonus_values`, with the V-independent bonus terms computed once
        for all steps.
        """
        n = self.n_sa
        nn = np.maximum(n, 1.0)
        p_hat = self.n_sas / nn[..., None]
        H, L, c, scale = self.H, self.L, self.constants, self.bonus_scale
        if self.bonus in ("ch", "ch_refined"):
            b = scale * c["c"] * H * L / np.sqrt(nn)

            def bonus_fn(h: int, var: np.ndarray) -> np.ndarray:
                return b
        else:
            static = scale * _bf_static_part(nn, p_hat, self.n_step_state[1:], H, L, c["c_lin"], c["c_corr"],
                                             c["c_cap"])
            coef = scale * math.sqrt(c["c_var"] * L)

            def bonus_fn(h: int, var: np.ndarray) -> np.ndarray:
                return coef * np.sqrt(var / nn) + static[..., h]
        self.Q = optimistic_backward_induction(p_hat, self.r_sum / nn, n > 0, H, bonus_fn, q_prev=self.Q)
        self.policy = greedy_policy(self.Q, self.rng)

    def act(self, h: int, s: int) -> int:
        _check_step_state(h, s, self.H, self.S)
        return int(self.policy[h, s])

    def update(self, trajectory: Trajectory) -> None:
        """Add one episode to the counts, then re-plan."""
        s, a, r = _check_trajectory(trajectory, self.S, self.A, self.H)
        np.add.at(self.n_sas, (s[:-1], a, s[1:]), 1.0)
        np.add.at(self.r_sum, (s[:-1], a), r)
        self.n_step_state[np.arange(self.H + 1), s] += 1.0
        self.plan()


class MVP:
    """Monotonic Value Propagation with the doubling trick (Zhang, Chen, Lee & Du 2024), as recalled.

    Stage-dependent statistics; those of (h, s, a) are refreshed from the latest epoch's samples when
    its total count reaches 1, 2, 4, 8, ...; the policy is recomputed only after a refresh.
    """

    def __init__(self, S: int, A: int, H: int, K: int, delta: float = 0.1, seed: int | None = None,
                 bonus_scale: float = 1.0):
        self.S, self.A, self.H, self.K, self.delta = _check_agent_args(S, A, H, K, delta)
        self.bonus_scale = _check_bonus_scale(bonus_scale)
        self.iota = math.log(self.S * self.A * self.H * self.K / self.delta)
        self.rng = np.random.default_rng(seed)
        shape = (self.H, self.S, self.A)
        self.n_total = np.zeros(shape, dtype=np.int64)
        self.epoch_sas = np.zeros((*shape, self.S))
        self.epoch_r = np.zeros(shape)
        self.epoch_r2 = np.zeros(shape)
        self.n_hat = np.zeros(shape)  # samples behind the current estimates (0 = none yet)
        self.p_hat = np.zeros((*shape, self.S))
        self.r_hat = np.zeros(shape)
        self.var_r = np.zeros(shape)
        self.Q = np.full(shape, float(self.H))
        self.policy = greedy_policy(self.Q, self.rng)

    def bonus_values(self, h: int, v_next: np.ndarray) -> np.ndarray:
        """The (S, A) MVP bonus at step h given V_{h+1} (public function, for checks)."""
        c = MVP_CONSTANTS
        return self.bonus_scale * bonus_mvp(self.n_hat[h], self.p_hat[h], v_next, self.var_r[h], self.H, self.iota,
                                            c1=c["c1"], c2=c["c2"], c3=c["c3"])

    def plan(self) -> None:
        """Recompute Q and the greedy policy; same numbers as :meth:`bonus_values`."""
        c, scale, iota = MVP_CONSTANTS, self.bonus_scale, self.iota
        nn = np.maximum(self.n_hat, 1.0)
        static = scale * (c["c2"] * np.sqrt(self.var_r * iota / nn) + c["c3"] * self.H * iota / nn)
        coef = scale * c["c1"] * math.sqrt(iota)

        def bonus_fn(h: int, var: np.ndarray) -> np.ndarray:
            return coef * np.sqrt(var / nn[h]) + static[h]

        self.Q = optimistic_backward_induction(self.p_hat, self.r_hat, self.n_hat > 0, self.H, bonus_fn)
        self.policy = greedy_policy(self.Q, self.rng)

    def act(self, h: int, s: int) -> int:
        _check_step_state(h, s, self.H, self.S)
        return int(self.policy[h, s])

    def update(self, trajectory: Trajectory) -> None:
        s, a, r = _check_trajectory(trajectory, self.S, self.A, self.H)
        hs = np.arange(self.H)
        idx = (hs, s[:-1], a)
        self.n_total[idx] += 1  # each (h, s, a) occurs at most once per episode
        self.epoch_sas[hs, s[:-1], a, s[1:]] += 1.0
        self.epoch_r[idx] += r
        self.epoch_r2[idx] += r * r
        n = self.n_total[idx]
        refresh = (n & (n - 1)) == 0  # the count just reached a power of two
        if not refresh.any():
            return
        h, ss, aa = hs[refresh], s[:-1][refresh], a[refresh]
        m = self.epoch_sas[h, ss, aa].sum(axis=1)
        self.n_hat[h, ss, aa] = m
        self.p_hat[h, ss, aa] = self.epoch_sas[h, ss, aa] / m[:, None]
        mean_r = self.epoch_r[h, ss, aa] / m
        self.r_hat[h, ss, aa] = mean_r
        self.var_r[h, ss, aa] = np.maximum(self.epoch_r2[h, ss, aa] / m - mean_r**2, 0.0)
        self.epoch_sas[h, ss, aa] = 0.0  # a new epoch starts for the refreshed triples
        self.epoch_r[h, ss, aa] = 0.0
        self.epoch_r2[h, ss, aa] = 0.0
        self.plan()


def run_regret(env: TabularEpisodicMDP, agent: Any, K: int, seed: int | None = 0) -> np.ndarray:
    """Cumulative regret after each of ``K`` episodes, shape (K,).

    Episode k's regret is the expected one, ``V*_0(s0) - V^{pi_k}_0(s0)``, computed exactly (V* by
    backward induction, V^{pi_k} by policy evaluation) for the policy ``agent.policy`` (H, S) the agent
    plays in that episode; the episode is then sampled from ``env`` and passed to ``agent.update``.
    """
    K = check_count("K", K)
    H, S = env.H, env.n_states
    if getattr(agent, "policy", None) is None or np.shape(agent.policy) != (H, S):
        raise ValueError(f"agent must expose its current policy as .policy of shape (H, S) = ({H}, {S})")
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    cdf = np.cumsum(env.P, axis=-1)
    per_episode = np.empty(K)
    last_policy, last_regret = None, 0.0
    states = np.empty(H + 1, dtype=np.int64)
    actions = np.empty(H, dtype=np.int64)
    rewards = np.empty(H)
    for k in range(K):
        policy = agent.policy
        if last_policy is None or not np.array_equal(policy, last_policy):
            last_policy, last_regret = policy.copy(), env.expected_regret(policy)
        per_episode[k] = last_regret
        u = rng.random(H)
        s = env.s0
        for h in range(H):
            a = agent.act(h, s)
            states[h], actions[h], rewards[h] = s, a, env.R[h, s, a]
            s = min(int(np.searchsorted(cdf[h, a, s], u[h], side="right")), S - 1)
        states[H] = s
        agent.update(Trajectory(states.copy(), actions.copy(), rewards.copy()))
    return np.cumsum(per_episode)


@dataclass(frozen=True)
class AgentSpec:
    """A named agent recipe for the experiments: ``kind`` is ``"ucbvi"`` or ``"mvp"``."""

    name: str
    kind: str
    bonus: str = "bf"
    bonus_scale: float = 1.0

    def make(self, S: int, A: int, H: int, K: int, delta: float, seed: int,
             refined_constants: dict | None = None) -> Any:
        if self.kind == "mvp":
            return MVP(S, A, H, K, delta, seed=seed, bonus_scale=self.bonus_scale)
        return UCBVI(S, A, H, K, delta, bonus=self.bonus, bonus_scale=self.bonus_scale,
                     refined_constants=refined_constants, seed=seed)

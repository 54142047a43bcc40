"""UCBVI (Azar, Osband & Munos 2017) with its bonuses side by side, the refined CH-I / BF-I, MVP, regret.

UCBVI, per episode k (Azar et al. 2017, Alg. 1): from all past data (pooled over steps) build N(s,a),
P_hat, r_hat, then for h = H-1..0

    Q_h(s,a) = min(Q^{k-1}_h(s,a), H, r_hat(s,a) + P_hat(.|s,a) V_{h+1} + b_h(s,a)),   V_h = max_a Q_h,

with Q_h(s,a) = H for unvisited pairs and V_H = 0, and act greedily for the whole episode (ties go to
the lowest action index, as in the authors' code; ``tie_break="random"`` is our option). The bonus b
is one of the functions below, with its constants in plain sight (L = ln(5 S A T / delta); the
authors' code uses L = ln(5 S A K H), i.e. delta = 1, our default):

* ``bonus_ch``   (UCBVI-CH, Azar et al. Alg. 3):  7 H L / sqrt(N).
* ``bonus_bf``   (UCBVI-BF, Azar et al. Alg. 4):  sqrt(8 L Var_P_hat(V_{h+1}) / N) + 14 H L / (3 N)
                 + sqrt(8 sum_y P_hat(y|s,a) min(1e4 H^3 S^2 A L^2 / N'_{h+1}(y), H^2) / N).
* ``bonus_ch_refined`` (CH-I, Drago, Mussi & Metelli):  2 H L / sqrt(N)  (see the doc: the authors'
  released code attaches 2 to its "CH" run and 7 to its "CHI" run; we take the smaller one as the
  refined bonus).
* ``bonus_bf_refined`` (BF-I):  sqrt(4 L Var / N) + (7/3) H L / max(N - 1, 1)
                 + sqrt(4 sum_y P_hat(y|s,a) min(7056 H^3 S^2 A L^2 / N'_{h+1}(y), H^2) / N).
* ``bonus_mvp``  (MVP, Zhang, Chen, Lee & Du 2024, constants as in the authors' code):
                 c1 sqrt(Var_P_hat(V_{h+1}) iota / n) + c2 sqrt(Var_hat(r) iota / n) + c3 H iota / n,
                 c1 = 460/9, c3 = 544/9, iota = ln(200 S A H^2 K^2 / delta), delta = 1/K by default.

N'_{h+1}(y) counts the visits of y at step h + 1 at which an action was taken (the final state of an
episode is not counted), floored at 1, as in the authors' code.

MVP (as run by the authors) pools its statistics over steps; when the total visit count of (s, a)
reaches 1, 2, 4, 8, ... its N and P_hat are replaced by those of the samples since the previous such
point, and Q is recomputed from scratch (no min with the old Q), capped at H.

Planning is vectorised over states and actions; the only Python loop is over the H steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from icml25.common.checks import ConfigError, check_ranges
from icml25.common.mdp import check_count
from icml25.papers.ucbvi_constants.envs import TabularEpisodicMDP

BONUSES = ("ch", "bf", "ch_refined", "bf_refined")
TIE_BREAKS = ("first", "random")
VARIANCES = ("weighted", "official")
REGRETS = ("realised", "expected")

AZAR_CH = {"c": 7.0, "c_log": 5.0}
"""UCBVI-CH constants of Azar et al. (2017): b = c H L / sqrt(N), L = ln(c_log S A T / delta)."""
AZAR_BF = {"c_var": 8.0, "c_lin": 14.0 / 3.0, "c_corr": 8.0, "c_cap": 1e4, "c_log": 5.0, "lin_offset": 0.0}
"""UCBVI-BF constants of Azar et al. (2017), names as in :func:`bonus_bf` (linear term over max(N - 0, 1))."""
REFINED_CH = {"c": 2.0, "c_log": 5.0}
"""CH-I constants (Drago, Mussi & Metelli; authors' code marcomussi/position_constants, see the doc on the
2-vs-7 labelling in that code)."""
REFINED_BF = {"c_var": 4.0, "c_lin": 7.0 / 3.0, "c_corr": 4.0, "c_cap": 7056.0, "c_log": 5.0, "lin_offset": 1.0}
"""BF-I constants (authors' code): 4, 7/3, 4, 84^2, and the linear term over max(N - 1, 1)."""
MVP_CONSTANTS = {"c1": 460.0 / 9.0, "c2": 2.0 * math.sqrt(2.0), "c3": 544.0 / 9.0}
"""MVP bonus constants (c1, c3 as in the authors' code; c2 multiplies the reward-variance term, which is 0
for the deterministic rewards used here and absent from the authors' code)."""
CH_REFINED_KEYS = ("c", "c_log")
BF_REFINED_KEYS = ("c_var", "c_lin", "c_corr", "c_cap", "c_log", "lin_offset")


@dataclass(frozen=True)
class AgentConfig:
    """Settings the agents of a comparison share (:class:`UCBVI`, :class:`MVP`, via :meth:`AgentSpec.make`).

    Defaults are the authors' (marcomussi/position_constants), except ``variance`` (see the doc).
    """

    delta: float = 1.0
    """UCBVI confidence level in (0, 1] in L = ln(5 S A T / delta); 1 is the authors' ln(5 S A K H)."""
    mvp_delta: float = 0.0
    """MVP confidence level in (0, 1] in iota = ln(200 S A H^2 K^2 / delta); 0 means the authors' 1/K."""
    tie_break: str = "first"
    """Greedy ties: ``first`` (lowest action index, the authors') or ``random``."""
    variance: str = "weighted"
    """Variance in the Bernstein bonuses: ``weighted`` (Var_P_hat(V)) or ``official`` (the authors' code quirk)."""
    ch_refined_constants: tuple[float, ...] = (REFINED_CH["c"], REFINED_CH["c_log"])
    """CH-I constants (c, c_log); default the refined (2, 5)."""
    bf_refined_constants: tuple[float, ...] = tuple(REFINED_BF[k] for k in BF_REFINED_KEYS)
    """BF-I constants (c_var, c_lin, c_corr, c_cap, c_log, lin_offset); default (4, 7/3, 4, 7056, 5, 1)."""

    def __post_init__(self) -> None:
        # named as the settings are typed (``--set agent.delta=...``)
        check_ranges("agent", vars(self), finite=("delta", "mvp_delta", "ch_refined_constants", "bf_refined_constants"),
                     fraction=("delta", "mvp_delta"),
                     nonnegative=("ch_refined_constants", "bf_refined_constants"),
                     choices={"tie_break": TIE_BREAKS, "variance": VARIANCES})
        if not 0.0 < self.delta <= 1.0:
            raise ConfigError(f"agent.delta must be in (0, 1], got {self.delta!r}")
        for name, keys in (("ch_refined_constants", CH_REFINED_KEYS), ("bf_refined_constants", BF_REFINED_KEYS)):
            values = getattr(self, name)
            if len(values) != len(keys) or min(values[:-1] if name.startswith("bf") else values) <= 0:
                raise ConfigError(f"agent.{name} must be {len(keys)} values ({', '.join(keys)}; all > 0 "
                                  f"except lin_offset >= 0), got {values!r}")

    @property
    def refined(self) -> dict[str, dict[str, float]]:
        """The refined agents' constants by agent name (``ch_refined``, ``bf_refined``)."""
        return {"ch_refined": dict(zip(CH_REFINED_KEYS, map(float, self.ch_refined_constants))),
                "bf_refined": dict(zip(BF_REFINED_KEYS, map(float, self.bf_refined_constants)))}


class Trajectory(NamedTuple):
    """One episode: ``states`` (H + 1,), ``actions`` (H,), ``rewards`` (H,)."""

    states: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray


def log_term(S: int, A: int, T: int, delta: float = 1.0, c_log: float = 5.0) -> float:
    """``L = ln(c_log S A T / delta)``; Azar et al. use ``c_log = 5``; ``delta = 1`` gives the authors'
    ``ln(5 S A K H)`` (T = K H).

    Raises:
        ValueError: ``S``, ``A`` or ``T`` not a positive integer, ``delta`` outside (0, 1], or
            ``c_log`` not a finite positive number.
    """
    S, A, T = (check_count(k, v) for k, v in (("S", S), ("A", A), ("T", T)))
    if not 0.0 < delta <= 1.0:
        raise ValueError(f"delta must be in (0, 1], got {delta!r}")
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


def _variance(p_hat: np.ndarray, v: np.ndarray, variance: str = "weighted") -> np.ndarray:
    """``Var_{P_hat(.|s,a)}(v)`` for every (s, a), clipped at 0 against round-off.

    ``variance="official"`` is the authors' code quirk instead: the plain (unweighted) variance over
    next states y of the products ``P_hat(y|s,a) v(y)``.
    """
    if variance == "official":
        return np.var(p_hat * v, axis=-1)
    mean = p_hat @ v
    return np.maximum(p_hat @ (v * v) - mean * mean, 0.0)


def _check_choice(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
    return value


def _check_scalar(name: str, value: Any, *, positive: bool) -> float:
    """``value`` as a float: a real number (bool rejected), finite and > 0 (``positive``) or >= 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {value!r} ({type(value).__name__})")
    if not (np.isfinite(value) and (value > 0 if positive else value >= 0)):
        raise ValueError(f"{name} must be finite and {'> 0' if positive else '>= 0'}, got {value!r}")
    return float(value)


def bonus_ch(n: Any, H: int, L: float, *, c: float = 7.0) -> np.ndarray:
    """UCBVI-CH bonus of Azar et al. (2017): ``c H L sqrt(1 / N)`` with ``c = 7``.

    Args:
        n: visit counts N(s, a), any shape; 0 is treated as 1.
        H: horizon. L: ``ln(5 S A T / delta)`` (:func:`log_term`).

    Raises:
        TypeError: ``H``, ``L`` or ``c`` not a real number.
        ValueError: ``H`` not finite and > 0, ``L`` or ``c`` not finite and >= 0, or a count negative or
            not finite.
    """
    _check_scalar("H", H, positive=True)
    _check_scalar("L", L, positive=False)
    _check_scalar("c", c, positive=False)
    return c * H * L / np.sqrt(_check_counts(n))


def bonus_bf(n: Any, p_hat: np.ndarray, v_next: np.ndarray, n_next: Any, H: int, L: float, *,
             c_var: float = 8.0, c_lin: float = 14.0 / 3.0, c_corr: float = 8.0, c_cap: float = 1e4,
             lin_offset: float = 0.0, variance: str = "weighted") -> np.ndarray:
    """UCBVI-BF bonus of Azar et al. (2017), shape of ``n`` (S, A).

    ``sqrt(c_var L Var_P_hat(V_{h+1}) / N) + c_lin H L / max(N - lin_offset, 1)
    + sqrt(c_corr sum_y P_hat(y|s,a) min(c_cap H^3 S^2 A L^2 / max(N'_{h+1}(y), 1), H^2) / N)``
    with Azar's ``c_var = 8, c_lin = 14/3, c_corr = 8, c_cap = 100^2, lin_offset = 0``.

    Args:
        n: (S, A) counts N(s, a) (0 read as 1). p_hat: (S, A, S) empirical transitions. v_next: (S,) V_{h+1}.
        n_next: (S,) visits N'_{h+1}(y) of each state at step h + 1 (floored at 1).
        H: horizon. L: log term. lin_offset: BF-I uses 1 (the ``max(N - 1, 1)`` denominator).
        variance: ``"weighted"`` (Var_P_hat, the formula) or ``"official"`` (the authors' code quirk).
    """
    n, p_hat, v_next = _check_model(n, p_hat, v_next)
    n_next = np.asarray(n_next, dtype=float)
    if n_next.shape != v_next.shape:
        raise ValueError(f"n_next must have shape (S,) = {v_next.shape}, got {n_next.shape}")
    if np.any(n_next < 0) or not np.all(np.isfinite(n_next)):
        raise ValueError("visit counts must be finite and non-negative")
    if not (np.isfinite(lin_offset) and lin_offset >= 0):
        raise ValueError(f"lin_offset must be finite and >= 0, got {lin_offset!r}")
    _check_choice("variance", variance, VARIANCES)
    var_part = np.sqrt(c_var * L * _variance(p_hat, v_next, variance) / n)
    return var_part + _bf_static_part(n, p_hat, n_next, H, L, c_lin, c_corr, c_cap, lin_offset)


def _bf_static_part(n: np.ndarray, p_hat: np.ndarray, n_next: np.ndarray, H: int, L: float, c_lin: float,
                    c_corr: float, c_cap: float, lin_offset: float = 0.0) -> np.ndarray:
    """The V-independent terms of the BF bonus; ``n_next`` is (S,) or (H, S) (then output (S, A, H))."""
    S, A = p_hat.shape[0], p_hat.shape[1]
    capped = np.minimum(c_cap * H**3 * S**2 * A * L**2 / np.maximum(n_next, 1.0), float(H) ** 2)
    lin = c_lin * H * L / np.maximum(n - lin_offset, 1.0)
    if capped.ndim == 1:
        return lin + np.sqrt(c_corr * (p_hat @ capped) / n)
    return lin[..., None] + np.sqrt(c_corr * (p_hat @ capped.T) / n[..., None])


def _refined(constants: dict | None, keys: tuple[str, ...], default: dict) -> dict:
    """``constants`` (exactly ``keys``) as floats, or the paper's ``default`` when None."""
    if constants is None:
        return dict(default)
    if set(constants) != set(keys):
        raise ValueError(f"refined constants must have exactly the keys {', '.join(keys)}, got {sorted(constants)}")
    return {k: float(v) for k, v in constants.items()}


def bonus_ch_refined(n: Any, H: int, L: float, *, constants: dict | None = None) -> np.ndarray:
    """CH-I: ``c H L / sqrt(N)`` with the refined ``c = 2`` (:data:`REFINED_CH`) unless ``constants`` is given.

    Raises:
        ValueError: ``constants`` without exactly the keys ``c``, ``c_log``.
    """
    c = _refined(constants, CH_REFINED_KEYS, REFINED_CH)["c"]
    return bonus_ch(n, H, L, c=c)


def bonus_bf_refined(n: Any, p_hat: np.ndarray, v_next: np.ndarray, n_next: Any, H: int, L: float, *,
                     constants: dict | None = None, variance: str = "weighted") -> np.ndarray:
    """BF-I: :func:`bonus_bf` with the refined constants (:data:`REFINED_BF`, linear term over max(N - 1, 1)).

    Raises:
        ValueError: ``constants`` without exactly the keys of :data:`BF_REFINED_KEYS`.
    """
    c = _refined(constants, BF_REFINED_KEYS, REFINED_BF)
    return bonus_bf(n, p_hat, v_next, n_next, H, L, c_var=c["c_var"], c_lin=c["c_lin"], c_corr=c["c_corr"],
                    c_cap=c["c_cap"], lin_offset=c["lin_offset"], variance=variance)


def mvp_iota(S: int, A: int, H: int, K: int, delta: float | None = None) -> float:
    """MVP's log term ``iota = ln(200 S A H^2 K^2 / delta)``; ``delta=None`` is the authors' ``1 / K``.

    Raises:
        ValueError: ``S``, ``A``, ``H``, ``K`` not positive integers or ``delta`` outside (0, 1].
    """
    S, A, H, K = (check_count(k, v) for k, v in (("S", S), ("A", A), ("H", H), ("K", K)))
    delta = 1.0 / K if delta is None else delta
    if not 0.0 < delta <= 1.0:
        raise ValueError(f"delta must be in (0, 1], got {delta!r}")
    return math.log(200.0 * S * A * H**2 * K**2 / delta)


def bonus_mvp(n: Any, p_hat: np.ndarray, v_next: np.ndarray, var_r: Any, H: int, iota: float, *,
              c1: float = 460.0 / 9.0, c2: float = 2.0 * math.sqrt(2.0), c3: float = 544.0 / 9.0,
              variance: str = "weighted") -> np.ndarray:
    """MVP bonus: ``c1 sqrt(Var_P_hat(V_{h+1}) iota / n) + c2 sqrt(Var_hat(r) iota / n) + c3 H iota / n``.

    Args:
        n: (S, A) counts (0 read as 1). p_hat: (S, A, S) empirical transitions. v_next: (S,) V_{h+1}.
        var_r: (S, A) empirical reward variances (>= 0). H: horizon. iota: :func:`mvp_iota`.
        variance: ``"weighted"`` or ``"official"`` (see :func:`bonus_bf`).
    """
    n, p_hat, v_next = _check_model(n, p_hat, v_next)
    var_r = np.asarray(var_r, dtype=float)
    if var_r.shape != n.shape or np.any(var_r < 0) or not np.all(np.isfinite(var_r)):
        raise ValueError(f"var_r must be a finite non-negative array of shape {n.shape}, got shape {var_r.shape}")
    _check_choice("variance", variance, VARIANCES)
    return (c1 * np.sqrt(_variance(p_hat, v_next, variance) * iota / n) + c2 * np.sqrt(np.asarray(var_r) * iota / n)
            + c3 * H * iota / n)


def greedy_policy(Q: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
    """argmax_a Q[..., a]: ties go to the lowest action index (``rng=None``, the authors' rule), or are
    broken uniformly at random (within 1e-9) with the generator ``rng``."""
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be None or a numpy.random.Generator, got {type(rng).__name__}")
    Q = np.asarray(Q, dtype=float)
    if Q.ndim < 1 or Q.shape[-1] < 1 or not np.all(np.isfinite(Q)):
        raise ValueError(f"Q must be a finite array with at least one action on its last axis, got shape {Q.shape}")
    if rng is None:
        return np.argmax(Q, axis=-1)
    ties = Q >= Q.max(axis=-1, keepdims=True) - 1e-9
    return np.argmax(np.where(ties, rng.random(Q.shape), -1.0), axis=-1)


def optimistic_backward_induction(p_hat: np.ndarray, r_hat: np.ndarray, visited: np.ndarray, H: int,
                                  bonus_fn, q_prev: np.ndarray | None = None,
                                  variance: str = "weighted") -> np.ndarray:
    """Optimistic Q of shape (H, S, A).

    ``Q_h = min(q_prev_h, H, r_hat + P_hat V_{h+1} + bonus_fn(h, Var_P_hat(V_{h+1})))`` on visited pairs and
    ``H`` elsewhere; ``V_h = max_a Q_h``, ``V_H = 0``. ``p_hat``/``r_hat``/``visited`` are stationary
    ((S, A, S), (S, A), (S, A)) or stage-dependent (leading H axis). Note the model layout
    ``p_hat[s, a, s2]`` (the toolkit's ``P[a, s, s2]`` transposed by ``P.transpose(1, 0, 2)``), so that
    ``p_hat @ V`` is (S, A). ``bonus_fn(h, var)`` returns the (S, A) bonus (or a scalar); ``var`` is
    Var_P_hat(V_{h+1}), or the authors' code quirk with ``variance="official"`` (see :func:`bonus_bf`).

    Raises:
        ValueError: ``H`` not a positive integer, or shapes of ``p_hat``, ``r_hat``, ``visited``
            (or ``q_prev``, (H, S, A)) that do not match; an unknown ``variance``.
    """
    H = check_count("H", H)
    _check_choice("variance", variance, VARIANCES)
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
        var = np.maximum(moments[..., 1] - pv * pv, 0.0) if variance == "weighted" else np.var(p * V, axis=-1)
        q = np.minimum(r + pv + bonus_fn(h, var), c)
        if q_prev is not None:
            np.minimum(q, q_prev[h], out=q)
        Q[h] = np.where(c == -np.inf, float(H), q)
        V = Q[h].max(axis=1)
    return Q


def _check_agent_args(S: int, A: int, H: int, K: int, delta: float | None) -> tuple[int, int, int, int, float]:
    """Sizes as positive ints; ``delta`` in (0, 1], ``None`` read as 1 / K (MVP's default)."""
    S, A, H, K = (check_count(k, v) for k, v in (("S", S), ("A", A), ("H", H), ("K", K)))
    delta = 1.0 / K if delta is None else delta
    if isinstance(delta, bool) or not isinstance(delta, (int, float, np.integer, np.floating)):
        raise ValueError(f"delta must be a number in (0, 1], got {delta!r}")
    if not 0.0 < float(delta) <= 1.0:
        raise ValueError(f"delta must be in (0, 1], got {delta!r}")
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
    """UCBVI with a choice of bonus (Azar et al. 2017; refined CH-I / BF-I of Drago, Mussi & Metelli).

    Args:
        S, A, H, K: states, actions, horizon, number of episodes (T = H K enters the log term).
        delta: confidence level in (0, 1]; the default 1 is the authors' L = ln(5 S A K H).
        bonus: ``"ch"``, ``"bf"``, ``"ch_refined"`` or ``"bf_refined"``.
        bonus_scale: multiplies the bonus (1 = as published); the "constants" knob.
        refined_constants: override of the refined variants' constants (default :data:`REFINED_CH` /
            :data:`REFINED_BF`).
        seed: seed of the tie-breaking generator (used with ``tie_break="random"`` only).
        tie_break: ``"first"`` (lowest action index, the authors' code) or ``"random"``.
        variance: ``"weighted"`` (Var_P_hat(V), the formula) or ``"official"`` (the authors' code quirk).

    Attributes:
        policy: (H, S) greedy actions for the current episode. Q: (H, S, A) optimistic Q.
    """

    def __init__(self, S: int, A: int, H: int, K: int, delta: float = 1.0, bonus: str = "bf",
                 bonus_scale: float = 1.0, refined_constants: dict | None = None, seed: int | None = None,
                 tie_break: str = "first", variance: str = "weighted"):
        self.S, self.A, self.H, self.K, self.delta = _check_agent_args(S, A, H, K, delta)
        if bonus not in BONUSES:
            raise ValueError(f"bonus must be one of {BONUSES}, got {bonus!r}")
        self.bonus, self.bonus_scale = bonus, _check_bonus_scale(bonus_scale)
        self.tie_break = _check_choice("tie_break", tie_break, TIE_BREAKS)
        self.variance = _check_choice("variance", variance, VARIANCES)
        if bonus == "ch_refined":
            self.constants = _refined(refined_constants, CH_REFINED_KEYS, REFINED_CH)
        elif bonus == "bf_refined":
            self.constants = _refined(refined_constants, BF_REFINED_KEYS, REFINED_BF)
        else:
            self.constants = dict(AZAR_CH if bonus == "ch" else AZAR_BF)
        self.L = log_term(self.S, self.A, self.H * self.K, self.delta, self.constants["c_log"])
        self.rng = np.random.default_rng(seed) if tie_break == "random" else None
        self.n_sas = np.zeros((self.S, self.A, self.S))
        self.r_sum = np.zeros((self.S, self.A))
        # N'_h(y): visits of y at step h at which an action was taken (row H, the final state, stays 0)
        self.n_step_state = np.zeros((self.H + 1, self.S))
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
                         c_corr=c["c_corr"], c_cap=c["c_cap"], lin_offset=c["lin_offset"], variance=self.variance)
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
                                             c["c_cap"], c["lin_offset"])
            coef = scale * math.sqrt(c["c_var"] * L)

            def bonus_fn(h: int, var: np.ndarray) -> np.ndarray:
                return coef * np.sqrt(var / nn) + static[..., h]
        self.Q = optimistic_backward_induction(p_hat, self.r_sum / nn, n > 0, H, bonus_fn, q_prev=self.Q,
                                               variance=self.variance)
        self.policy = greedy_policy(self.Q, self.rng)

    def act(self, h: int, s: int) -> int:
        _check_step_state(h, s, self.H, self.S)
        return int(self.policy[h, s])

    def update(self, trajectory: Trajectory) -> None:
        """Add one episode to the counts, then re-plan."""
        s, a, r = _check_trajectory(trajectory, self.S, self.A, self.H)
        np.add.at(self.n_sas, (s[:-1], a, s[1:]), 1.0)
        np.add.at(self.r_sum, (s[:-1], a), r)
        self.n_step_state[np.arange(self.H), s[:-1]] += 1.0
        self.plan()


class MVP:
    """Monotonic Value Propagation with the doubling trick (Zhang, Chen, Lee & Du 2024), as the authors run it.

    Statistics pooled over steps, per (s, a). When the total visit count of (s, a) reaches 1, 2, 4, 8, ...
    (checked after every step), its N and P_hat become those of the samples since the previous such
    point; after an episode with at least one such refresh, Q is recomputed from scratch (capped at H).

    Args:
        S, A, H, K: sizes. delta: confidence in (0, 1]; ``None`` = the authors' 1 / K.
        seed, tie_break, variance, bonus_scale: as in :class:`UCBVI`.
    """

    def __init__(self, S: int, A: int, H: int, K: int, delta: float | None = None, seed: int | None = None,
                 bonus_scale: float = 1.0, tie_break: str = "first", variance: str = "weighted"):
        self.S, self.A, self.H, self.K, self.delta = _check_agent_args(S, A, H, K, delta)
        self.bonus_scale = _check_bonus_scale(bonus_scale)
        self.tie_break = _check_choice("tie_break", tie_break, TIE_BREAKS)
        self.variance = _check_choice("variance", variance, VARIANCES)
        self.iota = mvp_iota(self.S, self.A, self.H, self.K, self.delta)
        self.rng = np.random.default_rng(seed) if tie_break == "random" else None
        shape = (self.S, self.A)
        self.n_total = np.zeros(shape, dtype=np.int64)
        self.epoch_sas = np.zeros((*shape, self.S))
        self.epoch_r = np.zeros(shape)
        self.epoch_r2 = np.zeros(shape)
        self.n_hat = np.zeros(shape)  # samples behind the current estimates (0 = none yet)
        self.p_hat = np.zeros((*shape, self.S))
        self.r_hat = np.zeros(shape)
        self.var_r = np.zeros(shape)
        self.Q = np.full((self.H, *shape), float(self.H))
        self.policy = greedy_policy(self.Q, self.rng)

    def bonus_values(self, h: int, v_next: np.ndarray) -> np.ndarray:
        """The (S, A) MVP bonus given V_{h+1} (the same at every step h; public function, for checks)."""
        c = MVP_CONSTANTS
        return self.bonus_scale * bonus_mvp(self.n_hat, self.p_hat, v_next, self.var_r, self.H, self.iota,
                                            c1=c["c1"], c2=c["c2"], c3=c["c3"], variance=self.variance)

    def plan(self) -> None:
        """Recompute Q from scratch and the greedy policy; same numbers as :meth:`bonus_values`."""
        c, scale, iota = MVP_CONSTANTS, self.bonus_scale, self.iota
        nn = np.maximum(self.n_hat, 1.0)
        static = scale * (c["c2"] * np.sqrt(self.var_r * iota / nn) + c["c3"] * self.H * iota / nn)
        coef = scale * c["c1"] * math.sqrt(iota)

        def bonus_fn(h: int, var: np.ndarray) -> np.ndarray:
            return coef * np.sqrt(var / nn) + static

        self.Q = optimistic_backward_induction(self.p_hat, self.r_hat, self.n_hat > 0, self.H, bonus_fn,
                                               variance=self.variance)
        self.policy = greedy_policy(self.Q, self.rng)

    def act(self, h: int, s: int) -> int:
        _check_step_state(h, s, self.H, self.S)
        return int(self.policy[h, s])

    def update(self, trajectory: Trajectory) -> None:
        s, a, r = _check_trajectory(trajectory, self.S, self.A, self.H)
        refreshed = False
        for h in range(self.H):  # a pair can recur within an episode: process the steps in order
            x, y = s[h], a[h]
            self.epoch_sas[x, y, s[h + 1]] += 1.0
            self.epoch_r[x, y] += r[h]
            self.epoch_r2[x, y] += r[h] * r[h]
            self.n_total[x, y] += 1
            n = int(self.n_total[x, y])
            if n & (n - 1) == 0:  # the total count just reached a power of two
                m = self.epoch_sas[x, y].sum()
                self.n_hat[x, y] = m
                self.p_hat[x, y] = self.epoch_sas[x, y] / m
                mean_r = self.epoch_r[x, y] / m
                self.r_hat[x, y] = mean_r
                self.var_r[x, y] = max(self.epoch_r2[x, y] / m - mean_r**2, 0.0)
                self.epoch_sas[x, y] = 0.0  # a new epoch starts for the refreshed pair
                self.epoch_r[x, y] = 0.0
                self.epoch_r2[x, y] = 0.0
                refreshed = True
        if refreshed:
            self.plan()


def run_regret(env: TabularEpisodicMDP, agent: Any, K: int, seed: int | None = 0,
               regret: str = "realised") -> np.ndarray:
    """Cumulative regret after each of ``K`` episodes, shape (K,).

    ``regret="realised"`` (the authors' metric): episode k contributes ``V*_0(s0)`` minus the rewards
    collected in the sampled episode. ``regret="expected"``: ``V*_0(s0) - V^{pi_k}_0(s0)`` computed
    exactly for the policy ``agent.policy`` (H, S) played in that episode. Either way the episode is
    sampled from ``env`` (inverse-CDF draws from a generator seeded with ``seed``) and passed to
    ``agent.update``.
    """
    K = check_count("K", K)
    _check_choice("regret", regret, REGRETS)
    H, S = env.H, env.n_states
    if getattr(agent, "policy", None) is None or np.shape(agent.policy) != (H, S):
        raise ValueError(f"agent must expose its current policy as .policy of shape (H, S) = ({H}, {S})")
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    cdf = np.cumsum(env.P, axis=-1)
    v_star = env.optimal_value
    per_episode = np.empty(K)
    last_policy, last_regret = None, 0.0
    states = np.empty(H + 1, dtype=np.int64)
    actions = np.empty(H, dtype=np.int64)
    rewards = np.empty(H)
    expected = regret == "expected"
    for k in range(K):
        if expected:
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
        if not expected:
            per_episode[k] = v_star - rewards.sum()
        agent.update(Trajectory(states.copy(), actions.copy(), rewards.copy()))
    return np.cumsum(per_episode)


@dataclass(frozen=True)
class AgentSpec:
    """A named agent recipe for the experiments: ``kind`` is ``"ucbvi"`` or ``"mvp"``."""

    name: str
    kind: str
    bonus: str = "bf"
    bonus_scale: float = 1.0

    def make(self, S: int, A: int, H: int, K: int, delta: float | None, seed: int,
             refined_constants: dict | None = None, mvp_delta: float | None = None,
             tie_break: str = "first", variance: str = "weighted") -> Any:
        if self.kind == "mvp":
            return MVP(S, A, H, K, mvp_delta, seed=seed, bonus_scale=self.bonus_scale, tie_break=tie_break,
                       variance=variance)
        return UCBVI(S, A, H, K, 1.0 if delta is None else delta, bonus=self.bonus, bonus_scale=self.bonus_scale,
                     refined_constants=refined_constants, seed=seed, tie_break=tie_break, variance=variance)

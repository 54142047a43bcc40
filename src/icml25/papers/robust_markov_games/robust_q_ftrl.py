"""Robust-Q-FTRL (Shi et al., ICML 2025, Algorithm 1) and a joint-model baseline.

Robust-Q-FTRL learns a robust coarse correlated equilibrium of a Markov game with fictitious TV
uncertainty sets from a generative model. It runs backward over h = H..1; at each step, for every state,
the m agents play K rounds of Follow-the-Regularized-Leader (exponential weights) against each other:

1. agent i plays ``pi^k_i(a_i|s) ∝ exp(eta_k Q^{k-1}_i(s, a_i))`` with ``eta_{k+1} = sqrt(log A_i / (alpha_k H))``;
2. for every a_i it draws N pairs ``a_-i ~ pi^k_-i(s)``, ``s' ~ P_h(.|s, a_i, a_-i)`` and forms the empirical
   reward ``r_hat`` and kernel ``P_hat`` of its fictitious model; the per-round target is
   ``q^k_i(s, a_i) = r_hat + inf_{TV(P', P_hat) <= sigma_i} P' V_hat_{i,h+1}`` (a batch of N samples, because
   the robust operator is nonlinear and a single sample would be biased);
3. ``Q^k_i = (1 - alpha_k) Q^{k-1}_i + alpha_k q^k_i`` with the rescaled linear rate
   ``alpha_k = c log K / (k - 1 + c log K)``;
4. output at (h, s): the correlated mixture ``sum_k alpha^K_k prod_i pi^k_i(.|s)``,
   ``alpha^K_k = alpha_k prod_{j>k} (1 - alpha_j)``, and the optimistic value estimate
   ``V_hat_{i,h}(s) = min{sum_k alpha^K_k <pi^k_i(s), q^k_i(s, .)> + beta_{i,h}(s), H - h + 1}`` with the
   per-agent variance bonus ``beta_{i,h}(s) = c_b sqrt(log K / K * (sum_k alpha^K_k Var_{pi^k_i(s)}(q^k_i(s, .)) + H))``
   (Q-FTRL's form with log K in place of its log^3 factor; the paper leaves c_b unspecified, we use 1).

Samples: ``H * S * K * N * sum_i A_i``, linear in sum_i A_i (the curse of multiagency is broken).
``N=None`` replaces step 2 by exact expectations under the game's own kernel (a planner, used by the
joint-model baseline on an estimated model).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from icml25.common.checks import ConfigError, check_ranges
from icml25.common.mdp import check_count
from icml25.papers.robust_markov_games.game import (
    CorrelatedPolicy,
    MarkovGame,
    check_sigmas,
    others_model,
    tv_robust,
)

C_ALPHA_MAX = 1e6
"""Largest accepted ``c_alpha``. Q-FTRL's theory constants are tens; once ``c log K`` exceeds K by far,
``alpha_k = 1`` for every round to double precision (the output is the last iterate, not an average), and
``c log K`` overflows to inf near 1e308 (alpha_k = inf/inf = NaN). 1e6 is far above any theory constant and keeps
the arithmetic finite for every K the configs allow (<= 1e6); larger values would only repeat last-iterate play."""


def check_c_alpha(c_alpha: float) -> float:
    """``c_alpha`` as a float in (0, :data:`C_ALPHA_MAX`]; ValueError otherwise (NaN, inf and 1e308 included)."""
    if isinstance(c_alpha, bool) or not isinstance(c_alpha, (int, float, np.integer, np.floating)):
        raise ValueError(f"c_alpha must be a number, got {c_alpha!r}")
    if not (np.isfinite(c_alpha) and 0 < c_alpha <= C_ALPHA_MAX):
        raise ValueError(f"c_alpha must be in (0, {C_ALPHA_MAX:g}] (beyond it alpha_k = 1 in every round: "
                         f"last-iterate play), got {c_alpha!r}")
    return float(c_alpha)


@dataclass
class RobustQFTRLConfig:
    """Robust-Q-FTRL's own settings (Algorithm 1), those of :func:`robust_q_ftrl` besides the game, the radius
    sigma and the number of rounds K (an experiment sweeps K as the sample budget).

    An experiment nests it as ``rqftrl`` (``--set rqftrl.N=20``); ``robust_q_ftrl(game, sigma, K, cfg.N, seed,
    c_alpha=cfg.c_alpha, c_bonus=cfg.c_bonus)`` runs it. The joint-model baseline plans with the same ``c_alpha``
    and ``c_bonus``.
    """

    N: int = 20
    """Generative-model samples per (h, s, i, a_i) and round (step 2: one batch per round, because the robust
    operator is nonlinear)."""
    c_alpha: float = 1.0
    """Constant c of the rescaled linear learning rate alpha_k = c log K / (k - 1 + c log K) (step 3), in
    (0, :data:`C_ALPHA_MAX`]."""
    c_bonus: float = 1.0
    """Constant c_b of the variance bonus of the optimistic value estimates (step 4; unspecified in the paper;
    0: none)."""

    def __post_init__(self) -> None:
        # named as the settings are typed (``--set rqftrl.N=...``); beyond 1e4 samples per entry a job takes days
        check_ranges("rqftrl", vars(self), integer=("N",), positive=("N", "c_alpha"), nonnegative=("c_bonus",),
                     finite=("c_alpha", "c_bonus"), at_most={"N": 10**4})
        if self.c_alpha > C_ALPHA_MAX:
            raise ConfigError(f"rqftrl.c_alpha must be <= {C_ALPHA_MAX:g} (beyond it alpha_k = 1 in every round: "
                              f"last-iterate play), got {self.c_alpha}")


def ftrl_step_sizes(K: int, c_alpha: float = 1.0) -> np.ndarray:
    """Q-FTRL's rescaled linear rates ``alpha_k = c log K / (k - 1 + c log K)``, k = 1..K (alpha_1 = 1).

    ``log K`` is floored at 1 so that K <= 2 stays well defined. ``c_alpha`` must be in (0, 1e6]
    (:func:`check_c_alpha`).
    """
    K = check_count("K", K)
    c_alpha = check_c_alpha(c_alpha)
    lam = c_alpha * max(np.log(K), 1.0)
    k = np.arange(1, K + 1)
    return lam / (k - 1 + lam)


def mixture_weights(alpha: np.ndarray) -> np.ndarray:
    """``alpha^K_k = alpha_k prod_{j > k} (1 - alpha_j)``; they sum to 1 when alpha_1 = 1.

    Raises:
        ValueError: ``alpha`` not a non-empty 1-D array of step sizes in [0, 1].
    """
    alpha = np.asarray(alpha, dtype=float)
    if alpha.ndim != 1 or alpha.size == 0:
        raise ValueError(f"alpha must be a non-empty 1-D array, got shape {alpha.shape}")
    if not np.all(np.isfinite(alpha)) or alpha.min() < 0 or alpha.max() > 1:
        raise ValueError("alpha must hold step sizes in [0, 1]")
    tail = np.concatenate([np.cumprod((1 - alpha)[::-1])[::-1][1:], [1.0]])  # prod_{j>k} (1 - alpha_j)
    return alpha * tail


def _others_product(pis: list[np.ndarray], i: int) -> np.ndarray:
    """(S, A_1, .., 1, .., A_m): the product of the others' policies, agent i's axis of length 1."""
    m, S = len(pis), pis[0].shape[0]
    out = np.ones((S,) + (1,) * m)
    for j, pj in enumerate(pis):
        if j != i:
            shape = [S] + [1] * m
            shape[1 + j] = pj.shape[1]
            out = out * pj.reshape(shape)
    return out


def _robust_targets(r: list[np.ndarray], P: list[np.ndarray], v_next: np.ndarray, sig: np.ndarray) -> list[np.ndarray]:
    """``q_i = r_i + inf_{TV(P', P_i) <= sigma_i} P' V_{i,h+1}`` for every agent (one batched call if shapes agree)."""
    if len({x.shape for x in P}) == 1:
        q = np.stack(r) + tv_robust(np.stack(P), v_next[:, None, None, :], sig[:, None, None])
        return list(q)
    return [ri + tv_robust(Pi, v_next[i], sig[i]) for i, (ri, Pi) in enumerate(zip(r, P))]


def _exact_targets(game: MarkovGame, h: int, pis: list[np.ndarray], v_next: np.ndarray,
                   sig: np.ndarray) -> list[np.ndarray]:
    """Step 2 with exact expectations: the fictitious model of each agent under the others' product policy."""
    models = [others_model(game, _others_product(pis, i), i, h) for i in range(game.n_agents)]
    return _robust_targets([x[0] for x in models], [x[1] for x in models], v_next, sig)


def _sample_actions(pis: list[np.ndarray], i: int, N: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """For agent i: (S, A_i, N) action arrays of every agent, a_i fixed on its axis, a_-i ~ pi_-i(. | s)."""
    S, A_i = pis[i].shape
    shape = (S, A_i, N)
    actions = []
    for j, pj in enumerate(pis):
        if j == i:
            actions.append(np.broadcast_to(np.arange(A_i)[None, :, None], shape))
        else:  # inverse CDF
            u = rng.random(shape)
            cdf = np.cumsum(pj, axis=1)[:, None, None, :]
            actions.append(np.minimum((u[..., None] > cdf).sum(axis=-1), pj.shape[1] - 1))
    return tuple(actions)


def _sampled_targets(game: MarkovGame, h: int, pis: list[np.ndarray], v_next: np.ndarray, sig: np.ndarray,
                     N: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Step 2: for every agent i, state s and action a_i, N generative-model calls (a_-i ~ pi_-i, s' ~ P_h)
    give the empirical reward r_hat_i (S, A_i) and fictitious kernel P_hat_i (S, A_i, S')."""
    m, S, A = game.n_agents, game.n_states, game.n_actions
    if len(set(A)) == 1:  # all agents at once: axes (i, s, a_i, n)
        a = A[0]
        cdf = np.cumsum(np.stack(pis, axis=1), axis=-1)               # (S, m_j, A)
        u = rng.random((m, S, a, N, m))
        actions = np.minimum((u[..., None] > cdf[None, :, None, None]).sum(axis=-1), a - 1)
        own = np.arange(m)
        actions[own, :, :, :, own] = np.arange(a)[None, :, None]
        joint = np.ravel_multi_index(tuple(np.moveaxis(actions, -1, 0)), A)  # (m, S, A, N)
        agent = np.arange(m)[:, None, None, None]
        states = np.broadcast_to(np.arange(S)[None, :, None, None], joint.shape)
        r_hat = list(game.R_flat[agent, h, states, joint].mean(axis=-1))
    else:
        joints = [np.ravel_multi_index(_sample_actions(pis, i, N, rng), A) for i in range(m)]
        r_hat = [game.R_flat[i, h, np.arange(S)[:, None, None], jt].mean(axis=-1) for i, jt in enumerate(joints)]
        joint = None
    P_hat = []
    for i in range(m):
        jt = joint[i] if joint is not None else joints[i]
        s_next = game.sample_next_batch(h, np.broadcast_to(np.arange(S)[:, None, None], jt.shape), jt, rng)
        P_hat.append((s_next[..., None] == np.arange(S)).mean(axis=-2))  # (S, A_i, S')
    return _robust_targets(r_hat, P_hat, v_next, sig)


def robust_q_ftrl(game: MarkovGame, sigma: Any, K: int, N: int | None, seed: int | None = 0, *,
                  c_alpha: float = 1.0, c_bonus: float = 1.0) -> CorrelatedPolicy:
    """Learn an approximate robust CCE with Robust-Q-FTRL.

    Args:
        game: the Markov game, accessed only through its generative model (unless ``N`` is None).
        sigma: TV radius per agent (scalar or (m,)), each in [0, 1]; 0 gives non-robust Q-FTRL.
        K: FTRL rounds per (h, s) (>= 1).
        N: generative-model samples per (h, s, i, a_i) and round (>= 1); ``None`` uses exact expectations.
        seed: seed of the sampler.
        c_alpha: constant of the learning rate alpha_k (Q-FTRL's theory uses a large constant; 1 here), in
            (0, 1e6] (:func:`check_c_alpha`).
        c_bonus: scale c_b of the per-agent variance-type optimism bonus
            ``beta_{i,h}(s) = c_b sqrt(log K / K (sum_k alpha^K_k Var_{pi^k_i(s)}(q^k_i(s, .)) + H))`` added to
            V_hat (then clipped to H - h + 1); 0 gives the plain Q-FTRL average without optimism.

    Returns:
        A :class:`CorrelatedPolicy` with ``weights``, ``factors``, ``value_estimates`` (m, H + 1, S) and
        ``n_samples = H S K N sum_i A_i``.
    """
    if not isinstance(game, MarkovGame):
        raise ValueError(f"game must be a MarkovGame, got {type(game).__name__}")
    m, H, S, A = game.n_agents, game.horizon, game.n_states, game.n_actions
    sig = check_sigmas(sigma, m)
    K = check_count("K", K)
    if N is not None:
        N = check_count("N", N)
    c_alpha = check_c_alpha(c_alpha)
    if not (np.isfinite(c_bonus) and c_bonus >= 0):
        raise ValueError(f"c_bonus must be >= 0, got {c_bonus!r}")
    alpha = ftrl_step_sizes(K, c_alpha)
    weights = mixture_weights(alpha)
    log_actions = np.log(np.array(A, dtype=float))
    rng = np.random.default_rng(seed)

    V = np.zeros((m, H + 1, S))
    factors = [np.empty((H, S, K, a)) for a in A]
    for h in range(H - 1, -1, -1):
        Q = [np.zeros((S, a)) for a in A]
        v_hat, var_hat = np.zeros((m, S)), np.zeros((m, S))
        for k in range(K):
            # 1. exponential weights on the running Q (uniform in the first round)
            pis = []
            for i in range(m):
                eta = 0.0 if k == 0 else np.sqrt(log_actions[i] / (alpha[k - 1] * H))
                logits = eta * Q[i]
                pi = np.exp(logits - logits.max(axis=1, keepdims=True))
                pis.append(pi / pi.sum(axis=1, keepdims=True))
                factors[i][h, :, k] = pis[i]
            # 2. per-round robust targets from N samples of each fictitious model (or exactly)
            if N is None:
                targets = _exact_targets(game, h, pis, V[:, h + 1], sig)
            else:
                targets = _sampled_targets(game, h, pis, V[:, h + 1], sig, N, rng)
            for i, q in enumerate(targets):
                # 3. rescaled linear averaging
                Q[i] += alpha[k] * (q - Q[i])
                # 4. running value estimate sum_k alpha^K_k <pi^k_i, q^k_i>
                mean = (pis[i] * q).sum(axis=1)
                v_hat[i] += weights[k] * mean
                if c_bonus > 0:
                    var_hat[i] += weights[k] * (pis[i] * (q - mean[:, None]) ** 2).sum(axis=1)
        bonus = c_bonus * np.sqrt(max(np.log(K), 1.0) / K * (var_hat + H)) if c_bonus > 0 else 0.0
        V[:, h] = np.clip(v_hat + bonus, 0.0, H - h)

    n_samples = 0 if N is None else H * S * K * N * int(sum(A))
    w = np.broadcast_to(weights, (H, S, K))
    return CorrelatedPolicy.mixture(w, factors, value_estimates=V, n_samples=n_samples)


def estimate_joint_model(game: MarkovGame, n_per_entry: float, seed: int | None = 0) -> tuple[MarkovGame, int]:
    """Plug-in estimate of the full joint kernel from the generative model.

    ``n_per_entry`` >= 1 (an integer): that many calls per (h, s, joint action), ``n_samples = H S prod_i A_i n``
    -- exponential in the number of agents (the curse of multiagency). ``n_per_entry`` in (0, 1): a coverage
    fraction; at each (h, s) ``ceil(n_per_entry prod_i A_i)`` joint actions drawn without replacement get one call
    each and every unvisited joint action gets the pooled empirical kernel of the visited ones at that (h, s)
    (the plug-in's natural fill-in); ``n_samples = H S ceil(n_per_entry prod_i A_i)``. Rewards are known
    (deterministic) and copied.
    """
    if not isinstance(game, MarkovGame):
        raise ValueError(f"game must be a MarkovGame, got {type(game).__name__}")
    H, S, J = game.horizon, game.n_states, game.n_joint
    rng = np.random.default_rng(seed)
    if isinstance(n_per_entry, (float, np.floating)) and 0 < n_per_entry < 1:
        visited = int(np.ceil(n_per_entry * J))
        P_hat = np.empty_like(game.P_flat)
        for h in range(H):
            for s in range(S):
                joint = rng.choice(J, size=visited, replace=False)
                s_next = game.sample_next_batch(h, np.full(visited, s), joint, rng)
                counts = (s_next[:, None] == np.arange(S)).astype(float)   # one sample per visited entry
                P_hat[h, s] = counts.mean(axis=0)                          # pooled fill-in
                P_hat[h, s, joint] = counts
        return MarkovGame(P_hat.reshape(game.P.shape), game.R, H), H * S * visited
    if isinstance(n_per_entry, (float, np.floating)) and float(n_per_entry).is_integer():
        n_per_entry = int(n_per_entry)
    n = check_count("n_per_entry", n_per_entry)
    P_hat = np.empty_like(game.P_flat)
    states = np.broadcast_to(np.arange(S)[:, None, None], (S, J, n))
    joint = np.broadcast_to(np.arange(J)[None, :, None], (S, J, n))
    for h in range(H):
        s_next = game.sample_next_batch(h, states, joint, rng)
        P_hat[h] = (s_next[..., None] == np.arange(S)).mean(axis=-2)
    return MarkovGame(P_hat.reshape(game.P.shape), game.R, H), H * S * J * n


def joint_model_baseline(game: MarkovGame, sigma: Any, n_per_entry: float, K: int, seed: int | None = 0, *,
                         c_alpha: float = 1.0, c_bonus: float = 1.0) -> CorrelatedPolicy:
    """Model-based baseline: estimate the joint kernel with ``n_per_entry`` samples per (h, s, a) (a fraction
    in (0, 1): that share of the joint actions visited once, :func:`estimate_joint_model`), then plan
    on the estimate with exact-expectation Robust-Q-FTRL (K rounds, the same c_alpha and c_bonus).
    ``n_samples`` is set on the result."""
    model, n_samples = estimate_joint_model(game, n_per_entry, seed)
    policy = robust_q_ftrl(model, sigma, K, None, c_alpha=c_alpha, c_bonus=c_bonus)
    policy.n_samples = n_samples
    return policy
